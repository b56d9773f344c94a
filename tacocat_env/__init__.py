"""Tacocat Spelled Backwards: a pure rules engine and the PettingZoo AEC environment `tacocat_v0`.

The engine modules need only numpy, pydantic and PyYAML. The environment (`env`, `raw_env`)
pulls in PettingZoo and Gymnasium, so it is imported on first use: `import tacocat_env.engine`
stays light.
"""

from __future__ import annotations

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: public name -> module that defines it (imported on first access, PEP 562)
_EXPORTS = {
    "ActionCodec": "actions", "Move": "actions", "MoveKind": "actions", "Event": "events", "EventKind": "events",
    "RulesConfig": "config", "make_config": "config",
    "GameState": "engine", "Phase": "engine", "apply_action": "engine", "legal_actions": "engine",
    "new_game": "engine", "returns": "engine",
    "env": "env", "raw_env": "env",
    "ActionOutOfRangeError": "errors", "GameOverError": "errors", "IllegalActionError": "errors",
    "InvalidPositionError": "errors", "NotYourTurnError": "errors", "TacocatError": "errors",
    "ObservationLayout": "observation", "describe": "observation", "encode": "observation",
    "setup_position": "positions",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tacocat_env' has no attribute {name!r}")
    value = getattr(import_module(f"tacocat_env.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """`tacocat_env.env` is the function, as it was with eager imports: importing the submodule
    `tacocat_env.env` (which sets the package attribute to the module) keeps the function."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "env" and isinstance(value, types.ModuleType):
            value = value.env
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from tacocat_env.actions import ActionCodec, Move, MoveKind
    from tacocat_env.config import RulesConfig, make_config
    from tacocat_env.engine import GameState, Phase, apply_action, legal_actions, new_game, returns
    from tacocat_env.env import env, raw_env
    from tacocat_env.events import Event, EventKind
    from tacocat_env.errors import (
        ActionOutOfRangeError,
        GameOverError,
        IllegalActionError,
        InvalidPositionError,
        NotYourTurnError,
        TacocatError,
    )
    from tacocat_env.observation import ObservationLayout, describe, encode
    from tacocat_env.positions import setup_position
