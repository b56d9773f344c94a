"""The training backends, listed once: `backend:` in a config names one, and `BACKENDS` gives
its config type (its fields sit in the config's section of the same name;
`tacocat.train.config` builds the config union and its lookup from this list) and its
`trainer` module, which gives `session(config, address)` (a context manager yielding what
run.json adds) and `make_trainer(config, run_dir)` (a `tacocat.train.loop.Trainer`). A trainer
module is imported only when its backend runs, so a league run imports neither torch nor Ray.
docs/CONTRIBUTING.md says how to add a backend.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from tacocat.train.league.config import LeagueExperiment
from tacocat.train.rllib.config import RllibExperiment
from tacocat.train.sb3.config import SB3Experiment
from tacocat.train.settings import ExperimentBase


@dataclass(frozen=True)
class Backend:
    """A training backend: its experiment config type and the module of its trainer."""

    config: type[ExperimentBase]
    trainer: str  # a module name: imported by `trainer_module` only when the backend runs


#: backend name -> its config type and trainer module (a config without `backend` is an sb3 one)
BACKENDS: dict[str, Backend] = {
    "sb3": Backend(SB3Experiment, "tacocat.train.sb3.trainer"),  # MaskablePPO (sb3-contrib) in one process
    "rllib": Backend(RllibExperiment, "tacocat.train.rllib.trainer"),  # PPO on Ray RLlib
    "league": Backend(LeagueExperiment, "tacocat.train.league.trainer"),  # jitted PPO on the batch engine
}
DEFAULT_BACKEND = "sb3"


def trainer_module(backend: str) -> ModuleType:
    """The trainer module of `backend` (imported now)."""
    try:
        return importlib.import_module(BACKENDS[backend].trainer)
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}") from None
