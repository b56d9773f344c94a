"""Round-robin tournaments (tacocat.evaluation.tournament)."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from tacocat.evaluation.matches import match
from tacocat.evaluation.tournament import tournament

AGENTS = ["random", "test-first", "test-last"]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("tournament")
    res = tournament(AGENTS, deal_pairs=12, seed=5, workers=1, out_dir=out, n_boot=100, progress=False)
    return res, out


def test_outputs_are_written(result):
    _, out = result
    for name in ("results.json", "matrix.csv", "ratings.csv", "tournament.md", "heatmap.png", "ratings.png"):
        assert (out / name).stat().st_size > 0, name
    for image in ("heatmap.png", "ratings.png"):
        assert (out / image).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads((out / "results.json").read_text())
    assert data["agents"] == AGENTS and data["games"] == 12 and len(data["matches"]) == 3
    assert set(data["ratings"]["ratings"]) == set(AGENTS)
    rows = list(csv.reader((out / "matrix.csv").read_text().splitlines()))
    assert rows[0] == ["agent", *AGENTS] and len(rows) == 4
    ratings = list(csv.DictReader((out / "ratings.csv").read_text().splitlines()))
    assert [r["rank"] for r in ratings] == ["1", "2", "3"]
    md = (out / "tournament.md").read_text()
    assert "| rank | agent |" in md and "`test-last`" in md


def test_matrix_and_matches_agree(result):
    res, _ = result
    m = res.matrix
    assert np.all(np.isnan(np.diag(m)))
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose((m + m.T)[off], 1.0)
    for (i, j), mr in zip([(0, 1), (0, 2), (1, 2)], res.matches, strict=True):
        assert (mr.agent_a, mr.agent_b) == (AGENTS[i], AGENTS[j])
        assert m[i, j] == pytest.approx(mr.win_rate_a)
    # a tournament pairing is the same duplicate match as a stand-alone one
    alone = match("random", "test-last", deal_pairs=12, seed=5, progress=False)
    assert alone.deal_scores == res.matches[1].deal_scores


def test_ratings_follow_the_results(result):
    res, _ = result
    r = res.ratings
    order = [res.agents[i] for i in r.ranking()]
    # test-last beats both others clearly at this seed; test-first loses to both
    assert m_rate(res, "test-last", "test-first") > 0.8
    assert order[0] == "test-last" and order[-1] == "test-first"
    assert r.ratings.mean() == pytest.approx(0.0, abs=1e-6)
    assert np.all(r.low <= r.ratings + 1e-9) and np.all(r.ratings <= r.high + 1e-9)
    board = res.leaderboard()
    assert sum(row["score"] for row in board) == pytest.approx(3 * 24)


def m_rate(res, a, b):
    return res.matrix[res.agents.index(a), res.agents.index(b)]


def test_bad_tournament_input():
    with pytest.raises(ValueError):
        tournament(["random"], deal_pairs=2, seed=0, progress=False)
    with pytest.raises(ValueError):
        tournament(["random", "random"], deal_pairs=2, seed=0, progress=False)
    with pytest.raises(ValueError, match="unknown agent"):
        tournament(["random", "nope"], deal_pairs=2, seed=0, progress=False)


def test_parallel_tournament_matches_serial():
    specs = ["random", "highcard"]  # built-in agents: worker processes rebuild them by name
    serial = tournament(specs, deal_pairs=4, seed=1, workers=1, n_boot=10, progress=False)
    parallel = tournament(specs, deal_pairs=4, seed=1, workers=2, n_boot=10, progress=False)
    np.testing.assert_array_equal(serial.matrix, parallel.matrix)
    np.testing.assert_array_equal(serial.ratings.ratings, parallel.ratings.ratings)
    assert serial.matches[0].deal_scores == parallel.matches[0].deal_scores
