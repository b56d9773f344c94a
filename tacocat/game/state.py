"""A game's state: `GameState` (everything about a game, hidden parts included), the `Phase`
of the decision its player to act faces, a `Deal` (the cards of a round start, R2.2, R2.3) and
`make_rng` (the generator a game's chance comes from).

Cards are identified by *value index* (the position of their value in the ruleset's ascending
list of values); cards of equal value are indistinguishable, so hands and piles are kept as
counts per value index. The rules that change a state are in `tacocat.game.engine`; the
checks of a state given from outside (and `make_state`, which builds one from its parts) in
`tacocat.game.checks`.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from tacocat.game.config import RulesConfig
from tacocat.game.errors import TacocatError
from tacocat.game.events import Event
from tacocat.game.ruleset import Ruleset


class Phase(IntEnum):
    """The decision the player to act faces."""

    REPLACE = 0
    DUEL = 1
    ATTACK = 2
    ANSWER = 3
    OVER = 4


@dataclass
class GameState:
    """Everything about a game, hidden parts included (privileged: see `observation` for a
    player's view). Mutated in place by `apply_action`."""

    rules: Ruleset
    rng: np.random.Generator
    space: int
    covered: list[bool]
    rounds_played: int = 0
    phase: Phase = Phase.REPLACE
    to_act: int = 0
    #: cards each player holds (not counting cards set aside or played), per value index
    hands: list[list[int]] = field(default_factory=list)
    #: cards set aside in the running replace step (R4.1/R4.3), per value index
    set_aside: list[list[int]] = field(default_factory=list)
    #: draw pile, value indices, top card last (hidden, R7.1)
    draw_pile: list[int] = field(default_factory=list)
    #: face-up cards of this round, per value index (public, R2.3)
    discard: list[int] = field(default_factory=list)
    #: players who still have to replace this round, in order (R4.1/R4.2)
    replace_queue: list[int] = field(default_factory=list)
    #: how many cards each player may set aside in total in this replace step
    replace_cap: list[int] = field(default_factory=lambda: [0, 0])
    #: revealed number of cards each player replaced this round (None: not yet revealed)
    replaced: list[int | None] = field(default_factory=lambda: [None, None])
    #: duel card chosen by each player, hidden until both chose (R5.1)
    duel: list[int | None] = field(default_factory=lambda: [None, None])
    #: the last revealed duel of this round, (player_0's card, player_1's card)
    last_duel: tuple[int, int] | None = None
    attacker: int | None = None
    #: cards of the attack in progress, highest first (R5.5)
    attack: list[int] = field(default_factory=list)
    #: answers given so far to `attack`, in order
    answers: list[int] = field(default_factory=list)
    winner: int | None = None
    truncated: bool = False
    #: winner of the last finished round (None if it was void); -1 before any round ended
    last_round_winner: int | None = -1
    #: public history: typed events (`tacocat.game.events`), documented in docs/ENVIRONMENT.md
    events: list[Event] = field(default_factory=list)
    #: every action taken, (player, action id): the private move log used for replays
    actions: list[tuple[int, int]] = field(default_factory=list)
    _legal_cache: tuple[int, ...] | None = field(default=None, repr=False)

    def invalidate_legal_cache(self) -> None:
        """Forget the cached legal actions: call it after editing fields by hand (analysis
        and tests do); `apply_action` keeps the cache right by itself."""
        self._legal_cache = None

    # -- convenience views ---------------------------------------------------------------
    @property
    def config(self) -> RulesConfig:
        return self.rules.config

    @property
    def current_player(self) -> int | None:
        """The player to act, or None when the game is over."""
        return None if self.phase is Phase.OVER else self.to_act

    @property
    def is_over(self) -> bool:
        return self.phase is Phase.OVER

    @property
    def deal_size(self) -> int:
        return self.rules.board[self.space]

    @property
    def arrow(self) -> int | None:
        """The player the current space's arrow points at; None for two arrows (R1.3)."""
        return self.rules.arrows[self.space]

    def hand_size(self, player: int) -> int:
        """Public hand size: cards held plus cards set aside but not yet revealed (R4.1)."""
        pending_duel = 1 if self.duel[player] is not None else 0
        return sum(self.hands[player]) + sum(self.set_aside[player]) + pending_duel

    def hand_values(self, player: int) -> list[int]:
        """The card values a player holds, ascending (privileged)."""
        values = self.rules.values
        return [values[v] for v, n in enumerate(self.hands[player]) for _ in range(n)]

    def table_cards(self) -> list[int]:
        """Value indices of the cards on the table: the trick in progress."""
        return self.attack + self.answers

    def clone(self, *, history: bool = True, rng: np.random.Generator | None = None) -> GameState:
        """An independent copy sharing only the immutable ruleset.

        `history=False` starts the copy with empty `events`/`actions` (cheap copies for
        rollouts); `rng` gives the copy that generator instead of a copy of this state's.
        """
        twin = copy.copy(self)
        twin.rng = copy.deepcopy(self.rng) if rng is None else rng
        twin.covered = list(self.covered)
        twin.hands = [list(h) for h in self.hands]
        twin.set_aside = [list(h) for h in self.set_aside]
        twin.draw_pile = list(self.draw_pile)
        twin.discard = list(self.discard)
        twin.replace_queue = list(self.replace_queue)
        twin.replace_cap = list(self.replace_cap)
        twin.replaced = list(self.replaced)
        twin.duel = list(self.duel)
        twin.attack = list(self.attack)
        twin.answers = list(self.answers)
        twin.events = list(self.events) if history else []
        twin.actions = list(self.actions) if history else []
        twin._legal_cache = None
        return twin


@dataclass(frozen=True)
class Deal:
    """The cards of a round start (R2.2, R2.3): each player's hand, as counts per value index
    (player_0's first), and the draw pile, value indices with the top card last."""

    hands: tuple[Sequence[int], Sequence[int]]
    pile: Sequence[int]


def make_rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """The generator of a game: a Generator as given, else one seeded from a non-negative
    integer (or from fresh entropy for None)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is not None and (isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise TacocatError(f"seed must be a non-negative integer, a numpy Generator or None, got {seed!r}")
    return np.random.default_rng(seed)
