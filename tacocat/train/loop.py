"""One run loop for every training backend (`tacocat train`).

Reads top to bottom: the config (or the run to resume, `run_dir.resume_config`) -> the
backend's session (RLlib: the Ray runtime; checked before anything is written) -> a fresh run
directory with config.yaml and run.json (`run_dir.start_run`), or the run to resume (one killed
before its run.json starts over) -> the backend's `Trainer` ->
the newest complete checkpoint, if resuming -> iterations: progress.csv and TensorBoard after
each; every `eval.every` timesteps a duplicate-format evaluation against `eval.opponents`
(eval.csv, the best policy so far kept as the backend's best file, a listener that may stop
the run: `tacocat tune` prunes with it); every `checkpoint_every` timesteps a checkpoint
(`tacocat.train.checkpoints`) -> the final policy, learning_curve.png and final.json,
which names the policy (`tacocat.train.policy.run_policy`).

A backend is a subpackage with a `trainer` module (`tacocat.train.backends`) that gives
`session(config, address)` and `make_trainer(config, run_dir)`; the trainer does one thing
per call (`Trainer`), and everything around the iterations happens here, once.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tacocat.agents.base import Agent
from tacocat.train import checkpoints
from tacocat.train.backends import trainer_module
from tacocat.train.config import ExperimentConfig
from tacocat.train.evaluation import (
    EVAL_FIELDS,
    EXACT_FIELDS,
    drop_policy_tables,
    evaluate_during_training,
    evaluation_score,
    nash_conv_during_training,
    prepare_nash_conv,
)
from tacocat.train.logs import ScalarWriter, append_rows, truncate_rows
from tacocat.train.policy import ExportedPolicy
from tacocat.train.progress import TrainingProgress
from tacocat.train.run_dir import (
    config_hash,
    never_started,
    new_run_dir,
    resume_config,
    start_run,
)

#: called after each evaluation with (timesteps, mean win rate over `eval.opponents`);
#: returning False stops training there (`tacocat tune` prunes trials with it)
EvaluationListener = Callable[[int, float], bool]


class Trainer(Protocol):
    """One backend's training, one call at a time; `run_training` drives it."""

    #: the columns of progress.csv this trainer's `iterate` fills (besides iteration and timesteps)
    progress_fields: tuple[str, ...]

    @property
    def timesteps(self) -> int:
        """Env steps trained so far (both players' moves for the league)."""

    def iterate(self) -> dict[str, Any]:
        """One training iteration; its row of progress.csv (the `progress_fields`)."""

    def save(self, folder: Path | None) -> dict[str, Any]:
        """Write the whole training state into the empty `folder`; return the small JSON state
        the checkpoint's marker carries (`CheckpointMarker.trainer`). `None` on a process other
        than process 0 of a multi-process run (`take_part`): its part in gathering the state,
        nothing written (only a backend that runs on several processes is given None)."""

    def restore(self, folder: Path, marker: checkpoints.CheckpointMarker) -> None:
        """Continue from a checkpoint `save` wrote; RunDirError naming the file if it is not one
        that this run's config can have written (nothing is trusted)."""

    def evaluation_agent(self, run_dir: Path) -> Agent | str:
        """The current policy as an agent (or agent spec) for an evaluation match."""

    def export(self, run_dir: Path, best: bool = False) -> ExportedPolicy:
        """Write the current policy as the run's final (or best-so-far) policy file."""

    def close(self) -> None:
        """Release what the trainer holds (env processes, actors)."""


@dataclass(frozen=True)
class TrainedRun:
    run_dir: Path
    policy: ExportedPolicy
    stopped_early: bool

    @property
    def spec(self) -> str:
        return self.policy.spec(self.run_dir)


class Every:
    """Due once each time the timesteps cross a multiple of `interval`."""

    def __init__(self, interval: int, start: int) -> None:
        self.interval = interval
        self.next = (start // interval + 1) * interval

    def due(self, timesteps: int) -> bool:
        if timesteps < self.next:
            return False
        self.next = (timesteps // self.interval + 1) * self.interval
        return True


# ---------------------------------------------------------------------------------------
# train
# ---------------------------------------------------------------------------------------
def train(
    config: ExperimentConfig | None = None,
    *,
    resume: Path | None = None,
    progress: bool = True,
    listener: EvaluationListener | None = None,
    address: str | None = None,
) -> TrainedRun | None:
    """Train `config` (or resume the run in `resume`) with its backend. None on a process other
    than process 0 of a multi-process run (tacocat/train/distributed.py): it trains and writes
    nothing."""
    resumed = Path(resume) if resume is not None else None
    if resumed is not None:
        config = resume_config(resumed)
    elif config is None:
        raise ValueError("train() needs a config or resume=RUN_DIR")
    # a run killed before its run.json was written starts over in its directory
    starting = resumed is None or never_started(resumed)
    backend = trainer_module(config.backend)
    if config.eval.nash_conv:
        prepare_nash_conv(config)  # a tree too large to enumerate is refused before the run directory
    with backend.session(config, address) as extras:
        # several processes (tacocat/train/distributed.py): process 0 writes the run
        if extras.pop("process_index", 0) != 0:
            take_part(backend.make_trainer(config, resumed), config, resumed, resuming=not starting)
            return None
        run_dir = resumed if resumed is not None else new_run_dir(config)
        if starting:
            start_run(run_dir, config, extras)
        trainer = backend.make_trainer(config, run_dir)
        try:
            return run_training(trainer, config, run_dir, resuming=not starting, progress=progress, listener=listener)
        finally:
            trainer.close()


def run_training(
    trainer: Trainer,
    config: ExperimentConfig,
    run_dir: Path,
    *,
    resuming: bool,
    progress: bool,
    listener: EvaluationListener | None = None,
) -> TrainedRun:
    """Iterate `trainer` to `config.total_timesteps` (see the module docstring)."""
    from tacocat.train.curves import plot_learning_curve

    iteration, best = 0, None
    found = checkpoints.latest(run_dir, config) if resuming else None
    if found is not None:
        folder, marker = found
        trainer.restore(folder, marker)
        iteration, best = marker.iteration, marker.best_score
    start = trainer.timesteps
    progress_fields = ["iteration", "timesteps", *trainer.progress_fields, "env_steps_per_s", "iteration_s"]
    if resuming:
        truncate_rows(run_dir / "progress.csv", progress_fields, start)
        truncate_rows(run_dir / "eval.csv", EVAL_FIELDS, start)
        truncate_rows(run_dir / "exploitability.csv", EXACT_FIELDS, start)
        drop_policy_tables(run_dir, start)
    writer = ScalarWriter(run_dir / "tb")
    evaluations, saves = Every(config.eval.every, start), Every(config.checkpoint_every, start)
    written_for = {"ruleset_hash": config.rules_config.ruleset_hash(), "config_sha256": config_hash(config)}
    bar = TrainingProgress(config.total_timesteps, progress)
    bar.starting(config.backend, start)
    stopped = False
    try:
        while trainer.timesteps < config.total_timesteps and not stopped:
            before, t0 = trainer.timesteps, time.perf_counter()
            metrics = trainer.iterate()
            seconds = time.perf_counter() - t0
            timesteps, iteration = trainer.timesteps, iteration + 1
            row = {
                "iteration": iteration,
                "timesteps": timesteps,
                **metrics,
                "env_steps_per_s": (timesteps - before) / seconds if seconds > 0 else None,
                "iteration_s": seconds,
            }
            append_rows(run_dir / "progress.csv", progress_fields, [row])
            for key, value in row.items():
                if key not in ("iteration", "timesteps") and isinstance(value, (int, float)):
                    writer.add(f"train/{key}", value, timesteps)
            bar.reached(timesteps)
            done = timesteps >= config.total_timesteps
            if evaluations.due(timesteps) or done:
                learner = trainer.evaluation_agent(run_dir)
                rows = evaluate_during_training(learner, config, timesteps)
                append_rows(run_dir / "eval.csv", EVAL_FIELDS, rows)
                exact = (
                    nash_conv_during_training(learner, config, timesteps, run_dir) if config.eval.nash_conv else None
                )
                if exact is not None:
                    append_rows(run_dir / "exploitability.csv", EXACT_FIELDS, [exact])
                    writer.add("eval/nash_conv_greedy", exact["nash_conv_greedy"], timesteps)
                    writer.add("eval/nash_conv_sampling", exact["nash_conv_sampling"], timesteps)
                    if "nash_conv_average" in exact:
                        writer.add("eval/nash_conv_average", exact["nash_conv_average"], timesteps)
                for r in rows:
                    writer.add(f"eval/win_rate_{r['opponent']}", r["win_rate"], timesteps)
                score = evaluation_score(rows, exact)
                if rows:
                    writer.add("eval/mean_win_rate", score, timesteps)
                if best is None or score > best:
                    best = score
                    trainer.export(run_dir, best=True)
                stopped = listener is not None and not listener(timesteps, score)
            if saves.due(timesteps) or done or stopped:
                checkpoints.save(
                    run_dir,
                    trainer,
                    {"timesteps": timesteps, "iteration": iteration, "best_score": best, **written_for},
                )
        policy = trainer.export(run_dir)
        plot_learning_curve(run_dir)
        final = {
            "timesteps": trainer.timesteps,
            "iterations": iteration,
            "stopped_early": stopped,
            "policy": {"agent": policy.agent, "file": policy.file, "options": policy.options},
        }
        (run_dir / "final.json").write_text(json.dumps(final, indent=2))
    finally:
        bar.close()
        writer.close()
    return TrainedRun(run_dir, policy, stopped)


def take_part(trainer: Trainer, config: ExperimentConfig, run_dir: Path | None, *, resuming: bool) -> None:
    """A process of a multi-process run other than process 0: the same iterations from the
    same checkpoint (`run_dir`, when resuming), and its part in gathering the state at every
    checkpoint (`save(None)`); it writes nothing. Closes `trainer`."""
    try:
        found = checkpoints.latest(run_dir, config) if resuming and run_dir is not None else None
        if found is not None:
            trainer.restore(*found)
        saves = Every(config.checkpoint_every, trainer.timesteps)
        while trainer.timesteps < config.total_timesteps:
            trainer.iterate()
            if saves.due(trainer.timesteps) or trainer.timesteps >= config.total_timesteps:
                trainer.save(None)
    finally:
        trainer.close()


@contextlib.contextmanager
def no_session(config: ExperimentConfig, address: str | None) -> Iterator[dict[str, Any]]:
    """The session of a backend that needs none: nothing to start, nothing to add to run.json."""
    if address is not None:
        raise ValueError(f"--address joins a Ray cluster: it applies to backend rllib, not {config.backend}")
    yield {}
