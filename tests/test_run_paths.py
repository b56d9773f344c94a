"""Run directories stay inside the run root, and a self-play run resumes from anywhere."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from tacocat.train.config import load_experiment
from tacocat.train.loop import train

SMOKE = Path(__file__).resolve().parents[1] / "tests" / "support" / "configs" / "smoke.yaml"


@pytest.mark.parametrize("name", ["../x", "/tmp/x", "a/b", "a,b", ".hidden", "", "x" * 101])
def test_experiment_names_that_would_leave_the_run_root_are_refused(name):
    with pytest.raises(ValidationError, match="name"):
        load_experiment(SMOKE, overrides=[f"name={name!r}"])


def test_selfplay_run_with_a_comma_in_its_path_resumes_from_another_directory(tmp_path, monkeypatch):
    start, elsewhere = tmp_path / "start", tmp_path / "elsewhere"
    start.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(start)
    config = load_experiment(
        SMOKE,
        overrides=[
            "run_root=runs,with comma",
            "total_timesteps=1024",
            "checkpoint_every=512",
            "eval.every=1024",
            "sb3.selfplay.snapshot_every=512",
        ],
    )
    run_dir = train(config, progress=False).run_dir
    assert run_dir.parent == Path("runs,with comma")
    # interrupt it after the first checkpoint (as a kill would), then resume from elsewhere
    run_dir = run_dir.resolve()
    for name in ("final.json", "final_model.zip", "checkpoints/ckpt_1024.json"):
        (run_dir / name).unlink()
    shutil.rmtree(run_dir / "checkpoints" / "ckpt_1024")
    saved = json.loads((run_dir / "checkpoints" / "ckpt_512.json").read_text())
    assert saved["trainer"]["snapshots"] == ["snapshots/snapshot_512.zip"]
    monkeypatch.chdir(elsewhere)
    assert train(resume=run_dir, progress=False).run_dir == run_dir
    assert json.loads((run_dir / "final.json").read_text())["timesteps"] == 1024
    assert not list(elsewhere.iterdir())  # nothing was written relative to the new directory
