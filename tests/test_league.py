"""The league backend (experiments/league): config validation, credit assignment, the snapshot
pool, a smoke training run with its run directory and a bit-exact --resume, and the exported
policy as a ladder agent (numpy forward == JAX forward, refusals, a match, R7.3).

One smoke run (tests/support/configs/league_smoke.yaml, compiled once per module) serves the
tests that need a trained policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from conftest import killed_copy, resample_hidden, same_policy_files, sample_states
from tacocat import RulesConfig, new_game
from tacocat.agents.base import AgentInput
from tacocat.agents.mlp_agent import RLLIB_ALGORITHM
from tacocat.agents.policy_file import PolicyFileError
from tacocat.agents.registry import make_agent
from tacocat.cli.app import app
from tacocat.game.ruleset import compile_rules
from tacocat.train.config import load_experiment

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "league_smoke.yaml"
LARGE = ROOT / "tacocat" / "train" / "configs" / "league.yaml"


# ---------------------------------------------------------------------------------------
# config validation: a clear error before any run directory is made
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "overrides, fragment",
    [
        (["opponents=[{agent: search}]"], "opponents.0.agent: agent 'search' has no JAX port"),
        (["opponents=[{agent: 'counter:samples=0'}]"], "samples must be"),
        (["opponents=[{agent: nope}]"], "unknown agent 'nope'"),
        (["opponents=[{agent: 'planner:sacrifice_rate=0.3'}]"], "sacrifice_rate=0 only"),
        (["algo.batch_size=100"], "does not split into minibatches of 100"),
        (["opponents=[]", "league.selfplay_weight=0", "league.snapshot_weight=0"], "the league has no opponents"),
        (["n_envs=3", "algo.batch_size=48"], "n_envs=3 is too small"),
        (["league=null"], "league\n  Input should be a valid dictionary or instance of LeagueConfig"),
        (["backend=sb3"], "the `league` section only applies with backend: league"),
        (["league.sampling=best"], "league.sampling"),
        (["selfplay={snapshot_every: 100}"], "selfplay\n  Extra inputs are not permitted"),
        (["sb3={torch_threads: 2}"], "the `sb3` section only applies with backend: sb3"),
        (["league.decision_share=0"], "league.decision_share"),
        (["league.decision_share=1.5"], "league.decision_share"),
        (["league.decision_share=0.001"], "leaves minibatches of fewer than 2 decisions"),
    ],
)
def test_bad_league_configs_fail_at_validation(overrides: list[str], fragment: str) -> None:
    with pytest.raises(ValidationError, match=fragment.replace("(", r"\(").replace("[", r"\[")):
        load_experiment(SMOKE, overrides=overrides)


def test_the_cli_refuses_a_bad_league_config_before_making_a_run_directory(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "train",
            "--config",
            str(SMOKE),
            "--set",
            f"run_root={tmp_path / 'runs'}",
            "--set",
            "opponents=[{agent: search}]",
        ],
    )
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "has no JAX port" in result.output
    assert not (tmp_path / "runs").exists()


def test_sb3_and_rllib_still_need_an_opponent() -> None:
    with pytest.raises(ValidationError, match="backend sb3 needs at least one opponent"):
        load_experiment(ROOT / "tests" / "support" / "configs" / "smoke.yaml", overrides=["opponents=[]"])


def test_the_shipped_league_configs_validate() -> None:
    for path in (SMOKE, LARGE):
        config = load_experiment(path)
        assert config.backend == "league" and config.league is not None


# ---------------------------------------------------------------------------------------
# credit assignment over the learner's decisions
# ---------------------------------------------------------------------------------------
def _trajectory(learner_turn, reward, done, values):
    from tacocat.train.league.ppo import Transition

    col = lambda x, dtype: jnp.asarray(x, dtype)[:, None]  # noqa: E731  (time, 1 row)
    t = len(reward)
    return Transition(
        obs=jnp.zeros((t, 1, 1)),
        mask=jnp.ones((t, 1, 1), bool),
        action=jnp.zeros((t, 1), jnp.int32),
        log_prob=jnp.zeros((t, 1)),
        value=col(values, jnp.float32),
        reward=col(reward, jnp.float32),
        done=col(done, bool),
        learner_turn=col(learner_turn, bool),
        critic_extra=jnp.zeros((t, 1, 0)),
    )


def test_rewards_between_learner_decisions_are_summed_and_games_cut_the_bootstrap() -> None:
    from tacocat.train.league.ppo import learner_advantages

    # steps: L(v=.5)  O  O(+.25 round reward, learner's)  L(v=.2)  O(game ends, learner -1)  L(v=.3, new game)
    traj = _trajectory(
        learner_turn=[1, 0, 0, 1, 0, 1],
        reward=[0, 0, 0.25, 0, -1, 0],
        done=[0, 0, 0, 0, 1, 0],
        values=[0.5, 9, 9, 0.2, 9, 0.3],
    )
    gamma, lam = 0.9, 0.8
    adv = np.asarray(learner_advantages(traj, jnp.array([0.7]), gamma, lam))[:, 0]
    last = 0 + gamma * 0.7 - 0.3  # the rollout ends: bootstrap from last_value
    second = -1 - 0.2  # the game ended after it: no bootstrap, no carry from the new game
    first_delta = 0.25 + gamma * 0.2 - 0.5
    first = first_delta + gamma * lam * second
    np.testing.assert_allclose(adv, [first, 0, 0, second, 0, last], rtol=1e-6)


@pytest.mark.parametrize("share, slots", [(0.3, 40), (0.6, 40), (0.9, 100)])
def test_packing_keeps_the_learner_decisions_and_only_them(share: float, slots: int) -> None:
    """`pack_learner_decisions`: every learner decision once, padding with weight 0, and only
    what does not fit dropped (counted)."""
    from tacocat.train.league.ppo import pack_learner_decisions

    n = 100
    learner = np.random.default_rng(int(share * 10)).random(n) < share
    traj = _trajectory(learner_turn=learner, reward=np.arange(n), done=np.zeros(n), values=np.zeros(n))
    flat = jax.tree.map(lambda x: x[:, 0], traj)
    (packed, index), dropped = pack_learner_decisions((flat, jnp.arange(n)), slots, jax.random.key(3))
    count = int(learner.sum())
    kept = np.asarray(index)[np.asarray(packed.learner_turn)]
    assert int(packed.learner_turn.sum()) == min(count, slots) and int(dropped) == max(count - slots, 0)
    assert len(set(kept.tolist())) == len(kept) and learner[kept].all()  # distinct learner decisions
    np.testing.assert_array_equal(np.asarray(packed.reward)[np.asarray(packed.learner_turn)], kept)  # rows stay whole
    if count <= slots:
        assert sorted(kept.tolist()) == np.flatnonzero(learner).tolist()


@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
def test_an_update_on_packed_decisions_equals_the_update_on_every_step() -> None:
    """`league.decision_share` < 1 leaves the opponent's steps (weight 0) out of the update: with
    one minibatch per epoch, the same rollout gives the same parameters either way."""
    from tacocat.train.league.pool import SnapshotPool
    from tacocat.train.league.ppo import init_runner
    from tacocat.train.league.trainer import build, coefficients

    params = []
    for share in (1.0, 0.75):
        config = load_experiment(
            SMOKE, overrides=["algo.batch_size=256", "algo.n_epochs=2", f"league.decision_share={share}"]
        )
        env, settings, iteration = build(config)
        assert settings.decision_slots == (0 if share == 1 else 192)
        runner = init_runner(env, settings, jax.random.key(config.seed))
        pool = SnapshotPool(runner.params, config.league.snapshot_pool)
        runner, metrics = iteration(
            runner, pool.arrays, jnp.zeros(config.league.snapshot_slots, jnp.int32), coefficients(config, 0)
        )
        assert int(metrics["decisions_dropped"]) == 0 and 0 < int(metrics["learner_steps"]) <= 192
        params.append(runner.params)
    moved = jax.tree.map(
        lambda a, b: float(jnp.abs(a - b).max()),
        params[0],
        init_runner(env, settings, jax.random.key(config.seed)).params,
    )
    assert max(jax.tree.leaves(moved)) > 1e-4  # the update did something (two Adam steps of 3e-4)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, atol=2e-6), *params)


# ---------------------------------------------------------------------------------------
# the snapshot pool
# ---------------------------------------------------------------------------------------
def test_pfsp_prefers_the_snapshots_the_learner_loses_to() -> None:
    from tacocat.train.league.pool import SnapshotPool

    pool = SnapshotPool({"actor": [(jnp.zeros(2), jnp.zeros(1))]}, size=3)
    pool.add({"actor": [(jnp.ones(2), jnp.ones(1))]})
    pool.add({"actor": [(2 * jnp.ones(2), 2 * jnp.ones(1))]})
    assert pool.filled == 3 and float(pool.arrays["actor"][0][0][2, 0]) == 2.0
    pool.games, pool.wins = [100, 100, 100], [95, 50, 5]
    drawn = pool.draw(np.random.default_rng(0), 4000, "pfsp", 2.0)
    counts = np.bincount(drawn, minlength=3)
    assert counts[2] > counts[1] > counts[0]
    uniform = np.bincount(pool.draw(np.random.default_rng(0), 3000, "uniform", 2.0), minlength=3)
    assert uniform.min() > 900
    pool.add({"actor": [(3 * jnp.ones(2), 3 * jnp.ones(1))]})  # full: replaces the oldest (slot 0)
    assert float(pool.arrays["actor"][0][0][0, 0]) == 3.0 and pool.games[0] == 0


# ---------------------------------------------------------------------------------------
# a smoke run, its run directory, resume, export
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tacocat.train.loop import train

    root = tmp_path_factory.mktemp("league")
    return train(load_experiment(SMOKE, overrides=[f"run_root={root}"]), progress=False).run_dir


def _restored(run_dir: Path) -> tuple[Any, Any]:
    """A fresh trainer of the run's config with the run's newest checkpoint, and its marker."""
    from tacocat.train import checkpoints
    from tacocat.train.league.trainer import LeagueTrainer

    config = load_experiment(run_dir / "config.yaml")
    trainer = LeagueTrainer(config)
    folder, marker = checkpoints.latest(run_dir, config)
    trainer.restore(folder, marker)
    return trainer, marker


def test_the_smoke_run_writes_the_run_directory(smoke_run: Path) -> None:
    for name in (
        "config.yaml",
        "run.json",
        "progress.csv",
        "eval.csv",
        "learning_curve.png",
        "policy.npz",
        "final.json",
    ):
        assert (smoke_run / name).is_file(), name
    meta = json.loads((smoke_run / "run.json").read_text())
    assert meta["ruleset_hash"] == RulesConfig().ruleset_hash() and {"jax", "optax", "pgx"} <= set(meta["versions"])
    rows = (smoke_run / "progress.csv").read_text().splitlines()
    assert len(rows) == 1 + 3 and rows[-1].startswith("3,768,")
    assert list((smoke_run / "tb").iterdir())
    assert sorted(p.name for p in (smoke_run / "checkpoints").glob("*.json")) == ["ckpt_512.json", "ckpt_768.json"]


def test_resume_after_a_kill_continues_bit_for_bit(smoke_run: Path, tmp_path: Path) -> None:
    """A run killed after its 512-step checkpoint (the last checkpoint and final.json never
    written) resumes to the same final policy as the run that was not interrupted."""
    from tacocat.train.loop import train

    killed = killed_copy(smoke_run, tmp_path / smoke_run.name, "ckpt_768")
    (killed / "checkpoints" / "ckpt_1024").mkdir()
    (killed / "checkpoints" / "ckpt_1024" / "arrays.npz").write_bytes(b"half-written")  # no marker: ignored
    train(resume=killed, progress=False)
    assert same_policy_files(smoke_run / "policy.npz", killed / "policy.npz")
    assert (killed / "progress.csv").read_text().count("\n") == 4
    with pytest.raises(ValueError, match="is a finished run"):
        train(resume=killed, progress=False)


def _observations(count: int) -> tuple[np.ndarray, list[AgentInput]]:
    inputs = [AgentInput.from_state(s, s.current_player) for seed in range(20) for s in sample_states(seed, every=7)]
    inputs = inputs[:count]
    return np.stack([i.observation for i in inputs]), inputs


def test_numpy_forward_equals_jax_forward(smoke_run: Path) -> None:
    from tacocat.train.league.network import input_scale, mlp
    from tacocat.train.league.trainer import LeagueTrainer

    config = load_experiment(smoke_run / "config.yaml")
    trainer, marker = _restored(smoke_run)
    runner = trainer.runner
    assert marker.timesteps == 768
    obs, inputs = _observations(300)
    scaled = jnp.asarray(obs * input_scale(compile_rules(config.rules_config)))  # the export folds the scale in
    jax_logits = np.asarray(mlp(runner.params["actor"], scaled, config.algo.activation))
    agent = make_agent(f"league:path={smoke_run / 'policy.npz'}")
    np_logits = np.stack([agent.logits(o) for o in obs])
    np.testing.assert_allclose(np_logits, jax_logits, rtol=1e-4, atol=1e-5)
    masks = np.stack([i.action_mask.astype(bool) for i in inputs])
    greedy = np.argmax(np.where(masks, jax_logits, -np.inf), axis=1)
    assert [agent.act(i) for i in inputs] == greedy.tolist()
    untrained = LeagueTrainer(config).runner.params["actor"]  # the run's initial weights
    assert not np.allclose(jax_logits, np.asarray(mlp(untrained, scaled, "tanh")))


def test_the_league_agent_plays_a_match_without_jax(smoke_run: Path) -> None:
    """A duplicate match against `random`, in a fresh interpreter that never imports JAX."""
    import subprocess
    import sys

    code = (
        "import sys; from tacocat.evaluation.matches import match; "
        f"r = match('league:path={smoke_run / 'policy.npz'}', 'random', deal_pairs=3, seed=0, progress=False); "
        "print(r.n_games, 'jax' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.split() == ["6", "False"], out.stdout + out.stderr


def test_the_league_agent_sees_only_its_observation(smoke_run: Path) -> None:
    """R7.3: re-dealing everything the player cannot see changes none of its decisions."""
    _assert_decisions_ignore_hidden_cards(smoke_run / "policy.npz")


def _assert_decisions_ignore_hidden_cards(policy: Path) -> None:
    agent = make_agent(f"league:path={policy}", deterministic=False)
    rng = np.random.default_rng(3)
    checked = 0
    for seed in range(6):
        for state in sample_states(seed, every=3):
            player = state.current_player
            twin = resample_hidden(state, player, rng)
            choices = []
            for s in (state, twin):
                agent.reset(player, np.random.default_rng(seed))
                choices.append(agent.act(AgentInput.from_state(s, player)))
            assert choices[0] == choices[1]
            checked += 1
    assert checked > 100


@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
def test_the_privileged_critic_reads_the_opponents_observation_and_the_actor_does_not(tmp_path: Path) -> None:
    """`league.privileged_critic`: the critic's first layer takes both players' observations
    (so its value moves when only the opponent's hidden cards change), the actor's and the
    exported policy's only the learner's own, and the exported agent still ignores every hidden
    card (R7.3)."""
    from tacocat.train.league.ppo import critic_extra, critic_value, init_runner
    from tacocat.train.league.trainer import build
    from tacocat.train.loop import train

    config = load_experiment(
        SMOKE,
        overrides=[
            f"run_root={tmp_path}",
            "league.privileged_critic=true",
            "total_timesteps=256",
            "checkpoint_every=256",
            "eval.every=256",
        ],
    )
    env, settings, _ = build(config)
    obs_size = env.observation_shape[0]
    params = init_runner(env, settings, jax.random.key(0)).params
    assert params["actor"][0][0].shape[0] == obs_size and params["critic"][0][0].shape[0] == 2 * obs_size
    # the critic's input at a learner decision: own observation, then critic_extra (the opponent's)
    observe, scale, rng, moved = jax.vmap(env.observe), jnp.ones(obs_size), np.random.default_rng(5), 0
    for state in sample_states(1, every=5):
        player = state.current_player
        batch = env.from_games([state, resample_hidden(state, player, rng)])
        own = observe(batch, jnp.full(2, player))
        np.testing.assert_array_equal(own[0], own[1])  # the actor's input: unchanged
        other = jnp.full(2, 1 - player)
        assert critic_extra(observe, batch, other, scale, False).shape == (2, 0)
        values = critic_value(
            params["critic"], own, critic_extra(observe, batch, other, scale, True), settings.activation
        )
        moved += bool(values[0] != values[1])
    assert moved > 0
    run = train(config, progress=False).run_dir
    with np.load(run / "policy.npz", allow_pickle=False) as exported:
        assert exported["layer_0_weight"].shape[1] == obs_size
    _assert_decisions_ignore_hidden_cards(run / "policy.npz")


def test_a_policy_file_for_other_rules_or_sizes_is_refused(smoke_run: Path, tmp_path: Path) -> None:
    policy = smoke_run / "policy.npz"
    other = RulesConfig(max_rounds=7)
    agent = make_agent(f"league:path={policy}")
    with pytest.raises(PolicyFileError, match="was trained for ruleset"):
        agent.act(AgentInput.from_state(new_game(other, 0), 0))
    with np.load(policy) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(bytes(arrays["metadata"]).decode())
    # an observation size that is not this game's (first layer reshaped to match, same ruleset hash)
    arrays["layer_0_weight"] = np.zeros((arrays["layer_0_weight"].shape[0], meta["observation_size"] + 1), np.float32)
    meta["observation_size"] += 1
    arrays["metadata"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    np.savez(tmp_path / "wide.npz", **arrays)
    with pytest.raises(PolicyFileError, match="takes observations of size"):
        make_agent(f"league:path={tmp_path / 'wide.npz'}").act(AgentInput.from_state(new_game(RulesConfig(), 0), 0))
    # pickled objects are never loaded
    np.savez(tmp_path / "pickled.npz", metadata=np.array([{"x": 1}], dtype=object), layer_0_weight=np.zeros(1))
    with pytest.raises(PolicyFileError, match="not a valid policy file"):
        make_agent(f"league:path={tmp_path / 'pickled.npz'}")
    # a file from another backend
    meta["algorithm"], meta["observation_size"] = RLLIB_ALGORITHM, meta["observation_size"] - 1
    arrays["layer_0_weight"] = np.zeros((arrays["layer_0_weight"].shape[0], meta["observation_size"]), np.float32)
    arrays["metadata"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    np.savez(tmp_path / "rllib.npz", **arrays)
    with pytest.raises(PolicyFileError, match="not made by the league backend"):
        make_agent(f"league:path={tmp_path / 'rllib.npz'}")


# ---------------------------------------------------------------------------------------
# the shipped policy
# ---------------------------------------------------------------------------------------
def test_the_shipped_champion_is_a_small_league_policy_for_the_default_rules() -> None:
    from tacocat.agents.mlp_agent import CHAMPION, LEAGUE_ALGORITHM
    from tacocat.agents.policy_file import load_policy_file

    assert CHAMPION.stat().st_size < 5_000_000  # "a few MB at most"
    _, meta = load_policy_file(CHAMPION)
    assert meta["algorithm"] == LEAGUE_ALGORITHM
    assert meta["ruleset_hash"] == compile_rules(RulesConfig()).hash
    agent = make_agent("champion")
    state = new_game(RulesConfig(), np.random.default_rng(0))
    inp = AgentInput.from_state(state, state.current_player)
    assert inp.action_mask[agent.act(inp)]


def test_the_champion_refuses_another_ruleset() -> None:
    agent = make_agent("champion")
    state = new_game(RulesConfig(board=(4, 6, 7, 6, 4)), np.random.default_rng(0))
    with pytest.raises(PolicyFileError, match="trained for ruleset"):
        agent.act(AgentInput.from_state(state, state.current_player))


def test_the_champion_beats_planner_in_a_short_match() -> None:
    """A strength floor for the shipped model (docs/BENCHMARKS.md has its full results): a
    random or broken policy loses this."""
    from tacocat.evaluation.matches import match

    m = match("champion", "planner", deal_pairs=100, seed=3, progress=False)
    assert m.ci_low > 0.5, m.win_rate_a


def test_anneal_lr_decays_the_learning_rate_to_zero_over_the_run() -> None:
    """`league.anneal_lr`: as many decay steps as the run has gradient steps; the last updates
    move the parameters less and less, and not at all once the schedule ends."""

    from tacocat.train.league.ppo import make_optimizer
    from tacocat.train.league.trainer import ppo_settings

    config = load_experiment(SMOKE, overrides=["league.anneal_lr=true"])
    s = ppo_settings(config)
    per_iteration = config.n_envs * config.algo.n_steps
    iterations = -(-config.total_timesteps // per_iteration)
    assert s.anneal_updates == iterations * config.algo.n_epochs * (per_iteration // config.algo.batch_size)
    assert ppo_settings(load_experiment(SMOKE)).anneal_updates == 0
    s = s.__class__(**{**s.__dict__, "anneal_updates": 4})
    optimizer, params = make_optimizer(s), {"w": jnp.ones(3)}
    state, sizes = optimizer.init(params), []
    for _ in range(5):
        updates, state = optimizer.update({"w": jnp.ones(3)}, state, params)
        sizes.append(float(jnp.abs(updates["w"]).max()))
    assert sizes[0] > sizes[1] > sizes[2] > sizes[3] > 0 and sizes[4] == 0


@pytest.mark.parametrize("agent", ["league", "rllib"])
def test_a_policy_file_opponent_for_other_rules_is_refused_at_validation(smoke_run: Path, agent: str) -> None:
    spec = f"{agent}:path={smoke_run / 'policy.npz'}"
    load_experiment(
        ROOT / "tests" / "support" / "configs" / "smoke.yaml", overrides=[f"opponents=[{{agent: '{spec}'}}]"]
    )
    with pytest.raises(ValidationError, match=r"opponents: .* was trained for ruleset"):
        load_experiment(
            ROOT / "tests" / "support" / "configs" / "smoke.yaml",
            overrides=[f"opponents=[{{agent: '{spec}'}}]", "rules.max_rounds=30"],
        )
