"""`tacocat tune`: Optuna hyperparameter search over a `tacocat train` experiment of any backend.

    tacocat tune --config tacocat/train/configs/tune_league.yaml --trials 8 [--storage URL]
                 [--study NAME] [--workers K]

Each trial is one run of the run loop (`tacocat.train.loop.train`: its own run directory
with config, seed, versions and ruleset hash) at the budget the tune file sets, then a
duplicate-format evaluation of its final policy against the run's `eval.opponents`
(`objective.deal_pairs` deal pairs each, the same deals for every trial); the objective is the mean
over them of `objective.measure`: the win rate, the mean return per game, or the variance-reduced
(AIVAT) return per game. The training-time evaluations' mean win rates (whatever the measure:
they play no other) are reported as intermediate values (step = timesteps) so the pruner (median
or Hyperband) can stop a poor trial early. The sampler is TPE. A study keeps one measure: its
complete trials record theirs, and a tune file with another is refused.

The study lives in an Optuna RDBStorage: an SQLite file in the study directory by default, or
any SQLAlchemy URL (PostgreSQL, MySQL) shared by workers on several machines. Running trials
send heartbeats; a trial whose worker died (kill -9) is marked FAIL by the next worker once
`heartbeat.grace_period` has passed, and its parameters are queued again
(`RetryHeartbeatStaleTrialCallback`). `--trials N` is the study's target of finished (complete or
pruned) trials, so rerunning the same command resumes the study and runs only what is missing.

A new SQLite study is created under a lock on `<database>.lock` next to the file: Optuna creates
its tables on first use without one, and processes creating one new file at once would fail
with "table ... already exists" (optuna#1092, #4621).

Outputs in the study directory: study.db (default storage) and study.db.lock, trials/ (run directories),
best_config.yaml (the base experiment, at its own budget, with the best trial's parameters:
`tacocat train --config` takes it as it is), summary.md, optimization_history.png,
param_importances.png.
"""

from __future__ import annotations

import fcntl
import json
import warnings
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback, fail_stale_trials
from optuna.trial import TrialState

from tacocat.train.config import ExperimentConfig, parse_experiment
from tacocat.train.config_files import set_field
from tacocat.train.settings import MAX_WORKERS
from tacocat.train.tune.config import CategoricalParam, FloatParam, IntParam, PrunerConfig, TuneSetup

if TYPE_CHECKING:
    from matplotlib.axes import Axes

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


# ---------------------------------------------------------------------------------------
# study
# ---------------------------------------------------------------------------------------
def make_pruner(config: PrunerConfig) -> optuna.pruners.BasePruner:
    if config.kind == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=config.n_startup_trials, n_warmup_steps=config.n_warmup_steps
        )
    if config.kind == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=config.min_resource, reduction_factor=config.reduction_factor
        )
    return optuna.pruners.NopPruner()


def open_study(setup: TuneSetup, worker: int = 0) -> optuna.Study:
    """Create or load the study in its storage (a new SQLite file under `creation_lock`). A bad
    storage URL raises ValueError."""
    import sqlalchemy.exc

    tune = setup.tune
    url = tune.storage_url
    database = sqlite_database(url)
    engine_kwargs = {"connect_args": {"timeout": 60}} if database is not None else {}
    if tune.storage is None:
        tune.directory.mkdir(parents=True, exist_ok=True)
    sampler = optuna.samplers.TPESampler(
        seed=tune.sampler.seed + worker,
        n_startup_trials=tune.sampler.n_startup_trials,
        multivariate=tune.sampler.multivariate,
    )
    with creation_lock(database, url):
        try:
            with warnings.catch_warnings():  # heartbeats are marked experimental in Optuna
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                storage = RDBStorage(
                    url,
                    engine_kwargs=engine_kwargs,
                    heartbeat_interval=tune.heartbeat.interval,
                    grace_period=tune.heartbeat.grace_period,
                    heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=tune.heartbeat.max_retry),
                )
            study = optuna.create_study(
                study_name=tune.study,
                storage=storage,
                sampler=sampler,
                pruner=make_pruner(tune.pruner),
                direction="maximize",
                load_if_exists=True,
            )
        except (sqlalchemy.exc.SQLAlchemyError, ImportError, ValueError, RuntimeError) as err:
            # RuntimeError: Optuna's "table schema is not compatible" for a database of another version
            raise ValueError(f"storage {redact(url)}: {str(err).splitlines()[0]}") from None
    check_measure(study, setup)
    return study


def check_measure(study: optuna.Study, setup: TuneSetup) -> None:
    """ValueError, one line, if a complete trial of the study was scored by another measure than
    the tune file's (a trial from before measures were recorded scored the win rate)."""
    measure = setup.tune.objective.measure
    others = sorted(
        {
            t.user_attrs.get("measure", "win_rate")
            for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        }
        - {measure}
    )
    if others:
        raise ValueError(
            f"study {setup.tune.study!r} in {redact(setup.tune.storage_url)} has trials scored by "
            f"objective.measure {', '.join(others)}, not {measure}: give the study another name (--study)"
        )


def sqlite_database(url: str) -> Path | None:
    """The database file of a SQLite URL, None for any other URL (a malformed one is left to
    RDBStorage's error). An in-memory SQLite database is refused: the study's workers and its
    report each open the storage anew, so every one would see an empty study."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite":
        return None
    if not parsed.database or ":memory:" in parsed.database or parsed.query.get("mode") == "memory":
        raise ValueError(
            f"storage {redact(url)}: an in-memory SQLite database would not outlive one worker; "
            "give a file (sqlite:///path/study.db)"
        )
    return Path(parsed.database)


@contextmanager
def creation_lock(database: Path | None, url: str) -> Iterator[None]:
    """Hold an exclusive lock on `<database>.lock` (nothing for a server database): one process
    at a time creates or loads the study (see the module docstring)."""
    if database is None:
        yield
        return
    lock = database.with_name(database.name + ".lock")
    try:
        handle = lock.open("a")
    except OSError as err:
        raise ValueError(f"storage {redact(url)}: cannot open the lock file {lock} ({err.strerror})") from None
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
        yield


def redact(url: str) -> str:
    """A storage URL without its password (for logs and the summary)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # not a URL at all: nothing to hide that we could find
        return url
    return url if parsed.password is None else parsed.render_as_string(hide_password=True)


def suggest(trial: optuna.Trial, setup: TuneSetup) -> dict[str, Any]:
    """The trial's values of every search-space field."""
    params: dict[str, Any] = {}
    for key, spec in setup.tune.search_space.items():
        if isinstance(spec, FloatParam):
            params[key] = trial.suggest_float(key, spec.low, spec.high, log=spec.log, step=spec.step)
        elif isinstance(spec, IntParam):
            params[key] = trial.suggest_int(key, spec.low, spec.high, log=spec.log, step=spec.step)
        else:
            params[key] = spec.decode(trial.suggest_categorical(key, spec.encoded))
    return params


def decoded_params(setup: TuneSetup, params: dict[str, Any]) -> dict[str, Any]:
    """Optuna's stored parameter values as experiment-config values."""
    out = {}
    for key, value in params.items():
        spec = setup.tune.search_space.get(key)
        out[key] = spec.decode(value) if isinstance(spec, CategoricalParam) else value
    return out


# ---------------------------------------------------------------------------------------
# objective
# ---------------------------------------------------------------------------------------
class Objective:
    """Train one trial in its own run directory and score it (see the module docstring)."""

    def __init__(self, setup: TuneSetup) -> None:
        self.setup = setup
        self.reduction = setup.reduction()

    def trial_config(self, number: int, params: dict[str, Any]) -> ExperimentConfig:
        """The trial's experiment: named after the trial, in the study's trials/ folder, its
        final evaluation = the objective's matches."""
        tune = self.setup.tune
        config = self.setup.experiment(params)
        per_trial = {  # tune.config.PER_TRIAL_FIELDS: the fields a tune file may not set
            "name": f"{config.name}_trial{number:04d}",
            "run_root": str(tune.directory / "trials"),
            "eval.final": [
                {"agent": agent, "deal_pairs": tune.objective.deal_pairs} for agent in config.eval.opponents
            ],
            "eval.workers": tune.objective.workers,
        }
        data = config.model_dump(mode="json")
        for key, value in per_trial.items():
            set_field(data, key.split("."), value, key)
        return parse_experiment(data)

    def __call__(self, trial: optuna.Trial) -> float:
        from tacocat.train.evaluation import evaluate_run
        from tacocat.train.loop import train

        config = self.trial_config(trial.number, suggest(trial, self.setup))
        pruned_at: list[int] = []

        def report(timesteps: int, score: float) -> bool:
            trial.report(score, timesteps)
            if trial.should_prune():
                pruned_at.append(timesteps)
                return False
            return True

        run = train(config, progress=False, listener=report)
        assert run is not None  # one process, which writes the run
        trial.set_user_attr("run_dir", str(run.run_dir))
        if pruned_at:
            raise optuna.TrialPruned(f"pruned at {pruned_at[0]} timesteps")
        rows = evaluate_run(run.run_dir, config, progress=False, learner=run.spec, reduction=self.reduction)
        objective = self.setup.tune.objective
        trial.set_user_attr("measure", objective.measure)
        trial.set_user_attr(
            "final_eval",
            {r["opponent"]: {"win_rate": r["win_rate"], objective.row_key: r[objective.row_key]} for r in rows},
        )
        return float(np.mean([r[objective.row_key] for r in rows]))


# ---------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------
def finished_trials(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=FINISHED))


def run_worker(setup: TuneSetup, trials: int, worker: int = 0, progress: bool = False) -> None:
    """One worker: run trials until the study has `trials` finished ones."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study(setup, worker)
    remaining = trials - finished_trials(study)
    if remaining <= 0:
        return
    study.optimize(
        Objective(setup),
        n_trials=remaining,
        show_progress_bar=progress,
        gc_after_trial=True,
        callbacks=[optuna.study.MaxTrialsCallback(trials, states=FINISHED)],
    )


def run_study(setup: TuneSetup, trials: int, workers: int = 1, progress: bool = True) -> optuna.Study:
    """Run (or resume) the study with `workers` processes sharing its storage; write the report."""
    from tacocat.evaluation.matches import mp_context

    for what, value in (("trials", trials), ("workers", workers)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{what} must be a whole number of at least 1, got {value!r}")
    if workers > MAX_WORKERS:
        raise ValueError(f"workers must be at most {MAX_WORKERS} (processes on this machine), got {workers}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study(setup)
    if setup.tune.enqueue_base and not study.trials:
        base = {k: v for k, v in setup.base_values().items() if v is not None}
        study.enqueue_trial(base, user_attrs={"base_values": True})
    waiting = len(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))
    if workers == 1:
        run_worker(setup, trials, progress=progress)
    else:
        if waiting:  # enqueued trials first, in this process: two SQLite workers can pop the same one
            run_worker(setup, min(trials, finished_trials(study) + waiting))
        with ProcessPoolExecutor(max_workers=workers, mp_context=mp_context()) as pool:
            for future in [pool.submit(run_worker, setup, trials, k) for k in range(workers)]:
                future.result()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        fail_stale_trials(study)  # a trial of a killed worker that no later trial start caught
    write_report(study, setup)
    return study


# ---------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------
def best_config_yaml(study: optuna.Study, setup: TuneSetup) -> str:
    """The base experiment at its own budget with the best trial's parameters."""
    best = study.best_trial
    config = setup.experiment(decoded_params(setup, best.params), trial_budget=False)
    config = parse_experiment({**config.model_dump(mode="json"), "name": f"{config.name}_tuned"})
    header = (
        f"# Tuned by `tacocat tune` ({setup.source}): study {setup.tune.study!r}, best of "
        f"{finished_trials(study)} finished trials = trial {best.number}\n"
        f"# (objective {best.value:.4f}, the {setup.tune.objective.label}, at the trial budget: "
        f"{json.dumps(setup.tune.trial)}).\n"
        f"# Everything else is {setup.tune.base_config} at its own budget.\n"
    )
    return header + config.to_yaml()


def write_report(study: optuna.Study, setup: TuneSetup) -> None:
    """best_config.yaml, summary.md and the plots in the study directory."""
    out = setup.tune.directory
    out.mkdir(parents=True, exist_ok=True)
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    notes = []
    if complete:
        (out / "best_config.yaml").write_text(best_config_yaml(study, setup))
        notes += plot_history(study, out / "optimization_history.png", setup.tune.objective.label)
        notes += plot_importances(study, out / "param_importances.png")
    (out / "summary.md").write_text(summary_markdown(study, setup, notes))


def plot_history(study: optuna.Study, path: Path, label: str) -> list[str]:
    """Optuna's history of the complete trials' objectives; `label` names the measure."""
    import matplotlib

    matplotlib.use("Agg")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        ax = optuna.visualization.matplotlib.plot_optimization_history(study)
    ax.set_ylabel(f"objective: {label}")
    _save_figure(ax, path)
    return []


def plot_importances(study: optuna.Study, path: Path) -> list[str]:
    """Parameter importances by Optuna's default evaluator, PED-ANOVA (fANOVA would need
    scikit-learn); needs complete trials."""
    import matplotlib

    matplotlib.use("Agg")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # experimental API; "importances are equal" with few trials
            ax = optuna.visualization.matplotlib.plot_param_importances(study)
    except (ValueError, RuntimeError) as err:
        path.unlink(missing_ok=True)
        return [f"No parameter importances: {err}"]
    _save_figure(ax, path)
    return []


def _save_figure(ax: Axes, path: Path) -> None:
    """Write the figure of Optuna's plot `ax` to `path` and close it."""
    import matplotlib.pyplot as plt

    figure = ax.get_figure(root=True)
    assert figure is not None  # Optuna draws each plot on a figure of its own
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)


def summary_markdown(study: optuna.Study, setup: TuneSetup, notes: list[str]) -> str:
    from tacocat.evaluation.variance import describe_reduction
    from tacocat.train.run_dir import run_metadata

    tune = setup.tune
    trials = study.get_trials(deepcopy=False)
    counts = Counter(t.state.name for t in trials)
    experiment = setup.experiment({})
    meta = run_metadata(experiment)
    reduction = setup.reduction()
    reduced_with = f", reduced with {describe_reduction(reduction.to_dict())}" if reduction else ""
    lines = [
        f"# Study `{tune.study}`",
        "",
        f"- tune file: `{setup.source}`; base experiment: `{tune.base_config}`",
        f"- storage: `{redact(tune.storage_url)}`",
        f"- trial budget (overrides of every trial): `{json.dumps(tune.trial)}`",
        f"- objective: {tune.objective.label} of the final model against {experiment.eval.opponents}, "
        f"{tune.objective.deal_pairs} deal pairs each (deal seed {experiment.eval.seed + 1}, the same deals "
        f"for every trial){reduced_with}; training seed {experiment.seed} in every trial",
        f"- sampler: TPE (seed {tune.sampler.seed}, {tune.sampler.n_startup_trials} random start-up trials); "
        f"pruner: {tune.pruner.kind}",
        "- trials: " + ", ".join(f"{n} {s.lower()}" for s, n in sorted(counts.items())),
        f"- backend: {experiment.backend}; report written at commit {meta['git_commit']} (each trial's run.json "
        f"has its own), ruleset {meta['ruleset_hash']}, "
        + ", ".join(f"{name} {version}" for name, version in meta["versions"].items() if name != "tacocat-env"),
        "",
    ]
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    if complete:
        best = study.best_trial
        lines += [
            f"Best: trial {best.number}, objective {best.value:.4f}; its config at the base "
            f"experiment's budget: `best_config.yaml`."
        ]
        lines += [
            f"The base experiment's own values (trial {t.number}): objective {t.value:.4f}."
            for t in complete
            if t.user_attrs.get("base_values")
        ]
        lines += ["", "![optimization history](optimization_history.png)", ""]
        if not notes:
            lines += ["![parameter importances](param_importances.png)", ""]
    lines += notes + ([""] if notes else [])
    keys = list(tune.search_space)
    lines += [
        "Value: the objective of a complete trial; of a pruned one, its last training-time evaluation "
        "(the mean win rate at `last step` timesteps, on fewer deal pairs).",
        "",
        "| trial | state | value | last step | " + " | ".join(keys) + " | run directory |",
        "|" + "---|" * (len(keys) + 5),
    ]
    for t in trials:
        params = decoded_params(setup, t.params)
        value = f"{t.value:.4f}" if t.value is not None else ""
        last = str(t.last_step) if t.last_step is not None else ""
        cells = [_fmt(params.get(k, "")) for k in keys]
        base = " (base values)" if t.user_attrs.get("base_values") else ""
        lines.append(
            f"| {t.number}{base} | {t.state.name} | {value} | {last} | "
            + " | ".join(cells)
            + f" | {t.user_attrs.get('run_dir', '')} |"
        )
    return "\n".join(lines) + "\n"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return json.dumps(value) if isinstance(value, (list, dict)) else str(value)
