"""Egocentric observations: one flat float32 vector with named slices, plus a text twin.

"me" is the observing player and "opp" the other one; the board is seen from my goal
(index 0 is the space next to my goal), so one policy can play either seat. The vector is a
function of the observer's private cards and of public information only (R7.3): the
opponent's hand, their hidden set-aside or duel card and the draw pile order never enter it.

Slices (V = number of card values, S = number of board spaces):

=====================  ====  ===========================================================
name                   size  meaning
=====================  ====  ===========================================================
own_hand               V     my cards in hand, count per value
own_set_aside          V     cards I set aside in this replace step / my hidden duel card
discard                V     face-up cards of this round, count per value (R2.3)
attack                 V     cards of the attack in progress, count per value
answers                V     answers given so far to that attack, count per value
current_attack_card    V     one-hot: the attack card to answer now (R5.5)
last_duel_own          V     one-hot: my card in the last revealed duel of the round
last_duel_opp          V     one-hot: the opponent's card in that duel
trick_failing          1     1 if an answer of this trick already failed to defend
hand_sizes             2     public hand sizes, me then opp
draw_pile_size         1     cards in the draw pile
phase                  5     one-hot: replace, duel, attack, answer, game over
my_turn                1     1 if I am the player to act
replace_allowance      1     cards I may still set aside now (0 when not replacing)
replaced               2     revealed replace counts of this round, me then opp
replace_role           3     one-hot: simultaneous (two arrows), I replace first, second
tacocat                S     one-hot: the Tacocat's space, from my goal
covered                S     1 for each covered space, from my goal
moves_to_goal          2     decisive rounds I must win to reach my goal, then opp
deal_size              1     deal size of the Tacocat's space
arrow                  3     one-hot: the arrow points at me, at opp, both
attacker               3     one-hot: I attack, opp attacks, no attacker yet
round                  1     rounds played / max_rounds
=====================  ====  ===========================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from tacocat.game.engine import moves_to_goal
from tacocat.game.render.text import render_view
from tacocat.game.ruleset import Ruleset
from tacocat.game.state import GameState, Phase
from tacocat.game.view import player_view

if TYPE_CHECKING:
    from tacocat.game.view import PlayerView


class ObservationLayout:
    """The named slices of the observation vector of one ruleset."""

    def __init__(self, rules: Ruleset) -> None:
        v, s = rules.n_values, rules.n_spaces
        sizes = [
            ("own_hand", v),
            ("own_set_aside", v),
            ("discard", v),
            ("attack", v),
            ("answers", v),
            ("current_attack_card", v),
            ("last_duel_own", v),
            ("last_duel_opp", v),
            ("trick_failing", 1),
            ("hand_sizes", 2),
            ("draw_pile_size", 1),
            ("phase", 5),
            ("my_turn", 1),
            ("replace_allowance", 1),
            ("replaced", 2),
            ("replace_role", 3),
            ("tacocat", s),
            ("covered", s),
            ("moves_to_goal", 2),
            ("deal_size", 1),
            ("arrow", 3),
            ("attacker", 3),
            ("round", 1),
        ]
        self.slices: dict[str, slice] = {}
        start = 0
        for name, size in sizes:
            self.slices[name] = slice(start, start + size)
            start += size
        self.size = start
        deck = rules.config.deck_size
        #: upper bound of every entry (the lower bound is 0)
        self.high = np.ones(self.size, dtype=np.float32)
        for name in ("own_hand", "own_set_aside", "discard", "attack", "answers"):
            self.high[self.slices[name]] = rules.copies
        for name, bound in (
            ("hand_sizes", max(rules.board)),
            ("draw_pile_size", deck),
            ("replace_allowance", max(rules.board)),
            ("replaced", max(rules.board)),
            ("moves_to_goal", s + 1),
            ("deal_size", max(rules.board)),
        ):
            self.high[self.slices[name]] = bound

    def views(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """Named views into an observation vector (no copies)."""
        return {name: obs[sl] for name, sl in self.slices.items()}

    def table(self) -> list[tuple[str, int, int]]:
        """(name, start, stop) of every slice: the documented layout."""
        return [(n, sl.start, sl.stop) for n, sl in self.slices.items()]


def _one_hot(size: int, index: int | None) -> list[int]:
    out = [0] * size
    if index is not None:
        out[index] = 1
    return out


def encode(state: GameState, player: int) -> np.ndarray:
    """The observation vector of `player` (a function of its private + public info only)."""
    opp = 1 - player
    return _encode(
        state.rules,
        player,
        state.phase,
        state.to_act,
        state.hands[player],
        state.set_aside[player],
        state.duel[player],
        state.discard,
        state.attack,
        state.answers,
        state.last_duel,
        state.replace_cap[player],
        state.replaced[player],
        state.replaced[opp],
        state.space,
        state.covered,
        state.winner,
        state.attacker,
        state.rounds_played,
        sum(state.hands[opp]) + sum(state.set_aside[opp]) + (state.duel[opp] is not None),
        len(state.draw_pile),
    )


def encode_view(view: PlayerView) -> np.ndarray:
    """The same vector from a `PlayerView` (what agents hold): equal to
    `encode(state, view.player)` for the state the view was taken from (tested)."""
    return _encode(
        view.rules,
        view.player,
        view.phase,
        view.to_act,
        view.hand,
        view.own_set_aside,
        view.own_duel,
        view.discard,
        view.attack,
        view.answers,
        view.last_duel,
        view.replace_cap,
        view.replaced[view.player],
        view.replaced[view.opponent],
        view.space,
        view.covered,
        view.winner,
        view.attacker,
        view.rounds_played,
        view.hand_sizes[view.opponent],
        view.draw_pile_size,
    )


def _encode(
    rules: Ruleset,
    player: int,
    phase: Phase,
    to_act: int | None,
    hand: Sequence[int],
    aside: Sequence[int],
    own_duel: int | None,
    discard: Sequence[int],
    attack_cards: Sequence[int],
    answer_cards: Sequence[int],
    duel: tuple[int, int] | None,
    replace_cap: int,
    replaced_own: int | None,
    replaced_opp: int | None,
    space: int,
    covered: Sequence[bool],
    winner: int | None,
    attacker: int | None,
    rounds_played: int,
    opp_size: int,
    draw_size: int,
) -> np.ndarray:
    """The one encoder: the observer's own cards and public facts in, the vector out.

    Every entry but "draw_pile_size" and "round" is an integer of at most 255 (the config's
    limits: 100 copies of a value, deals of 50 cards, 25 spaces), so the vector is assembled as
    `bytes`, slice by slice (one-hot slices and the board block come ready-made from per-ruleset
    tables), and converted once; those two entries are written as floats afterwards."""
    tables = _TABLES.get(rules)
    if tables is None:
        tables = _TABLES[rules] = _Tables(rules)
    one_hot_v = tables.one_hot_v
    over = phase is _OVER
    aside_total = sum(aside)
    if own_duel is None:
        own_aside = bytes(aside)
        own_size = sum(hand) + aside_total
    else:  # my hidden duel card counts as set aside (R5.1)
        counts = list(aside)
        counts[own_duel] += 1
        own_aside = bytes(counts)
        own_size = sum(hand) + aside_total + 1
    if attack_cards or answer_cards:  # a trick on the table: attack, answers, current_attack_card
        n = rules.n_values
        counts = [0] * (2 * n)
        for v in attack_cards:
            counts[v] += 1
        for v in answer_cards:
            counts[n + v] += 1
        trick = bytes(counts) + one_hot_v[attack_cards[len(answer_cards)] if phase is _ANSWER else None]
        failing = any(a < t for a, t in zip(answer_cards, attack_cards, strict=False))
    else:  # no trick (most steps)
        trick = tables.no_trick
        failing = False
    duel_block = tables.no_duel if duel is None else tables.duel_pair[duel[player]][duel[1 - player]]
    mine = to_act == player and not over
    out = np.frombuffer(
        b"".join(
            (
                bytes(hand),
                own_aside,
                bytes(discard),
                trick,
                duel_block,
                bytes(
                    (
                        failing,
                        own_size,
                        opp_size,
                        0,  # 0: draw_pile_size, written below
                        *_PHASE_ONE_HOT[phase],
                        mine,
                        replace_cap - aside_total if mine and phase is _REPLACE else 0,
                        replaced_own or 0,
                        replaced_opp or 0,
                    )
                ),
                _board_block(tables, rules, space, covered, winner, player, over),
                _ATTACKER_AND_ROUND[2 if attacker is None else (0 if attacker == player else 1)],  # round: below
            )
        ),
        np.uint8,
    ).astype(np.float32)  # (positional dtype: a keyword costs more)
    out[tables.draw_index] = draw_size
    out[-1] = rounds_played / rules.config.max_rounds
    return out


class _Tables:
    """Per-ruleset constants and caches of `encode` as `bytes` (pure speed-ups, same numbers)."""

    def __init__(self, rules: Ruleset) -> None:
        n = rules.n_values
        zeros = bytes(n)
        #: one_hot_v[i]: one-hot of value index i; one_hot_v[None]: all zeros
        self.one_hot_v: dict[int | None, bytes] = {i: bytes(_one_hot(n, i)) for i in range(n)}
        self.one_hot_v[None] = zeros
        #: the attack, answers and current_attack_card slices when no trick is on the table
        self.no_trick = zeros + zeros + zeros
        #: last_duel_own + last_duel_opp: duel_pair[own][opp], and before any duel of the round
        self.duel_pair = [[self.one_hot_v[own] + self.one_hot_v[opp] for opp in range(n)] for own in range(n)]
        self.no_duel = zeros + zeros
        #: index of "draw_pile_size" (the one integer entry that may exceed 255)
        self.draw_index = ObservationLayout(rules).slices["draw_pile_size"].start
        #: (player, space, covered, winner, over) ->
        #: replace_role + tacocat + covered + moves_to_goal + deal_size + arrow
        self.board: dict[tuple, bytes] = {}


_TABLES: dict[Ruleset, _Tables] = {}
# phases as module constants: looking an enum member up on its class costs more than the test
_REPLACE, _ANSWER, _OVER = Phase.REPLACE, Phase.ANSWER, Phase.OVER
_PHASE_ONE_HOT = [tuple(_one_hot(5, int(p))) for p in Phase]
#: the attacker one-hot (me, opp, none) followed by a 0 for "round"
_ATTACKER_AND_ROUND = [bytes([*_one_hot(3, i), 0]) for i in range(3)]


def _board_block(
    tables: _Tables, rules: Ruleset, space: int, covered: Sequence[bool], winner: int | None, player: int, over: bool
) -> bytes:
    """The slices replace_role, tacocat, covered, moves_to_goal, deal_size and arrow (cached:
    they change only between rounds)."""
    key = (player, space, tuple(covered), winner, over)
    block = tables.board.get(key)
    if block is None:
        n_spaces = rules.n_spaces
        order = range(n_spaces) if player == 0 else range(n_spaces - 1, -1, -1)
        arrow = rules.arrows[space]
        replace_role = 0 if arrow is None else (1 if arrow == player else 2)
        tacocat = [int(s == space and not over) for s in order]
        covered_flags = [int(covered[s]) for s in order]
        arrow_index = 2 if arrow is None else (0 if arrow == player else 1)
        block = bytes(
            _one_hot(3, replace_role)
            + tacocat
            + covered_flags
            + [
                moves_to_goal(covered, space, winner, player),
                moves_to_goal(covered, space, winner, 1 - player),
                rules.board[space],
            ]
            + _one_hot(3, arrow_index)
        )
        if len(tables.board) >= 100_000:
            tables.board.clear()
        tables.board[key] = block
    return block


def legal_mask(legal: Sequence[int], size: int) -> np.ndarray:
    """An int8 mask of `size` with 1 at the legal action ids (a fresh, writable array)."""
    flags = bytearray(size)  # filled in Python and wrapped: cheaper than numpy's fancy indexing
    for action in legal:
        flags[action] = 1
    return np.frombuffer(flags, np.int8)


def describe(state: GameState, player: int) -> str:
    """The text twin of `encode`: what `player` knows, in words (`render.text.render_view` of the
    player's view, the same text a person sees in `tacocat play`)."""
    return render_view(player_view(state, player))
