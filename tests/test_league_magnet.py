"""Regularised PPO in the league (MMD, `league.magnet`, `league.ent_coef_final`;
tacocat/train/league/ppo.py `kl_to_magnet`): the KL penalty and its gradient on hand-computed
cases, the uniform magnet's equivalence with an entropy bonus (two runs compared), the EMA
magnet's refresh and its checkpoint, the coefficients' schedules, and the configs refused at
validation."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import killed_copy, same_policy_files
from tacocat.game.errors import one_line
from tacocat.train.config import load_experiment

ROOT = Path(__file__).resolve().parents[1]
#: league_smoke.yaml as it is: its iteration is compiled once per test run (the XLA cache of
#: tests/conftest.py) and shared with the other tests that train it
SMOKE = ROOT / "tests" / "support" / "configs" / "league_smoke.yaml"


def test_the_kl_and_its_gradient_on_a_hand_computed_case() -> None:
    """Logits (0, log 2, log 5) over three legal actions and a fourth, illegal: p = (1, 2, 5) / 8.
    Against the magnet q = (1/2, 1/4, 1/4): KL = sum p log(p / q), and the gradient with respect
    to logit i is p_i (log(p_i / q_i) - KL), by hand; the illegal action's is 0."""
    from tacocat.train.league.network import MASKED_LOGIT
    from tacocat.train.league.ppo import kl_to_magnet

    mask = jnp.array([True, True, True, False])
    logits = jnp.array([0.0, math.log(2), math.log(5), 3.0])
    magnet = jnp.log(jnp.array([0.5, 0.25, 0.25, 1.0]))  # the illegal entry must not count

    def kl(z: jax.Array) -> jax.Array:
        return kl_to_magnet(jax.nn.log_softmax(jnp.where(mask, z, MASKED_LOGIT)), magnet, mask)

    p, q = np.array([1, 2, 5]) / 8, np.array([0.5, 0.25, 0.25])
    expected = float((p * np.log(p / q)).sum())
    assert float(kl(logits)) == pytest.approx(expected, rel=1e-6)
    assert expected == pytest.approx(1 / 8 * math.log(1 / 4) + 2 / 8 * math.log(1) + 5 / 8 * math.log(5 / 2))
    gradient = np.asarray(jax.grad(kl)(logits))
    np.testing.assert_allclose(gradient[:3], p * (np.log(p / q) - expected), rtol=1e-5, atol=1e-7)
    assert gradient[3] == 0.0


def test_the_uniform_magnets_kl_is_log_legal_actions_minus_the_entropy() -> None:
    from tacocat.train.league.ppo import kl_to_magnet, uniform_log_probs

    rng = np.random.default_rng(0)
    mask = jnp.asarray(rng.random((6, 10)) < 0.6).at[:, 0].set(True)
    log_probs = jax.nn.log_softmax(jnp.where(mask, jnp.asarray(rng.normal(size=(6, 10))), -1e9))
    entropy = -jnp.where(mask, jnp.exp(log_probs) * log_probs, 0.0).sum(-1)
    np.testing.assert_allclose(
        kl_to_magnet(log_probs, uniform_log_probs(mask), mask), jnp.log(mask.sum(-1)) - entropy, rtol=1e-5, atol=1e-6
    )
    assert float(kl_to_magnet(uniform_log_probs(mask), uniform_log_probs(mask), mask).max()) == pytest.approx(
        0, abs=1e-6
    )


def _trained(overrides: list[str], iterations: int = 2) -> object:
    from tacocat.train.league.trainer import LeagueTrainer

    trainer = LeagueTrainer(load_experiment(SMOKE, overrides=overrides))
    trainer.rows = [trainer.iterate() for _ in range(iterations)]
    return trainer


def _max_difference(a: object, b: object) -> float:
    return max(float(jnp.abs(x - y).max()) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True))


@pytest.mark.slow  # three runs of two iterations, two of them compiled: about 17 s of CPU
def test_a_uniform_magnet_trains_what_the_same_entropy_bonus_trains() -> None:
    """KL(p || uniform) = log(legal actions) - H(p): a uniform magnet of weight 0.4 on top of
    ent_coef 0.1 has the gradient of ent_coef 0.5. Two runs, the same games; a third with
    ent_coef 0.1 alone moves the parameters differently (the comparison can fail)."""
    magnet = _trained(["algo.ent_coef=0.1", "league.magnet={kind: uniform, kl_coef: 0.4}"])
    bonus = _trained(["algo.ent_coef=0.5"])
    weaker = _trained(["algo.ent_coef=0.1"])
    apart = _max_difference(magnet.runner.params, weaker.runner.params)
    assert apart > 1e-5
    assert _max_difference(magnet.runner.params, bonus.runner.params) < apart / 50
    assert [r["games"] for r in magnet.rows] == [r["games"] for r in bonus.rows]
    assert all(r["magnet_kl"] > 0 for r in magnet.rows) and "magnet_kl" not in bonus.rows[0]


@pytest.mark.slow  # the EMA magnet's iteration compiled: about 17 s of CPU
def test_the_ema_magnet_moves_toward_the_actor_at_each_refresh() -> None:
    from tacocat.train.league.trainer import LeagueTrainer

    config = load_experiment(
        SMOKE, overrides=["league.magnet={kind: ema, kl_coef: 0.5, refresh_every: 2, ema_rate: 0.25}"]
    )
    trainer = LeagueTrainer(config)
    start = trainer.runner.magnet
    assert _max_difference(start, trainer.runner.params["actor"]) == 0  # the magnet starts as the actor
    trainer.iterate()
    assert _max_difference(trainer.runner.magnet, start) == 0  # not refreshed after iteration 1 of 2
    trainer.iterate()
    actor = trainer.runner.params["actor"]
    expected = jax.tree.map(lambda m, a: m + 0.25 * (a - m), start, actor)
    assert _max_difference(trainer.runner.magnet, expected) < 1e-7
    assert _max_difference(trainer.runner.magnet, start) > 1e-6


def test_the_coefficients_follow_their_linear_schedules_over_the_ppo_iterations() -> None:
    from tacocat.train.league.trainer import coefficients

    # 6 iterations of 256 env steps, the first 2 the critic's warm-up: PPO iterations 2..5
    config = load_experiment(
        SMOKE,
        overrides=[
            "total_timesteps=1536",
            "league.critic_warmup=2",
            "algo.ent_coef=0.1",
            "league.ent_coef_final=0.04",
            "league.magnet={kind: uniform, kl_coef: 0.3, kl_coef_final: 0.0}",
        ],
    )
    got = [tuple(round(float(x), 6) for x in coefficients(config, i)) for i in range(6)]
    assert got == [(0.1, 0.3), (0.1, 0.3), (0.1, 0.3), (0.08, 0.2), (0.06, 0.1), (0.04, 0.0)]
    plain = load_experiment(SMOKE)
    assert [(float(c.ent_coef), float(c.kl_coef)) for c in (coefficients(plain, i) for i in range(3))] == [
        (pytest.approx(0.01), 0.0)
    ] * 3


@pytest.mark.slow  # compiles the EMA magnet's iteration when the test above has not: over 10 s then
def test_a_run_with_an_ema_magnet_resumes_bit_for_bit(tmp_path: Path) -> None:
    """The magnet is part of the runner: a checkpoint holds it, and a run killed after its
    512-step checkpoint resumes to the uninterrupted run's policy, refreshes included."""
    from tacocat.train.loop import train

    magnet = "league.magnet={kind: ema, kl_coef: 0.2, refresh_every: 1, ema_rate: 0.5}"
    config = load_experiment(SMOKE, overrides=[magnet, f"run_root={tmp_path / 'runs'}"])
    whole = train(config, progress=False).run_dir
    killed = killed_copy(whole, tmp_path / "killed", "ckpt_768")
    train(resume=killed, progress=False)
    assert same_policy_files(whole / "policy.npz", killed / "policy.npz")
    with (whole / "progress.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 3 and all(float(row["magnet_kl"]) > 0 for row in rows)


@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("league.magnet={kind: uniform, kl_coef: -0.1}", "league.magnet.kl_coef"),
        ("league.magnet={kind: uniform, kl_coef: .inf}", "league.magnet.kl_coef"),
        ("league.magnet={kind: uniform, kl_coef: .nan}", "league.magnet.kl_coef"),
        ("league.magnet={kind: ema, kl_coef: 0.1, refresh_every: 0}", "league.magnet.refresh_every"),
        ("league.magnet={kind: ema, kl_coef: 0.1, ema_rate: 0}", "league.magnet.ema_rate"),
        ("league.magnet={kind: ema, kl_coef: 0.1, ema_rate: 1.5}", "league.magnet.ema_rate"),
        ("league.magnet={kind: target, kl_coef: 0.1}", "league.magnet.kind"),
        ("league.magnet={kl_coef: 0.1}", "league.magnet.kind"),
        ("league.magnet={kind: uniform, kl_coef: 0.1, kl_coef_final: -1}", "league.magnet.kl_coef_final"),
        ("league.ent_coef_final=-0.01", "league.ent_coef_final"),
        ("algo.ent_coef=.inf", "algo.ent_coef"),
    ],
)
def test_bad_regularisation_settings_are_refused_with_the_field_named(override: str, fragment: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as error:
        load_experiment(SMOKE, overrides=[override])
    message = one_line(error.value)
    assert fragment in message and "\n" not in message
