"""A preset's whole game tree as flat arrays: enumerated once, then solved without tree walks.

`enumerate_tree(rules)` walks every history of the OpenSpiel adapter (`tacocat.game.openspiel`:
the reference engine, with exact chance probabilities, R2.2/R4.3) once and stores it as numpy
arrays, nodes ordered by depth so that every level is a contiguous slice whose parents lie in
the level above. Solvers (`tacocat.analysis.cfr`) and best responses
(`tacocat.analysis.best_response`) then run vectorized over levels, never walking the tree in
Python again.

Information states are the adapter's `information_state_string` (perfect recall, R7): every
decision node points at its information state, whose legal actions are one padded row of
`legal`. A policy on the tree is an array `(n_infosets, max_actions)` of probabilities over
those columns (0 in the padding).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tacocat.game.config import RulesConfig

#: `player` of a chance node and of a terminal node (decision nodes hold 0 or 1)
CHANCE = -1
TERMINAL = -2
#: the version of the arrays `enumerate_tree` builds (what they hold, in which order); bump it
#: when either changes, so that trees cached by `tacocat.analysis.store` are rebuilt
TREE_FORMAT = 1


@dataclass(frozen=True, eq=False)
class GameTree:
    """Every history of one ruleset. Node arrays have one entry per history (the root is node
    0), ordered by depth: level d is `nodes[level_starts[d]:level_starts[d + 1]]`.

    Node arrays:
      player       int8   CHANCE, TERMINAL, or the player to act (0 / 1)
      parent       int32  the parent node (-1 for the root)
      action       int32  the action id or chance outcome that led here (-1 for the root)
      column       int16  its index among the parent's legal actions (decision parents: the
                          column in the parent's information-state row; chance parents: the
                          outcome's index)
      chance_prob  float64  the chance probability of that edge (1 below decision nodes)
      infoset      int32  the information state of a decision node (-1 elsewhere)
      utility      float64  player_0's return at terminal nodes (0 elsewhere); zero-sum
    Information-state arrays:
      infoset_player  int8   whose information state it is
      legal           int32  (n_infosets, max_actions): legal action ids, ascending, -1 padded
      n_legal         int16  the number of legal actions
      infoset_node    int32  one history of the information state (its first in depth order)
      infoset_keys    the information_state_string of each
    """

    rules: RulesConfig
    player: np.ndarray
    parent: np.ndarray
    action: np.ndarray
    column: np.ndarray
    chance_prob: np.ndarray
    infoset: np.ndarray
    utility: np.ndarray
    level_starts: np.ndarray
    infoset_player: np.ndarray
    legal: np.ndarray
    n_legal: np.ndarray
    infoset_node: np.ndarray
    infoset_keys: tuple[str, ...] = field(repr=False)

    @property
    def n_nodes(self) -> int:
        return int(self.player.shape[0])

    @property
    def n_infosets(self) -> int:
        return int(self.infoset_player.shape[0])

    @property
    def max_actions(self) -> int:
        return int(self.legal.shape[1])

    @property
    def depth(self) -> int:
        """The number of levels (the longest history plus one)."""
        return int(self.level_starts.shape[0] - 1)

    def legal_mask(self) -> np.ndarray:
        """(n_infosets, max_actions) bool: the columns that hold a legal action."""
        return self.legal >= 0

    def uniform_policy(self) -> np.ndarray:
        """Uniform over the legal actions of every information state."""
        mask = self.legal_mask()
        return mask / mask.sum(axis=1, keepdims=True)

    def history(self, node: int) -> list[int]:
        """The actions and chance outcomes from the root to `node`, in order."""
        path = []
        while node > 0:
            path.append(int(self.action[node]))
            node = int(self.parent[node])
        return path[::-1]

    def state_at(self, node: int):  # -> tacocat.game.openspiel.TacocatState
        """The OpenSpiel state of history `node`, replayed through the adapter."""
        from tacocat.game.openspiel import load_game

        state = load_game(self.rules).new_initial_state()
        for action in self.history(node):
            state.apply_action(action)
        return state

    def infoset_state(self, infoset: int):  # -> tacocat.game.openspiel.TacocatState
        """One history of information state `infoset` (the same one every time) as a state."""
        return self.state_at(int(self.infoset_node[infoset]))


def enumerate_tree(rules: RulesConfig, progress: bool = False) -> GameTree:
    """Walk every history of `rules` through the OpenSpiel adapter into a `GameTree`.

    Costs about 0.1 ms a history on the 2-core machine; the caller bounds the size first."""
    from tqdm import tqdm

    from tacocat.game.openspiel import load_game

    game = load_game(rules)
    player: list[int] = []
    parent, action, column, prob, infoset, utility, depth = [], [], [], [], [], [], []
    keys: dict[str, int] = {}
    info_player: list[int] = []
    info_legal: list[list[int]] = []
    # depth-first, children pushed in reverse so they are numbered in action order
    # (pyspiel.State, parent, action, column, probability, depth)
    stack: list[tuple[Any, int, int, int, float, int]] = [(game.new_initial_state(), -1, -1, -1, 1.0, 0)]
    bar = tqdm(desc="enumerating histories", unit=" histories", disable=not progress, mininterval=1.0)
    while stack:
        state, up, act, col, p, d = stack.pop()
        node = len(player)
        parent.append(up)
        action.append(act)
        column.append(col)
        prob.append(p)
        depth.append(d)
        bar.update()
        if state.is_terminal():
            returns = state.returns()
            if abs(returns[0] + returns[1]) > 1e-12:
                raise ValueError(f"history {state.history()} is not zero-sum: {returns}")
            player.append(TERMINAL)
            infoset.append(-1)
            utility.append(float(returns[0]))
            continue
        utility.append(0.0)
        if state.is_chance_node():
            player.append(CHANCE)
            infoset.append(-1)
            children = [(state.child(a), node, a, i, q, d + 1) for i, (a, q) in enumerate(state.chance_outcomes())]
        else:
            who = state.current_player()
            legal = state.legal_actions()
            key = state.information_state_string()
            index = keys.setdefault(key, len(keys))
            if index == len(info_player):
                info_player.append(who)
                info_legal.append(legal)
            elif info_legal[index] != legal:
                raise ValueError(f"information state {key!r} has two sets of legal actions")
            player.append(who)
            infoset.append(index)
            children = [(state.child(a), node, a, i, 1.0, d + 1) for i, a in enumerate(legal)]
        stack.extend(reversed(children))
    bar.close()
    return _by_depth(
        rules, player, parent, action, column, prob, infoset, utility, depth, list(keys), info_player, info_legal
    )


def _by_depth(
    rules: RulesConfig,
    player: list[int],
    parent: list[int],
    action: list[int],
    column: list[int],
    prob: list[float],
    infoset: list[int],
    utility: list[float],
    depth: list[int],
    keys: list[str],
    info_player: list[int],
    info_legal: list[list[int]],
) -> GameTree:
    """Renumber the depth-first nodes level by level (stably, so siblings keep action order)."""
    depth_a = np.asarray(depth, dtype=np.int64)
    order = np.argsort(depth_a, kind="stable")
    new_id = np.empty_like(order)
    new_id[order] = np.arange(order.size)
    parent_a = np.asarray(parent, dtype=np.int64)[order]
    parent_a = np.where(parent_a >= 0, new_id[np.maximum(parent_a, 0)], -1)
    infoset_a = np.asarray(infoset, dtype=np.int32)[order]
    levels = np.searchsorted(depth_a[order], np.arange(depth_a.max() + 2))
    width = max((len(row) for row in info_legal), default=1)
    legal = np.full((len(info_legal), width), -1, dtype=np.int32)
    for i, row in enumerate(info_legal):
        legal[i, : len(row)] = row
    first = np.full(len(keys), -1, dtype=np.int32)
    decision = np.flatnonzero(infoset_a >= 0)
    seen, first_index = np.unique(infoset_a[decision], return_index=True)
    first[seen] = decision[first_index]
    return GameTree(
        rules=rules,
        player=np.asarray(player, dtype=np.int8)[order],
        parent=parent_a.astype(np.int32),
        action=np.asarray(action, dtype=np.int32)[order],
        column=np.asarray(column, dtype=np.int16)[order],
        chance_prob=np.asarray(prob, dtype=np.float64)[order],
        infoset=infoset_a,
        utility=np.asarray(utility, dtype=np.float64)[order],
        level_starts=levels.astype(np.int64),
        infoset_player=np.asarray(info_player, dtype=np.int8),
        legal=legal,
        n_legal=np.asarray([len(row) for row in info_legal], dtype=np.int16),
        infoset_node=first,
        infoset_keys=tuple(keys),
    )
