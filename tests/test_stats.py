"""The paired deal-pair interval, Wilson intervals and the Bradley–Terry fit (tacocat.evaluation.stats)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tacocat.evaluation.stats import (
    ELO_PER_NAT,
    PairResults,
    bradley_terry_ratings,
    elo_to_prob,
    fit_bradley_terry,
    mean_interval,
    paired_difference_interval,
    paired_interval,
    wilson_interval,
    z_value,
)


def test_z_value():
    assert z_value(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert z_value(0.99) == pytest.approx(2.575829, abs=1e-6)


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        (50, 100, 0.4038, 0.5962),  # textbook value
        # Newcombe (1998), Statistics in Medicine 17:857-872, Table II, method 3 (Wilson score)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_published_values(successes, n, low, high):
    lo, hi = wilson_interval(successes, n)
    assert lo == pytest.approx(low, abs=5e-5)
    assert hi == pytest.approx(high, abs=5e-5)


@pytest.mark.parametrize(("successes", "n"), [(7, 10), (3.5, 9), (0, 5), (12, 12), (199.5, 400)])
def test_wilson_bounds_solve_the_score_equation(successes, n):
    """The Wilson bounds are the p with |p_hat - p| = z sqrt(p (1 - p) / n) (independent check)."""
    z = 1.959963984540054
    p_hat = successes / n
    # (1 + z^2/n) p^2 - (2 p_hat + z^2/n) p + p_hat^2 = 0
    a, b, c = 1 + z * z / n, -(2 * p_hat + z * z / n), p_hat * p_hat
    disc = math.sqrt(b * b - 4 * a * c)
    roots = sorted(((-b - disc) / (2 * a), (-b + disc) / (2 * a)))
    lo, hi = wilson_interval(successes, n)
    assert lo == pytest.approx(max(0.0, roots[0]), abs=1e-12)
    assert hi == pytest.approx(min(1.0, roots[1]), abs=1e-12)
    assert lo <= p_hat <= hi


def test_wilson_edge_cases():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0
    lo90, hi90 = wilson_interval(30, 60, confidence=0.90)
    lo95, hi95 = wilson_interval(30, 60)
    assert lo95 < lo90 < 0.5 < hi90 < hi95
    with pytest.raises(ValueError):
        wilson_interval(11, 10)
    with pytest.raises(ValueError):
        wilson_interval(1, 10, confidence=1.5)


def _synthetic(true_elo, games_per_pair, seed):
    rng = np.random.default_rng(seed)
    n = len(true_elo)
    scores = np.zeros((n, n))
    games = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            wins = rng.binomial(games_per_pair, elo_to_prob(true_elo[i] - true_elo[j]))
            scores[i, j], scores[j, i] = wins, games_per_pair - wins
            games[i, j] = games[j, i] = games_per_pair
    return scores, games


def test_bt_recovers_known_ordering_and_values():
    true = np.array([-250.0, 300.0, 0.0, 120.0, -170.0])
    scores, games = _synthetic(true, 2000, seed=3)
    fitted = fit_bradley_terry(scores, games)
    assert list(np.argsort(fitted)) == list(np.argsort(true))
    assert fitted.mean() == pytest.approx(0.0, abs=1e-9)
    assert np.max(np.abs(fitted - (true - true.mean()))) < 40.0


def test_bt_mle_matches_gradient_ascent():
    """Independent check of the Newton fit: plain gradient ascent on the log-likelihood."""
    scores, games = _synthetic(np.array([200.0, 0.0, -50.0, -300.0]), 150, seed=11)
    fitted = fit_bradley_terry(scores, games, prior_sd=None)
    x = np.zeros(4)
    for _ in range(50_000):
        p = 1.0 / (1.0 + np.exp(-(x[:, None] - x[None, :])))
        x += 0.003 * (scores.sum(axis=1) - (games * p).sum(axis=1))
    np.testing.assert_allclose(fitted, (x - x.mean()) * ELO_PER_NAT, atol=1e-3)


def test_bt_draws_count_half_and_anchor():
    # 10 games, all draws -> equal ratings; 7.5/10 -> 400*log10(3) = 190.8 Elo apart (MLE)
    assert np.allclose(fit_bradley_terry(np.array([[0, 5.0], [5.0, 0]]), np.array([[0, 10.0], [10.0, 0]])), 0.0)
    r = fit_bradley_terry(np.array([[0, 7.5], [2.5, 0]]), np.array([[0, 10.0], [10.0, 0]]), prior_sd=None, anchor=1)
    assert r[1] == 0.0
    assert r[0] == pytest.approx(400 * math.log10(3), abs=1e-6)


def test_bt_prior_keeps_a_perfect_record_finite():
    r = fit_bradley_terry(np.array([[0, 20.0], [0.0, 0]]), np.array([[0, 20.0], [20.0, 0]]))
    assert np.all(np.isfinite(r)) and 400 < r[0] - r[1] < 3000


def test_bt_rejects_inconsistent_input():
    with pytest.raises(ValueError):
        fit_bradley_terry(np.array([[0, 3.0], [3.0, 0]]), np.array([[0, 10.0], [10.0, 0]]))


def test_bootstrap_intervals():
    rng = np.random.default_rng(0)
    true = {0: 200.0, 1: 0.0, 2: -200.0}
    pairs = []
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        p = elo_to_prob(true[i] - true[j])
        pairs.append(PairResults(i, j, rng.binomial(2, p, size=300).astype(float)))
    names = ["strong", "mid", "weak"]
    res = bradley_terry_ratings(names, pairs, n_boot=200, boot_seed=5)
    assert res.ranking() == [0, 1, 2]
    assert np.all(res.low <= res.ratings) and np.all(res.ratings <= res.high)
    assert np.all(res.high - res.low > 10)
    again = bradley_terry_ratings(names, pairs, n_boot=200, boot_seed=5)
    np.testing.assert_array_equal(res.low, again.low)
    anchored = bradley_terry_ratings(names, pairs, n_boot=20, anchor="weak")
    assert anchored.ratings[2] == 0.0
    assert anchored.to_dict()["ratings"]["weak"]["rating"] == 0.0


def test_paired_difference_interval_matches_the_normal_formula_and_pairs_matter():
    rng = np.random.default_rng(5)
    luck = rng.integers(0, 3, size=2000) / 2.0  # the deal's luck, shared by both agents
    a = np.clip(luck + (rng.random(2000) < 0.10) * 0.5, 0, 1)
    b = luck
    mean, low, high = paired_difference_interval(a, b)
    d = a - b
    half = 1.961151 * d.std(ddof=1) / math.sqrt(d.size)  # t_0.975 with 1999 degrees of freedom
    assert mean == pytest.approx(d.mean()) and (low, high) == pytest.approx((d.mean() - half, d.mean() + half))
    assert low > 0  # the shared luck cancels: a small real edge is detected
    # unpaired, the same edge drowns in the luck: Wilson intervals of the two rates overlap
    assert wilson_interval(a.sum(), a.size)[0] < wilson_interval(b.sum(), b.size)[1]
    same = paired_difference_interval(b, b)
    assert same == (0.0, 0.0, 0.0)
    with pytest.raises(ValueError):
        paired_difference_interval([1.0, 0.0], [1.0])


# ---------------------------------------------------------------------------------------
# paired interval (deal pairs are the unit)
# ---------------------------------------------------------------------------------------
def test_paired_interval_is_the_student_t_interval():
    """Checked against the textbook formula with a hard-coded t quantile (t_0.975, df=9)."""
    x = np.array([1.0, 0.5, 0.5, 1.0, 0.0, 0.5, 1.0, 0.75, 0.25, 0.5])
    half = 2.262157163 * x.std(ddof=1) / math.sqrt(len(x))
    lo, hi = paired_interval(x)
    assert lo == pytest.approx(x.mean() - half, abs=1e-9)
    assert hi == pytest.approx(x.mean() + half, abs=1e-9)


def test_paired_interval_covers_at_its_level():
    """Coverage by simulation: correlated seat-swapped pairs (one shared luck term)."""
    rng = np.random.default_rng(0)
    truth, hits, trials = 0.6, 0, 2000
    for _ in range(trials):
        luck = rng.random(100) < 0.5  # the deal favours seat 0 or not
        g0 = (rng.random(100) < np.where(luck, 0.9, 0.3)).astype(float)
        g1 = (rng.random(100) < np.where(luck, 0.3, 0.9)).astype(float)
        lo, hi = paired_interval((g0 + g1) / 2)
        hits += lo <= truth <= hi
    assert 0.93 <= hits / trials <= 0.97


def test_paired_interval_is_narrower_than_wilson_when_the_swap_cancels_luck():
    # every pair split 1-1: no pair-to-pair variance at all beyond the seat luck
    x = np.array([0.5] * 90 + [1.0] * 10)
    lo, hi = paired_interval(x)
    wlo, whi = wilson_interval(2 * x.sum(), 2 * len(x))
    assert hi - lo < (whi - wlo) / 2


def test_paired_interval_edge_cases():
    assert paired_interval([1.0]) == (0.0, 1.0)
    # zero variance: falls back to Wilson over the pairs instead of collapsing to a point
    lo, hi = paired_interval([1.0] * 50)
    assert (lo, hi) == wilson_interval(50, 50) and lo < 1.0
    lo, hi = paired_interval([0.0, 1.0] * 3)
    assert lo == 0.0 and hi == 1.0  # clipped
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        paired_interval([0.5, 1.5])


def test_verdict_is_one_wording_of_beats_it():
    from tacocat.evaluation.stats import verdict

    assert verdict(0.51, 0.60) == "yes" and verdict(0.40, 0.49) == "no" and verdict(0.45, 0.55) == "undecided"


def test_mean_interval_is_the_unclipped_student_t_interval():
    from scipy import stats as scipy_stats

    x = np.array([-1.0, 1.0, 0.5, -0.25, 1.0, 0.0, 2.5])  # returns with shaping leave [-1, 1]
    mean, low, high = mean_interval(x)
    expected = scipy_stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=scipy_stats.sem(x))
    assert mean == pytest.approx(x.mean())
    assert (low, high) == pytest.approx(expected)
    assert mean_interval([0.3]) == (0.3, -math.inf, math.inf)
    assert math.isnan(mean_interval([])[0])
    with pytest.raises(ValueError, match="finite"):
        mean_interval([0.0, float("nan")])
