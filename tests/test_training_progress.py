"""The training progress bar (issue 36; tacocat/train/progress.py): a notice while the
first iteration runs (the league compiles then), then a bar in env steps out of the config's
total_timesteps that starts after the first iteration, shows one rate and never passes its
total. Checked on what the bar holds and prints, never on timings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_run_loop import CountingTrainer, _config

from tacocat.train.loop import run_training
from tacocat.train.progress import TrainingProgress


def test_the_bar_starts_after_the_first_iteration_and_stops_at_the_total(capsys: pytest.CaptureFixture) -> None:
    progress = TrainingProgress(950, enabled=True)
    progress.starting("league", 0)
    assert capsys.readouterr().err == "compiling and running the first iteration …\n"
    assert progress.bar is None  # no clock runs while the first iteration compiles
    progress.reached(100)
    assert (progress.bar.n, progress.bar.total, progress.bar.initial) == (100, 950, 100)
    progress.reached(1000)  # the last iteration ends past total_timesteps
    assert progress.bar.n == 950
    progress.close()


def test_a_resumed_run_says_where_it_starts_and_a_finished_one_says_nothing(capsys: pytest.CaptureFixture) -> None:
    TrainingProgress(950, enabled=True).starting("sb3", 300)
    assert capsys.readouterr().err == "running the first iteration at 300 of 950 env steps …\n"
    TrainingProgress(950, enabled=True).starting("league", 950)
    TrainingProgress(950, enabled=False).starting("league", 0)
    assert capsys.readouterr().err == ""


def test_the_run_loop_prints_the_notice_then_one_rate_up_to_the_total(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_training(CountingTrainer(), _config(tmp_path, total_timesteps=950), run_dir, resuming=False, progress=True)
    err = capsys.readouterr().err
    notice, _, bar = err.partition("\n")
    assert notice == "running the first iteration …"
    frames = [f for f in re.split(r"[\r\n]", bar) if "step" in f]
    assert frames and all(re.search(r"\b\d+/950\b", f) for f in frames), frames
    assert "950/950" in frames[-1] and "1000" not in bar
    assert all(f.count("/s") == 1 for f in frames), frames  # one rate
