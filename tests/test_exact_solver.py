"""Exact policy values, best responses and NashConv on the tree arrays
(`tacocat.analysis.best_response`), checked against OpenSpiel on the same policies.

Differential: for the uniform policy, random policies (hypothesis-drawn, with zero-probability
actions so that parts of the tree go unreached) and OpenSpiel's own CFR+ policies, our
`nash_conv`, best-response values and policy values equal OpenSpiel's
(`pyspiel.TabularBestResponse`, `expected_game_score.policy_value`, and NashConv as OpenSpiel
defines it, the sum over players of best-response value minus policy value) to 1e-9, on `tiny`
and `skirmish` (single attacks, defences and sacrifices, R5.3-R5.5); on `tiny` also against
`pyspiel.nash_conv` and the Python `exploitability.nash_conv`. OpenSpiel runs on its
`cached_tree` of the same game (tests/preset_trees.py: one tree per preset, shared).
The solver reads only the tree arrays, whatever the rules, so `tiny` (no attacks) and
`skirmish` (attacks) cover its code; `small` (tiny's round with four card values) adds no path
and is not run here. Properties: NashConv >= 0, a best response is worth at least the
policy's value, and a best-response policy is pure and reaches its value.
"""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import expected_game_score, exploitability
from preset_trees import cached_game, preset_tree

from tacocat.analysis.best_response import (
    best_response_policy,
    best_response_values,
    combine,
    nash_conv,
    policy_values,
)
from tacocat.analysis.tabular import (
    from_policy_table,
    to_policy_table,
    to_tabular_policy,
)

TOL = 1e-9
FEW = settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


class Preset:
    """A preset's tree and OpenSpiel's cached tree of the same game."""

    def __init__(self, name: str):
        self.name = name
        self.tree = preset_tree(name)
        self.game = cached_game(name)
        self._python_policy = os_policy.TabularPolicy(self.game)

    def python_policy(self, policy: np.ndarray) -> os_policy.TabularPolicy:
        """`policy` as OpenSpiel's Python TabularPolicy of the game."""
        out = self._python_policy.__copy__()
        out.action_probability_array = np.zeros_like(self._python_policy.action_probability_array)
        table = to_policy_table(self.tree, policy)
        for key, row in out.state_lookup.items():
            for action, prob in table[key]:
                out.action_probability_array[row, action] = prob
        return out


@pytest.fixture(scope="module")
def tiny() -> Preset:
    return Preset("tiny")


@pytest.fixture(scope="module")
def skirmish() -> Preset:
    return Preset("skirmish")


def random_policy(tree, seed: int, zeros: float) -> np.ndarray:
    """Random probabilities on the legal columns; each legal action is dropped (probability
    0) with probability `zeros`, keeping at least one per row."""
    rng = np.random.default_rng(seed)
    mask = tree.legal_mask()
    weights = rng.random(mask.shape) * mask
    drop = (rng.random(mask.shape) < zeros) & mask
    keep = np.where(drop, 0.0, weights)
    empty = keep.sum(axis=1) == 0
    first = np.argmax(mask, axis=1)
    keep[empty, first[empty]] = 1.0
    return keep / keep.sum(axis=1, keepdims=True)


def openspiel_cfr_plus(preset: Preset, iterations: int) -> np.ndarray:
    solver = pyspiel.CFRPlusSolver(preset.game)
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    return from_policy_table(preset.tree, solver.tabular_average_policy().policy_table())


def assert_matches_openspiel(preset: Preset, policy: np.ndarray, all_nash_convs: bool = False) -> None:
    """Our NashConv, best-response values and policy values equal OpenSpiel's on `policy`.
    NashConv is checked against OpenSpiel's definition from OpenSpiel's own values; with
    `all_nash_convs` (cheap on `tiny` only) also against `pyspiel.nash_conv` and the Python
    `exploitability.nash_conv`."""
    tree, game = preset.tree, preset.game
    tabular = to_tabular_policy(tree, policy)
    root = game.new_initial_state()
    theirs_br = [pyspiel.TabularBestResponse(game, p, tabular).value_from_state(root) for p in (0, 1)]
    np.testing.assert_allclose(best_response_values(tree, policy), theirs_br, rtol=0, atol=TOL)
    python = preset.python_policy(policy)
    theirs_values = expected_game_score.policy_value(root, [python] * 2)
    np.testing.assert_allclose(policy_values(tree, policy), theirs_values, rtol=0, atol=TOL)
    ours = nash_conv(tree, policy)
    assert ours == pytest.approx(sum(theirs_br) - sum(theirs_values), abs=TOL)
    if all_nash_convs:
        assert ours == pytest.approx(pyspiel.nash_conv(game, tabular), abs=TOL)
        assert ours == pytest.approx(exploitability.nash_conv(game, python), abs=TOL)


# ---------------------------------------------------------------------------------------
# against OpenSpiel
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["tiny", "skirmish"])
def test_uniform_policy_matches_openspiel(name, request):
    preset = request.getfixturevalue(name)
    assert_matches_openspiel(preset, preset.tree.uniform_policy(), all_nash_convs=name == "tiny")


def test_uniform_nash_conv_on_tiny_is_the_published_figure(tiny):
    assert nash_conv(tiny.tree, tiny.tree.uniform_policy()) == pytest.approx(
        0.9714285714, abs=1e-9
    )  # docs/OPENSPIEL.md


@FEW
@given(seed=st.integers(0, 2**32 - 1), zeros=st.sampled_from([0.0, 0.3, 0.7]))
def test_random_policies_match_openspiel_on_tiny(tiny, seed, zeros):
    assert_matches_openspiel(tiny, random_policy(tiny.tree, seed, zeros), all_nash_convs=True)


@settings(FEW, max_examples=2)
@given(seed=st.integers(0, 2**32 - 1), zeros=st.sampled_from([0.3, 0.7]))
def test_random_policies_match_openspiel_on_skirmish(skirmish, seed, zeros):
    assert_matches_openspiel(skirmish, random_policy(skirmish.tree, seed, zeros))


@pytest.mark.parametrize("name, iterations", [("tiny", 20), ("skirmish", 10)])
def test_cfr_plus_policies_match_openspiel(name, iterations, request):
    preset = request.getfixturevalue(name)
    policy = openspiel_cfr_plus(preset, iterations)
    assert_matches_openspiel(preset, policy, all_nash_convs=name == "tiny")
    assert nash_conv(preset.tree, policy) < nash_conv(preset.tree, preset.tree.uniform_policy())


def test_policy_tables_round_trip(tiny):
    policy = random_policy(tiny.tree, 3, 0.3)
    assert np.array_equal(from_policy_table(tiny.tree, to_tabular_policy(tiny.tree, policy).policy_table()), policy)
    assert np.array_equal(from_policy_table(tiny.tree, tiny.python_policy(policy).to_dict()), policy)


# ---------------------------------------------------------------------------------------
# properties
# ---------------------------------------------------------------------------------------
@settings(FEW, max_examples=8)
@given(
    seed=st.integers(0, 2**32 - 1), zeros=st.sampled_from([0.0, 0.5, 0.9]), name=st.sampled_from(["tiny", "skirmish"])
)
def test_best_responses_are_pure_and_worth_at_least_the_policy(seed, zeros, name, request):
    tree = request.getfixturevalue(name).tree
    policy = random_policy(tree, seed, zeros)
    on_policy = policy_values(tree, policy)
    best = best_response_values(tree, policy)
    assert on_policy.sum() == pytest.approx(0.0, abs=1e-12)  # zero-sum
    assert (best >= on_policy - 1e-12).all()
    assert nash_conv(tree, policy) >= 0.0
    for player in (0, 1):
        response = best_response_policy(tree, policy, player)
        rows = tree.infoset_player == player
        assert np.isin(response[rows], (0.0, 1.0)).all() and (response[rows].sum(axis=1) == 1).all()
        assert np.array_equal(response[~rows], policy[~rows])  # the other player's rows unchanged
        assert policy_values(tree, response)[player] == pytest.approx(best[player], abs=1e-12)


def test_a_best_response_to_a_best_response_pair_is_no_better(tiny):
    """With each player's rows replaced by its best response to the policy, the value each
    player gets cannot exceed what it gets best-responding (the max over pure strategies)."""
    tree = tiny.tree
    policy = random_policy(tree, 11, 0.4)
    best = best_response_values(tree, policy)
    for player in (0, 1):
        for seed in range(5):
            other = (
                combine(tree, random_policy(tree, seed, 0.5), policy)
                if player == 0
                else combine(tree, policy, random_policy(tree, seed, 0.5))
            )
            assert policy_values(tree, other)[player] <= best[player] + 1e-12


def test_combine_takes_each_players_rows_from_its_own_array(tiny):
    tree = tiny.tree
    first, second = random_policy(tree, 1, 0.2), random_policy(tree, 2, 0.2)
    both = combine(tree, first, second)
    rows = tree.infoset_player == 0
    assert np.array_equal(both[rows], first[rows]) and np.array_equal(both[~rows], second[~rows])


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda p: p[:, :-1], "shape"),
        (lambda p: np.where(p > 0, np.nan, p), "non-finite"),
        (lambda p: p * 2, "sums to"),
        (lambda p: np.where(p > 0, p, 0.5), "padding|sums to"),
    ],
)
def test_a_malformed_policy_is_refused_in_one_line(tiny, edit, message):
    bad = edit(tiny.tree.uniform_policy())
    with pytest.raises(ValueError, match=message) as info:
        nash_conv(tiny.tree, bad)
    assert "\n" not in str(info.value)
