"""The pure-equilibrium tool (`tacocat.analysis.pure_equilibrium`) and the published presets table.

On `tiny` (the duel and the showdown, R5.1, R6.1) and `skirmish` (a single attack, a defence or
a sacrifice, R5.3-R5.5): the pure profile built from CFR+ is pure and has NashConv 0, checked
again by OpenSpiel's own best responses on `tiny`; profiles that are no equilibrium (CFR+'s
argmax on tiny, "always the first legal move") are valued above 0 and not called equilibria; the
share of void rounds (R6.1) equals a brute-force walk of the OpenSpiel adapter's tree that
follows the profile. The published table (docs/results/presets.json, docs/EXPLOITABILITY.md)
has a row for every preset and its docs block is what the JSON renders to.
"""

from __future__ import annotations

import json

import numpy as np
import pyspiel
import pytest
from preset_trees import cached_game, preset_tree

from benchmarks import exploitability as bench
from tacocat.analysis.best_response import nash_conv
from tacocat.analysis.pure_equilibrium import (
    TOLERANCE,
    argmax_policy,
    pure_equilibrium,
    solve_cfr_plus,
    value_profile,
    void_share,
)
from tacocat.analysis.tabular import to_tabular_policy
from tacocat.analysis.tree import GameTree
from tacocat.game.openspiel import load_game
from tacocat.game.presets import PRESETS, preset_config


def brute_force_void_share(tree: GameTree, policy: np.ndarray) -> float:
    """The probability of a return of 0, by walking the OpenSpiel adapter's states from the
    root: chance nodes branch with their probabilities, decisions with the policy's row of the
    state's information_state_string (moves of probability 0 are not walked)."""
    row = {key: i for i, key in enumerate(tree.infoset_keys)}
    total = 0.0
    stack = [(load_game(tree.rules).new_initial_state(), 1.0)]
    while stack:
        state, p = stack.pop()
        if state.is_terminal():
            total += p if state.returns()[0] == 0 else 0.0
        elif state.is_chance_node():
            stack.extend((state.child(a), p * q) for a, q in state.chance_outcomes())
        else:
            i = row[state.information_state_string()]
            for action, q in zip(tree.legal[i, : tree.n_legal[i]], policy[i], strict=False):
                if q > 0:
                    stack.append((state.child(int(action)), p * q))
    return total


@pytest.fixture(scope="module", params=["tiny", "skirmish"])
def solved(request):
    tree = preset_tree(request.param)
    return request.param, tree, pure_equilibrium(tree)


def test_the_pure_profile_is_pure_and_an_equilibrium(solved):
    name, tree, found = solved
    policy = found.profile.policy
    assert ((policy == 0) | (policy == 1)).all() and (policy.sum(axis=1) == 1).all()
    assert found.cfr.nash_conv <= 1e-4
    assert found.found and abs(found.profile.nash_conv) <= TOLERANCE, name
    assert nash_conv(tree, policy) == pytest.approx(found.profile.nash_conv, abs=1e-12)


def test_openspiel_agrees_that_tinys_pure_profile_is_an_equilibrium():
    tree = preset_tree("tiny")
    found = pure_equilibrium(tree)
    assert pyspiel.nash_conv(cached_game("tiny"), to_tabular_policy(tree, found.profile.policy)) == pytest.approx(
        0.0, abs=1e-12
    )


def test_profiles_that_are_no_equilibrium_are_rejected():
    tree = preset_tree("tiny")
    average = solve_cfr_plus(tree).average
    argmax = value_profile(tree, argmax_policy(tree, average))
    first = np.zeros((tree.n_infosets, tree.max_actions))
    first[:, 0] = 1.0
    always_first = value_profile(tree, first)
    for profile in (argmax, always_first):
        assert not profile.is_equilibrium and profile.nash_conv > 0.01
    # OpenSpiel's NashConv of the same profile
    game = cached_game("tiny")
    assert pyspiel.nash_conv(game, to_tabular_policy(tree, first)) == pytest.approx(always_first.nash_conv, abs=1e-9)


def test_a_mixed_profile_is_refused_in_one_line():
    tree = preset_tree("tiny")
    with pytest.raises(ValueError, match=r"^the profile is not pure: information state \d+ plays"):
        value_profile(tree, tree.uniform_policy())


def test_the_void_share_is_a_brute_force_count_over_the_openspiel_tree(solved):
    name, tree, found = solved
    assert found.profile.void_share == pytest.approx(brute_force_void_share(tree, found.profile.policy), abs=1e-12)
    assert 0.5 < found.profile.void_share <= 1.0  # tiny and skirmish are mostly void (R6.1)
    if name == "tiny":  # a mixed policy too: every history walked
        uniform = tree.uniform_policy()
        assert void_share(tree, uniform) == pytest.approx(brute_force_void_share(tree, uniform), abs=1e-12)


def test_the_published_table_leads_with_the_decisive_presets_and_matches_its_json():
    """Rows in `PRESET_ORDER` (every preset but the default rules, the decisive ones first), each
    of its preset's current rules; a preset added later gets its row with `--resume`."""
    data = json.loads(bench.PRESETS_JSON.read_text())
    rows = {row["preset"]: row for row in data["rows"]}
    assert set(bench.PRESET_ORDER) == set(PRESETS) - {"default"}
    assert list(rows) == list(bench.PRESET_ORDER)[: len(rows)]
    for name, row in rows.items():
        assert row["ruleset_hash"] == preset_config(name).ruleset_hash(), name
        assert row["pure"]["found"] == (abs(row["pure"]["nash_conv"]) <= 1e-9), name
    assert list(rows)[:2] == ["trio_decided", "jumbo_decided"]  # the decisive presets lead
    for name in ("trio_decided", "jumbo_decided"):
        assert rows[name]["pure"]["void_share"] < 0.6, name
    text = bench.EXPLOITABILITY_DOC.read_text()
    begin, end = bench.PRESETS_MARKERS
    start = text.index(begin) + len(begin)
    assert text[start : text.index(end)] == "\n" + bench.docs_block(bench.PRESETS_JSON, data), (
        "run `python -m benchmarks.exploitability presets --write`"
    )


def test_an_unknown_preset_is_refused_in_one_line_and_writes_nothing(capsys):
    before = bench.PRESETS_JSON.read_bytes()
    assert bench.main(["presets", "--presets", "tiny,huge", "--write"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("unknown or unenumerable preset 'huge'; presets: trio_decided") and "\n" not in err
    assert bench.PRESETS_JSON.read_bytes() == before
