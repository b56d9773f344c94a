"""A run's exported policy: the file a trainer wrote into its run directory and the agent
that plays it (`ExportedPolicy`), as `final.json` names it (`run_policy`). Every tool after
training (`tacocat evaluate`, `tacocat compare`, `tacocat tune`, `--evaluate`) finds a run's
policy here, whatever its backend."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from tacocat.game.errors import one_line
from tacocat.train.config_files import read_small_file
from tacocat.train.run_dir import RunDirError

#: final.json is read only up to this size
MAX_FINAL_JSON_BYTES = 1 << 16


@dataclass(frozen=True)
class ExportedPolicy:
    """A policy file a trainer wrote into its run directory, and the agent that plays it."""

    agent: str  # the agent name in `tacocat.agents.registry` (`ppo`, `league`, `rllib`)
    file: str  # the file's name, relative to the run directory
    options: dict[str, Any] = field(default_factory=dict)  # other options of the agent spec

    def spec(self, run_dir: Path) -> str:
        from tacocat.agents.registry import format_spec

        return format_spec(self.agent, path=str(Path(run_dir).resolve() / self.file), **self.options)


class _PolicyRecord(BaseModel):
    """final.json's `policy`, read strictly."""

    model_config = ConfigDict(extra="forbid", strict=True)
    agent: str
    file: str
    options: dict[str, bool | int | float | str]


def run_policy(run_dir: Path) -> ExportedPolicy:
    """The final policy a finished run names in its final.json; RunDirError naming the file if
    the run is not finished or the file is not one a run writes."""
    path = Path(run_dir) / "final.json"
    if not path.is_file():
        raise RunDirError(f"{run_dir} is not a finished run (no final.json)")
    text = read_small_file(path, MAX_FINAL_JSON_BYTES, "the run's final record", RunDirError)
    try:
        data = json.loads(text)
        policy = _PolicyRecord.model_validate(data.get("policy") if isinstance(data, dict) else None)
    except (ValueError, RecursionError) as err:
        why = one_line(err) if isinstance(err, ValidationError) else "not valid JSON"
        raise RunDirError(f"{path}: does not name the run's policy ({why})") from None
    if Path(policy.file).name != policy.file or not (Path(run_dir) / policy.file).is_file():
        raise RunDirError(f"{path}: its policy file {policy.file!r} is not a file of the run directory")
    return ExportedPolicy(policy.agent, policy.file, dict(policy.options))
