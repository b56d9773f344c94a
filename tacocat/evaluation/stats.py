"""Statistics for evaluations: the paired deal-pair interval, Wilson score intervals and
Bradley–Terry ratings.

The unit of a duplicate match is the *deal pair* (one dealt game played twice, seats swapped):
its two games share the cards, so their results are correlated. `paired_interval` is the
primary interval of a win rate: a Student t interval over the per-pair mean scores. The Wilson
interval over games (`wilson_interval`) stays as a secondary figure. The Bradley–Terry fit is a
Newton method on a concave log-posterior (plain numpy).

Bradley–Terry model. Agent i has a strength r_i (natural log-odds units) and

    P(i beats j) = 1 / (1 + exp(-(r_i - r_j)))

A draw counts as half a win and half a loss (the usual "score" treatment). Ratings are reported
on the Elo scale, R = r * 400 / ln(10), so a 400-point gap means 10:1 odds. The strengths are
fitted by maximum a posteriori with an independent Gaussian prior N(0, prior_sd) on every
rating (default sd 1000 Elo points: weak, but it keeps a rating finite when one agent won every
game), and centred so that the mean rating is 0 (or the `anchor` agent's rating is 0).

Bootstrap intervals resample *deal pairs* (both seat-swapped games of a dealt game together,
the unit of the duplicate format) with replacement, with a fixed seed, and refit.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

#: Elo points per natural log-odds unit
ELO_PER_NAT = 400.0 / math.log(10.0)


def z_value(confidence: float = 0.95) -> float:
    """The two-sided standard normal quantile of a confidence level (1.959964 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: float, n: float, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion successes/n.

    `successes` may be fractional (draws counted as half a win). Returns (0.0, 1.0) for n == 0.
    Assumes independent trials. In the duplicate format the two games of a deal deal the same
    cards with the seats swapped, so the luck that helps an agent in one game hurts it in the
    other: its two scores are negatively correlated, which makes this interval conservative.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    z = z_value(confidence)
    p = successes / n
    z2n = z * z / n
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


def paired_interval(pair_scores: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """The Student t interval of the mean of per-deal-pair scores, clipped to [0, 1].

    `pair_scores[k]`: agent A's mean score over the two games of deal pair k (0, 0.25, 0.5,
    0.75 or 1 when draws count half), so the mean is A's win rate. The pairs are independent
    (each has its own deal and agent seeds); the games inside a pair are not, which is why the
    pair is the unit. The t interval uses the pairs' sample variance, so it is narrower than
    Wilson's over games when the seat swap cancels the luck of the cards (negative correlation)
    and wider when it does not.

    Returns (0, 1) for fewer than two pairs. When every pair has the same score the sample
    variance is 0 and a t interval would collapse to a point; then the Wilson interval over the
    pairs is returned instead (a [0, 1] score with mean p has variance at most p(1 - p), so it
    is conservative).
    """
    x = np.asarray(pair_scores, dtype=float)
    if x.ndim != 1 or np.any(x < 0.0) or np.any(x > 1.0):
        raise ValueError("pair_scores must be a 1-d sequence of scores in [0, 1]")
    n = len(x)
    if n < 2:
        return 0.0, 1.0
    mean = float(x.mean())
    if float(x.std(ddof=1)) == 0.0:
        return wilson_interval(mean * n, n, confidence)
    half = _t_half_width(x, confidence)
    return max(0.0, mean - half), min(1.0, mean + half)


def mean_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the Student t interval of the mean of independent units, unclipped.

    For returns per deal pair (A's mean return over the pair's two games, in [-1, 1] plus any
    round shaping) and for variance-reduced estimates, which may leave that range. (nan, -inf,
    inf) for no units, (mean, -inf, inf) for one: an interval needs a sample variance."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or not np.all(np.isfinite(x)):
        raise ValueError("values must be a 1-d sequence of finite numbers")
    if x.size == 0:
        return float("nan"), -math.inf, math.inf
    mean = float(x.mean())
    if x.size < 2:
        return mean, -math.inf, math.inf
    half = _t_half_width(x, confidence)
    return mean, mean - half, mean + half


def _t_half_width(x: np.ndarray, confidence: float) -> float:
    """Half the width of the Student t interval of the mean of `x` (independent units)."""
    from scipy.stats import t as student_t

    return float(student_t.ppf(0.5 + confidence / 2.0, df=x.size - 1)) * float(x.std(ddof=1)) / math.sqrt(x.size)


def verdict(low: float, high: float, level: float = 0.5) -> str:
    """Is the win rate above `level`, by its interval [low, high]? "yes" (the whole interval is
    above), "no" (the whole interval is below) or "undecided". The one wording of "beats it?"."""
    if low > level:
        return "yes"
    return "no" if high < level else "undecided"


def elo_to_prob(diff: float) -> float:
    """P(win) of a player rated `diff` Elo points above the opponent."""
    return 1.0 / (1.0 + 10.0 ** (-diff / 400.0))


# ---------------------------------------------------------------------------------------
# Bradley–Terry fit
# ---------------------------------------------------------------------------------------
def fit_bradley_terry(
    scores: np.ndarray,
    games: np.ndarray,
    prior_sd: float | None = 1000.0,
    anchor: int | None = None,
    init: np.ndarray | None = None,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> np.ndarray:
    """Bradley–Terry ratings (Elo scale) from pairwise results.

    `scores[i, j]`: points agent i scored against j (wins + draws/2); `games[i, j]`: games
    between them (symmetric). `prior_sd`: sd of the Gaussian prior on each rating, in Elo
    points (None: plain maximum likelihood, which diverges if an agent won or lost every
    game). The result is centred to mean 0, or to 0 for agent `anchor`.
    """
    scores = np.asarray(scores, dtype=float)
    games = np.asarray(games, dtype=float)
    n = scores.shape[0]
    if scores.shape != (n, n) or games.shape != (n, n):
        raise ValueError(f"scores and games must be square matrices of one shape, got {scores.shape}, {games.shape}")
    if not np.allclose(games, games.T):
        raise ValueError("games must be symmetric")
    if np.any(scores < -1e-12) or np.any(scores > games + 1e-9):
        raise ValueError("need 0 <= scores[i, j] <= games[i, j]")
    if not np.allclose(scores + scores.T, games):
        raise ValueError("scores[i, j] + scores[j, i] must equal games[i, j]")
    precision = 0.0 if prior_sd is None else (ELO_PER_NAT / prior_sd) ** 2
    r = np.zeros(n) if init is None else np.asarray(init, dtype=float) / ELO_PER_NAT
    total_score = scores.sum(axis=1)

    def log_post(x: np.ndarray) -> float:
        d = x[:, None] - x[None, :]
        # sum over ordered pairs of s_ij * log sigma(d_ij) (each game counted once from each side)
        return float(-(scores * np.logaddexp(0.0, -d)).sum() - 0.5 * precision * (x @ x))

    current = log_post(r)
    for _ in range(max_iter):
        d = r[:, None] - r[None, :]
        p = 1.0 / (1.0 + np.exp(-d))
        grad = total_score - (games * p).sum(axis=1) - precision * r
        w = games * p * (1.0 - p)
        hess = w.copy()
        np.fill_diagonal(hess, -w.sum(axis=1) + np.diag(w) - precision)
        # the Hessian is singular along the all-ones direction without a prior: pin the mean
        step = np.linalg.lstsq(hess - (1.0 if precision == 0.0 else 0.0) * np.ones((n, n)) / n, -grad, rcond=None)[0]
        t = 1.0
        while True:
            candidate = r + t * step
            value = log_post(candidate)
            if value >= current - 1e-12 or t < 1e-6:
                break
            t /= 2.0
        r, previous, current = candidate, current, value
        if np.max(np.abs(t * step)) < tol or abs(current - previous) < tol * 1e-3:
            break
    ratings = r * ELO_PER_NAT
    ratings -= ratings[anchor] if anchor is not None else ratings.mean()
    return ratings


@dataclass
class PairResults:
    """The per-deal scores of agent i against agent j (duplicate format).

    `deal_scores[k]`: the points i scored in the `games_per_deal` games of deal k.
    """

    i: int
    j: int
    deal_scores: np.ndarray
    games_per_deal: int = 2


@dataclass
class RatingsResult:
    """Point ratings (Elo scale) with bootstrap percentile intervals."""

    names: list[str]
    ratings: np.ndarray
    low: np.ndarray
    high: np.ndarray
    confidence: float
    n_boot: int
    boot_seed: int
    prior_sd: float | None
    anchor: str | None
    samples: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 0)))

    def to_dict(self) -> dict:
        return {
            "scale": "Elo (400 * log10 odds), Bradley-Terry, draws count half",
            "centre": f"{self.anchor} = 0" if self.anchor else "mean rating = 0",
            "confidence": self.confidence,
            "n_boot": self.n_boot,
            "boot_seed": self.boot_seed,
            "prior_sd": self.prior_sd,
            "ratings": {
                name: {"rating": float(r), "low": float(lo), "high": float(hi)}
                for name, r, lo, hi in zip(self.names, self.ratings, self.low, self.high, strict=True)
            },
        }

    def ranking(self) -> list[int]:
        """Agent indices, best first."""
        return [int(i) for i in np.argsort(-self.ratings, kind="stable")]


def _pair_matrices(
    pairs: Sequence[PairResults], n: int, weights: Mapping[int, np.ndarray] | np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    scores = np.zeros((n, n))
    games = np.zeros((n, n))
    for idx, pair in enumerate(pairs):
        if weights is None:
            s = float(pair.deal_scores.sum())
            g = float(len(pair.deal_scores) * pair.games_per_deal)
        else:
            w = weights[idx] if not isinstance(weights, np.ndarray) else weights
            s = float(w @ pair.deal_scores)
            g = float(w.sum() * pair.games_per_deal)
        scores[pair.i, pair.j] += s
        scores[pair.j, pair.i] += g - s
        games[pair.i, pair.j] += g
        games[pair.j, pair.i] += g
    return scores, games


def bradley_terry_ratings(
    names: Sequence[str],
    pairs: Sequence[PairResults],
    n_boot: int = 1000,
    boot_seed: int = 0,
    confidence: float = 0.95,
    prior_sd: float | None = 1000.0,
    anchor: str | None = None,
) -> RatingsResult:
    """Fit ratings on all games and bootstrap intervals by resampling deal pairs.

    When every pairing played the same number of deals (a tournament plays the same deals in
    every pairing), one set of resampled deal indices is used for all pairings at once, which
    keeps the correlation that the shared deals induce; otherwise each pairing is resampled
    on its own.
    """
    n = len(names)
    anchor_index = None
    if anchor is not None:
        if anchor not in names:
            raise ValueError(f"anchor {anchor!r} is not one of the agents {list(names)}")
        anchor_index = list(names).index(anchor)
    scores, games = _pair_matrices(pairs, n)
    point = fit_bradley_terry(scores, games, prior_sd=prior_sd, anchor=anchor_index)
    rng = np.random.default_rng(boot_seed)
    sizes = {len(p.deal_scores) for p in pairs}
    samples = np.zeros((n_boot, n))
    for b in range(n_boot):
        if len(sizes) == 1:
            (size,) = sizes
            w = np.bincount(rng.integers(size, size=size), minlength=size).astype(float)
            weights: Mapping[int, np.ndarray] | np.ndarray = w
        else:
            weights = {
                k: np.bincount(
                    rng.integers(len(p.deal_scores), size=len(p.deal_scores)), minlength=len(p.deal_scores)
                ).astype(float)
                for k, p in enumerate(pairs)
            }
        s, g = _pair_matrices(pairs, n, weights)
        samples[b] = fit_bradley_terry(s, g, prior_sd=prior_sd, anchor=anchor_index, init=point)
    alpha = (1.0 - confidence) / 2.0
    if n_boot > 0:
        low = np.quantile(samples, alpha, axis=0)
        high = np.quantile(samples, 1.0 - alpha, axis=0)
    else:
        low = high = np.full(n, np.nan)
    return RatingsResult(
        names=list(names),
        ratings=point,
        low=low,
        high=high,
        confidence=confidence,
        n_boot=n_boot,
        boot_seed=boot_seed,
        prior_sd=prior_sd,
        anchor=anchor,
        samples=samples,
    )


# ---------------------------------------------------------------------------------------
# paired comparison
# ---------------------------------------------------------------------------------------
def paired_difference_interval(
    a: Sequence[float], b: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """Mean of `a - b` over paired units and its Student t interval (as `paired_interval`).

    For two agents scored on the same deal pairs against the same opponent (common random
    numbers): `a[k]`, `b[k]` are their win rates on deal pair k. Returns (mean, low, high).
    """
    x = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if np.shape(a) != np.shape(b) or x.ndim != 1 or x.size < 2:
        raise ValueError(
            f"need two equal-length sequences of at least 2 paired values, got {np.shape(a)}, {np.shape(b)}"
        )
    mean = float(x.mean())
    half = _t_half_width(x, confidence)
    return mean, mean - half, mean + half
