"""Tree policies to and from OpenSpiel's tabular policies, keyed by information-state string.

A tree policy is an array `(n_infosets, max_actions)` over the columns of `tree.legal`
(`tacocat.analysis.tree`); OpenSpiel keys a tabular policy by `information_state_string` and
lists `(action, probability)` pairs. Both OpenSpiel tables convert: the C++
`pyspiel.TabularPolicy.policy_table()` and the Python `policy.TabularPolicy.to_dict()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from tacocat.analysis.tree import GameTree


def to_tabular_policy(tree: GameTree, policy: np.ndarray):  # -> pyspiel.TabularPolicy
    """`policy` as a C++ `pyspiel.TabularPolicy` (usable by `pyspiel.nash_conv`,
    `pyspiel.TabularBestResponse` and, through `policy.pyspiel_policy_to_python_policy`, the
    Python algorithms)."""
    import pyspiel

    return pyspiel.TabularPolicy(to_policy_table(tree, policy))


def to_policy_table(tree: GameTree, policy: np.ndarray) -> dict[str, list[tuple[int, float]]]:
    """{information_state_string: [(action, probability), ...]} of every information state."""
    policy = np.asarray(policy, dtype=np.float64)
    if policy.shape != (tree.n_infosets, tree.max_actions):
        raise ValueError(f"policy has shape {policy.shape}; the tree needs ({tree.n_infosets}, {tree.max_actions})")
    return {
        key: [(int(a), float(p)) for a, p in zip(tree.legal[i, :n], policy[i, :n], strict=True)]
        for i, (key, n) in enumerate(zip(tree.infoset_keys, tree.n_legal, strict=True))
    }


def from_policy_table(tree: GameTree, table: Mapping[str, Iterable[tuple[int, float]]]) -> np.ndarray:
    """The tree policy of an OpenSpiel table; every information state of the tree must be in
    it, with probabilities on legal actions only (an action it leaves out gets 0)."""
    policy = np.zeros((tree.n_infosets, tree.max_actions))
    for i, key in enumerate(tree.infoset_keys):
        if key not in table:
            raise ValueError(f"the table has no entry for information state {i} ({key!r})")
        columns = {int(a): c for c, a in enumerate(tree.legal[i, : tree.n_legal[i]])}
        for action, prob in table[key]:
            if int(action) not in columns:
                if prob == 0:
                    continue
                raise ValueError(
                    f"the table puts probability {prob} on action {action}, not legal at "
                    f"information state {i} ({key!r})"
                )
            policy[i, columns[int(action)]] = prob
    return policy
