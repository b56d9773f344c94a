"""The one run loop (tacocat.train.loop) with a stand-in trainer: its cadences, the
checkpoint scheme, the listener, resuming, final.json, and `run_policy` refusing what a run does
not write. The backends' own trainers are tested in test_training, test_league and test_rllib."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from tacocat.train import checkpoints
from tacocat.train.config import load_experiment
from tacocat.train.loop import run_training
from tacocat.train.policy import ExportedPolicy, run_policy
from tacocat.train.run_dir import RunDirError

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "smoke.yaml"


class CountingTrainer:
    """100 timesteps an iteration; its state is the number of iterations; plays `random`."""

    progress_fields = ("counter",)

    def __init__(self) -> None:
        self.iterations, self.saved, self.exports = 0, [], []

    @property
    def timesteps(self) -> int:
        return 100 * self.iterations

    def iterate(self) -> dict[str, Any]:
        self.iterations += 1
        return {"counter": self.iterations}

    def save(self, folder: Path) -> dict[str, Any]:
        (folder / "state.txt").write_text(str(self.iterations))
        self.saved.append(self.timesteps)
        return {"iterations": self.iterations}

    def restore(self, folder: Path, marker: checkpoints.CheckpointMarker) -> None:
        self.iterations = int((folder / "state.txt").read_text())
        assert marker.trainer == {"iterations": self.iterations}

    def evaluation_agent(self, run_dir: Path) -> str:
        return "random"

    def export(self, run_dir: Path, best: bool = False) -> ExportedPolicy:
        name = "best.txt" if best else "final.txt"
        (run_dir / name).write_text(str(self.timesteps))
        self.exports.append((name, self.timesteps))
        return ExportedPolicy("random", name)

    def close(self) -> None:
        pass


def _config(tmp_path: Path, **sets: Any):
    values = {
        "run_root": tmp_path,
        "total_timesteps": 1000,
        "eval.every": 300,
        "checkpoint_every": 400,
        "eval.deal_pairs": 2,
        "eval.opponents": "[random]",
        **sets,
    }
    return load_experiment(SMOKE, overrides=[f"{k}={v}" for k, v in values.items()])


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_loop_evaluates_checkpoints_and_finishes_on_its_cadences(tmp_path: Path) -> None:
    trainer, run_dir = CountingTrainer(), tmp_path / "run"
    run_dir.mkdir()
    run = run_training(trainer, _config(tmp_path), run_dir, resuming=False, progress=False)
    assert [int(r["timesteps"]) for r in _rows(run_dir / "progress.csv")] == list(range(100, 1001, 100))
    assert [int(r["counter"]) for r in _rows(run_dir / "progress.csv")] == list(range(1, 11))
    assert [int(r["timesteps"]) for r in _rows(run_dir / "eval.csv")] == [300, 600, 900, 1000]
    assert trainer.saved == [400, 800, 1000]  # every checkpoint_every, and at the end
    assert [p.name for p in checkpoints.markers(run_dir)] == ["ckpt_800.json", "ckpt_1000.json"]  # 2 kept
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir() if p.is_dir()) == ["ckpt_1000", "ckpt_800"]
    final = json.loads((run_dir / "final.json").read_text())
    assert final == {
        "timesteps": 1000,
        "iterations": 10,
        "stopped_early": False,
        "policy": {"agent": "random", "file": "final.txt", "options": {}},
    }
    assert run.policy == run_policy(run_dir) and not run.stopped_early
    assert ("best.txt", 300) in trainer.exports  # the first evaluation is the best so far


def test_a_listener_stops_the_run_after_an_evaluation_and_the_run_says_so(tmp_path: Path) -> None:
    heard: list[tuple[int, float]] = []

    def listener(timesteps: int, score: float) -> bool:
        heard.append((timesteps, score))
        return timesteps < 600

    trainer, run_dir = CountingTrainer(), tmp_path / "run"
    run_dir.mkdir()
    run = run_training(trainer, _config(tmp_path), run_dir, resuming=False, progress=False, listener=listener)
    assert [t for t, _ in heard] == [300, 600] and run.stopped_early
    assert trainer.saved == [400, 600]  # a checkpoint where it stopped
    assert json.loads((run_dir / "final.json").read_text())["stopped_early"] is True


def test_a_resume_continues_from_the_newest_complete_checkpoint_and_redoes_the_rest(tmp_path: Path) -> None:
    config, run_dir = _config(tmp_path), tmp_path / "run"
    run_dir.mkdir()
    run_training(CountingTrainer(), config, run_dir, resuming=False, progress=False)
    (run_dir / "checkpoints" / "ckpt_1000.json").unlink()  # killed before the last marker
    (run_dir / "final.json").unlink()
    trainer = CountingTrainer()
    run_training(trainer, config, run_dir, resuming=True, progress=False)
    assert trainer.saved == [1000]
    assert [int(r["timesteps"]) for r in _rows(run_dir / "progress.csv")] == list(range(100, 1001, 100))
    assert [int(r["timesteps"]) for r in _rows(run_dir / "eval.csv")] == [300, 600, 900, 1000]


@pytest.mark.parametrize(
    "edit, fragment",
    [
        (lambda m: m.update(iteration=801), "801 iterations cannot have made 800 timesteps"),
        (lambda m: m.update(iteration=0), "0 iterations cannot have made 800 timesteps"),
        (lambda m: m.update(best_score=1.5), "best_score"),
        (lambda m: m.update(trainer=[1]), "trainer"),
        (lambda m: m.update(config_sha256="0" * 64), "written for another config"),
    ],
)
def test_the_loop_checks_its_part_of_the_marker(tmp_path: Path, edit: Any, fragment: str) -> None:
    config, run_dir = _config(tmp_path, total_timesteps=800), tmp_path / "run"
    run_dir.mkdir()
    run_training(CountingTrainer(), config, run_dir, resuming=False, progress=False)
    marker = run_dir / "checkpoints" / "ckpt_800.json"
    data = json.loads(marker.read_text())
    edit(data)
    marker.write_text(json.dumps(data))
    with pytest.raises(RunDirError, match=fragment) as info:
        checkpoints.latest(run_dir, config)
    assert str(marker) in str(info.value)


@pytest.mark.parametrize(
    "content, fragment",
    [
        (None, "is not a finished run"),
        (b"{", "not valid JSON"),
        (b'{"timesteps": 5}', "does not name the run's policy"),
        (b'{"policy": {"agent": "league", "file": "../../etc/passwd", "options": {}}}', "is not a file of the run"),
        (b'{"policy": {"agent": "league", "file": "missing.npz", "options": {}}}', "is not a file of the run"),
        (b'{"policy": {"agent": "league", "file": "policy.npz", "options": {"x": [1]}}}', "options"),
        (b" " * (1 << 17), "over the limit"),
    ],
)
def test_run_policy_refuses_a_final_json_a_run_does_not_write(
    tmp_path: Path, content: bytes | None, fragment: str
) -> None:
    if content is not None:
        (tmp_path / "final.json").write_bytes(content)
    with pytest.raises(RunDirError, match=fragment):
        run_policy(tmp_path)


def test_tensorboard_scalars_are_written_without_torch(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from tacocat.train.logs import ScalarWriter

    writer = ScalarWriter(tmp_path)
    for step in (1, 2):
        writer.add("train/loss", 0.5 * step, step)
    writer.close()
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("train/loss")] == [(1, 0.5), (2, 1.0)]
