"""Exact NashConv as a training metric (`eval.nash_conv`): at every evaluation a run on rules
small enough to enumerate writes exploitability.csv, whose rows are the exact NashConv of the
policy the run had then (tacocat.analysis), for any backend (the run loop computes it)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tacocat.analysis.exploit import exact_report
from tacocat.cli.app import app
from tacocat.game.presets import preset_rules
from tacocat.train.config import load_experiment, parse_experiment
from tacocat.train.config_files import read_experiment
from tacocat.train.evaluation import EXACT_FIELDS

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "league_smoke.yaml"


def _config_file(tmp_path: Path, **changes: object) -> Path:
    shutil.copy(SMOKE, tmp_path)  # a base_config lies in the shipped configs' folder or next to the file
    data = {
        "base_config": SMOKE.name,
        "rules": preset_rules("skirmish"),
        "run_root": str(tmp_path / "runs"),
        "total_timesteps": 512,
        "checkpoint_every": 256,
        "eval": {"every": 256, "deal_pairs": 2, "opponents": ["random"], "final": [], "nash_conv": True},
    }
    data.update(changes)
    path = tmp_path / "exact.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow  # two league iterations on skirmish at the smoke size, and the tree enumerated (about 5 s)
def test_a_league_run_logs_the_exact_nash_conv_of_its_policy_at_every_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TACOCAT_CACHE", str(tmp_path / "trees"))
    result = CliRunner().invoke(app, ["train", "--config", str(_config_file(tmp_path)), "--no-progress"])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").iterdir()
    rows = _rows(run_dir / "exploitability.csv")
    assert [int(r["timesteps"]) for r in rows] == [256, 512] and list(rows[0]) == EXACT_FIELDS
    for row in rows:
        for mode in ("greedy", "sampling"):
            conv = float(row[f"nash_conv_{mode}"])
            best = float(row[f"best_response_0_{mode}"]) + float(row[f"best_response_1_{mode}"])
            assert conv >= 0 and conv == pytest.approx(best)  # zero-sum
    # the last row is the exported policy's, greedy and by its action probabilities, as `tacocat exploit --exact` says
    for mode in ("greedy", "sampling"):
        report = exact_report(f"league:path={run_dir / 'policy.npz'}", "skirmish", sampling=mode == "sampling")
        assert float(rows[-1][f"nash_conv_{mode}"]) == pytest.approx(report.nash_conv, abs=1e-9)
        assert float(rows[-1][f"policy_value_0_{mode}"]) == pytest.approx(report.policy_values[0], abs=1e-9)
    assert float(rows[-1]["nash_conv_greedy"]) != pytest.approx(float(rows[-1]["nash_conv_sampling"]))


def test_nash_conv_on_rules_too_large_to_enumerate_is_refused_at_validation(tmp_path: Path) -> None:
    data = read_experiment(_config_file(tmp_path, rules={}))
    with pytest.raises(ValueError, match=r"eval\.nash_conv: the game tree of ruleset \w+ is too large to enumerate"):
        parse_experiment(data)
    result = CliRunner().invoke(app, ["train", "--config", str(_config_file(tmp_path, rules={})), "--no-progress"])
    assert result.exit_code != 0 and "too large to enumerate" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("value", ["softmax", "sampling", 1])
def test_a_nash_conv_that_is_no_switch_is_refused(tmp_path: Path, value: object) -> None:
    data = read_experiment(_config_file(tmp_path))
    data["eval"]["nash_conv"] = value
    with pytest.raises(ValueError, match="nash_conv"):
        parse_experiment(data)


def test_nash_conv_is_off_unless_asked_for() -> None:
    assert load_experiment(SMOKE).eval.nash_conv is False
