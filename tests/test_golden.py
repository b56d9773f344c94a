"""Golden results pin behaviour: exact outcomes of short fixed-seed matches of every pair of
built-in agents (`tests/support/goldens.py`; re-record a deliberate change with
`python tests/support/goldens.py --record`)."""

from __future__ import annotations

import json

import pytest

from support import goldens

STORED = json.loads(goldens.PATH.read_text())


def test_golden_file_covers_every_builtin_pairing():
    assert set(STORED["results"]) == {f"{a} vs {b}" for a, b in goldens.pairings()}
    assert STORED["seed"] == goldens.SEED and STORED["deal_pairs"] == goldens.DEAL_PAIRS


@pytest.mark.parametrize("pairing", [f"{a} vs {b}" for a, b in goldens.pairings()])
def test_golden_match_results_are_unchanged(pairing):
    a, b = pairing.split(" vs ")
    assert goldens.play(a, b) == STORED["results"][pairing], (
        f"{pairing}: behaviour changed; if on purpose, re-record with `python tests/support/goldens.py --record`"
    )


def test_a_changed_agent_fails_the_golden_comparison():
    """The comparison can fail: a planner with another parameter changes the record."""
    assert (
        goldens.play("counter", "planner:keep_from=5") != STORED["results"]["planner vs counter"]
        or goldens.play("planner:keep_from=5", "counter") != STORED["results"]["planner vs counter"]
    )
