"""Passes over a `GameTree` one level at a time: edge probabilities, reach, values, sequences.

The nodes of a `GameTree` are ordered by depth, so every level is a contiguous slice whose
parents lie in the level above. A top-down pass (reach probabilities, a player's last sequence)
gathers from the parents of a whole level at once; a bottom-up pass (expected values) scatters a
whole level onto its parents with `np.bincount`. The Python loop runs over levels (a dozen or
two), never over nodes. `TreeIndex` holds the index arrays every pass needs, built once per tree
(`tree_index`).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from tacocat.analysis.tree import TERMINAL, GameTree

_INDEXES: weakref.WeakKeyDictionary[GameTree, TreeIndex] = weakref.WeakKeyDictionary()


@dataclass(frozen=True, eq=False)
class PlayerIndex:
    """One player's decisions and sequences.

    A sequence is the player's own history of (information state, column) choices. The
    adapter's information state is the player's whole history (its cards, its own moves and
    every public event, R7.1-R7.2), so it has perfect recall: the sequence that leads to an
    information state is the same in all its histories (checked when the index is built), and
    the player's information states form a tree: `parent_seq` (0 = the empty sequence, else
    `1 + infoset * max_actions + column`) and `groups`, the player's information states grouped
    by how many own decisions precede them, deepest group first (children before parents).

      infosets    int64  the player's information states
      children    int64  nodes whose parent is one of the player's decision nodes
      last_seq    int64  per node: the player's last sequence on the path to it
      parent_seq  int64  per information state: the sequence leading to it (-1: other player's)
      groups      int64 arrays, deepest first
    """

    infosets: np.ndarray
    children: np.ndarray
    last_seq: np.ndarray
    parent_seq: np.ndarray
    groups: tuple[np.ndarray, ...]


@dataclass(frozen=True, eq=False)
class TreeIndex:
    """The index arrays of the level passes.

    levels         (start, stop) of every level, root first
    parent_player  int8   per node: the player of its parent (CHANCE, 0, 1; TERMINAL for the root)
    flat           int64  per node below a decision node: `infoset(parent) * max_actions +
                          column`, its entry in a flattened policy (0 elsewhere)
    below_decision bool   per node: its parent is a decision node
    terminals      int64  the terminal nodes
    players        (PlayerIndex of player_0, of player_1)
    """

    levels: tuple[tuple[int, int], ...]
    parent_player: np.ndarray
    flat: np.ndarray
    below_decision: np.ndarray
    terminals: np.ndarray
    players: tuple[PlayerIndex, PlayerIndex]


def tree_index(tree: GameTree) -> TreeIndex:
    """The `TreeIndex` of `tree`, built on first use and kept while the tree lives."""
    index = _INDEXES.get(tree)
    if index is None:
        index = _INDEXES[tree] = _build_index(tree)
    return index


def _build_index(tree: GameTree) -> TreeIndex:
    starts = tree.level_starts
    levels = tuple((int(starts[d]), int(starts[d + 1])) for d in range(tree.depth))
    parent = tree.parent.astype(np.int64)
    has_parent = parent >= 0
    parent_player = np.full(tree.n_nodes, TERMINAL, dtype=np.int8)
    parent_player[has_parent] = tree.player[parent[has_parent]]
    below_decision = parent_player >= 0
    flat = np.zeros(tree.n_nodes, dtype=np.int64)
    flat[below_decision] = (
        tree.infoset[parent[below_decision]].astype(np.int64) * tree.max_actions + tree.column[below_decision]
    )
    players = (_player_index(tree, levels, parent_player, flat, 0), _player_index(tree, levels, parent_player, flat, 1))
    return TreeIndex(
        levels=levels,
        parent_player=parent_player,
        flat=flat,
        below_decision=below_decision,
        terminals=np.flatnonzero(tree.player == TERMINAL),
        players=players,
    )


def _player_index(
    tree: GameTree, levels: tuple[tuple[int, int], ...], parent_player: np.ndarray, flat: np.ndarray, player: int
) -> PlayerIndex:
    own_edge = parent_player == player
    last_seq = top_down(tree.parent, levels, np.where(own_edge, 1 + flat, 0), combine="replace")
    decisions = top_down(tree.parent, levels, own_edge.astype(np.int64), combine="add")
    infosets = np.flatnonzero(tree.infoset_player == player)
    parent_seq = np.full(tree.n_infosets, -1, dtype=np.int64)
    parent_seq[infosets] = last_seq[tree.infoset_node[infosets]]
    nodes = np.flatnonzero(tree.player == player)
    if not np.array_equal(last_seq[nodes], parent_seq[tree.infoset[nodes]]):
        raise ValueError(
            f"player_{player}'s information states do not have perfect recall: "
            "two histories of one information state follow different own moves"
        )
    depth = decisions[tree.infoset_node[infosets]]
    order = np.argsort(-depth, kind="stable")
    _, cuts = np.unique(-depth[order], return_index=True)
    groups = tuple(np.split(infosets[order], cuts[1:]))
    return PlayerIndex(
        infosets=infosets, children=np.flatnonzero(own_edge), last_seq=last_seq, parent_seq=parent_seq, groups=groups
    )


def top_down(parent: np.ndarray, levels: tuple[tuple[int, int], ...], step: np.ndarray, combine: str) -> np.ndarray:
    """Per node, `step` combined along the path from the root: "multiply" (reach probabilities
    from edge factors), "add" (counts) or "replace" (the last non-zero entry: last sequences).
    The root's own entry is the start (1 for multiply, 0 otherwise). `step` may be (k, n_nodes)
    for k passes at once."""
    out = np.empty_like(step)
    out[..., 0] = 1 if combine == "multiply" else 0
    for start, stop in levels[1:]:
        above = out[..., parent[start:stop]]
        here = step[..., start:stop]
        if combine == "multiply":
            out[..., start:stop] = above * here
        elif combine == "add":
            out[..., start:stop] = above + here
        else:
            out[..., start:stop] = np.where(here != 0, here, above)
    return out


def edge_probabilities(tree: GameTree, policy: np.ndarray) -> np.ndarray:
    """Per node, the probability of the edge from its parent: the policy's at decision
    parents, the chance probability at chance parents (1 at the root)."""
    index = tree_index(tree)
    return np.where(index.below_decision, policy.reshape(-1)[index.flat], tree.chance_prob)


def reach(tree: GameTree, edge: np.ndarray, movers: tuple[int, ...]) -> np.ndarray:
    """Per node, the product of the edge probabilities on its path whose parent is moved by one
    of `movers` (0, 1, CHANCE): `(0,)` is player_0's own reach, `(1, CHANCE)` the reach of
    everyone but player_0 (its counterfactual reach)."""
    index = tree_index(tree)
    factor = np.where(np.isin(index.parent_player, movers), edge, 1.0)
    return top_down(tree.parent, index.levels, factor, combine="multiply")


def values(tree: GameTree, edge: np.ndarray) -> np.ndarray:
    """Per node, player_0's expected return below it when every edge is taken with probability
    `edge` (`edge_probabilities`)."""
    index = tree_index(tree)
    value = tree.utility.copy()
    for (above_start, _), (start, stop) in zip(index.levels[:-1][::-1], index.levels[1:][::-1], strict=True):
        weights = edge[start:stop] * value[start:stop]
        sums = np.bincount(tree.parent[start:stop] - above_start, weights=weights, minlength=start - above_start)
        value[above_start:start] += sums
    return value


def check_policy(tree: GameTree, policy: np.ndarray, name: str = "policy") -> np.ndarray:
    """`policy` as float64 if it is a policy on `tree`, else one-line ValueError: shape
    (n_infosets, max_actions), finite, non-negative, 0 in the padding, every row summing to 1."""
    policy = np.asarray(policy, dtype=np.float64)
    if policy.shape != (tree.n_infosets, tree.max_actions):
        raise ValueError(f"{name} has shape {policy.shape}; the tree needs ({tree.n_infosets}, {tree.max_actions})")
    if not np.isfinite(policy).all() or (policy < 0).any():
        raise ValueError(f"{name} holds negative or non-finite probabilities")
    if (policy[~tree.legal_mask()] != 0).any():
        raise ValueError(f"{name} puts probability on a padding column (no legal action there)")
    bad = np.flatnonzero(np.abs(policy.sum(axis=1) - 1.0) > 1e-9)
    if bad.size:
        raise ValueError(
            f"{name}'s row {bad[0]} sums to {policy[bad[0]].sum()!r}, not 1 ({bad.size} rows do not sum to 1)"
        )
    return policy
