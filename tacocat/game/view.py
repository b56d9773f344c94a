"""What one player may know (R7): their own cards plus public information, as a structure.

`player_view(state, player)` is the only door through which agents see a game: it copies the
player's own cards and the public facts and nothing else (no opponent cards, no draw pile
order, no hidden set-aside or duel card of the opponent). `sample_state(view, rng)` builds a
full `GameState` that agrees with a view, for determinized search.

Inferences the sampler draws from the public history (documented for the search agent):
  * exact: a failed answer is the defender's lowest card (R5.5), so every card they still
    hold is >= the highest card they failed with this round;
  * optional (`assume_forced_sacrifice`): a player who failed against attack card `a` could
    not defend, so every card they still hold is < the lowest such `a` this round. This is
    a belief about the opponent's play, not a rule, and is dropped when no deal fits it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields, is_dataclass
from enum import Enum
from typing import Any

import numpy as np

from tacocat.game.checks import make_state
from tacocat.game.engine import legal_actions
from tacocat.game.events import AnswerPlayed, AttackPlayed, Event, EventKind
from tacocat.game.ruleset import Ruleset
from tacocat.game.state import GameState, Phase


@dataclass(frozen=True)
class PlayerView:
    """Everything `player` knows. Card fields are counts or value indices of the ruleset.

    Every pair (`hand_sizes`, `replaced`, `last_duel`) and every player field (`to_act`,
    `attacker`, `winner`) is by seat, as in `GameState`: `view.hand_sizes[view.opponent]` is
    the opponent's hand size. Only the observation vector is egocentric (me, then opp).
    """

    rules: Ruleset
    player: int
    phase: Phase
    to_act: int | None
    space: int
    covered: tuple[bool, ...]
    rounds_played: int
    hand: tuple[int, ...]
    own_set_aside: tuple[int, ...]
    own_duel: int | None
    discard: tuple[int, ...]
    hand_sizes: tuple[int, int]
    draw_pile_size: int
    replace_cap: int
    replace_queue: tuple[int, ...]
    replaced: tuple[int | None, int | None]
    attacker: int | None
    attack: tuple[int, ...]
    answers: tuple[int, ...]
    last_duel: tuple[int, int] | None
    winner: int | None
    events: tuple[Event, ...]
    legal_actions: tuple[int, ...]

    @property
    def opponent(self) -> int:
        return 1 - self.player

    @property
    def arrow(self) -> int | None:
        return self.rules.arrows[self.space]

    @property
    def deal_size(self) -> int:
        return self.rules.board[self.space]

    def round_events(self) -> tuple[Event, ...]:
        """The public events of the current round (from its 'round' event on)."""
        round_kind = EventKind.ROUND  # (an enum member looked up once, not per event)
        for i in range(len(self.events) - 1, -1, -1):
            if self.events[i].kind is round_kind:
                return self.events[i:]
        return self.events

    def unseen(self) -> list[int]:
        """Counts per value of the cards this player has not seen this round (opponent's
        hand, hidden choices and the draw pile together)."""
        table = list(self.attack) + list(self.answers)
        out = []
        for v, copies in enumerate(self.rules.copies):
            seen = self.hand[v] + self.own_set_aside[v] + self.discard[v] + table.count(v)
            seen += 1 if self.own_duel == v else 0
            out.append(copies - seen)
        return out


def player_view(state: GameState, player: int) -> PlayerView:
    """The view of `player` (own cards + public information only, R7.3)."""
    acting = state.current_player == player
    return PlayerView(
        rules=state.rules,
        player=player,
        phase=state.phase,
        to_act=state.current_player,
        space=state.space,
        covered=tuple(state.covered),
        rounds_played=state.rounds_played,
        hand=tuple(state.hands[player]),
        own_set_aside=tuple(state.set_aside[player]),
        own_duel=state.duel[player],
        discard=tuple(state.discard),
        hand_sizes=(state.hand_size(0), state.hand_size(1)),
        draw_pile_size=len(state.draw_pile),
        replace_cap=state.replace_cap[player] if acting and state.phase is Phase.REPLACE else 0,
        replace_queue=tuple(state.replace_queue) if state.phase is Phase.REPLACE else (),
        replaced=(state.replaced[0], state.replaced[1]),
        attacker=state.attacker,
        attack=tuple(state.attack),
        answers=tuple(state.answers),
        last_duel=state.last_duel,
        winner=state.winner,
        events=tuple(state.events),
        legal_actions=legal_actions(state) if acting else (),
    )


def view_digest(view: PlayerView) -> int:
    """A 64-bit digest of everything in `view` but its ruleset, the same on every machine and
    run: two views with the same digest are (up to a hash collision) the same information
    state of the same player. `SearchAgent(seeded=True)` seeds its worlds from it."""
    text = repr(tuple(_plain(getattr(view, f.name)) for f in fields(view) if f.name != "rules"))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def _plain(value: Any) -> Any:
    """`value` as nested tuples of Python ints, strings and None (numpy integers and enums
    print differently across versions; their values do not)."""
    if isinstance(value, Enum):
        return _plain(value.value)
    if is_dataclass(value):
        return (type(value).__name__, *(_plain(getattr(value, f.name)) for f in fields(value)))
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (bool, str)) or value is None:
        return value
    return int(value)


def opponent_bounds(view: PlayerView, assume_forced_sacrifice: bool = False) -> tuple[int, int]:
    """[low, high) value-index bounds on the opponent's remaining cards from their failed
    answers this round (see the module docstring)."""
    low, high = 0, view.rules.n_values
    targets: tuple[int, ...] = ()
    answered = 0
    for event in view.round_events():
        if isinstance(event, AttackPlayed):
            targets, answered = event.cards, 0
        elif isinstance(event, AnswerPlayed):  # answers follow their attack card by card, highest first
            target = targets[answered]
            answered += 1
            if event.player == view.opponent and not event.defended:
                low = max(low, event.card)
                if assume_forced_sacrifice:
                    high = min(high, target)
    return low, high


def sample_opponent_hands(
    view: PlayerView, rng: np.random.Generator, count: int, assume_forced_sacrifice: bool = True
) -> list[list[int]]:
    """`count` hands the opponent may hold (lists of value indices), drawn without replacement
    from the unseen cards within `opponent_bounds`: with the forced-sacrifice belief if it leaves
    enough cards, else without it, else (inconsistent beliefs) from any unseen cards. The one
    sampler of hidden hands: the search's determinizations and the counter's attack weighing."""
    pool = [v for v, n in enumerate(view.unseen()) for _ in range(n)]
    size = view.hand_sizes[view.opponent]
    allowed = pool
    for low, high in (opponent_bounds(view, assume_forced_sacrifice), opponent_bounds(view, False)):
        within = [v for v in pool if low <= v < high]
        if len(within) >= size:
            allowed = within
            break
    return [[allowed[i] for i in rng.choice(len(allowed), size=size, replace=False)] for _ in range(count)]


def sample_state(view: PlayerView, rng: np.random.Generator, assume_forced_sacrifice: bool = True) -> GameState:
    """A full game state that agrees with everything in `view` (a determinization).

    The opponent's hidden cards are drawn from the unseen cards, within `opponent_bounds`;
    the rest, shuffled, form the draw pile. A hidden choice the opponent already made this
    step (a simultaneous set-aside, R4.1, or a duel card, R5.1) is sampled as "kept in hand"
    for the set-aside and as a random card of their hand for the duel. The game's future
    shuffles come from `rng`.
    """
    rules = view.rules
    me, opp = view.player, view.opponent
    pool = [v for v, n in enumerate(view.unseen()) for _ in range(n)]
    opp_cards = sample_opponent_hands(view, rng, 1, assume_forced_sacrifice)[0]
    rest = list(pool)
    for v in opp_cards:
        rest.remove(v)
    order = rng.permutation(len(rest))
    hands = [[0] * rules.n_values, [0] * rules.n_values]
    hands[me] = list(view.hand)
    for v in opp_cards:
        hands[opp][v] += 1
    set_aside = [[0] * rules.n_values, [0] * rules.n_values]
    set_aside[me] = list(view.own_set_aside)
    replace_cap = [0, 0]
    replace_cap[me] = view.replace_cap
    if view.phase is Phase.REPLACE and view.arrow is None and opp in view.replace_queue:
        replace_cap[opp] = rules.board[view.space]
    duel: list[int | None] = [None, None]
    duel[me] = view.own_duel
    if view.phase is Phase.DUEL and view.to_act == me and me == 1:
        card = opp_cards[int(rng.integers(len(opp_cards)))]
        hands[opp][card] -= 1
        duel[opp] = card
    over = view.phase is Phase.OVER
    return make_state(
        rules,
        rng=rng,
        space=view.space,
        covered=list(view.covered),
        rounds_played=view.rounds_played,
        phase=view.phase,
        to_act=view.to_act if view.to_act is not None else 0,
        hands=hands,
        set_aside=set_aside,
        draw_pile=[rest[i] for i in order],
        discard=list(view.discard),
        replace_queue=list(view.replace_queue),
        replace_cap=replace_cap,
        replaced=list(view.replaced),
        duel=duel,
        last_duel=view.last_duel,
        attacker=view.attacker,
        attack=list(view.attack),
        answers=list(view.answers),
        winner=view.winner,
        truncated=over and view.winner is None,  # R1.5: a game over without a winner was truncated
        events=view.events,
        where="sample_state",
    )
