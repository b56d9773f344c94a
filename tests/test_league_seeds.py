"""benchmarks/league_seeds.py reads run directories into a seeds table and curves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import league_seeds


def _run(root: Path, seed: int, rate: float) -> Path:
    run = root / f"league_s{seed}"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"seed": seed, "git_commit": "abc123def456"}))
    (run / "progress.csv").write_text("iteration,timesteps,iteration_s\n1,100,30.0\n2,200,6.0\n3,300,6.0\n")
    (run / "eval.csv").write_text(
        "timesteps,opponent,win_rate,ci_low,ci_high,deal_pairs\n"
        f"200,counter,0.5,0.4,0.6,100\n300,counter,{rate},0.5,0.7,100\n"
    )
    return run


def test_the_table_sums_iteration_seconds_and_shows_the_last_evaluation(tmp_path: Path) -> None:
    runs = [league_seeds.read_run(_run(tmp_path, s, r)) for s, r in ((0, 0.61), (1, 0.58))]
    assert runs[0]["train_s"] == 42.0 and runs[0]["timesteps"] == 300
    assert runs[0]["curves"]["counter"][0][:3] == (200, 36.0, 0.5)
    text = league_seeds.table(runs)
    assert "| 0 | 300 | 0.7 min | 0.610 [0.500, 0.700] |" in text and "| 1 |" in text
    assert league_seeds.plot(runs, tmp_path / "curves.png").stat().st_size > 0


def test_a_directory_without_the_logs_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        league_seeds.main([str(tmp_path)])
    assert "not a league run directory" in capsys.readouterr().err
