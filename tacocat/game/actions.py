"""The action codec: one fixed `Discrete(N)` action space derived from a ruleset.

Every decision of the game is one action id:

==============  ==========================================  =========================
kind            meaning                                     readable form
==============  ==========================================  =========================
``replace``     set aside one card of a value (R4)          ``replace: discard a 7``
``stop``        finish replacing (R4)                       ``replace: stop``
``duel``        play one card into the duel (R5.1)          ``duel: play a 7``
``single``      attack with one card (R5.3)                 ``attack: single 7``
``set``         attack with n cards of one value (R5.3)     ``attack: set 3x7``
``sequence``    attack with consecutive values (R5.3)       ``attack: sequence 4-5-6``
``defend``      answer the current attack card (R5.5)       ``answer: defend with 9``
``sacrifice``   answer with the lowest card (R5.5)          ``answer: sacrifice``
==============  ==========================================  =========================

Sets range from 2 to min(copies of the value, largest deal - 1) cards and sequences from 3
to (largest deal - 1) values, since an attack must leave the attacker one card (R5.4).
Cards are identified by their value index (position in the ascending list of values).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cached_property

from tacocat.game.config import RulesConfig


class MoveKind(str, Enum):
    """The kinds of action, in action-id order; each compares equal to (and prints as) its value."""

    REPLACE = "replace"
    STOP = "stop"
    DUEL = "duel"
    SINGLE = "single"
    SET = "set"
    SEQUENCE = "sequence"
    DEFEND = "defend"
    SACRIFICE = "sacrifice"

    # interchangeable with its value: prints as "set" (not "MoveKind.SET") and hashes as "set"
    __str__ = str.__str__
    __hash__ = str.__hash__

    @property
    def is_attack(self) -> bool:
        return self in (MoveKind.SINGLE, MoveKind.SET, MoveKind.SEQUENCE)


@dataclass(frozen=True)
class Move:
    """A decoded action. `cards` lists the value indices the move plays, highest first."""

    kind: MoveKind
    cards: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", MoveKind(self.kind))  # "set" -> MoveKind.SET; bad kinds raise


#: the readable form of each kind of move, from the printed values of its cards
_READABLE: dict[MoveKind, Callable[[list[int]], str]] = {
    MoveKind.REPLACE: lambda vals: f"replace: discard a {vals[0]}",
    MoveKind.STOP: lambda vals: "replace: stop",
    MoveKind.DUEL: lambda vals: f"duel: play a {vals[0]}",
    MoveKind.SINGLE: lambda vals: f"attack: single {vals[0]}",
    MoveKind.SET: lambda vals: f"attack: set {len(vals)}x{vals[0]}",
    MoveKind.SEQUENCE: lambda vals: "attack: sequence " + "-".join(str(v) for v in reversed(vals)),
    MoveKind.DEFEND: lambda vals: f"answer: defend with {vals[0]}",
    MoveKind.SACRIFICE: lambda vals: "answer: sacrifice",
}


class ActionCodec:
    """Maps action ids to moves and back for one ruleset."""

    def __init__(self, config: RulesConfig) -> None:
        self.values: tuple[int, ...] = config.values
        n_values = len(self.values)
        max_attack = max(config.board) - 1
        moves: list[Move] = []
        moves += [Move(MoveKind.REPLACE, (v,)) for v in range(n_values)]
        moves.append(Move(MoveKind.STOP))
        moves += [Move(MoveKind.DUEL, (v,)) for v in range(n_values)]
        moves += [Move(MoveKind.SINGLE, (v,)) for v in range(n_values)]
        for v, copies in enumerate(config.deck.values()):
            moves += [Move(MoveKind.SET, (v,) * size) for size in range(2, min(copies, max_attack) + 1)]
        for length in range(3, max_attack + 1):
            for start in range(n_values - length + 1):
                run = range(start, start + length)
                if all(self.values[i + 1] == self.values[i] + 1 for i in run[:-1]):
                    moves.append(Move(MoveKind.SEQUENCE, tuple(reversed(run))))
        moves += [Move(MoveKind.DEFEND, (v,)) for v in range(n_values)]
        moves.append(Move(MoveKind.SACRIFICE))
        self.moves: tuple[Move, ...] = tuple(moves)
        self._ids = {move: i for i, move in enumerate(moves)}
        self.replace_base = 0
        self.stop = n_values
        self.duel_base = n_values + 1
        self.single_base = 2 * n_values + 1
        self.defend_base = self._ids[Move(MoveKind.DEFEND, (0,))]
        self.sacrifice = len(moves) - 1

    @property
    def size(self) -> int:
        """N, the number of actions."""
        return len(self.moves)

    def move(self, action: int) -> Move:
        return self.moves[action]

    def action(self, move: Move) -> int:
        """The id of a move; KeyError with the move if the ruleset has no such action."""
        try:
            return self._ids[move]
        except KeyError:
            raise KeyError(f"{move} is not an action of this ruleset") from None

    def set_action(self, value_index: int, size: int) -> int:
        return self._ids[Move(MoveKind.SET, (value_index,) * size)]

    def sequence_action(self, start_index: int, length: int) -> int:
        return self._ids[Move(MoveKind.SEQUENCE, tuple(range(start_index + length - 1, start_index - 1, -1)))]

    @cached_property
    def names(self) -> tuple[str, ...]:
        """Readable names of all actions, by id."""
        return tuple(_READABLE[m.kind]([self.values[c] for c in m.cards]) for m in self.moves)

    def name(self, action: int) -> str:
        return self.names[action]

    def parse(self, name: str) -> int:
        """The action id of a readable name (inverse of `name`)."""
        try:
            return self._name_ids[name.strip()]
        except KeyError:
            raise ValueError(f"unknown move {name!r}; moves look like {self.names[:3]} ...") from None

    @cached_property
    def _name_ids(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.names)}

    def table(self) -> list[tuple[int, MoveKind, str]]:
        """(id, kind, readable name) for every action: the documented action table."""
        return [(i, m.kind, self.names[i]) for i, m in enumerate(self.moves)]
