"""A run's start (issue 36): config.yaml and run.json are each written whole, config.yaml first,
and a run killed between the two (config.yaml alone in its directory) starts over when resumed,
as docs/experiments.md promises. The loop runs with the stand-in trainer of test_run_loop."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_run_loop import CountingTrainer, _config

from tacocat.train import loop, run_dir
from tacocat.train.loop import no_session
from tacocat.train.run_dir import RunDirError, never_started


@pytest.fixture
def counting_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every backend trains with a CountingTrainer."""
    backend = SimpleNamespace(session=no_session, make_trainer=lambda config, folder: CountingTrainer())
    monkeypatch.setattr(loop, "trainer_module", lambda name: backend)


class Killed(BaseException):
    """The process dying between config.yaml and run.json."""


def _killed_before_run_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run directory as a kill after config.yaml and before run.json leaves it."""

    def die(config: object) -> None:
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(run_dir, "run_metadata", die)
        with pytest.raises(Killed):
            loop.train(_config(tmp_path), progress=False)
    (folder,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    return folder


def test_a_run_killed_between_config_yaml_and_run_json_starts_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting_backend: None
) -> None:
    folder = _killed_before_run_json(tmp_path, monkeypatch)
    assert sorted(p.name for p in folder.iterdir()) == ["config.yaml"] and never_started(folder)
    run = loop.train(resume=folder, progress=False)
    assert run.run_dir == folder and json.loads((folder / "final.json").read_text())["timesteps"] == 1000
    meta = json.loads((folder / "run.json").read_text())
    assert meta["config"]["total_timesteps"] == 1000 and meta["backend"] == "sb3"
    assert not never_started(folder) and not list(folder.glob("*.part"))


def test_a_run_that_wrote_more_than_config_yaml_still_needs_its_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting_backend: None
) -> None:
    folder = _killed_before_run_json(tmp_path, monkeypatch)
    (folder / "progress.csv").write_text("iteration,timesteps\n1,100\n")  # not a run that never started
    assert not never_started(folder)
    with pytest.raises(RunDirError, match=r"run\.json: cannot read the run's record"):
        loop.train(resume=folder, progress=False)
    assert not (folder / "run.json").exists()
