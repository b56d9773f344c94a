"""Training: the Gymnasium view, configs, smoke runs, reproducibility, resume, trained agents."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

from tacocat.agents.base import Agent
from tacocat.agents.registry import format_spec, make_agent
from tacocat.agents.trained import ModelFileError, write_metadata
from tacocat.evaluation.arena import play_game
from tacocat.game.errors import IllegalActionError
from tacocat.train.config import load_experiment
from tacocat.train.gym_env import TacocatSingleAgentEnv, make_env_fn
from tacocat.train.loop import train
from tacocat.train.sb3.config import SB3Experiment

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "smoke.yaml"
POOL = [("random", 1.0), ("highcard", 1.0)]


def smoke_config(tmp_path: Path, **overrides) -> SB3Experiment:
    sets = [f"run_root={tmp_path}"] + [f"{k}={v}" for k, v in overrides.items()]
    return load_experiment(SMOKE, overrides=sets)


def test_single_agent_env_passes_sb3_check_env():
    # check_env samples unmasked actions, hence "penalize"
    check_env(TacocatSingleAgentEnv(POOL, illegal_action="penalize"), warn=True)


def test_illegal_action_raises_and_leaves_the_game_unchanged():
    env = TacocatSingleAgentEnv(POOL)
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    before = list(env.game.actions)
    with pytest.raises(IllegalActionError, match="not legal"):
        env.step(illegal)
    assert env.game.actions == before


@pytest.mark.parametrize("vec_cls", [DummyVecEnv, SubprocVecEnv])
def test_masks_are_honoured_inside_vectorised_envs(vec_cls):
    fns = [make_env_fn(POOL, {}, "alternate") for _ in range(2)]
    vec = vec_cls(fns) if vec_cls is DummyVecEnv else vec_cls(fns, start_method="spawn")
    vec.seed(3)
    vec.reset()
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(400):
        masks = np.stack(vec.env_method("action_masks"))
        assert masks.any(axis=1).all()  # the learner always has a legal move when asked
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        _, _, dones, _ = vec.step(actions)  # "raise" mode: an illegal action would fail here
        finished += int(dones.sum())
    vec.close()
    assert finished > 0


@pytest.mark.parametrize("seat", [0, 1])
def test_reward_is_the_learners_in_either_seat(seat):
    env = TacocatSingleAgentEnv([("random", 1.0)], learner_seat=seat)
    rng = np.random.default_rng(seat)
    outcomes = set()
    for episode in range(30):
        env.reset(seed=episode)
        assert env.seat == seat
        done, total = False, 0.0
        while not done:
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            _, reward, terminated, truncated, _ = env.step(action)
            total += reward
            done = terminated or truncated
        expected = 0.0 if env.game.winner is None else (1.0 if env.game.winner == seat else -1.0)
        assert total == expected
        outcomes.add(expected)
    assert {1.0, -1.0} <= outcomes


def test_alternate_seats_and_round_shaping():
    env = TacocatSingleAgentEnv([("random", 1.0)], rules={"round_reward": 0.25})
    seats = []
    for _ in range(4):
        env.reset() if seats else env.reset(seed=1)
        seats.append(env.seat)
        done, total = False, 0.0
        rng = np.random.default_rng(len(seats))
        while not done:
            _, r, term, trunc, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
            total += r
            done = term or trunc
        won = sum(1 for e in env.game.events if e[0] == "move" and e[1] == env.seat)
        lost = sum(1 for e in env.game.events if e[0] == "move" and e[1] != env.seat)
        final = 0.0 if env.game.winner is None else (1.0 if env.game.winner == env.seat else -1.0)
        assert total == pytest.approx(final + 0.25 * (won - lost))
    assert seats == [0, 1, 0, 1]


def test_config_errors_name_the_key(tmp_path):
    with pytest.raises(ValidationError, match="learning_rte"):
        smoke_config(tmp_path, **{"algo.learning_rte": 0.1})
    with pytest.raises(ValidationError, match="n_envs"):
        smoke_config(tmp_path, n_envs="many")
    with pytest.raises(ValidationError, match="tie_policy"):
        smoke_config(tmp_path, **{"rules.tie_policy": "coin_flip"})
    with pytest.raises(ValueError, match="key=value"):
        load_experiment(SMOKE, overrides=["n_envs"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntotal_timesteps: 10\nopponents: [{agent: random}]\nbogus: 1\n")
    with pytest.raises(ValidationError, match="bogus"):
        load_experiment(bad)


def test_set_overrides_beat_the_file(tmp_path):
    config = smoke_config(tmp_path, **{"algo.learning_rate": 0.001, "seed": 9})
    assert config.algo.learning_rate == 0.001 and config.seed == 9
    assert load_experiment(SMOKE, seed=4).seed == 4


def test_a_config_builds_on_its_base_config(tmp_path):
    """`base_config`: sections merge key by key, lists and numbers replace, bases chain."""
    (tmp_path / "base.yaml").write_text(SMOKE.read_text())
    (tmp_path / "mid.yaml").write_text("base_config: base.yaml\nname: mid\nalgo: {learning_rate: 0.002}\n")
    (tmp_path / "top.yaml").write_text("base_config: mid.yaml\nname: top\nopponents: [{agent: planner}]\n")
    base, top = load_experiment(SMOKE), load_experiment(tmp_path / "top.yaml")
    assert top.name == "top" and top.algo.learning_rate == 0.002
    assert [o.agent for o in top.opponents] == ["planner"]
    assert top.algo.n_steps == base.algo.n_steps and top.total_timesteps == base.total_timesteps
    assert top.model_copy(update={"name": base.name, "algo": base.algo, "opponents": base.opponents}) == base
    assert load_experiment(tmp_path / "top.yaml", overrides=["algo.learning_rate=0.003"]).algo.learning_rate == 0.003


def test_the_main_job_is_the_league_config_with_its_own_budget_and_evaluation():
    configs = ROOT / "tacocat" / "train" / "configs"
    main, league = load_experiment(configs / "main.yaml"), load_experiment(configs / "league.yaml")
    assert main.total_timesteps < league.total_timesteps and main.eval != league.eval
    assert (
        main.model_copy(update={k: getattr(league, k) for k in ("name", "total_timesteps", "eval", "checkpoint_every")})
        == league
    )


@pytest.mark.parametrize(
    "text, error",
    [
        ("base_config: missing.yaml\nname: x\n", "missing.yaml: cannot read"),
        ("base_config: self.yaml\nname: x\n", "makes a cycle"),
        ("base_config: [a, b]\nname: x\n", "base_config must name an experiment YAML"),
    ],
)
def test_a_bad_base_config_is_one_clear_error(tmp_path, text, error):
    path = tmp_path / "self.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=error):
        load_experiment(path)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory) -> Path:
    return train(smoke_config(tmp_path_factory.mktemp("runs")), progress=False).run_dir


def test_smoke_run_writes_a_complete_run_directory(smoke_run):
    for name in (
        "config.yaml",
        "run.json",
        "progress.csv",
        "eval.csv",
        "final_model.zip",
        "best_model.zip",
        "learning_curve.png",
        "final.json",
    ):
        assert (smoke_run / name).is_file(), name
    assert list((smoke_run / "tb").iterdir())
    meta = json.loads((smoke_run / "run.json").read_text())
    assert {"command", "seed", "versions", "git_commit", "ruleset_hash"} <= set(meta)
    assert json.loads((smoke_run / "final.json").read_text())["timesteps"] == 2048
    rows = (smoke_run / "eval.csv").read_text().splitlines()
    assert rows[0].startswith("timesteps,opponent,win_rate")
    assert len(rows) == 1 + 2 * 2  # evaluations at 1024 and 2048 against two opponents


def test_trained_model_loads_as_an_agent_and_plays_legally(smoke_run):
    agent = make_agent("ppo", path=str(smoke_run / "final_model.zip"))
    for seed in range(3):
        record = play_game([agent, make_agent("random")], seed=seed)  # apply_action rejects illegal moves
        assert record.winner in (0, 1, None)
    stochastic = make_agent(f"ppo:path={smoke_run / 'final_model.zip'},deterministic=0")
    assert play_game([make_agent("random"), stochastic], seed=1).length > 0


def test_corrupt_or_mismatched_model_files_are_clear_errors(smoke_run, tmp_path):
    corrupt = tmp_path / "corrupt.zip"
    corrupt.write_bytes(b"not a zip at all")
    with pytest.raises(ModelFileError, match="corrupt zip"):
        make_agent("ppo", path=str(corrupt))
    with pytest.raises(ModelFileError, match="does not exist"):
        make_agent("ppo", path=str(tmp_path / "missing.zip"))
    other = tmp_path / "other_rules.zip"
    model = MaskablePPO.load(smoke_run / "final_model.zip")
    model.save(other)
    with pytest.raises(ModelFileError, match="not a model saved by"):
        make_agent("ppo", path=str(other))
    meta = json.loads(zipfile.ZipFile(smoke_run / "final_model.zip").read("tacocat.json"))
    write_metadata(other, {**meta, "ruleset_hash": "0000000000000000"})
    agent = make_agent("ppo", path=str(other))
    with pytest.raises(ModelFileError, match="trained for ruleset 0000000000000000"):
        play_game([agent, make_agent("random")], seed=0)


def _weights(path: Path) -> dict:
    model = MaskablePPO.load(path)
    return {k: v.numpy().copy() for k, v in model.policy.state_dict().items()}


def _metrics(run: Path) -> list[list[str]]:
    """progress.csv without the wall-clock columns."""
    lines = (run / "progress.csv").read_text().splitlines()
    header = lines[0].split(",")
    keep = [i for i, h in enumerate(header) if h not in ("env_steps_per_s", "iteration_s")]
    return [[row.split(",")[i] for i in keep] for row in lines]


def test_same_seed_same_curve_and_weights(smoke_run, tmp_path):
    again = train(smoke_config(tmp_path), progress=False).run_dir
    assert _metrics(again) == _metrics(smoke_run)
    assert (again / "eval.csv").read_text() == (smoke_run / "eval.csv").read_text()
    first, second = _weights(smoke_run / "final_model.zip"), _weights(again / "final_model.zip")
    assert first.keys() == second.keys()
    assert all(np.array_equal(first[k], second[k]) for k in first)
    other = train(smoke_config(tmp_path, seed=1), progress=False).run_dir
    assert not all(np.array_equal(first[k], v) for k, v in _weights(other / "final_model.zip").items())


@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
def test_resume_after_kill_continues_from_the_last_checkpoint(tmp_path):
    total = 12288
    cmd = [
        sys.executable,
        "-m",
        "tacocat.cli.app",
        "train",
        "--config",
        str(SMOKE),
        "--no-progress",
        "--set",
        f"run_root={tmp_path}",
        "--set",
        f"total_timesteps={total}",
        "--set",
        "eval.every=4096",
    ]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
    )
    deadline = time.time() + 120
    while time.time() < deadline and not list(tmp_path.glob("*/checkpoints/ckpt_*.json")):
        assert proc.poll() is None, proc.stdout.read().decode()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    run_dir = next(tmp_path.iterdir())
    assert not (run_dir / "final_model.zip").exists()
    saved = max(int(p.stem.split("_")[1]) for p in (run_dir / "checkpoints").glob("ckpt_*.json"))
    assert saved < total
    resumed = train(resume=run_dir, progress=False)
    assert resumed.run_dir == run_dir
    assert json.loads((run_dir / "final.json").read_text())["timesteps"] == total
    steps = [int(r["timesteps"]) for r in _rows(run_dir / "progress.csv")]
    assert steps == list(range(1024 // 2, total + 1, 512))  # every iteration once: the lost ones redone
    evaluations = [tuple(line.split(",")[:2]) for line in (run_dir / "eval.csv").read_text().splitlines()[1:]]
    assert len(evaluations) == len(set(evaluations))  # no (timesteps, opponent) evaluated twice
    assert sorted({int(step) for step, _ in evaluations}) == [4096, 8192, 12288]
    with zipfile.ZipFile(run_dir / "final_model.zip") as archive:
        assert json.loads(archive.read("tacocat.json"))["timesteps"] == total


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in [
            *sorted((ROOT / "tacocat" / "train" / "configs").glob("*.yaml")),
            *sorted(SMOKE.parent.glob("*.yaml")),
        ]  # and the tests' smoke configs
        if not p.name.startswith("tune_")
    ],
    ids=lambda p: p.stem,
)  # tune files: test_tune
def test_shipped_configs_are_valid(path):
    config = load_experiment(path)
    specs = [o.agent for o in config.opponents] + config.eval.opponents + [f.agent for f in config.eval.final]
    for spec in specs:  # every agent the run will meet can be built
        assert isinstance(make_agent(spec), Agent)


def test_selfplay_adds_snapshots_of_the_learner_to_the_pool(tmp_path):
    config = smoke_config(tmp_path, **{"sb3.selfplay.snapshot_every": 512, "sb3.selfplay.keep_latest": 2})
    run_dir = train(config, progress=False).run_dir
    snapshots = sorted((run_dir / "snapshots").glob("snapshot_*.zip"))
    assert len(snapshots) == 4  # at 512, 1024, 1536, 2048 timesteps
    ckpt = json.loads((run_dir / "checkpoints" / "ckpt_1024.json").read_text())
    # stored relative to the run directory, so that the run resumes from any working directory
    assert ckpt["trainer"]["snapshots"] == ["snapshots/snapshot_512.zip", "snapshots/snapshot_1024.zip"]
    snapshot_agent = make_agent(
        format_spec("ppo", path=str(run_dir / ckpt["trainer"]["snapshots"][-1]), deterministic=False)
    )
    assert play_game([snapshot_agent, make_agent("random")], seed=0).length > 0


def test_masked_distribution_has_no_nan_and_no_mass_on_illegal_actions(smoke_run):
    import torch

    model = MaskablePPO.load(smoke_run / "final_model.zip")
    env = TacocatSingleAgentEnv(POOL)
    obs, _ = env.reset(seed=2)
    for _ in range(60):
        mask = env.action_masks()
        with torch.no_grad():
            tensor, _ = model.policy.obs_to_tensor(obs)
            probs = model.policy.get_distribution(tensor, action_masks=mask).distribution.probs[0].numpy()
        assert np.isfinite(probs).all()
        assert probs[~mask].max(initial=0.0) < 1e-6 and probs[mask].sum() == pytest.approx(1.0, abs=1e-5)
        action, _ = model.predict(obs, action_masks=mask, deterministic=False)
        obs, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            obs, _ = env.reset()


def test_latest_checkpoint_skips_a_checkpoint_without_its_completion_marker(tmp_path):
    from tacocat.train import checkpoints
    from tacocat.train.run_dir import config_hash

    config = smoke_config(tmp_path)
    folder = tmp_path / "checkpoints"
    for steps in (1024, 2048):
        (folder / f"ckpt_{steps}").mkdir(parents=True)
    marker = checkpoints.CheckpointMarker(
        timesteps=1024,
        iteration=2,
        best_score=None,
        trainer={},
        ruleset_hash=config.rules_config.ruleset_hash(),
        config_sha256=config_hash(config),
    )
    (folder / "ckpt_1024.json").write_text(marker.model_dump_json())  # 2048 was killed before its marker
    assert checkpoints.latest(tmp_path, config) == (folder / "ckpt_1024", marker)
    assert checkpoints.latest(tmp_path / "nothing", config) is None


def test_a_model_for_another_observation_size_is_refused(tmp_path):
    """Metadata can claim the right ruleset; the observation size is still checked."""
    small = TacocatSingleAgentEnv(POOL, rules={"board": (4, 6, 7, 6, 4)})  # 5 spaces: other sizes
    path = tmp_path / "small_board.zip"
    MaskablePPO("MlpPolicy", small, n_steps=64, batch_size=32, device="cpu").save(path)
    write_metadata(
        path,
        {
            "ruleset_hash": TacocatSingleAgentEnv(POOL).rules.hash,
            "n_actions": int(small.action_space.n),
            "observation_size": small.observation_space.shape[0],
            "policy": {"net_arch": [64, 64], "activation": "tanh"},
        },
    )
    agent = make_agent("ppo", path=str(path))
    with pytest.raises(ModelFileError, match="expects observations of size"):
        play_game([agent, make_agent("random")], seed=0)


def test_resume_is_bit_identical_to_the_uninterrupted_run(smoke_run, tmp_path):
    """Interrupt a copy of the smoke run after its checkpoint at 1024 timesteps (what a kill
    leaves behind), resume it: weights, evaluations and training metrics equal the original's."""
    import shutil

    run_dir = tmp_path / smoke_run.name
    shutil.copytree(smoke_run, run_dir)
    for name in ("final.json", "final_model.zip", "best_model.zip", "learning_curve.png"):
        (run_dir / name).unlink(missing_ok=True)
    saved = sorted(int(p.stem.split("_")[1]) for p in (run_dir / "checkpoints").glob("ckpt_*.json"))
    assert saved == [1024, 2048]
    (run_dir / "checkpoints" / "ckpt_2048.json").unlink()  # killed while writing the last checkpoint
    shutil.rmtree(run_dir / "checkpoints" / "ckpt_2048")
    assert train(resume=run_dir, progress=False).run_dir == run_dir
    first, resumed = _weights(smoke_run / "final_model.zip"), _weights(run_dir / "final_model.zip")
    assert all(np.array_equal(first[k], resumed[k]) for k in first)
    assert (run_dir / "eval.csv").read_text() == (smoke_run / "eval.csv").read_text()
    # every training metric of every iteration equals the uninterrupted run's value
    assert _metrics(run_dir) == _metrics(smoke_run)
    assert len(_metrics(run_dir)) == 1 + 4 and all(v != "" for v in _metrics(run_dir)[-1])


def _rows(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_single_agent_view_is_registered_with_gymnasium():
    import gymnasium

    env = gymnasium.make("tacocat.train.gym_env:Tacocat-v0", opponents=[("random", 1.0)], learner_seat=1)
    obs, info = env.reset(seed=3)
    assert env.observation_space.contains(obs) and info["seat"] == 1
    mask = env.unwrapped.action_masks()
    obs, _, _, _, info = env.step(int(np.flatnonzero(mask)[0]))
    assert env.observation_space.contains(obs)
    assert gymnasium.spec("Tacocat-v0").kwargs["opponents"] == [("counter", 1.0)]


def test_evaluate_and_compare_take_a_finished_run_from_the_cli(smoke_run, tmp_path):
    from typer.testing import CliRunner

    from tacocat.cli.app import app

    run_dir = tmp_path / smoke_run.name
    import shutil

    shutil.copytree(smoke_run, run_dir)
    result = CliRunner().invoke(app, ["evaluate", str(run_dir), "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = json.loads((run_dir / "final_eval.json").read_text())
    assert [r["opponent"] for r in rows] == ["random", "highcard"] and rows[0]["deal_pairs"] == 10
    assert all(r["return_low"] <= r["mean_return"] <= r["return_high"] and "reduced_return" not in r for r in rows)
    assert "| mean return [95% paired] |" in (run_dir / "final_eval.md").read_text()
    out = tmp_path / "compare"
    result = CliRunner().invoke(
        app,
        [
            "compare",
            str(run_dir),
            str(smoke_run),
            "--opponent",
            "random",
            "--deal-pairs",
            "4",
            "--no-progress",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    compared = json.loads((out / "compare.json").read_text())
    assert compared["difference_a_minus_b"] == 0 and compared["a"]["backend"] == "sb3"
    assert "reduced_return" not in compared["a"] and "reduction" not in compared
    # --reduce: each run's variance-reduced return is the match's own, and their difference is paired
    from tacocat.evaluation.matches import match
    from tacocat.evaluation.variance import Reduction, shipped_value_file
    from tacocat.train.policy import run_policy
    from tacocat.train.run_dir import load_run_config

    args = ["compare", str(run_dir), str(smoke_run), "-o", "random", "-n", "3", "--no-progress", "--reduce"]
    args += ["--rollouts", "2"]  # the reduction's options reach the matches
    result = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "reduced")])
    assert result.exit_code == 0 and "Variance-reduced (AIVAT) return A - B = +0.0000" in result.output, result.output
    compared = json.loads((tmp_path / "reduced" / "compare.json").read_text())
    value_file = shipped_value_file(load_run_config(smoke_run).rules_config)
    reduction = Reduction(str(value_file), rollouts=2)
    alone = match(run_policy(smoke_run).spec(smoke_run), "random", 3, seed=2, progress=False, reduction=reduction)
    assert compared["a"]["reduced_return"] == pytest.approx(alone.reduced_return_a, abs=1e-12)
    assert compared["reduction"] == reduction.to_dict() and compared["reduced_return_paired95"] == [0.0, 0.0]
    # evaluate with a value file: each row's reduced return is the match's own
    from tacocat.train.evaluation import evaluate_run

    config = load_run_config(run_dir)
    final = [opponent.model_copy(update={"deal_pairs": 2}) for opponent in config.eval.final[:1]]
    config = config.model_copy(update={"eval": config.eval.model_copy(update={"final": final})})
    (row,) = evaluate_run(run_dir, config, progress=False, reduction=reduction)
    learner = run_policy(run_dir).spec(run_dir)
    alone = match(learner, "random", 2, seed=config.eval.seed + 1, progress=False, reduction=reduction)
    assert row["reduced_return"] == pytest.approx(alone.reduced_return_a, abs=1e-12)
    assert "reduced (AIVAT)" in (run_dir / "final_eval.md").read_text()
    (run_dir / "final.json").unlink()
    result = CliRunner().invoke(app, ["evaluate", str(run_dir)])
    assert result.exit_code != 0 and "is not a finished run" in result.output and "Traceback" not in result.output
