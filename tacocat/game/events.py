"""Typed public events (R7.2): what both players see happen, in the order it happens.

Every event is a named tuple whose first field is its `kind` (an `EventKind`, which compares
equal to its lower-case name: `event.kind == "attack"`), so events read by name
(`event.cards`), unpack like tuples and serialise to JSON as plain lists. Cards are value
indices (`config.values[i]` is the printed value), players are 0/1, spaces are board indices
from player_0's goal (0) to player_1's (S - 1). docs/ENVIRONMENT.md has the table.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class EventKind(str, Enum):
    """The kinds of public event; each compares equal to (and prints as) its value."""

    ROUND = "round"
    REPLACE = "replace"
    DUEL = "duel"
    ATTACK = "attack"
    ANSWER = "answer"
    TRICK = "trick"
    SHOWDOWN = "showdown"
    MOVE = "move"
    GAME_OVER = "game_over"

    # interchangeable with its value: prints as "round" (not "EventKind.ROUND") and hashes as "round"
    __str__ = str.__str__
    __hash__ = str.__hash__


class RoundDealt(NamedTuple):
    """A round is dealt; `number` counts from 1, void rounds included; `arrow` is the player
    the space's arrow points at, None for two arrows."""

    kind: EventKind
    number: int
    space: int
    deal_size: int
    arrow: int | None


class ReplaceRevealed(NamedTuple):
    """A replacement is revealed: the discarded cards, highest first (() for none)."""

    kind: EventKind
    player: int
    cards: tuple[int, ...]


class DuelRevealed(NamedTuple):
    """Both duel cards are revealed (a tie is followed by another duel)."""

    kind: EventKind
    card_p0: int
    card_p1: int


class AttackPlayed(NamedTuple):
    """An attack, cards highest first (the order they are answered in)."""

    kind: EventKind
    player: int
    cards: tuple[int, ...]


class AnswerPlayed(NamedTuple):
    """One answer; `defended` is card >= the attack card it answers."""

    kind: EventKind
    player: int
    card: int
    defended: bool


class TrickEnded(NamedTuple):
    """After the last answer: the player who attacks next."""

    kind: EventKind
    next_attacker: int


class ShowdownRevealed(NamedTuple):
    """The last cards of the round; `winner` is 0/1, or None for a void round."""

    kind: EventKind
    last_p0: int
    last_p1: int
    winner: int | None


class TacocatMoved(NamedTuple):
    """The Tacocat moves; `from_space` is covered; `to_space` is -1 for player_0's goal and
    S for player_1's."""

    kind: EventKind
    winner: int
    from_space: int
    to_space: int


class GameOver(NamedTuple):
    """The game ended; `winner` is None when it was truncated (R1.5)."""

    kind: EventKind
    winner: int | None


Event = (
    RoundDealt
    | ReplaceRevealed
    | DuelRevealed
    | AttackPlayed
    | AnswerPlayed
    | TrickEnded
    | ShowdownRevealed
    | TacocatMoved
    | GameOver
)

#: the class of each kind of event (to read back an event stored as a plain list)
EVENT_CLASS: dict[EventKind, type[Event]] = {
    EventKind.ROUND: RoundDealt,
    EventKind.REPLACE: ReplaceRevealed,
    EventKind.DUEL: DuelRevealed,
    EventKind.ATTACK: AttackPlayed,
    EventKind.ANSWER: AnswerPlayed,
    EventKind.TRICK: TrickEnded,
    EventKind.SHOWDOWN: ShowdownRevealed,
    EventKind.MOVE: TacocatMoved,
    EventKind.GAME_OVER: GameOver,
}
