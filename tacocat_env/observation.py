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

from tacocat_env.engine import GameState, Phase, moves_to_goal
from tacocat_env.render import render_view
from tacocat_env.ruleset import Ruleset
from tacocat_env.view import player_view

if TYPE_CHECKING:
    from tacocat_env.view import PlayerView


class ObservationLayout:
    """The named slices of the observation vector of one ruleset."""

    def __init__(self, rules: Ruleset) -> None:
        v, s = rules.n_values, rules.n_spaces
        sizes = [
            ("own_hand", v), ("own_set_aside", v), ("discard", v), ("attack", v), ("answers", v),
            ("current_attack_card", v), ("last_duel_own", v), ("last_duel_opp", v),
            ("trick_failing", 1), ("hand_sizes", 2), ("draw_pile_size", 1), ("phase", 5),
            ("my_turn", 1), ("replace_allowance", 1), ("replaced", 2), ("replace_role", 3),
            ("tacocat", s), ("covered", s), ("moves_to_goal", 2), ("deal_size", 1),
            ("arrow", 3), ("attacker", 3), ("round", 1),
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
        for name, bound in (("hand_sizes", max(rules.board)), ("draw_pile_size", deck),
                            ("replace_allowance", max(rules.board)), ("replaced", max(rules.board)),
                            ("moves_to_goal", s + 1), ("deal_size", max(rules.board))):
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
        state.rules, player, state.phase, state.to_act, state.hands[player], state.set_aside[player],
        state.duel[player], state.discard, state.attack, state.answers, state.last_duel,
        state.replace_cap[player], state.replaced[player], state.replaced[opp], state.space, state.covered,
        state.winner, state.attacker, state.rounds_played,
        sum(state.hands[opp]) + sum(state.set_aside[opp]) + (state.duel[opp] is not None), len(state.draw_pile),
    )


def encode_view(view: PlayerView) -> np.ndarray:
    """The same vector from a `PlayerView` (what agents hold): equal to
    `encode(state, view.player)` for the state the view was taken from (tested)."""
    return _encode(
        view.rules, view.player, view.phase, view.to_act, view.hand, view.own_set_aside, view.own_duel,
        view.discard, view.attack, view.answers, view.last_duel, view.replace_cap,
        view.replaced[view.player], view.replaced[view.opponent], view.space, view.covered, view.winner,
        view.attacker, view.rounds_played, view.hand_sizes[view.opponent], view.draw_pile_size,
    )


def _encode(
    rules: Ruleset, player: int, phase: Phase, to_act: int | None, hand: Sequence[int], aside: Sequence[int],
    own_duel: int | None, discard: Sequence[int], attack_cards: Sequence[int], answer_cards: Sequence[int],
    duel: tuple[int, int] | None, replace_cap: int, replaced_own: int | None, replaced_opp: int | None,
    space: int, covered: Sequence[bool], winner: int | None, attacker: int | None, rounds_played: int,
    opp_size: int, draw_size: int,
) -> np.ndarray:
    """The one encoder: the observer's own cards and public facts in, the vector out."""
    tables = _TABLES.get(rules)
    if tables is None:
        tables = _TABLES[rules] = _Tables(rules)
    one_hot_v = tables.one_hot_v
    over = phase is Phase.OVER
    if own_duel is None:
        own_aside = aside
    else:
        own_aside = list(aside)
        own_aside[own_duel] += 1
    if attack_cards or answer_cards:
        attack = [0] * rules.n_values
        for v in attack_cards:
            attack[v] += 1
        answers = [0] * rules.n_values
        for v in answer_cards:
            answers[v] += 1
        failing = int(any(a < t for a, t in zip(answer_cards, attack_cards)))
    else:  # no trick on the table (most steps)
        attack = answers = tables.zeros_v
        failing = 0
    current = attack_cards[len(answer_cards)] if phase is Phase.ANSWER else None
    if duel is None:
        duel_own = duel_opp = None
    else:
        duel_own, duel_opp = duel[player], duel[1 - player]
    arrow = rules.arrows[space]
    aside_total = sum(aside)
    allowance = replace_cap - aside_total if phase is Phase.REPLACE and to_act == player else 0
    board = _board_block(tables, rules, space, covered, winner, player, arrow, over)
    values = [
        *hand, *own_aside, *discard, *attack, *answers,
        *one_hot_v[current], *one_hot_v[duel_own], *one_hot_v[duel_opp],
        failing,
        sum(hand) + aside_total + (own_duel is not None),
        opp_size,
        draw_size,
        *_PHASE_ONE_HOT[phase],
        int(to_act == player and not over), allowance, replaced_own or 0, replaced_opp or 0,
        *_THREE_ONE_HOT[0 if arrow is None else (1 if arrow == player else 2)],
        *board,
        *_THREE_ONE_HOT[2 if attacker is None else (0 if attacker == player else 1)],
        0,  # "round", set below
    ]
    # every entry but the last ("round") is a small non-negative integer: converting them
    # through bytes is about three times faster than np.asarray on the list
    if tables.small_ints:
        out = np.frombuffer(bytes(values), dtype=np.uint8).astype(np.float32)
    else:
        out = np.array(values, dtype=np.float32)
    out[-1] = rounds_played / rules.config.max_rounds
    return out


class _Tables:
    """Per-ruleset constants and caches of `encode` (pure speed-ups, same numbers)."""

    def __init__(self, rules: Ruleset) -> None:
        n = rules.n_values
        self.zeros_v = [0] * n
        #: every integer entry fits a byte (false only for decks of more than 255 cards)
        self.small_ints = rules.config.deck_size <= 255
        #: one_hot_v[i]: one-hot list of value index i; one_hot_v[None]: all zeros
        self.one_hot_v: dict[int | None, list[int]] = {i: _one_hot(n, i) for i in range(n)}
        self.one_hot_v[None] = self.zeros_v
        #: (player, space, covered, winner, over) -> tacocat + covered + moves_to_goal + deal_size + arrow
        self.board: dict[tuple, list[int]] = {}


_TABLES: dict[Ruleset, _Tables] = {}
_PHASE_ONE_HOT = {p: _one_hot(5, int(p)) for p in Phase}
_THREE_ONE_HOT = [_one_hot(3, i) for i in range(3)]


def _board_block(tables: _Tables, rules: Ruleset, space: int, covered: Sequence[bool], winner: int | None,
                 player: int, arrow: int | None, over: bool) -> list[int]:
    """The slices tacocat, covered, moves_to_goal, deal_size and arrow (cached: they change
    only between rounds)."""
    key = (player, space, tuple(covered), winner, over)
    block = tables.board.get(key)
    if block is None:
        n_spaces = rules.n_spaces
        order = range(n_spaces) if player == 0 else range(n_spaces - 1, -1, -1)
        tacocat = [int(s == space and not over) for s in order]
        covered_flags = [int(covered[s]) for s in order]
        arrow_index = 2 if arrow is None else (0 if arrow == player else 1)
        block = (
            tacocat + covered_flags
            + [moves_to_goal(covered, space, winner, player), moves_to_goal(covered, space, winner, 1 - player),
               rules.board[space]]
            + _one_hot(3, arrow_index)
        )
        if len(tables.board) >= 100_000:
            tables.board.clear()
        tables.board[key] = block
    return block


def legal_mask(legal: Sequence[int], size: int) -> np.ndarray:
    """An int8 mask of `size` with 1 at the legal action ids."""
    mask = np.zeros(size, dtype=np.int8)
    mask[np.asarray(legal, dtype=np.intp)] = 1
    return mask


def describe(state: GameState, player: int) -> str:
    """The text twin of `encode`: what `player` knows, in words (`render.render_view` of the
    player's view, the same text a person sees in `tacocat play`)."""
    return render_view(player_view(state, player))
