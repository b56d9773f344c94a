"""Exceptions raised by the engine and the environment (all are `ValueError`s), and
`one_line`, how every front door (the command line, the web app) states an error."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

#: the problems of a pydantic report that `one_line` lists; it counts the rest
MAX_PROBLEMS = 5


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


def one_line(err: BaseException | str) -> str:
    """An error message on one line, as valid UTF-8 text (a lone surrogate, which a web client
    can send, becomes "?"): its lines and runs of spaces joined by single spaces; a pydantic
    ValidationError as `invalid <model>: ` and its first `MAX_PROBLEMS` problems, each after
    its field (`algo.gamma: Input should be ...`), joined with '; '."""
    if isinstance(err, ValidationError):
        problems = err.errors()
        parts = []
        for problem in problems[:MAX_PROBLEMS]:
            field = ".".join(str(p) for p in problem["loc"])
            message = problem["msg"].removeprefix("Value error, ")
            parts.append(f"{field}: {message}" if field else message)
        if len(problems) > MAX_PROBLEMS:
            parts.append(f"and {len(problems) - MAX_PROBLEMS} more")
        text = " ".join(f"invalid {err.title}: {'; '.join(parts)}".split())
    else:
        text = " ".join(str(err).split()) or type(err).__name__
    return text.encode("utf-8", "replace").decode("utf-8")
