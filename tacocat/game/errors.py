"""Exceptions raised by the engine and the environment. All are `ValueError`s."""

from __future__ import annotations

from collections.abc import Sequence


class TacocatError(ValueError):
    """Base class of every error the package raises for bad input."""


class IllegalActionError(TacocatError):
    """An action that is not legal in the current state; the state is unchanged.

    `action` is the offending id, `legal_actions` the ids that are legal and
    `legal_moves` their readable names.
    """

    def __init__(self, message: str, action: object, legal_actions: Sequence[int], legal_moves: Sequence[str]):
        super().__init__(message)
        self.action = action
        self.legal_actions = tuple(legal_actions)
        self.legal_moves = list(legal_moves)


class ActionOutOfRangeError(IllegalActionError):
    """An action that is not an id of the action space at all."""


class NotYourTurnError(TacocatError):
    """A move submitted for a player who is not the one to act."""


class GameOverError(TacocatError):
    """A move submitted after the game ended."""


class InvalidPositionError(TacocatError):
    """A set-up position that breaks the rules (a card too many, unequal hands, ...)."""
