"""Tacocat Spelled Backwards, a research environment: the rules engine, the PettingZoo AEC
environment `tacocat_v0` (`tacocat.env()`, `tacocat.raw_env()`), agents, evaluation, exact
analysis, training and the front doors (docs/ARCHITECTURE.md).

The wings, from the bottom up (imports point down only):

    tacocat.game        rules config, engine, AEC env, batch/ (JAX), openspiel, presets, render
    tacocat.agents      the players, each JAX form beside its Python twin
    tacocat.evaluation  duplicate matches, statistics, tournaments, game files
    tacocat.analysis    exact trees, CFR, best responses, tabular policies, exact exploitability
    tacocat.train       the one run loop, typed configs, sb3/, rllib/, league/, tune/, exploit
    tacocat.web         `tacocat serve`
    tacocat.cli         the `tacocat` command

The names below are imported on first use (PEP 562): `import tacocat` stays light, and the
environment pulls in PettingZoo and Gymnasium only when `env` or `raw_env` is asked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

#: public name -> module of `tacocat.game` that defines it
_EXPORTS = {
    "ActionCodec": "actions",
    "Move": "actions",
    "MoveKind": "actions",
    "Event": "events",
    "EventKind": "events",
    "RulesConfig": "config",
    "make_config": "config",
    "GameState": "state",
    "Phase": "state",
    "apply_action": "engine",
    "legal_actions": "engine",
    "new_game": "engine",
    "returns": "engine",
    "env": "env",
    "raw_env": "env",
    "ActionOutOfRangeError": "errors",
    "GameOverError": "errors",
    "IllegalActionError": "errors",
    "InvalidPositionError": "errors",
    "NotYourTurnError": "errors",
    "TacocatError": "errors",
    "ObservationLayout": "observation",
    "describe": "observation",
    "encode": "observation",
    "setup_position": "positions",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tacocat' has no attribute {name!r}")
    value = getattr(import_module(f"tacocat.game.{module}"), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # static analysers and IDEs see the eager imports
    from tacocat.game.actions import ActionCodec, Move, MoveKind
    from tacocat.game.config import RulesConfig, make_config
    from tacocat.game.engine import apply_action, legal_actions, new_game, returns
    from tacocat.game.env import env, raw_env
    from tacocat.game.errors import (
        ActionOutOfRangeError,
        GameOverError,
        IllegalActionError,
        InvalidPositionError,
        NotYourTurnError,
        TacocatError,
    )
    from tacocat.game.events import Event, EventKind
    from tacocat.game.observation import ObservationLayout, describe, encode
    from tacocat.game.positions import setup_position
    from tacocat.game.state import GameState, Phase
