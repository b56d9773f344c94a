"""Training callbacks: checkpoints, duplicate-format evaluation, self-play snapshots, progress."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from experiments.config import ExperimentConfig
from experiments.run_dir import save_model

EVAL_FIELDS = ["timesteps", "opponent", "win_rate", "ci_low", "ci_high", "deal_pairs"]

#: called after each evaluation with (timesteps, mean win rate over `eval.opponents`);
#: returning False stops training there (`tacocat tune` prunes trials with it)
EvaluationListener = Callable[[int, float], bool]


class _Every:
    """Fires once each time num_timesteps crosses a multiple of `interval`."""

    def __init__(self, interval: int, start: int) -> None:
        self.interval = interval
        self.next = (start // interval + 1) * interval

    def due(self, timesteps: int) -> bool:
        if timesteps < self.next:
            return False
        self.next = (timesteps // self.interval + 1) * self.interval
        return True


class RunCheckpointCallback(BaseCallback):
    """Every `checkpoint_every` timesteps, at the start of the next rollout (after the update),
    saves the model and everything else a resume needs to continue bit-identically: generator
    states, the environments' games in progress, the last observations, the self-play pool
    and the evaluation bookkeeping."""

    def __init__(self, config: ExperimentConfig, run_dir: Path, start: int, selfplay: SelfPlayCallback | None,
                 evaluator: EvaluationCallback) -> None:
        super().__init__()
        self.config, self.dir = config, run_dir / "checkpoints"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.timer = _Every(config.checkpoint_every, start)
        self.selfplay, self.evaluator = selfplay, evaluator

    def _on_rollout_start(self) -> None:
        if self.timer.due(self.num_timesteps):
            self.save()

    def _on_step(self) -> bool:
        return True

    def save(self) -> None:
        import torch



        steps = int(self.num_timesteps)
        path = self.dir / f"ckpt_{steps}.zip"
        save_model(self.model, path, self.config)
        kind, keys, pos, has_gauss, cached = np.random.get_state()
        state = {
            "timesteps": steps,
            "torch_rng": torch.get_rng_state().tolist(),
            "numpy_rng": [kind, keys.tolist(), pos, has_gauss, cached],
            "n_updates": int(getattr(self.model, "_n_updates", 0)),
            # snapshot files relative to the run directory: a run resumes from any working directory
            "snapshots": self.selfplay.snapshots if self.selfplay else [],
            "best_score": self.evaluator.best_score,
            "last_evaluated": self.evaluator.last_evaluated,
            "envs": self.training_env.env_method("resume_state"),
            "monitor": {"returns": self.training_env.episode_returns.tolist(),
                        "lengths": self.training_env.episode_lengths.tolist(),
                        "count": int(self.training_env.episode_count)},
            "last_obs": self.model._last_obs.tolist(),
            "last_episode_starts": self.model._last_episode_starts.tolist(),
            "ep_info_buffer": [{k: (v.item() if isinstance(v, np.generic) else v) for k, v in info.items()}
                               for info in self.model.ep_info_buffer or []],
        }
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(path.with_suffix(".json"))  # the json marks the checkpoint as complete
        for old in sorted(self.dir.glob("ckpt_*.zip"), key=lambda p: int(p.stem.split("_")[1]))[:-3]:
            old.unlink()
            old.with_suffix(".json").unlink(missing_ok=True)


class EvaluationCallback(BaseCallback):
    """Duplicate-format matches of the current policy against each ladder rung."""

    def __init__(self, config: ExperimentConfig, run_dir: Path, start: int, latest: dict[str, float],
                 listener: EvaluationListener | None = None) -> None:
        super().__init__()
        self.config, self.run_dir = config, run_dir
        self.listener = listener
        self.timer = _Every(config.eval.every, start)
        self.latest = latest
        self.best_score = -np.inf
        self.last_evaluated = start
        self.csv_path = run_dir / "eval.csv"
        _truncate_rows(self.csv_path, start)

    def _on_step(self) -> bool:
        if self.timer.due(self.num_timesteps):
            return self.evaluate()
        return True

    def _on_training_end(self) -> None:
        rollout = self.model.n_steps * self.model.n_envs
        if self.num_timesteps - self.last_evaluated >= rollout:  # not evaluated in the last rollout
            self.evaluate()

    def evaluate(self) -> bool:
        """Evaluate, log, keep the best model; False when the listener asks to stop training."""
        from agents.evaluation import match
        from agents.trained import PPOAgent


        learner = PPOAgent(model=self.model)
        steps = self.last_evaluated = int(self.num_timesteps)
        rows = []
        for opponent in self.config.eval.opponents:
            result = match(learner, opponent, deal_pairs=self.config.eval.deal_pairs, seed=self.config.eval.seed,
                           workers=1, config=self.config.rules_config, progress=False)
            rows.append({"timesteps": steps, "opponent": opponent, "win_rate": result.win_rate_a,
                         "ci_low": result.ci_low, "ci_high": result.ci_high,
                         "deal_pairs": self.config.eval.deal_pairs})
            self.logger.record(f"eval/win_rate_{opponent}", result.win_rate_a)
            self.latest[opponent] = result.win_rate_a
        new = not self.csv_path.exists()
        with self.csv_path.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=EVAL_FIELDS)
            if new:
                writer.writeheader()
            writer.writerows(rows)
        score = float(np.mean([r["win_rate"] for r in rows]))
        self.logger.record("eval/mean_win_rate", score)
        if score > self.best_score:
            self.best_score = score
            save_model(self.model, self.run_dir / "best_model.zip", self.config)
        return self.listener is None or self.listener(steps, score)


class SelfPlayCallback(BaseCallback):
    """Every `snapshot_every` timesteps, freeze the learner into the opponent pool (latest K).

    `snapshots` are the snapshot files relative to the run directory; the pool gets specs
    with their absolute paths (quoted by `format_spec`, so any character of a name is safe).
    """

    def __init__(self, config: ExperimentConfig, run_dir: Path, start: int, snapshots: list[str]) -> None:
        super().__init__()
        assert config.selfplay is not None
        self.config, self.settings = config, config.selfplay
        self.run_dir = run_dir.resolve()
        self.dir = self.run_dir / "snapshots"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.timer = _Every(self.settings.snapshot_every, start)
        self.snapshots = list(snapshots)

    def spec(self, snapshot: str) -> str:
        from agents.registry import format_spec

        return format_spec("ppo", path=str(self.run_dir / snapshot), deterministic=False)

    def _on_training_start(self) -> None:
        for snapshot in self.snapshots:  # a resumed run gets its pool back
            self.training_env.env_method("add_opponent", self.spec(snapshot), self.settings.weight)

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


class ProgressCallback(BaseCallback):
    """A tqdm bar over the timesteps with FPS and the latest evaluation win rates."""

    def __init__(self, total: int, start: int, latest: dict[str, float]) -> None:
        super().__init__()
        self.total, self.start, self.latest = total, start, latest

    def _on_training_start(self) -> None:
        from tqdm.auto import tqdm

        rollout = self.model.n_steps * self.model.n_envs  # SB3 finishes the last rollout
        total = -(-self.total // rollout) * rollout
        self.bar = tqdm(total=total, initial=self.start, unit="step", dynamic_ncols=True)
        self.t0, self.last = time.perf_counter(), self.start

    def _on_step(self) -> bool:
        self.bar.update(self.num_timesteps - self.last)
        self.last = self.num_timesteps
        if self.n_calls % 200 == 0:
            fps = (self.num_timesteps - self.start) / max(time.perf_counter() - self.t0, 1e-9)
            rates = " ".join(f"{k}={v:.2f}" for k, v in self.latest.items())
            self.bar.set_postfix_str(f"fps={fps:.0f} {rates}")
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


def build_callbacks(config: ExperimentConfig, run_dir: Path, resumed_at: int | None, progress: bool,
                    listener: EvaluationListener | None = None) -> CallbackList:
    start = resumed_at or 0
    latest: dict[str, float] = {}
    saved: dict[str, Any] = {}
    if resumed_at is not None:
        saved = json.loads((run_dir / "checkpoints" / f"ckpt_{resumed_at}.json").read_text())
    evaluator = EvaluationCallback(config, run_dir, start, latest, listener)
    evaluator.best_score = saved.get("best_score", -np.inf)
    evaluator.last_evaluated = saved.get("last_evaluated", start)
    selfplay = SelfPlayCallback(config, run_dir, start, saved.get("snapshots", [])) if config.selfplay else None
    callbacks: list[BaseCallback] = [c for c in (selfplay,) if c is not None]
    callbacks += [evaluator, RunCheckpointCallback(config, run_dir, start, selfplay, evaluator)]
    if progress:
        callbacks.append(ProgressCallback(config.total_timesteps, start, latest))
    return CallbackList(callbacks)


def _truncate_rows(path: Path, up_to: int) -> None:
    """Drop evaluation rows logged after `up_to` timesteps (they belong to lost work)."""
    if not path.exists() or up_to == 0:
        return
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(r["timesteps"]) <= up_to]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=EVAL_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
