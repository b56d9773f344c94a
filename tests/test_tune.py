"""`tacocat tune`: Optuna studies over an experiment config (tiny budgets, seconds each)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import optuna
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.distributions import FloatDistribution
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import TrialState
from typer.testing import CliRunner

from tacocat.cli.app import app
from tacocat.evaluation.variance import MODELS, Reduction
from tacocat.train.compare import compare_runs
from tacocat.train.config import load_experiment
from tacocat.train.tune.config import (
    MEASURES,
    PER_TRIAL_FIELDS,
    HyperbandPrunerConfig,
    MedianPrunerConfig,
    TuneConfig,
    load_tune,
)
from tacocat.train.tune.study import Objective, make_pruner, open_study, run_study

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tacocat" / "train" / "configs"
SMOKE = ROOT / "tests" / "support" / "configs" / "smoke.yaml"

# two rollouts of 2 envs x 128 steps, an evaluation after each
TINY_TRIAL = {
    "total_timesteps": 512,
    "n_envs": 2,
    "algo.n_steps": 128,
    "algo.batch_size": 64,
    "algo.n_epochs": 1,
    "eval.every": 256,
    "eval.deal_pairs": 2,
    "eval.opponents": ["random"],
    "checkpoint_every": 256,
}
SPACE = {
    "algo.learning_rate": {"type": "float", "low": 1e-4, "high": 1e-3, "log": True},
    "algo.n_epochs": {"type": "int", "low": 1, "high": 2},
    "algo.net_arch": {"type": "categorical", "choices": [[16], [32, 32]]},
}


def write_tune(tmp_path: Path, name: str = "tune.yaml", **fields) -> Path:
    data = {
        "study": "tiny",
        "base_config": str(SMOKE),
        "study_dir": str(tmp_path / "study"),
        "trial": TINY_TRIAL,
        "objective": {"deal_pairs": 3},
        "sampler": {"seed": 0, "n_startup_trials": 1},
        "pruner": {"kind": "none"},
        "search_space": SPACE,
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


@pytest.mark.parametrize(
    "space, field, words",
    [
        ({"algo.learning_rate": {"type": "float", "low": 1e-2, "high": 1e-4}}, "algo.learning_rate", "below high"),
        ({"algo.learning_rat": {"type": "float", "low": 1e-4, "high": 1e-2}}, "algo.learning_rat", "Extra inputs"),
        ({"algo.gamma": {"type": "float", "low": 0.9, "high": 1.5}}, "algo.gamma", "less than or equal to 1"),
        ({"algo.n_epochs": {"type": "float", "low": 1.5, "high": 3.0}}, "algo.n_epochs", "integer"),
        ({"algo.ent_coef": {"type": "float", "low": 0.0, "high": 0.1, "log": True}}, "algo.ent_coef", "low > 0"),
        ({"algo.activation": {"type": "categorical", "choices": ["tanh", "gelu"]}}, "algo.activation", "'gelu'"),
        ({"algo.gamma": {"type": "uniform", "low": 0.9, "high": 0.99}}, "algo.gamma", "type"),
        ({"seed.value": {"type": "int", "low": 0, "high": 3}}, "seed.value", "not a section"),
    ],
)
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
    with pytest.raises(ValueError, match=r"sampler.n_startup"):
        load_tune(write_tune(tmp_path, sampler={"n_startup": 3}))
    with pytest.raises(ValueError, match=r"trial overrides.*total_timesteps"):
        load_tune(write_tune(tmp_path, trial={"total_timesteps": 0}))


BAD_STUDY_NAMES = [
    "../../../x",
    "/tmp/abs",
    "",
    "a\nb",
    "x\n",
    "a\x00b",
    "a\u2028b",
    "a\u2029b",
    "a\uff0fb",
    "x" * 101,
    ".",
    "..",
    "-x",
    "a b",
    "a/b",
    "a\\b",
    "é",
]


@pytest.mark.parametrize("name", BAD_STUDY_NAMES, ids=repr)
def test_a_study_name_must_be_a_safe_name_and_nothing_is_created(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)  # the default study folder is runs/tune/<study>, from here
    tune_file = write_tune(tmp_path, study_dir=None)
    with pytest.raises(ValueError) as err:
        load_tune(tune_file, study=name)
    assert "study" in str(err.value) and "pattern" in str(err.value)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="study"):  # the same in the file itself
        load_tune(write_tune(tmp_path, "named.yaml", study=name, study_dir=None))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["named.yaml", "tune.yaml"]


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=0, max_size=120))
def test_an_accepted_study_name_keeps_its_folder_one_level_inside_runs_tune(name):
    fields = {"study": name, "base_config": "x.yaml", "search_space": SPACE}
    try:
        tune = TuneConfig(**fields)
    except ValueError:
        return
    assert tune.directory.parent == Path("runs", "tune") and tune.directory.name == name
    assert os.path.normpath(tune.directory) == str(tune.directory)  # no '.', '..' or separators in it


def test_the_experiment_name_pattern_is_the_study_name_pattern():
    from tacocat.train.settings import NAME_PATTERN

    assert TuneConfig.model_fields["study"].metadata[0].pattern == NAME_PATTERN


def test_three_processes_creating_one_new_sqlite_study_at_once_all_share_it(tmp_path):
    """Without the creation lock two of three fail with "table ... already exists" (Optuna
    creates its tables on first use): each process waits for the other two before opening,
    three rounds on three new study files; a failure is printed, not fatal, so no process
    waits for a dead one."""
    rounds, processes = 3, 3
    files = []
    for r in range(rounds):
        (tmp_path / f"round{r}").mkdir()
        files.append(write_tune(tmp_path / f"round{r}", study_dir=str(tmp_path / f"round{r}" / "study")))
    child = textwrap.dedent("""
        import sys, time
        from pathlib import Path
        from tacocat.train.tune.study import open_study
        from tacocat.train.tune.config import load_tune
        me, sync, files = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
        setups = [load_tune(f) for f in files]
        for r, setup in enumerate(setups):
            (sync / f"ready{r}_{me}").touch()
            while len(list(sync.glob(f"ready{r}_*"))) < PROCESSES:
                time.sleep(0.001)
            try:
                print(r, open_study(setup)._study_id, flush=True)
            except ValueError as err:
                print(r, "failed:", err, flush=True)
    """).replace("PROCESSES", str(processes))
    sync = tmp_path / "sync"
    sync.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", child, str(k), str(sync), *map(str, files)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(processes)
    ]
    try:
        outputs = [proc.communicate(timeout=120)[0] for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    for out in outputs:
        assert out.splitlines() == [f"{r} 1" for r in range(rounds)]  # every process: the one study
    for f in files:
        storage = f"sqlite:///{f.parent / 'study' / 'study.db'}"
        assert [s.study_name for s in optuna.get_all_study_summaries(storage)] == ["tiny"]


@pytest.mark.parametrize(
    "where, key",
    [
        ("search_space", "run_root"),
        ("search_space", "name"),
        ("search_space", "eval.final"),
        ("search_space", "eval.workers"),
        ("search_space", "eval"),
        ("trial", "run_root"),
        ("trial", "eval.final"),
    ],
)
def test_fields_every_trial_sets_are_refused_naming_the_field(tmp_path, where, key):
    value = {"search_space": {key: {"type": "categorical", "choices": ["a", "b"]}}, "trial": {**TINY_TRIAL, key: "x"}}
    with pytest.raises(ValueError) as err:
        load_tune(write_tune(tmp_path, **{where: value[where]}))
    field = next(f for f in PER_TRIAL_FIELDS if f == key or f.startswith(key + "."))
    assert f"{where}.{key}: tacocat tune sets {field} in every trial" in str(err.value)
    assert not (tmp_path / "study").exists()


def _leaves(data: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(_leaves(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = value
    return out


def test_per_trial_fields_are_exactly_the_fields_a_trial_config_sets(tmp_path):
    setup = load_tune(write_tune(tmp_path, objective={"deal_pairs": 3, "workers": 3}))
    params = {"algo.learning_rate": 5e-4, "algo.n_epochs": 2, "algo.net_arch": [16]}
    before = _leaves(setup.experiment(params).model_dump(mode="json"))
    after = _leaves(Objective(setup).trial_config(7, params).model_dump(mode="json"))
    assert {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)} == set(PER_TRIAL_FIELDS)


@pytest.mark.parametrize(
    "storage, words",
    [
        ("sqlite://", "in-memory"),
        ("sqlite:///:memory:", "in-memory"),
        ("sqlite:///file:x?mode=memory&uri=true", "in-memory"),
        ("nosuchdb://x", "nosuchdb"),
        ("postgresql://user:secret@127.0.0.1:1/db", "storage postgresql://user:***@"),
    ],
)
def test_bad_storage_is_one_clear_error_without_the_password(tmp_path, storage, words):
    setup = load_tune(write_tune(tmp_path, storage=storage))
    with pytest.raises(ValueError) as err:
        open_study(setup)
    assert words in str(err.value) and "secret" not in str(err.value) and "\n" not in str(err.value)


def test_a_sqlite_file_in_a_missing_folder_names_the_storage(tmp_path):
    setup = load_tune(write_tune(tmp_path, storage=f"sqlite:///{tmp_path}/missing/study.db"))
    with pytest.raises(ValueError, match=r"storage sqlite:///.*missing/study.db: cannot open the lock file"):
        open_study(setup)
    assert not (tmp_path / "missing").exists()


def test_an_empty_storage_or_study_dir_is_refused(tmp_path):
    for field in ("storage", "study_dir"):
        with pytest.raises(ValueError, match=field):
            load_tune(write_tune(tmp_path, **{field: ""}))


@pytest.mark.parametrize(
    "trials, workers", [(0, 1), (-1, 1), (True, 1), (1.5, 1), ("3", 1), (1, 0), (1, False), (1, 100_000)]
)
def test_bad_trial_or_worker_counts_are_refused_before_the_study_is_opened(tmp_path, trials, workers):
    setup = load_tune(write_tune(tmp_path))
    with pytest.raises(ValueError, match="trials" if workers == 1 else "workers"):
        run_study(setup, trials=trials, workers=workers, progress=False)
    assert not (tmp_path / "study").exists()


def test_a_tune_file_is_read_bounded(tmp_path):
    with pytest.raises(ValueError, match="regular file"):
        load_tune("/dev/zero")
    big = tmp_path / "big.yaml"
    big.write_text("study: x\n" + "#" * (2 << 20))
    with pytest.raises(ValueError, match="over the limit"):
        load_tune(big)


def test_pruner_is_configurable():
    median = make_pruner(MedianPrunerConfig(kind="median", n_startup_trials=2, n_warmup_steps=100))
    hyperband = make_pruner(HyperbandPrunerConfig(kind="hyperband", min_resource=256, reduction_factor=2))
    assert isinstance(median, optuna.pruners.MedianPruner)
    assert isinstance(hyperband, optuna.pruners.HyperbandPruner)
    assert hyperband._min_resource == 256 and hyperband._reduction_factor == 2


@pytest.mark.parametrize(
    "objective, trial, space, words",
    [
        (
            {"measure": "reduced_return", "value_file": "missing.npz"},
            TINY_TRIAL,
            SPACE,
            "objective.value_file: value file {tmp}/missing.npz does not exist",
        ),
        (
            {"measure": "reduced_return", "value_file": str(MODELS / "value_trio_decided.npz")},
            TINY_TRIAL,
            SPACE,
            "objective.value_file: {models}/value_trio_decided.npz was trained for ruleset",
        ),
        (
            {"measure": "reduced_return"},
            {**TINY_TRIAL, "rules.max_rounds": 30},
            SPACE,
            "objective.measure reduced_return: no shipped value file for ruleset",
        ),
        (
            {"measure": "reduced_return"},
            TINY_TRIAL,
            {"rules.max_rounds": {"type": "int", "low": 30, "high": 60}},
            "search_space.rules.max_rounds: objective.measure reduced_return reads one value file",
        ),
        (
            {"measure": "return", "value_file": str(MODELS / "value_default.npz")},
            TINY_TRIAL,
            SPACE,
            "value_file is read by measure reduced_return only, the measure is return",
        ),
        (
            {"measure": "return", "rollouts": 16},
            TINY_TRIAL,
            SPACE,
            "rollouts is read by measure reduced_return only, the measure is return",
        ),
        (
            {"measure": "reduced_return", "playouts": 4},
            TINY_TRIAL,
            SPACE,
            "objective: playouts shape the rollouts, which are off: give rollouts > 0",
        ),
        (
            {"measure": "reduced_return", "replay": True},
            TINY_TRIAL,
            SPACE,
            "objective: replayed generators shape the rollouts, which are off: give rollouts > 0",
        ),
        (
            {"measure": "reduced_return", "rollouts": 4, "stand_ins": {"counter": "planner"}},
            TINY_TRIAL,
            SPACE,
            "objective.stand_ins: counter is not one of eval.opponents (random)",
        ),
        (
            {"measure": "reduced_return", "rollouts": 4, "stand_ins": {"random": "nobody"}},
            TINY_TRIAL,
            SPACE,
            "objective: unknown agent 'nobody'",
        ),
        ({"measure": "aivat"}, TINY_TRIAL, SPACE, "objective.measure"),
    ],
    ids=[
        "missing",
        "other-rules",
        "no-shipped-file",
        "searched-rules",
        "not-reduced",
        "rollouts-not-reduced",
        "playouts-without-rollouts",
        "replay-without-rollouts",
        "stand-in-not-an-opponent",
        "stand-in-unknown",
        "unknown",
    ],
)
def test_an_objective_that_cannot_be_measured_is_one_clear_error_and_nothing_is_written(
    tmp_path, objective, trial, space, words
):
    tune_file = write_tune(tmp_path, objective={"deal_pairs": 3, **objective}, trial=trial, search_space=space)
    with pytest.raises(ValueError) as err:
        load_tune(tune_file)
    assert words.format(tmp=tmp_path, models=MODELS) in str(err.value) and "\n" not in str(err.value), err.value
    assert str(err.value).startswith(str(tune_file))
    assert _one_line_error(["--config", str(tune_file), "--trials", "1"]) == f"error: {err.value}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tune.yaml"]  # no study folder, no database


def test_the_reduction_reads_the_value_file_next_to_the_tune_file_or_the_shipped_one(tmp_path):
    assert load_tune(write_tune(tmp_path)).reduction() is None  # the win rate reads none
    shipped = load_tune(write_tune(tmp_path, objective={"measure": "reduced_return"}))
    assert shipped.reduction() == Reduction(str(MODELS / "value_default.npz"))
    (tmp_path / "values").mkdir()
    (tmp_path / "values" / "mine.npz").write_bytes((MODELS / "value_default.npz").read_bytes())
    objective = {"measure": "reduced_return", "value_file": "values/mine.npz", "rollouts": 8, "playouts": 2}
    given = load_tune(write_tune(tmp_path, objective={**objective, "stand_ins": {"random": "planner"}, "replay": True}))
    mine = str(tmp_path / "values" / "mine.npz")
    assert given.reduction() == Reduction(mine, rollouts=8, playouts=2, stand_ins=(("random", "planner"),), replay=True)


def test_a_study_keeps_the_measure_its_trials_were_scored_by(tmp_path):
    setup = load_tune(write_tune(tmp_path, search_space={"algo.learning_rate": SPACE["algo.learning_rate"]}))
    study = open_study(setup)
    study.add_trial(  # a trial of a study from before the measure was recorded: a win rate
        optuna.create_trial(
            params={"algo.learning_rate": 3e-4},
            distributions={"algo.learning_rate": FloatDistribution(1e-4, 1e-3, log=True)},
            value=0.5,
        )
    )
    open_study(setup)  # the same measure: resumes
    returns = load_tune(write_tune(tmp_path, "return.yaml", objective={"measure": "return"}))
    with pytest.raises(
        ValueError,
        match=r"study 'tiny' in sqlite:///.* has trials scored by objective.measure "
        r"win_rate, not return: give the study another name \(--study\)",
    ):
        open_study(returns)
    assert "has trials scored by" in _one_line_error(["--config", str(tmp_path / "return.yaml"), "--trials", "1"])
    renamed = open_study(load_tune(tmp_path / "return.yaml", study="returns"))
    assert renamed.trials == []


# ---------------------------------------------------------------------------------------
# studies
# ---------------------------------------------------------------------------------------
@pytest.mark.slow  # three trials trained and evaluated, plots drawn: 12-14 s of CPU
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
    setup = load_tune(
        write_tune(
            tmp_path,
            pruner={"kind": "median", "n_startup_trials": 1, "n_warmup_steps": 0},
            search_space={"algo.learning_rate": SPACE["algo.learning_rate"]},
        )
    )
    # a finished trial with impossible intermediate win rates (2.0): any real trial is below the median
    study = open_study(setup)
    study.add_trial(
        optuna.create_trial(
            params={"algo.learning_rate": 3e-4},
            distributions={"algo.learning_rate": FloatDistribution(1e-4, 1e-3, log=True)},
            value=2.0,
            intermediate_values={256: 2.0, 512: 2.0},
        )
    )
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
    assert setup.base_values() == {
        "algo.learning_rate": base.algo.learning_rate,
        "algo.n_epochs": base.algo.n_epochs,
        "algo.net_arch": "[32, 32]",
    }
    narrow = load_tune(
        write_tune(tmp_path, "narrow.yaml", search_space={"algo.n_epochs": {"type": "int", "low": 3, "high": 4}})
    )
    assert narrow.base_values() == {"algo.n_epochs": None}  # smoke's 2 lies outside: not enqueued
    study = run_study(setup, trials=1, progress=False)
    assert study.trials[0].params == setup.base_values()
    assert "(trial 0)" in (tmp_path / "study" / "summary.md").read_text()


#: tacocat.game.presets' trio_decided: one round, so every game is truncated and every win rate is 0.5
TRIO_DECIDED = {"deck": {1: 2, 2: 4, 3: 6}, "board": [3, 3, 3], "max_rounds": 1, "round_reward": 1.0}


@pytest.mark.parametrize("measure", ["return", "reduced_return"])
def test_the_objective_is_the_mean_of_the_chosen_measure_over_the_opponents(tmp_path, measure):
    trial = {**TINY_TRIAL, "total_timesteps": 256, "eval.opponents": ["random", "highcard"], "rules": TRIO_DECIDED}
    setup = load_tune(write_tune(tmp_path, trial=trial, objective={"deal_pairs": 3, "measure": measure}))
    study = run_study(setup, trials=1, progress=False)
    (done,) = study.trials
    key, label = MEASURES[measure]
    rows = json.loads((Path(done.user_attrs["run_dir"]) / "final_eval.json").read_text())
    assert [r["opponent"] for r in rows] == ["random", "highcard"]
    assert done.value == pytest.approx(sum(r[key] for r in rows) / 2)
    assert [r["win_rate"] for r in rows] == [0.5, 0.5] and done.value != pytest.approx(0.5)  # not the win rate
    if measure == "reduced_return":  # the reduced return, not the plain one
        assert done.value != pytest.approx(sum(r["mean_return"] for r in rows) / 2)
    assert done.user_attrs["measure"] == measure
    assert done.user_attrs["final_eval"] == {r["opponent"]: {"win_rate": r["win_rate"], key: r[key]} for r in rows}
    out = tmp_path / "study"
    summary = (out / "summary.md").read_text()
    assert f"- objective: {label} of the final model" in summary and "win rate of the final" not in summary
    assert ("reduced with value file value_trio_decided.npz" in summary) == (measure == "reduced_return")
    assert f"(objective {done.value:.4f}, the {label}, at the trial budget" in (out / "best_config.yaml").read_text()


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")  # retried_trial_number
@pytest.mark.slow  # a worker process killed mid-trial, then the study resumed: over 20 s on its own
def test_a_trial_of_a_killed_worker_is_marked_failed_and_the_study_resumes(tmp_path):
    heartbeat = {"interval": 1, "grace_period": 2, "max_retry": 1}
    long_trial = {**TINY_TRIAL, "total_timesteps": 10_000_000}
    tune_file = write_tune(tmp_path, "long.yaml", trial=long_trial, heartbeat=heartbeat)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tacocat.cli.app", "tune", "--config", str(tune_file), "--trials", "1", "--no-progress"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
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
    assert "storage nosuchdb://x" in _one_line_error(
        ["--config", str(good), "--trials", "1", "--storage", "nosuchdb://x"]
    )
    assert "storage" in _one_line_error(["--config", str(good), "--trials", "1", "--storage", "not a url"])
    result = CliRunner().invoke(app, ["tune", "--config", str(good), "--trials", "0"])
    assert result.exit_code == 2 and "--trials" in result.output


def test_cli_runs_a_study_and_names_the_best_config(tmp_path):
    result = CliRunner().invoke(
        app, ["tune", "--config", str(write_tune(tmp_path)), "--trials", "1", "--study", "renamed", "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    assert "tacocat train --config" in result.output
    assert optuna.load_study(study_name="renamed", storage=f"sqlite:///{tmp_path / 'study' / 'study.db'}").trials


@pytest.mark.slow  # two worker processes, each importing torch and training: about 30 s on its own
def test_two_workers_share_one_study(tmp_path):
    setup = load_tune(write_tune(tmp_path))
    study = run_study(setup, trials=2, workers=2, progress=False)
    finished = [t for t in study.trials if t.state == TrialState.COMPLETE]
    assert len(finished) >= 2 and len({t.params["algo.learning_rate"] for t in finished}) == len(finished)


# ---------------------------------------------------------------------------------------
# any backend: a study on the default one, the league
# ---------------------------------------------------------------------------------------
LEAGUE_SMOKE = ROOT / "tests" / "support" / "configs" / "league_smoke.yaml"
LEAGUE_TRIAL = {
    "total_timesteps": 512,
    "eval.every": 256,
    "eval.deal_pairs": 2,
    "eval.opponents": ["random"],
    "checkpoint_every": 256,
}
#: the entropy weight, not the learning rate: it is an argument of the compiled iteration, so the
#: trials share league_smoke.yaml's compilation (the XLA cache, tests/conftest.py)
LEAGUE_SPACE = {
    "algo.ent_coef": {"type": "float", "low": 1e-3, "high": 1e-1, "log": True},
    "league.pfsp_power": {"type": "float", "low": 0.5, "high": 3.0},
    "league.sampling": {"type": "categorical", "choices": ["uniform", "pfsp"]},
}


@pytest.mark.slow  # two league trials compile twice: over 15 s on the 2-core machine
def test_a_league_study_tunes_the_default_backend(tmp_path):
    setup = load_tune(
        write_tune(tmp_path, base_config=str(LEAGUE_SMOKE), trial=LEAGUE_TRIAL, search_space=LEAGUE_SPACE)
    )
    study = run_study(setup, trials=2, progress=False)
    assert [t.state for t in study.trials] == [TrialState.COMPLETE] * 2
    runs = [Path(t.user_attrs["run_dir"]) for t in study.trials]
    for trial, run_dir in zip(study.trials, runs, strict=True):
        config = load_experiment(run_dir / "config.yaml")
        assert config.backend == "league" and config.total_timesteps == 512
        assert config.league.pfsp_power == trial.params["league.pfsp_power"]
        assert json.loads((run_dir / "final.json").read_text())["policy"]["file"] == "policy.npz"
        final = json.loads((run_dir / "final_eval.json").read_text())
        assert trial.value == pytest.approx(final[0]["win_rate"])
    best = load_experiment(tmp_path / "study" / "best_config.yaml")
    assert best.backend == "league" and best.total_timesteps == load_experiment(LEAGUE_SMOKE).total_timesteps
    assert "backend: league" in (tmp_path / "study" / "summary.md").read_text()
    # compare takes league runs as it takes SB3 ones: each run's final.json names its policy
    compared = compare_runs(runs[0], runs[1], "random", deal_pairs=3, seed=12345 + 1, progress=False)
    assert [compared[k]["win_rate"] for k in "ab"] == pytest.approx([t.value for t in study.trials])
    assert compared["a"]["agent"].startswith("league:path=")
