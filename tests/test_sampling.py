"""The policy sampler (tacocat/game/batch/rollout.py `policy_actions`, `pick_by_logits`; its
helper `xla.weighted_pick` in both forms): it draws from the softmax over the legal actions
(chi-square over many draws from fixed logits, which a sampler biased by a few percent fails),
never picks an illegal action (extreme logits, one legal action, the ends of [0, 1)), and its two
forms agree bit for bit where the running sums are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402 (after importorskip)
from scipy import stats  # noqa: E402 (after importorskip)

from tacocat.game.batch import xla  # noqa: E402 (after importorskip)
from tacocat.game.batch.rollout import pick_by_logits, policy_actions  # noqa: E402 (after importorskip)

N_ACTIONS = 121  # the default rules' action count
DRAWS = 200_000
FORMS = {"cpu": xla.weighted_pick.cpu_form, "plain": xla.weighted_pick.plain_form}


def fixed_position(seed: int, legal: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits (float32) and a mask with `legal` legal actions spread over the 121; the illegal
    actions' logits are large, so that a sampler that reads them shows."""
    rng = np.random.default_rng(seed)
    mask = np.zeros(N_ACTIONS, bool)
    mask[rng.choice(N_ACTIONS, legal, replace=False)] = True
    logits = np.where(mask, rng.normal(0, 1.5, N_ACTIONS), 30.0).astype(np.float32)
    return logits, mask


def softmax_over_legal(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    z = np.where(mask, logits.astype(np.float64), -np.inf)
    p = np.exp(z - z.max())
    return p / p.sum()


def draw(form, logits: np.ndarray, mask: np.ndarray, draws: int, seed: int) -> np.ndarray:
    """`draws` actions from one position, by `form` of `weighted_pick` (as `pick_by_logits` calls it)."""

    @jax.jit
    def run(key):
        big_logits = jnp.broadcast_to(jnp.asarray(logits), (draws, N_ACTIONS))
        big_mask = jnp.broadcast_to(jnp.asarray(mask), (draws, N_ACTIONS))
        top = jnp.max(jnp.where(big_mask, big_logits, -jnp.inf), axis=-1, keepdims=True)
        weights = jnp.where(big_mask, jnp.exp(big_logits - top), 0.0)
        return form(weights, jax.random.uniform(key, (draws,)))

    return np.asarray(run(jax.random.key(seed)))


def chi_square_p(actions: np.ndarray, p: np.ndarray) -> float:
    counts = np.bincount(actions, minlength=N_ACTIONS)
    legal = p > 0
    assert counts[~legal].sum() == 0, "an illegal action was drawn"
    return float(stats.chisquare(counts[legal], p[legal] * len(actions)).pvalue)


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("legal", [2, 9, 40])
def test_draws_follow_the_softmax_over_the_legal_actions(form: str, legal: int) -> None:
    logits, mask = fixed_position(legal, legal)
    p = softmax_over_legal(logits, mask)
    actions = draw(FORMS[form], logits, mask, DRAWS, seed=legal)
    assert chi_square_p(actions, p) > 1e-4
    # the test can fail: the same draws judged against a distribution 5 % off on one action
    off = p.copy()
    top = int(np.argmax(p))
    off[top] *= 1.05
    assert chi_square_p(actions, off / off.sum()) < 1e-4


def test_the_default_form_through_policy_actions_follows_the_softmax() -> None:
    """`policy_actions` (the league's sampler, in this machine's form) on a batch of one
    position: the distribution of `jax.random.categorical` over the masked logits."""
    logits, mask = fixed_position(7, 25)
    big_logits, big_mask = (jnp.broadcast_to(jnp.asarray(x), (DRAWS, N_ACTIONS)) for x in (logits, mask))
    actions = np.asarray(jax.jit(policy_actions)(jax.random.key(3), big_logits, big_mask))
    assert chi_square_p(actions, softmax_over_legal(logits, mask)) > 1e-4


@pytest.mark.parametrize("form", sorted(FORMS))
def test_never_an_illegal_action(form: str) -> None:
    """Rows of every density (one legal action among them), legal logits down to -80 below
    illegal ones at +80, and uniform numbers at both ends of [0, 1)."""
    rng = np.random.default_rng(0)
    rows = 4096
    density = rng.choice([0.0, 0.02, 0.3, 1.0], (rows, 1))
    mask = rng.random((rows, N_ACTIONS)) < density
    mask[np.arange(rows), rng.integers(0, N_ACTIONS, rows)] = True  # at least one legal action
    logits = np.where(mask, rng.uniform(-80, 0, (rows, N_ACTIONS)), 80.0).astype(np.float32)
    u = rng.random(rows).astype(np.float32)
    u[: rows // 4] = 0.0
    u[rows // 4 : rows // 2] = np.nextafter(np.float32(1), np.float32(0))

    @jax.jit
    def run(u, logits, mask):
        with_form = xla.TwoForms(FORMS[form], FORMS[form])
        top = jnp.max(jnp.where(mask, logits, -jnp.inf), axis=-1, keepdims=True)
        return with_form(jnp.where(mask, jnp.exp(logits - top), 0.0), u)

    actions = np.asarray(run(u, logits, mask))
    assert mask[np.arange(rows), actions].all()
    default = np.asarray(jax.jit(pick_by_logits)(u, logits, mask))
    assert mask[np.arange(rows), default].all()


def test_the_forms_agree_where_the_sums_are_exact() -> None:
    """Weights of a few bits (0 to 7) sum exactly in either order: both forms pick the same index
    for the same uniform number, bit for bit, on every row."""
    rng = np.random.default_rng(1)
    rows = 2048
    weights = (rng.integers(0, 8, (rows, N_ACTIONS)) * (rng.random((rows, N_ACTIONS)) < 0.3)).astype(np.float32)
    weights[np.arange(rows), rng.integers(0, N_ACTIONS, rows)] += 1.0
    u = (rng.integers(0, 2**12, rows) / 2**12).astype(np.float32)  # dyadic: u x total is exact too
    cpu = np.asarray(jax.jit(FORMS["cpu"])(weights, u))
    plain = np.asarray(jax.jit(FORMS["plain"])(weights, u))
    np.testing.assert_array_equal(cpu, plain)
    assert (weights[np.arange(rows), cpu] > 0).all()
