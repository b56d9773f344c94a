"""The training backends: `backend:` in a config names a subpackage of `experiments`, whose
fields sit in the config's section of the same name (`tacocat.train.config` lists their
config types) and whose `trainer` module gives `session(config, address)` (a context manager yielding what run.json
adds) and `make_trainer(config, run_dir)` (an `tacocat.train.loop.Trainer`). Imported only
when chosen, so a league run imports neither torch nor Ray. docs/CONTRIBUTING.md says how to
add one.
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: backend name -> the module with its trainer
BACKENDS = {
    "sb3": "tacocat.train.sb3.trainer",  # MaskablePPO (sb3-contrib) in one process
    "rllib": "tacocat.train.rllib.trainer",  # PPO on Ray RLlib
    "league": "tacocat.train.league.trainer",  # jitted PPO on the batch engine against a league
}


def trainer_module(backend: str) -> ModuleType:
    """The trainer module of `backend`."""
    try:
        return importlib.import_module(BACKENDS[backend])
    except KeyError:
        raise ValueError(f"unknown backend {backend!r}; one of {', '.join(BACKENDS)}") from None
