"""Checkpoints of a run, the same scheme for every backend.

A checkpoint is a folder `checkpoints/ckpt_<timesteps>/` that the backend's trainer fills
(`Trainer.save`: weights, optimizer, environments, generators, in its own formats, none of
them pickled), plus a marker `checkpoints/ckpt_<timesteps>.json` written last, which marks the
checkpoint complete and records where the run stands (`CheckpointMarker`: timesteps,
iteration, the best evaluation score so far, the rules and config it was written for, and the
trainer's own small state). A resume takes the newest complete checkpoint and trusts nothing
in it: the marker is read strictly and checked against the run's config here, the trainer
checks its part (`Trainer.restore`); anything else is one RunDirError naming the file.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tacocat.game.errors import one_line
from tacocat.train.config_files import read_small_file
from tacocat.train.run_dir import RunDirError, config_hash

CHECKPOINTS = "checkpoints"
#: a checkpoint's marker file: `ckpt_<timesteps>.json`, the number written as Python writes it
#: (other files in the folder are not checkpoints and are ignored)
MARKER_NAME = re.compile(r"ckpt_(0|[1-9][0-9]{0,17})\.json")
#: a marker is read only up to this size
MAX_MARKER_BYTES = 1 << 20
#: checkpoints kept (the older ones are deleted once a new one is complete)
KEEP = 2


class CheckpointMarker(BaseModel):
    """A checkpoint's JSON marker. Read strictly (no coercion, no extra keys)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    timesteps: int = Field(ge=0)
    iteration: int = Field(ge=0)
    best_score: float | None = Field(ge=0, le=1, description="the best mean evaluation win rate so far")
    ruleset_hash: str
    config_sha256: str
    trainer: dict[str, Any] = Field(description="the trainer's own state (`Trainer.save`), checked by it")

    def check_against(self, config: Any, path: Path) -> None:
        """RunDirError naming `path` unless `config`'s run can have written this marker."""
        problems = []
        if self.ruleset_hash != config.rules_config.ruleset_hash():
            problems.append("it was written under other rules than the run's config.yaml")
        if self.config_sha256 != config_hash(config):
            problems.append("it was written for another config than the run's config.yaml")
        if int(MARKER_NAME.fullmatch(path.name).group(1)) != self.timesteps:  # type: ignore[union-attr]  # listed by MARKER_NAME
            problems.append(f"its timesteps ({self.timesteps}) are not the ones in its name")
        if self.iteration > self.timesteps or (self.timesteps > 0) != (self.iteration > 0):
            problems.append(f"{self.iteration} iterations cannot have made {self.timesteps} timesteps")
        if problems:
            raise RunDirError(f"{path}: " + "; ".join(problems))


def markers(run_dir: Path) -> list[Path]:
    """The checkpoint markers of a run, oldest first (files not named like one are not)."""
    folder = run_dir / CHECKPOINTS
    found = [(int(m.group(1)), p) for p in folder.glob("ckpt_*.json") if (m := MARKER_NAME.fullmatch(p.name))]
    return [p for _, p in sorted(found)]


def save(run_dir: Path, trainer: Any, marker: dict[str, Any]) -> Path:
    """Checkpoint `trainer` into `checkpoints/ckpt_<timesteps>/`, then write the marker (`marker`
    plus the trainer's state), then delete all but the newest KEEP checkpoints."""
    folder = run_dir / CHECKPOINTS / f"ckpt_{marker['timesteps']}"
    shutil.rmtree(folder, ignore_errors=True)  # an incomplete one of an earlier try
    folder.mkdir(parents=True)
    state = CheckpointMarker(**marker, trainer=trainer.save(folder))
    path = folder.with_suffix(".json")
    path.with_suffix(".tmp").write_text(state.model_dump_json())
    path.with_suffix(".tmp").replace(path)  # written last: marks the checkpoint complete
    for stale in markers(run_dir)[:-KEEP]:
        stale.unlink()
        shutil.rmtree(stale.with_suffix(""), ignore_errors=True)
    return folder


def latest(run_dir: Path, config: Any) -> tuple[Path, CheckpointMarker] | None:
    """The newest complete checkpoint's folder and marker, checked against `config`; None if
    there is none."""
    found = markers(run_dir)
    if not found:
        return None
    path = found[-1]
    text = read_small_file(path, MAX_MARKER_BYTES, "a checkpoint marker", RunDirError)
    try:
        marker = CheckpointMarker.model_validate_json(text)
    except ValidationError as err:
        raise RunDirError(f"{path}: {one_line(err)}") from None
    marker.check_against(config, path)
    folder = path.with_suffix("")
    if not folder.is_dir() or folder.is_symlink():
        raise RunDirError(f"{path}: its checkpoint folder {folder.name}/ is missing")
    return folder, marker
