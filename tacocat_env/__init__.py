"""Tacocat Spelled Backwards: a pure rules engine and the PettingZoo AEC environment `tacocat_v0`."""

from tacocat_env.actions import ActionCodec, Move
from tacocat_env.config import RulesConfig, make_config
from tacocat_env.engine import GameState, Phase, apply_action, legal_actions, new_game, returns
from tacocat_env.env import env, raw_env
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

__all__ = [
    "ActionCodec", "ActionOutOfRangeError", "GameOverError", "GameState", "IllegalActionError",
    "InvalidPositionError", "Move", "NotYourTurnError", "ObservationLayout", "Phase", "RulesConfig",
    "TacocatError", "apply_action", "describe", "encode", "env", "legal_actions", "make_config",
    "new_game", "raw_env", "returns", "setup_position",
]
__version__ = "0.1.0"
