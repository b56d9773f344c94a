"""`tacocat tune`: Optuna studies over an experiment config (tiny budgets, seconds each)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml
from optuna.distributions import FloatDistribution
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import TrialState
from typer.testing import CliRunner

from experiments.cli import app
from experiments.compare import compare_runs
from experiments.config import load_experiment
from experiments.tune import make_pruner, open_study, run_study
from experiments.tune_config import HyperbandPrunerConfig, MedianPrunerConfig, load_tune

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "experiments" / "configs"
SMOKE = CONFIGS / "smoke.yaml"

# two rollouts of 2 envs x 128 steps, an evaluation after each
TINY_TRIAL = {
    "total_timesteps": 512, "n_envs": 2, "algo.n_steps": 128, "algo.batch_size": 64, "algo.n_epochs": 1,
    "eval.every": 256, "eval.deal_pairs": 2, "eval.opponents": ["random"], "checkpoint_every": 256,
}
SPACE = {
    "algo.learning_rate": {"type": "float", "low": 1e-4, "high": 1e-3, "log": True},
    "algo.n_epochs": {"type": "int", "low": 1, "high": 2},
    "algo.net_arch": {"type": "categorical", "choices": [[16], [32, 32]]},
}


def write_tune(tmp_path: Path, name: str = "tune.yaml", **fields) -> Path:
    data = {
        "study": "tiny", "base_config": str(SMOKE), "study_dir": str(tmp_path / "study"), "trial": TINY_TRIAL,
        "objective": {"deal_pairs": 3}, "sampler": {"seed": 0, "n_startup_trials": 1},
        "pruner": {"kind": "none"}, "search_space": SPACE,
    }
    data.update(fields)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ---------------------------------------------------------------------------------------
# the tune file
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(CONFIGS.glob("tune_*.yaml")), ids=lambda p: p.stem)
def test_shipped_tune_files_are_valid(path):
    setup = load_tune(path)
    assert setup.tune.search_space and setup.experiment({}).total_timesteps > 0


@pytest.mark.parametrize("space, field, words", [
    ({"algo.learning_rate": {"type": "float", "low": 1e-2, "high": 1e-4}}, "algo.learning_rate", "below high"),
    ({"algo.learning_rat": {"type": "float", "low": 1e-4, "high": 1e-2}}, "algo.learning_rat", "Extra inputs"),
    ({"algo.gamma": {"type": "float", "low": 0.9, "high": 1.5}}, "algo.gamma", "less than or equal to 1"),
    ({"algo.n_epochs": {"type": "float", "low": 1.5, "high": 3.0}}, "algo.n_epochs", "integer"),
    ({"algo.ent_coef": {"type": "float", "low": 0.0, "high": 0.1, "log": True}}, "algo.ent_coef", "low > 0"),
    ({"algo.activation": {"type": "categorical", "choices": ["tanh", "gelu"]}}, "algo.activation", "'gelu'"),
    ({"algo.gamma": {"type": "uniform", "low": 0.9, "high": 0.99}}, "algo.gamma", "type"),
    ({"seed.value": {"type": "int", "low": 0, "high": 3}}, "seed.value", "not a section"),
])
def test_bad_search_space_is_rejected_naming_the_field(tmp_path, space, field, words):
    with pytest.raises(ValueError) as err:
        load_tune(write_tune(tmp_path, search_space=space))
    message = str(err.value)
    assert f"search_space.{field}" in message and words in message, message
    assert "\n" not in message
    assert not (tmp_path / "study").exists()  # nothing was created


def test_bad_tune_keys_name_the_key(tmp_path):
    with pytest.raises(ValueError, match="pruner"):
        load_tune(write_tune(tmp_path, pruner={"kind": "percentile"}))
    with pytest.raises(ValueError, match="sampler.n_startup"):
        load_tune(write_tune(tmp_path, sampler={"n_startup": 3}))
    with pytest.raises(ValueError, match="trial overrides.*total_timesteps"):
        load_tune(write_tune(tmp_path, trial={"total_timesteps": 0}))


def test_pruner_is_configurable():
    median = make_pruner(MedianPrunerConfig(kind="median", n_startup_trials=2, n_warmup_steps=100))
    hyperband = make_pruner(HyperbandPrunerConfig(kind="hyperband", min_resource=256, reduction_factor=2))
    assert isinstance(median, optuna.pruners.MedianPruner)
    assert isinstance(hyperband, optuna.pruners.HyperbandPruner)
    assert hyperband._min_resource == 256 and hyperband._reduction_factor == 2


# ---------------------------------------------------------------------------------------
# studies
# ---------------------------------------------------------------------------------------
def test_two_trial_study_writes_run_dirs_report_and_a_trainable_best_config(tmp_path):
    setup = load_tune(write_tune(tmp_path))
    study = run_study(setup, trials=2, progress=False)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    for trial in study.trials:
        run_dir = Path(trial.user_attrs["run_dir"])
        assert run_dir.parent == tmp_path / "study" / "trials"
        run = json.loads((run_dir / "run.json").read_text())
        assert run["seed"] == 0 and run["ruleset_hash"] and run["versions"]["torch"]
        config = load_experiment(run_dir / "config.yaml")
        assert config.total_timesteps == 512 and config.algo.learning_rate == trial.params["algo.learning_rate"]
        final = json.loads((run_dir / "final_eval.json").read_text())
        assert [r["opponent"] for r in final] == ["random"] and final[0]["deal_pairs"] == 3
        assert trial.value == pytest.approx(final[0]["win_rate"])
    out = tmp_path / "study"
    best = load_experiment(out / "best_config.yaml")  # `tacocat train --config` takes it as it is
    params = study.best_trial.params
    assert best.algo.learning_rate == params["algo.learning_rate"]
    assert best.algo.net_arch == yaml.safe_load(params["algo.net_arch"])
    assert best.total_timesteps == load_experiment(SMOKE).total_timesteps  # the base budget, not the trial's
    for name in ("optimization_history.png", "param_importances.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
    summary = (out / "summary.md").read_text()
    assert "2 complete" in summary and f"trial {study.best_trial.number}" in summary

    # the paired comparison of two trials reproduces their objectives (same deals: seed eval.seed + 1)
    runs = [Path(t.user_attrs["run_dir"]) for t in study.trials]
    compared = compare_runs(runs[0], runs[1], "random", deal_pairs=3, seed=12345 + 1, progress=False)
    assert [compared[k]["win_rate"] for k in "ab"] == pytest.approx([t.value for t in study.trials])
    assert compared["difference_a_minus_b"] == pytest.approx(study.trials[0].value - study.trials[1].value)
    itself = compare_runs(runs[0], runs[0], "random", deal_pairs=3, seed=7, progress=False)
    assert itself["paired95"] == [0.0, 0.0] and itself["verdict"] == "no clear difference"

    first_params = [t.params for t in study.trials]
    again = run_study(setup, trials=2, progress=False)  # the study is already complete: resumes to nothing
    assert len(again.trials) == 2
    more = run_study(setup, trials=3, progress=False)  # resumes: one more trial, the first two kept
    assert len(more.trials) == 3
    assert [t.params for t in more.trials[:2]] == first_params


def test_a_trial_below_the_median_is_pruned_and_stops_training(tmp_path):
    setup = load_tune(write_tune(
        tmp_path, pruner={"kind": "median", "n_startup_trials": 1, "n_warmup_steps": 0},
        search_space={"algo.learning_rate": SPACE["algo.learning_rate"]}))
    # a finished trial with impossible intermediate win rates (2.0): any real trial is below the median
    study = open_study(setup)
    study.add_trial(optuna.create_trial(
        params={"algo.learning_rate": 3e-4}, distributions={"algo.learning_rate": FloatDistribution(1e-4, 1e-3, log=True)},
        value=2.0, intermediate_values={256: 2.0, 512: 2.0}))
    study = run_study(setup, trials=2, progress=False)
    trial = study.trials[1]
    assert trial.state == TrialState.PRUNED and trial.last_step == 256
    run_dir = Path(trial.user_attrs["run_dir"])
    assert json.loads((run_dir / "final.json").read_text())["timesteps"] == 256  # of 512
    assert not (run_dir / "final_eval.json").exists()
    assert "1 pruned" in (tmp_path / "study" / "summary.md").read_text()


def test_the_first_trial_tries_the_base_values_and_the_summary_says_so(tmp_path):
    setup = load_tune(write_tune(tmp_path))
    base = load_experiment(SMOKE)
    assert setup.base_values() == {"algo.learning_rate": base.algo.learning_rate,
                                   "algo.n_epochs": base.algo.n_epochs, "algo.net_arch": "[32, 32]"}
    narrow = load_tune(write_tune(tmp_path, "narrow.yaml",
                                  search_space={"algo.n_epochs": {"type": "int", "low": 3, "high": 4}}))
    assert narrow.base_values() == {"algo.n_epochs": None}  # smoke's 2 lies outside: not enqueued
    study = run_study(setup, trials=1, progress=False)
    assert study.trials[0].params == setup.base_values()
    assert "(trial 0)" in (tmp_path / "study" / "summary.md").read_text()


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")  # retried_trial_number
def test_a_trial_of_a_killed_worker_is_marked_failed_and_the_study_resumes(tmp_path):
    heartbeat = {"interval": 1, "grace_period": 2, "max_retry": 1}
    long_trial = {**TINY_TRIAL, "total_timesteps": 10_000_000}
    tune_file = write_tune(tmp_path, "long.yaml", trial=long_trial, heartbeat=heartbeat)
    proc = subprocess.Popen([sys.executable, "-m", "experiments.cli", "tune", "--config", str(tune_file),
                             "--trials", "1", "--no-progress"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    setup = load_tune(write_tune(tmp_path, "short.yaml", heartbeat=heartbeat))  # same study and storage
    deadline = time.time() + 120
    while time.time() < deadline and not list((tmp_path / "study").glob("trials/*/checkpoints/ckpt_*.json")):
        assert proc.poll() is None, proc.stdout.read().decode()
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    killed = open_study(setup).trials
    assert [t.state for t in killed] == [TrialState.RUNNING]  # what a kill -9 leaves behind
    time.sleep(heartbeat["grace_period"] + 1)

    study = run_study(setup, trials=1, progress=False)
    first, retry = study.trials
    assert first.state == TrialState.FAIL
    assert retry.state == TrialState.COMPLETE
    assert RetryHeartbeatStaleTrialCallback.retried_trial_number(retry) == 0
    assert retry.params == killed[0].params
    assert "1 fail" in (tmp_path / "study" / "summary.md").read_text()


# ---------------------------------------------------------------------------------------
# command line
# ---------------------------------------------------------------------------------------
def _one_line_error(args: list[str]) -> str:
    result = CliRunner().invoke(app, ["tune", *args])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output
    return lines[0]


def test_cli_errors_are_one_clear_line(tmp_path):
    assert "missing.yaml" in _one_line_error(["--config", str(tmp_path / "missing.yaml"), "--trials", "1"])
    bad_space = write_tune(tmp_path, search_space={"algo.gamma": {"type": "float", "low": 0.9, "high": 2.0}})
    assert "search_space.algo.gamma" in _one_line_error(["--config", str(bad_space), "--trials", "1"])
    good = write_tune(tmp_path)
    assert "storage nosuchdb://x" in _one_line_error(["--config", str(good), "--trials", "1",
                                                      "--storage", "nosuchdb://x"])
    assert "storage" in _one_line_error(["--config", str(good), "--trials", "1", "--storage", "not a url"])
    result = CliRunner().invoke(app, ["tune", "--config", str(good), "--trials", "0"])
    assert result.exit_code == 2 and "--trials" in result.output


def test_cli_runs_a_study_and_names_the_best_config(tmp_path):
    result = CliRunner().invoke(app, ["tune", "--config", str(write_tune(tmp_path)), "--trials", "1",
                                      "--study", "renamed", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "tacocat train --config" in result.output
    assert optuna.load_study(study_name="renamed", storage=f"sqlite:///{tmp_path / 'study' / 'study.db'}").trials


def test_two_workers_share_one_study(tmp_path):
    setup = load_tune(write_tune(tmp_path))
    study = run_study(setup, trials=2, workers=2, progress=False)
    finished = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(finished) >= 2 and len({t.params["algo.learning_rate"] for t in finished}) == len(finished)
