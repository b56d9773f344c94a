"""SB3 self-play: every `sb3.selfplay.snapshot_every` timesteps (checked after every env step,
so in the middle of a rollout), the learner is frozen into the opponent pool, which keeps the
latest `keep_latest` snapshots."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from stable_baselines3.common.callbacks import BaseCallback

from tacocat.train.loop import Every
from tacocat.train.run_dir import RunDirError
from tacocat.train.sb3.config import SB3Experiment
from tacocat.train.sb3.model_files import save_model

#: a snapshot file, relative to the run directory
SNAPSHOT_NAME = re.compile(r"snapshots/snapshot_(0|[1-9][0-9]{0,17})\.zip")


class SelfPlayCallback(BaseCallback):
    """Every `snapshot_every` timesteps, freeze the learner into the opponent pool (latest K).

    `snapshots` are the snapshot files relative to the run directory; the pool gets specs
    with their absolute paths (quoted by `format_spec`, so any character of a name is safe).
    """

    def __init__(self, config: SB3Experiment, run_dir: Path) -> None:
        super().__init__()
        assert config.sb3.selfplay is not None
        self.config, self.settings = config, config.sb3.selfplay
        self.run_dir = run_dir.resolve()
        self.dir = self.run_dir / "snapshots"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.timer = Every(self.settings.snapshot_every, 0)
        self.snapshots: list[str] = []

    def spec(self, snapshot: str) -> str:
        from tacocat.agents.registry import format_spec

        return format_spec("ppo", path=str(self.run_dir / snapshot), deterministic=False)

    def restore(self, snapshots: list[Any], env: Any, timesteps: int) -> None:
        """The pool of a resumed run at `timesteps`: the checkpoint's snapshots, each a file of
        this run."""
        for snapshot in snapshots:
            if not isinstance(snapshot, str) or not SNAPSHOT_NAME.fullmatch(snapshot):
                raise RunDirError(
                    f"the checkpoint's snapshots must be files snapshots/snapshot_<timesteps>.zip of "
                    f"the run, got {str(snapshot)[:100]!r}"
                )
        if len(snapshots) > self.settings.keep_latest:
            raise RunDirError(f"the checkpoint holds {len(snapshots)} snapshots, more than keep_latest")
        self.snapshots = list(snapshots)
        self.timer = Every(self.settings.snapshot_every, timesteps)
        for snapshot in self.snapshots:
            env.env_method("add_opponent", self.spec(snapshot), self.settings.weight)

    def _on_step(self) -> bool:
        if self.timer.due(self.num_timesteps):
            path = self.dir / f"snapshot_{self.num_timesteps}.zip"
            save_model(self.model, path, self.config)
            snapshot = str(path.relative_to(self.run_dir))
            self.snapshots.append(snapshot)
            self.training_env.env_method("add_opponent", self.spec(snapshot), self.settings.weight)
            while len(self.snapshots) > self.settings.keep_latest:
                self.training_env.env_method("remove_opponent", self.spec(self.snapshots.pop(0)))
        return True
