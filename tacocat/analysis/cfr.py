"""CFR, CFR+ and discounted CFR vectorized over the levels of a `GameTree`.

Each iteration reproduces OpenSpiel's C++ `CFRSolver` / `CFRPlusSolver`
(open_spiel/algorithms/cfr.cc) and, for discounted CFR, its Python `DCFRSolver`
(open_spiel/python/algorithms/discounted_cfr.py), iterate by iterate:

- alternating updates: player_0 is updated first, then player_1 against player_0's new
  current policy;
- a player's update walks the whole tree with both current policies: counterfactual regrets
  `cf_reach(h) * (v(h, a) - v(h))` summed over the histories h of each information state, and
  the average policy's numerator `weight * own_reach(I) * current(I)`, with weight 1 (CFR),
  the iteration t (CFR+'s linear averaging) or t^gamma (discounted);
- then the regrets are reset or discounted (CFR+: negative regrets set to 0, regret matching+;
  discounted: positive regrets times t^alpha / (t^alpha + 1), negative ones times
  t^beta / (t^beta + 1)) and regret matching gives the new current policy: positive regrets
  normalized, uniform where no regret is positive;
- the average policy is the normalized numerator, uniform where it is all zero (an
  information state the player itself never reaches).

OpenSpiel skips subtrees that neither player reaches; every update there is multiplied by a
zero reach, so walking them changes nothing. OpenSpiel adds the average-policy numerator once
per history of an information state, which is the same numerator times the number of
histories; normalized, the average policies are equal (up to rounding).
"""

from __future__ import annotations

import numpy as np

from tacocat.analysis.levels import edge_probabilities, top_down, tree_index, values
from tacocat.analysis.tree import GameTree


class CFRSolver:
    """Vectorized CFR (`plus=False`) or CFR+ (`plus=True`: regret matching+, linear averaging),
    both with alternating updates as OpenSpiel's solvers."""

    def __init__(self, tree: GameTree, plus: bool = True):
        self.tree = tree
        self.plus = plus
        self.iteration = 0
        self._mask = tree.legal_mask()
        self._regret = np.zeros(self._mask.shape)
        self._numerator = np.zeros(self._mask.shape)
        self._current = tree.uniform_policy()

    def iterate(self, n: int = 1) -> None:
        """Run `n` iterations (each updates player_0, then player_1)."""
        if n < 0:
            raise ValueError(f"the number of iterations must be >= 0, not {n}")
        for _ in range(n):
            self.iteration += 1
            for player in (0, 1):
                self._update(player)

    def current_policy(self) -> np.ndarray:
        """The policy the next iteration plays (regret matching on the cumulative regrets)."""
        return self._current.copy()

    def average_policy(self) -> np.ndarray:
        """The average policy (what converges to a Nash equilibrium)."""
        total = self._numerator.sum(axis=1, keepdims=True)
        uniform = self._mask / self._mask.sum(axis=1, keepdims=True)
        return np.where(total > 0, self._numerator / np.where(total > 0, total, 1.0), uniform)

    def _average_weight(self) -> float:
        return float(self.iteration) if self.plus else 1.0

    def _discount(self, regret: np.ndarray) -> np.ndarray:
        """The cumulative regrets of the updated player's rows after an update."""
        return np.maximum(regret, 0.0) if self.plus else regret

    def _update(self, player: int) -> None:
        tree = self.tree
        index = tree_index(tree)
        own = index.players[player]
        edge = edge_probabilities(tree, self._current)
        own_edge = index.parent_player == player
        factors = np.stack([np.where(own_edge, edge, 1.0), np.where(own_edge, 1.0, edge)])
        own_reach, cf_reach = top_down(tree.parent, index.levels, factors, combine="multiply")
        value = values(tree, edge)
        if player == 1:
            value = -value
        children = own.children
        parents = tree.parent[children]
        regrets = cf_reach[parents] * (value[children] - value[parents])
        self._regret += np.bincount(index.flat[children], weights=regrets, minlength=self._regret.size).reshape(
            self._regret.shape
        )
        rows = own.infosets
        reach_rows = own_reach[tree.infoset_node[rows]]
        self._numerator[rows] += self._average_weight() * reach_rows[:, None] * self._current[rows]
        self._regret[rows] = self._discount(self._regret[rows])
        self._current[rows] = regret_matching(self._regret[rows], self._mask[rows])


class DiscountedCFRSolver(CFRSolver):
    """Discounted CFR (Brown and Sandholm 2019) as OpenSpiel's Python `DCFRSolver`: alternating
    updates, regret matching, positive regrets discounted by t^alpha / (t^alpha + 1) and
    negative ones by t^beta / (t^beta + 1) after each update, average weighted by t^gamma.
    `alpha=beta=gamma=1` is linear CFR (OpenSpiel's `LCFRSolver`)."""

    def __init__(self, tree: GameTree, alpha: float = 1.5, beta: float = 0.0, gamma: float = 2.0):
        super().__init__(tree, plus=False)
        self.alpha, self.beta, self.gamma = alpha, beta, gamma

    def _average_weight(self) -> float:
        return float(self.iteration) ** self.gamma

    def _discount(self, regret: np.ndarray) -> np.ndarray:
        t = float(self.iteration)
        return np.where(
            regret >= 0, regret * (t**self.alpha / (t**self.alpha + 1)), regret * (t**self.beta / (t**self.beta + 1))
        )


def regret_matching(regret: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Rows of positive regrets normalized; uniform over the legal columns where none is positive."""
    positive = np.where(mask, np.maximum(regret, 0.0), 0.0)
    total = positive.sum(axis=1, keepdims=True)
    uniform = mask / mask.sum(axis=1, keepdims=True)
    return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)
