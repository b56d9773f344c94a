"""Fixed trained policies and `random` as league opponents (tacocat/agents/jax_forms.py), and the
warm start of the learner (league.init_actor, league.critic_warmup).

The JAX form of a policy file must decide as the numpy agent (tacocat/agents/mlp_agent.py) does: the
same greedy action and the same sampling probabilities (to 1e-5) on more than 10,000 positions
of mixed play (random moves and the policy's own) through the reference engine, for the
shipped champion (tanh, the default rules) and for a relu file made for the skirmish preset.
Configs naming an opponent with no JAX form, a file for other rules or a warm start that does
not fit are refused at validation, in one line."""

from __future__ import annotations

import itertools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from play_positions import mixed_play_positions
from pydantic import ValidationError

from conftest import killed_copy
from tacocat import RulesConfig
from tacocat.agents.base import AgentInput
from tacocat.agents.jax_forms import file_logits, make_opponent
from tacocat.agents.jax_ports import NotPortedError
from tacocat.agents.mlp_agent import CHAMPION, RLLIB_ALGORITHM
from tacocat.agents.policy_file import save_policy
from tacocat.agents.registry import make_agent
from tacocat.game.observation import ObservationLayout
from tacocat.game.presets import preset_config
from tacocat.game.ruleset import compile_rules
from tacocat.game.state import Phase
from tacocat.train.config import load_experiment

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "league_smoke.yaml"
SKIRMISH = preset_config("skirmish")


def relu_file(path: Path, rules: RulesConfig, seed: int) -> Path:
    """A random relu policy file (two hidden layers of 48) for `rules`, as RLlib exports it."""
    rng = np.random.default_rng(seed)
    compiled = compile_rules(rules)
    sizes = [ObservationLayout(compiled).size, 48, 48, compiled.codec.size]
    layers = [(rng.normal(0, 1 / np.sqrt(a), (b, a)), rng.normal(0, 0.1, b)) for a, b in itertools.pairwise(sizes)]
    return save_policy(
        path,
        layers,
        activation="relu",
        rules_config=rules,
        algorithm=RLLIB_ALGORITHM,
        experiment="test",
        seed=seed,
        timesteps=0,
    )


def batch(inputs: list[AgentInput]) -> tuple[jax.Array, jax.Array]:
    obs = jnp.asarray(np.stack([inp.observation for inp in inputs]))
    mask = jnp.asarray(np.stack([inp.action_mask.astype(bool) for inp in inputs]))
    return obs, mask


def numpy_probabilities(agent, inputs: list[AgentInput]) -> np.ndarray:
    """The numpy agent's sampling distribution (`MLPPolicyAgent.act` with deterministic=False)."""
    out = []
    for inp in inputs:
        logits, legal = agent.logits(inp.observation), inp.action_mask.astype(bool)
        z = np.exp(np.where(legal, logits - logits[legal].max(), -np.inf))
        out.append(z / z.sum())
    return np.stack(out)


def check_agreement(spec: str, config: RulesConfig, inputs: list[AgentInput]) -> None:
    agent = make_agent(spec)
    obs, mask = batch(inputs)
    keys = jax.random.split(jax.random.key(0), len(inputs))
    greedy = np.asarray(
        jax.jit(jax.vmap(make_opponent(spec, config)))(obs, mask, keys, jnp.zeros(len(inputs), jnp.int32))
    )
    expected = np.array([agent.act(inp) for inp in inputs])
    wrong = np.flatnonzero(greedy != expected)
    assert wrong.size == 0, f"{spec}: {wrong.size} of {len(inputs)} greedy actions differ (first at {wrong[0]})"
    logits = jax.jit(jax.vmap(file_logits(agent.layers, agent.meta["activation"])))(obs)
    probabilities = np.asarray(jax.nn.softmax(jnp.where(mask, logits, -jnp.inf)))
    np.testing.assert_allclose(probabilities, numpy_probabilities(agent, inputs), rtol=0, atol=1e-5)


@pytest.fixture(scope="module")
def champion_positions() -> list[AgentInput]:
    return mixed_play_positions(RulesConfig(), 10_500, seed=3, guide="champion")


def test_the_champion_in_jax_decides_as_the_numpy_agent_on_10000_positions(champion_positions) -> None:
    assert len(champion_positions) >= 10_000
    assert {Phase.REPLACE, Phase.DUEL, Phase.ATTACK, Phase.ANSWER} <= {inp.view.phase for inp in champion_positions}
    assert sum(int(inp.action_mask.sum()) > 1 for inp in champion_positions) > 5_000  # positions with a choice
    check_agreement("champion", RulesConfig(), champion_positions)


def test_a_relu_file_for_a_preset_in_jax_decides_as_the_numpy_agent(tmp_path: Path) -> None:
    spec = f"rllib:path={relu_file(tmp_path / 'relu.npz', SKIRMISH, seed=1)}"
    inputs = mixed_play_positions(SKIRMISH, 10_500, seed=4, guide=spec)
    assert {Phase.DUEL, Phase.ATTACK, Phase.ANSWER} <= {inp.view.phase for inp in inputs}
    check_agreement(spec, SKIRMISH, inputs)


def test_sampling_draws_from_the_masked_softmax(champion_positions) -> None:
    """deterministic=false: the JAX form's draws in one position follow the numpy probabilities."""
    inp = next(i for i in champion_positions if i.action_mask.sum() >= 3 and i.view.phase is Phase.ATTACK)
    expected = numpy_probabilities(make_agent("champion"), [inp])[0]
    policy = jax.vmap(
        make_opponent("league:path=" + str(CHAMPION) + ",deterministic=false", RulesConfig()),
        in_axes=(None, None, 0, None),
    )
    obs, mask = batch([inp])
    draws = np.asarray(jax.jit(policy)(obs[0], mask[0], jax.random.split(jax.random.key(1), 20_000), jnp.int32(0)))
    frequencies = np.bincount(draws, minlength=expected.size) / draws.size
    assert inp.action_mask[draws].all()
    np.testing.assert_allclose(frequencies, expected, atol=0.015)
    greedy = make_opponent("champion", RulesConfig())
    assert all(
        int(greedy(obs[0], mask[0], k, jnp.int32(0))) == make_agent("champion").act(inp)
        for k in jax.random.split(jax.random.key(2), 3)
    )


def test_random_plays_uniformly_among_the_legal_actions(champion_positions) -> None:
    inp = next(i for i in champion_positions if i.action_mask.sum() >= 4)
    obs, mask = batch([inp])
    policy = jax.jit(jax.vmap(make_opponent("random", RulesConfig()), in_axes=(None, None, 0, None)))
    draws = np.asarray(policy(obs[0], mask[0], jax.random.split(jax.random.key(0), 20_000), jnp.int32(0)))
    legal = np.flatnonzero(inp.action_mask)
    assert set(draws.tolist()) == set(legal.tolist())
    np.testing.assert_allclose(np.bincount(draws)[legal] / draws.size, 1 / legal.size, atol=0.015)


# ---------------------------------------------------------------------------------------
# config validation
# ---------------------------------------------------------------------------------------
def test_policy_files_and_random_are_league_opponents() -> None:
    config = load_experiment(
        SMOKE,
        overrides=[
            f"opponents=[{{agent: champion}}, {{agent: random}}, "
            f"{{agent: 'league:path={CHAMPION},deterministic=false'}}]"
        ],
    )
    assert [o.agent for o in config.opponents][:2] == ["champion", "random"]


@pytest.mark.parametrize("spec", ["search", "ismcts", "ppo:path=x.zip"])
def test_an_agent_with_no_jax_form_is_refused_naming_those_that_have_one(spec: str) -> None:
    with pytest.raises(NotPortedError) as info:
        make_opponent(spec, RulesConfig())
    message = str(info.value)
    assert "\n" not in message and "has no JAX port" in message
    for name in ("highcard", "planner", "counter", "random", "league:path=", "rllib:path=", "champion"):
        assert name in message


@pytest.mark.parametrize("spec", ["champion", f"league:path={CHAMPION}"])
def test_a_policy_file_for_other_rules_is_refused_naming_both_rulesets(spec: str) -> None:
    rules = "rules={deck: {1: 6, 2: 6}, board: [3, 3, 3], max_rounds: 1, round_reward: 1.0}"
    with pytest.raises(ValidationError) as info:
        load_experiment(SMOKE, overrides=[f"opponents=[{{agent: '{spec}'}}]", rules])
    message = str(info.value)
    assert "was trained for ruleset" in message
    assert RulesConfig().ruleset_hash() in message and SKIRMISH.ruleset_hash() in message
    with pytest.raises(NotPortedError, match=r"\(the default rules\); these rules are ruleset .* \(preset skirmish\)$"):
        make_opponent("champion", SKIRMISH)


@pytest.mark.parametrize(
    "overrides, fragment",
    [
        (["league.init_actor=counter"], "league.init_actor: agent 'counter' has no network to start from"),
        (
            ["league.init_actor=champion"],
            r"has hidden layers \[128, 128\] and activation tanh; algo.net_arch is \[32, 32\]",
        ),
        (["league.init_actor=champion", "algo.net_arch=[128, 128]", "algo.activation=relu"], "algo.activation relu"),
        (
            ["league.init_actor=champion", "algo.net_arch=[128, 128]", "rules.max_rounds=30"],
            "league.init_actor: .* was trained for ruleset",
        ),
        (
            ["league.critic_warmup=3"],
            "league.critic_warmup: 3 warm-up iterations leave no PPO iteration of the run's 3",
        ),
        (["league.critic_warmup=-1"], "league.critic_warmup"),
    ],
)
def test_a_warm_start_that_does_not_fit_is_refused(overrides: list[str], fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment):
        load_experiment(SMOKE, overrides=overrides)


# ---------------------------------------------------------------------------------------
# warm start
# ---------------------------------------------------------------------------------------
def test_init_actor_is_the_file_as_the_learner_holds_it(tmp_path: Path) -> None:
    """The champion's network as the learner's actor (scale taken out of the first layer)
    exports back to the champion's file, to float32 rounding, and plays the same moves."""
    from tacocat.train.league.trainer import export_policy, initial_actor

    config = load_experiment(SMOKE, overrides=["algo.net_arch=[128, 128]", "league.init_actor=champion"])
    export_policy({"actor": initial_actor("champion", config)}, tmp_path / "start.npz", config, 0)
    started, champion = make_agent(f"league:path={tmp_path / 'start.npz'}"), make_agent("champion")
    for (w, b), (cw, cb) in zip(started.layers, champion.layers, strict=True):
        np.testing.assert_allclose(w, cw, rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(b, cb)
    inputs = mixed_play_positions(RulesConfig(), 500, seed=5, guide="champion")
    assert [started.act(i) for i in inputs] == [champion.act(i) for i in inputs]


def _leaves_equal(a, b) -> bool:
    return all(
        np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


@pytest.mark.slow  # two compiled iterations (warm-up and PPO) and a resume: about half a minute
def test_a_warm_started_run_trains_the_critic_alone_first_and_resumes_bit_for_bit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """init_actor champion and critic_warmup 3 of 4 iterations: through the warm-up the actor
    (and the snapshot pool's first slot) stay the champion's and PPO's optimizer makes no step
    while the critic's own does; the last iteration moves the actor; progress.csv marks the
    warm-up; a run killed in the warm-up (its checkpoint after iteration 2 restored: the loop
    keeps the newest two, one every 2 iterations) resumes to the same final policy."""
    import csv

    from tacocat.train import checkpoints
    from tacocat.train.league.trainer import LeagueTrainer, initial_actor
    from tacocat.train.loop import train

    config = load_experiment(
        SMOKE,
        overrides=[
            f"run_root={tmp_path / 'runs'}",
            "algo.net_arch=[128, 128]",
            "opponents=[{agent: champion}, {agent: random}]",
            "league.init_actor=champion",
            "league.critic_warmup=3",
            "total_timesteps=1024",
            "checkpoint_every=512",
            "eval.every=100000",
        ],
    )
    run_dir = train(config, progress=False).run_dir
    with (run_dir / "progress.csv").open() as f:
        assert [row["critic_warmup"] for row in csv.DictReader(f)] == ["1", "1", "1", "0"]
    start = initial_actor("champion", config)
    restored = LeagueTrainer(config)
    fresh = restored.runner  # before the restore: a fresh trainer's
    folder = run_dir / "checkpoints" / "ckpt_512"
    restored.restore(folder, checkpoints.CheckpointMarker.model_validate_json(folder.with_suffix(".json").read_text()))
    updates = config.algo.n_epochs * (config.n_envs * config.algo.n_steps // config.algo.batch_size)
    assert restored.iteration == 2 and restored.iteration < config.league.critic_warmup
    assert _leaves_equal(restored.runner.params["actor"], start)
    assert not _leaves_equal(restored.runner.params["critic"], fresh.params["critic"])
    assert _leaves_equal(restored.runner.opt_state, fresh.opt_state)  # PPO's optimizer: untouched
    counts = [int(x) for x in jax.tree.leaves(restored.critic_opt) if jnp.issubdtype(x.dtype, jnp.integer)]
    assert counts and set(counts) == {2 * updates}
    assert _leaves_equal(jax.tree.map(lambda leaf: leaf[0], restored.pool.arrays["actor"]), start)
    final = make_agent(f"league:path={run_dir / 'policy.npz'}")
    assert not all(
        np.array_equal(w, c) for (w, _), (c, _) in zip(final.layers, make_agent("champion").layers, strict=True)
    )

    assert [p.name for p in checkpoints.markers(run_dir)] == ["ckpt_512.json", "ckpt_1024.json"]
    killed = killed_copy(run_dir, tmp_path / run_dir.name, "ckpt_1024")
    restored_at, restore = [], LeagueTrainer.restore

    def recorded(self: LeagueTrainer, folder: Path, marker: checkpoints.CheckpointMarker) -> None:
        restored_at.append(marker.iteration)
        restore(self, folder, marker)

    monkeypatch.setattr(LeagueTrainer, "restore", recorded)
    train(resume=killed, progress=False)
    assert restored_at == [2]  # iterations 3 (warm-up) and 4 run again, from the checkpoint
    with np.load(run_dir / "policy.npz") as a, np.load(killed / "policy.npz") as b:
        for name in a.files:
            if name != "metadata":
                np.testing.assert_array_equal(a[name], b[name])
