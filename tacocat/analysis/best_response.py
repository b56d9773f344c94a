"""Exact values, best responses and NashConv of a policy on a `GameTree`, vectorized by level.

A policy is an array `(n_infosets, max_actions)` over the columns of `tree.legal`; one array
holds both players' rows (`combine` builds one from two). Values are expected returns of the
player in question (player_1's return is minus player_0's: the game is zero-sum).

A best response of player p to the other player's rows is found on p's sequences (the
information states have perfect recall, `tacocat.analysis.levels.PlayerIndex`): every terminal's
utility for p, weighted by the opponent's and chance's reach, is
summed onto p's last sequence before it; then p's information states are solved from the
deepest (most own decisions before them) to the shallowest, each taking its best column and
passing that value to the sequence that leads to it. The empty sequence ends with the
best-response value. NashConv is the sum over both players of what the best response gains
over the policy's value (0 at a Nash equilibrium; exploitability is half of it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tacocat.analysis.levels import (
    check_policy,
    edge_probabilities,
    reach,
    tree_index,
    values,
)
from tacocat.analysis.tree import CHANCE, GameTree


def policy_values(tree: GameTree, policy: np.ndarray) -> np.ndarray:
    """(2,) each player's expected return when both play `policy`."""
    policy = check_policy(tree, policy)
    root = values(tree, edge_probabilities(tree, policy))[0]
    return np.array([root, -root])


def _sequence_values(tree: GameTree, policy: np.ndarray, player: int) -> tuple[np.ndarray, np.ndarray]:
    """(best-response value of every sequence of `player`, the best column of each of its
    information states) against the other player's rows of `policy`."""
    index = tree_index(tree)
    own = index.players[player]
    edge = edge_probabilities(tree, policy)
    others = reach(tree, edge, (1 - player, CHANCE))
    sign = 1.0 if player == 0 else -1.0
    terminals = index.terminals
    size = 1 + tree.n_infosets * tree.max_actions
    seq_value = np.bincount(
        own.last_seq[terminals], weights=sign * tree.utility[terminals] * others[terminals], minlength=size
    )
    best = np.zeros(tree.n_infosets, dtype=np.int64)
    legal = tree.legal_mask()
    for group in own.groups:  # deepest first: a group's sequences hold all their children's values
        rows = np.where(legal[group], seq_value[1:].reshape(tree.n_infosets, tree.max_actions)[group], -np.inf)
        best[group] = rows.argmax(axis=1)
        seq_value += np.bincount(own.parent_seq[group], weights=rows.max(axis=1), minlength=size)
    return seq_value, best


def best_response_values(tree: GameTree, policy: np.ndarray) -> np.ndarray:
    """(2,) the value of each player's best response to the other player's rows of `policy`."""
    policy = check_policy(tree, policy)
    return np.array([_sequence_values(tree, policy, player)[0][0] for player in (0, 1)])


@dataclass(frozen=True)
class Exploitability:
    """A policy's values and its best responses' values, each (2,) by player."""

    policy_values: np.ndarray
    best_response_values: np.ndarray

    @property
    def nash_conv(self) -> float:
        """The sum over both players of best-response value minus policy value (>= 0)."""
        return float(np.sum(self.best_response_values - self.policy_values))

    @property
    def exploitability(self) -> float:
        return self.nash_conv / 2


def exploitability(tree: GameTree, policy: np.ndarray) -> Exploitability:
    """`policy`'s values and the values of each player's best response to it."""
    return Exploitability(policy_values(tree, policy), best_response_values(tree, policy))


def nash_conv(tree: GameTree, policy: np.ndarray) -> float:
    """The sum over both players of best-response value minus policy value (>= 0)."""
    return exploitability(tree, policy).nash_conv


def best_response_policy(tree: GameTree, policy: np.ndarray, player: int) -> np.ndarray:
    """`policy` with `player`'s rows replaced by a pure best response to the other player's
    rows (the first best column on ties; the first legal column where nothing reaches the
    information state). Its `policy_values` for `player` is the best-response value."""
    policy = check_policy(tree, policy)
    if player not in (0, 1):
        raise ValueError(f"player must be 0 or 1, not {player!r}")
    _, best = _sequence_values(tree, policy, player)
    rows = tree_index(tree).players[player].infosets
    out = policy.copy()
    out[rows] = 0.0
    out[rows, best[rows]] = 1.0
    return out


def combine(tree: GameTree, policy_for_player0: np.ndarray, policy_for_player1: np.ndarray) -> np.ndarray:
    """One policy: player_0's rows from the first array, player_1's from the second."""
    first = check_policy(tree, policy_for_player0, "policy_for_player0")
    second = check_policy(tree, policy_for_player1, "policy_for_player1")
    return np.where((tree.infoset_player == 0)[:, None], first, second)
