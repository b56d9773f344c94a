"""Ray RLlib backend: env adapter, masked module, policy mapping, export, smoke run, bad input."""

from __future__ import annotations

import csv
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from tacocat.agents.base import AgentInput
from tacocat.agents.policy_file import PolicyFileError, load_policy_file, policy_logits
from tacocat.agents.registry import make_agent
from tacocat.cli.app import app
from tacocat.evaluation.matches import match
from tacocat.train.config import load_experiment
from tacocat.train.rllib.config import RllibConfig
from tacocat.train.rllib.env import MaskedActionError, TacocatMultiAgentEnv
from tacocat.train.rllib.ray_runtime import RllibSetupError, check_reachable, require_ray, start_ray
from tacocat.train.rllib.trainer import LEARNER, POLICY_FILE, export_policy, make_policy_mapping

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "rllib_smoke.yaml"


def play_random_game(env: TacocatMultiAgentEnv, rng: np.random.Generator) -> tuple[dict, int]:
    obs, _ = env.reset(seed=int(rng.integers(1000)))
    totals = dict.fromkeys(env.possible_agents, 0.0)
    steps = 0
    while True:
        assert len(obs) == 1 or env.agents == []  # turn-based: one player to act
        ((agent, ob),) = obs.items()
        legal = np.flatnonzero(ob["action_mask"])
        assert legal.size > 0
        obs, rewards, terminateds, truncateds, _ = env.step({agent: int(rng.choice(legal))})
        steps += 1
        for a, r in rewards.items():
            totals[a] += r
        if terminateds["__all__"] or truncateds["__all__"]:
            assert set(obs) == set(env.possible_agents)  # both players see the end
            return totals, steps


def test_adapter_plays_whole_games_with_zero_sum_rewards():
    env = TacocatMultiAgentEnv({})
    rng = np.random.default_rng(0)
    outcomes = set()
    for _ in range(5):
        totals, steps = play_random_game(env, rng)
        assert sum(totals.values()) == 0.0
        outcomes.add(totals["player_0"])
        assert env.actions_sent >= steps and env.masked_actions_sent == 0
    assert outcomes & {1.0, -1.0}


def test_a_masked_action_is_counted_refused_and_leaves_the_game_unchanged():
    env = TacocatMultiAgentEnv({})
    obs, _ = env.reset(seed=3)
    ((agent, ob),) = obs.items()
    masked = int(np.flatnonzero(ob["action_mask"] == 0)[0])
    before = list(env.aec.unwrapped.game.actions)
    with pytest.raises(MaskedActionError, match=f"masked action {masked}"):
        env.step({agent: masked})
    assert env.masked_actions_sent == 1
    assert env.aec.unwrapped.game.actions == before


def test_opponent_actions_are_the_agents_choices_from_their_own_input():
    env = TacocatMultiAgentEnv({"opponents": ["highcard", "counter"]})
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(1)
    for _ in range(60):
        ((agent, ob),) = obs.items()
        seat = env.possible_agents.index(agent)
        inp = AgentInput.from_state(env.aec.unwrapped.game, seat)
        for column, spec in enumerate(["highcard", "counter"]):
            assert ob["opponent_actions"][column] == make_agent(spec).act(inp)
            assert ob["action_mask"][ob["opponent_actions"][column]] == 1
        obs, _, term, trunc, _ = env.step({agent: int(rng.choice(np.flatnonzero(ob["action_mask"])))})
        if term["__all__"] or trunc["__all__"]:
            obs, _ = env.reset()


def test_R7_3_opponent_actions_ignore_the_other_players_hidden_cards():
    """Perturbation, at every step of random games: move one card between the non-acting
    player's hand and the draw pile; the acting player's observation and the fixed agents'
    choices for it must not change."""
    env = TacocatMultiAgentEnv({"opponents": ["counter", "planner", "highcard"]})
    obs, _ = env.reset(seed=11)
    rng = np.random.default_rng(4)
    perturbed = 0
    for _ in range(300):
        ((agent, before),) = obs.items()
        game = env.aec.unwrapped.game
        other = 1 - env.possible_agents.index(agent)
        swaps = [
            (v, w) for v in range(len(game.hands[other])) if game.hands[other][v] for w in set(game.draw_pile) if w != v
        ]
        if swaps:
            v, w = swaps[int(rng.integers(len(swaps)))]
            twin = game.clone()
            twin.hands[other][v] -= 1
            twin.hands[other][w] += 1
            twin.draw_pile[twin.draw_pile.index(w)] = v
            env.aec.unwrapped.game = twin
            after = env._observe(agent)
            env.aec.unwrapped.game = game
            np.testing.assert_array_equal(after["observations"], before["observations"])
            np.testing.assert_array_equal(after["opponent_actions"], before["opponent_actions"])
            perturbed += 1
        obs, _, term, trunc, _ = env.step({agent: int(rng.choice(np.flatnonzero(before["action_mask"])))})
        if term["__all__"] or trunc["__all__"]:
            obs, _ = env.reset()
    assert perturbed > 100


def test_policy_mapping_selfplay_and_fixed_opponents():
    opponents = [("counter", 3.0), ("random", 1.0)]
    selfplay = make_policy_mapping(RllibConfig(selfplay_fraction=1.0), opponents)
    assert {selfplay(a, f"ep{i}") for i in range(50) for a in ("player_0", "player_1")} == {LEARNER}
    versus = make_policy_mapping(RllibConfig(selfplay_fraction=0.0), opponents)
    seats, picks = [], []
    for i in range(2000):
        pair = [versus("player_0", f"ep{i}"), versus("player_1", f"ep{i}")]
        assert pair.count(LEARNER) == 1  # exactly one learner seat, the other a fixed agent
        seats.append(pair.index(LEARNER))
        picks.append(pair[1 - pair.index(LEARNER)])
    assert 0.45 < np.mean(seats) < 0.55
    assert 0.70 < picks.count("opponent_0") / len(picks) < 0.80  # weights 3:1
    mixed = make_policy_mapping(RllibConfig(selfplay_fraction=0.5), opponents)
    both = np.mean([mixed("player_0", f"e{i}") == mixed("player_1", f"e{i}") == LEARNER for i in range(2000)])
    assert 0.45 < both < 0.55


def test_exported_numpy_policy_matches_the_torch_module(tmp_path):
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from tacocat.train.rllib.module import MaskedPPOModule

    config = load_experiment(SMOKE, overrides=["algo.activation=relu"])
    env = TacocatMultiAgentEnv({})
    module = RLModuleSpec(
        module_class=MaskedPPOModule,
        observation_space=env.observation_spaces["player_0"],
        action_space=env.action_spaces["player_0"],
        model_config={
            "fcnet_hiddens": [32, 32],
            "fcnet_activation": "relu",
            "head_fcnet_hiddens": [],
            "vf_share_layers": False,
        },
    ).build()
    path = export_policy(module, tmp_path / "p.npz", config, 0)
    layers, meta = load_policy_file(path)
    assert meta["activation"] == "relu" and len(layers) == 3
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=2)
    for _ in range(40):
        ((agent, ob),) = obs.items()
        batch = {Columns.OBS: {k: torch.as_tensor(v)[None] for k, v in ob.items()}}
        with torch.no_grad():
            logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0].numpy()
        legal = ob["action_mask"].astype(bool)
        assert (logits[~legal] < -1e30).all()  # masked actions get no probability
        ours = policy_logits(layers, "relu", ob["observations"])
        np.testing.assert_allclose(ours[legal], logits[legal], rtol=1e-4, atol=1e-5)
        obs, _, term, trunc, _ = env.step({agent: int(rng.choice(np.flatnonzero(legal)))})
        if term["__all__"] or trunc["__all__"]:
            obs, _ = env.reset()


def test_bad_policy_files_are_clear_errors(tmp_path):
    with pytest.raises(PolicyFileError, match="does not exist"):
        make_agent(f"rllib:path={tmp_path / 'none.npz'}")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip")
    with pytest.raises(PolicyFileError, match="not a valid policy file"):
        make_agent(f"rllib:path={junk}")
    np.savez(tmp_path / "pickled.npz", metadata=np.array([{"x": 1}], dtype=object))
    with pytest.raises(PolicyFileError, match="not a valid policy file"):  # object arrays are not loaded
        make_agent(f"rllib:path={tmp_path / 'pickled.npz'}")


# --- config and bad input --------------------------------------------------------------
def test_config_backend_section_is_typed(tmp_path):
    assert load_experiment(SMOKE).backend == "rllib"
    assert load_experiment(ROOT / "tacocat/train/configs/rllib_selfplay.yaml").rllib.env_runners == 2
    with pytest.raises(ValidationError, match="env_runnerz"):
        load_experiment(SMOKE, overrides=["rllib.env_runnerz=2"])
    with pytest.raises(ValidationError, match="rllib\n  Field required"):
        load_experiment(ROOT / "tests/support/configs/smoke.yaml", overrides=["backend=rllib", "sb3=null"])
    with pytest.raises(ValidationError, match="only applies with backend: rllib"):
        load_experiment(ROOT / "tests/support/configs/smoke.yaml", overrides=["rllib.env_runners=2"])
    with pytest.raises(ValidationError, match="backend"):
        load_experiment(SMOKE, overrides=["backend=tune"])
    with pytest.raises(ValidationError, match=r"algo.batch_size \(500\) .* rllib.train_batch_size \(400\)"):
        load_experiment(SMOKE, overrides=["algo.batch_size=500"])


def test_ray_missing_is_one_clear_message(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RllibSetupError, match=r"needs Ray RLlib .*pip install -e '.\[rllib\]'"):
        require_ray()


def test_unreachable_address_fails_fast():
    started = time.perf_counter()
    with pytest.raises(RllibSetupError, match=r"cannot reach the Ray cluster at 127.0.0.1:9"):
        check_reachable("127.0.0.1:9")
    assert time.perf_counter() - started < 30  # a probe with a timeout, not Ray's minutes of retries
    with pytest.raises(RllibSetupError, match="host:port"):
        check_reachable("nohost")


def test_more_env_runners_than_cpus_is_refused_before_starting_ray():
    import ray

    with pytest.raises(RllibSetupError, match=r"3 env runner\(s\) .* need 3 CPUs, but the local Ray runtime"):
        start_ray(RllibConfig(env_runners=3, num_cpus=2), None)
    assert not ray.is_initialized()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--set", "rllib.env_runners=9"], "need 9 CPUs"),
        (["--set", "opponents=[{agent: countr}]"], "opponents.0.agent: unknown agent 'countr'"),
        (["--address", "127.0.0.1:9"], "cannot reach the Ray cluster"),
    ],
)
def test_cli_bad_ray_settings_are_one_line_errors(tmp_path, args, message):
    result = CliRunner().invoke(app, ["train", "--config", str(SMOKE), "--set", f"run_root={tmp_path}", *args])
    assert result.exit_code != 0
    assert message in result.output and "Traceback" not in result.output
    assert not list(tmp_path.iterdir())  # nothing written


def test_cli_ray_address_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:9")
    result = CliRunner().invoke(app, ["train", "--config", str(SMOKE), "--set", f"run_root={tmp_path}"])
    assert result.exit_code == 2 and "cannot reach the Ray cluster at 127.0.0.1:9" in result.output


# --- smoke run: 2 env runners on a local Ray runtime, then a resume --------------------
@pytest.fixture(scope="module")
def smoke_runs(tmp_path_factory):
    """`tacocat train` of a 2-iteration run (with --evaluate), then `tacocat train --resume`
    of the same run after losing its last checkpoint."""
    import ray

    root = tmp_path_factory.mktemp("rllib")
    start_ray(load_experiment(SMOKE).rllib, None)  # one Ray runtime for both (the CLI leaves it running)
    check_reachable(ray.get_runtime_context().gcs_address)  # a real GCS passes the address check's handshake
    runner = CliRunner()
    try:
        result = runner.invoke(
            app, ["train", "--config", str(SMOKE), "--set", f"run_root={root}", "--no-progress", "--evaluate"]
        )
        assert result.exit_code == 0, result.output
        run_dir = Path(result.output.split("run directory: ")[1].split()[0])
        first = (run_dir / "progress.csv").read_text()
        last = max((run_dir / "checkpoints").glob("ckpt_*.json"), key=lambda p: int(p.stem.split("_")[1]))
        last.unlink()  # as if killed while writing the last checkpoint (so before final.json)
        shutil.rmtree(last.with_suffix(""))
        (run_dir / "final.json").unlink()
        resumed = runner.invoke(app, ["train", "--resume", str(run_dir), "--no-progress"])
        assert resumed.exit_code == 0, resumed.output
    finally:
        ray.shutdown()
    return run_dir, first


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
def test_smoke_run_trains_with_two_env_runners_and_never_sends_a_masked_action(smoke_runs):
    run_dir, first = smoke_runs
    rows = list(csv.DictReader(first.splitlines()))
    assert len(rows) == 2
    assert all(int(r["masked_actions_sent"]) == 0 for r in rows)
    assert sum(int(r["actions_sent"]) for r in rows) == int(rows[-1]["timesteps"]) >= 800
    for name in ("config.yaml", "run.json", "eval.csv", POLICY_FILE, "final.json", "learning_curve.png"):
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "tb").glob("events.out.tfevents.*"))
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["versions"]["ray"] and meta["ruleset_hash"]
    assert meta["ray"]["address"] == "local"


@pytest.mark.slow  # the smoke_runs fixture: two RLlib trainings on a local Ray runtime, about 25 s or more
def test_resume_continues_from_the_last_complete_checkpoint(smoke_runs):
    run_dir, first = smoke_runs
    rows = _rows(run_dir / "progress.csv")
    assert [int(r["iteration"]) for r in rows] == [1, 2]  # iteration 2 redone, not appended twice
    assert rows[0] == next(csv.DictReader(first.splitlines()))
    assert all(int(r["masked_actions_sent"]) == 0 for r in rows)
    assert json.loads((run_dir / "final.json").read_text())["timesteps"] == int(rows[-1]["timesteps"])


@pytest.mark.slow  # the smoke_runs fixture (above)
def test_exported_agent_plays_a_duplicate_match(smoke_runs):
    run_dir, _ = smoke_runs
    final = json.loads((run_dir / "final_eval.json").read_text())  # --evaluate: eval.final through match()
    assert [r["opponent"] for r in final] == ["random"] and final[0]["games"] == 10
    result = match(f"rllib:path={run_dir / POLICY_FILE}", "random", deal_pairs=3, seed=1, progress=False)
    assert result.n_games == 6 and result.truncated >= 0
    assert 0.0 <= result.win_rate_a <= 1.0
