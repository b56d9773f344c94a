"""Vectorized CFR, CFR+ and discounted CFR (`tacocat.analysis.cfr`) reproduce OpenSpiel's
solvers iterate by iterate: after every one of the first iterations (and at later
checkpoints) the average policy equals that of OpenSpiel's C++ `CFRSolver` / `CFRPlusSolver`
(and of the Python `DCFRSolver` / `LCFRSolver`) to 1e-10, on `tiny` and on `skirmish` (single
attacks, defences and sacrifices, R5.3-R5.5). OpenSpiel runs on its `cached_tree` of the same
game (tests/preset_trees.py: one tree per preset, shared). The solvers read only the tree
arrays, whatever the rules, so `tiny` (no attacks) and `skirmish` (attacks) cover their code;
`small` (tiny's round with four card values) adds no path and is not run here.
"""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest
from open_spiel.python.algorithms import discounted_cfr
from preset_trees import cached_game, preset_tree

from tacocat.analysis.best_response import nash_conv, policy_values
from tacocat.analysis.cfr import CFRSolver, DiscountedCFRSolver, regret_matching
from tacocat.analysis.tabular import from_policy_table

TOL = 1e-10


def tree_and_game(name: str):
    return preset_tree(name), cached_game(name)


def assert_same_iterates(tree, ours, theirs, table, iterations: int, every: int = 1) -> None:
    """Step both solvers `iterations` times; compare average policies every `every` iterations."""
    for t in range(1, iterations + 1):
        ours.iterate(1)
        theirs.evaluate_and_update_policy()
        if t % every == 0 or t <= 3:
            gap = np.abs(ours.average_policy() - from_policy_table(tree, table(theirs))).max()
            assert gap <= TOL, f"iteration {t}: average policies differ by {gap:.3g}"


@pytest.mark.parametrize(
    "name, iterations, every",
    # skirmish: its tree enumerated and walked by OpenSpiel, 25 iterations of both solvers: about 11 s
    [("tiny", 60, 1), pytest.param("skirmish", 25, 8, marks=pytest.mark.slow)],
)
@pytest.mark.parametrize("plus", [False, True])
def test_cfr_and_cfr_plus_match_openspiel_iterate_by_iterate(name, iterations, every, plus):
    tree, game = tree_and_game(name)
    theirs = (pyspiel.CFRPlusSolver if plus else pyspiel.CFRSolver)(game)
    assert_same_iterates(
        tree, CFRSolver(tree, plus=plus), theirs, lambda s: s.tabular_average_policy().policy_table(), iterations, every
    )


@pytest.mark.parametrize(
    "solver, params",
    [(discounted_cfr.DCFRSolver, {}), (discounted_cfr.LCFRSolver, {"alpha": 1, "beta": 1, "gamma": 1})],
)
def test_discounted_cfr_matches_openspiel_on_tiny(solver, params):
    tree, game = tree_and_game("tiny")
    assert_same_iterates(
        tree, DiscountedCFRSolver(tree, **params), solver(game), lambda s: s.average_policy().to_dict(), 30
    )


def test_cfr_plus_converges_and_the_game_is_fair():
    """NashConv falls towards 0 and the seats are symmetric (R1.6): the value of an
    epsilon-equilibrium lies within its NashConv of 0."""
    tree, _ = tree_and_game("tiny")
    solver = CFRSolver(tree)
    solver.iterate(10)
    early = nash_conv(tree, solver.average_policy())
    solver.iterate(190)
    late = nash_conv(tree, solver.average_policy())
    assert 0.0 <= late < early / 10 and late < 1e-3
    assert abs(policy_values(tree, solver.average_policy())[0]) <= late


def test_policies_are_policies_before_and_after_iterating():
    tree, _ = tree_and_game("tiny")
    solver = CFRSolver(tree)
    assert np.array_equal(solver.average_policy(), tree.uniform_policy())  # nothing accumulated yet
    solver.iterate(0)
    assert solver.iteration == 0
    solver.iterate(3)
    for policy in (solver.average_policy(), solver.current_policy()):
        assert np.allclose(policy.sum(axis=1), 1.0) and (policy[~tree.legal_mask()] == 0).all()
    with pytest.raises(ValueError, match="iterations must be >= 0"):
        solver.iterate(-1)


def test_regret_matching_is_uniform_without_positive_regret():
    mask = np.array([[True, True, False], [True, True, True]])
    regret = np.array([[-1.0, 0.0, 0.0], [3.0, -2.0, 1.0]])
    np.testing.assert_array_equal(regret_matching(regret, mask), [[0.5, 0.5, 0.0], [0.75, 0.0, 0.25]])
