"""Published results: the docs' tables match the JSON they cite, and a match reruns exactly.

`benchmarks.regenerate` writes `docs/results/<section>.json` and rewrites the blocks of
docs/BENCHMARKS.md from them; a hand-edited or stale table fails here. The reproducibility
promise (same commit, machine and versions => same numbers) is tested by rerunning a short
match in a separate process through the CLI.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import regenerate
from tacocat.evaluation.matches import match

ROOT = Path(__file__).resolve().parents[1]


def test_every_results_block_in_the_docs_matches_its_json():
    blocks = regenerate.docs_blocks(regenerate.DOCS.read_text())
    assert {"ladder"} <= set(blocks), "BENCHMARKS.md lost its generated ladder table"
    for page in regenerate.PAGES:  # BENCHMARKS.md and EXPLOITABILITY.md
        assert regenerate.stale_blocks(page) == [], f"{page.name}: run `python -m benchmarks.regenerate --check`"
    assert "exploitability" in regenerate.docs_blocks(regenerate.PAGES[1].read_text())


def test_a_changed_number_makes_the_block_stale(tmp_path):
    docs = tmp_path / "BENCHMARKS.md"
    docs.write_text(regenerate.DOCS.read_text())
    results = tmp_path / "results"
    results.mkdir()
    for section in regenerate.docs_blocks(docs.read_text()):
        (results / f"{section}.json").write_text((regenerate.RESULTS / f"{section}.json").read_text())
    assert regenerate.stale_blocks(docs, results) == []
    data = json.loads((results / "ladder.json").read_text())
    data["results"]["rows"][0]["win_rate"] += 0.001
    (results / "ladder.json").write_text(json.dumps(data))
    assert regenerate.stale_blocks(docs, results) == ["ladder"]
    regenerate.write_docs(docs, results)  # --write-docs repairs it
    assert regenerate.stale_blocks(docs, results) == []


@pytest.mark.parametrize("section", sorted(regenerate.SECTIONS))
def test_published_results_are_stamped(section):
    path = regenerate.RESULTS / f"{section}.json"
    if not path.is_file():
        pytest.skip(f"{section} not published")
    stamp = json.loads(path.read_text())["stamp"]
    assert len(stamp["commit"]) == 40 and stamp["ruleset_hash"] and stamp["versions"]["numpy"]
    assert stamp["machine"]["cpu_count"] and stamp["command"].startswith("python -m benchmarks.regenerate")


def test_a_match_reruns_identically_in_another_process(tmp_path):
    """Same command, same machine and versions => the same numbers (timings aside)."""
    out = tmp_path / "m.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tacocat.cli.app",
            "match",
            "counter",
            "search:simulations=8",
            "--deal-pairs",
            "6",
            "--seed",
            "11",
            "--json",
            str(out),
            "--no-progress",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    other = json.loads(out.read_text())
    here = match("counter", "search:simulations=8", deal_pairs=6, seed=11, progress=False).to_dict()
    for d in (here, other):
        for key in ("wall_s", "games_per_s", "workers"):
            d.pop(key)
    assert json.loads(json.dumps(here)) == other


@pytest.mark.slow  # two smoke trainings and their evaluations: about 18 s on its own
def test_the_training_section_trains_evaluates_and_draws_every_seed(tmp_path, monkeypatch):
    """`--only training` on the smoke config: a row per seed, its final evaluation, its curve, a PNG."""
    monkeypatch.setattr(regenerate, "MAIN_CONFIG", ROOT / "tests" / "support" / "configs" / "smoke.yaml")
    assert regenerate.main(["--only", "training", "--size", "2", "--out", str(tmp_path), "--workers", "1"]) == 0
    data = json.loads((tmp_path / "training.json").read_text())
    runs = data["results"]["runs"]
    assert [r["seed"] for r in runs] == [0, 1]
    for run in runs:
        assert run["timesteps"] >= 2048
        assert [r["opponent"] for r in run["final"]] == ["random", "highcard"]
        assert {p["opponent"] for p in run["curve"]} == {"random", "highcard"}
        assert all(r["paired"][0] <= r["win_rate"] <= r["paired"][1] for r in run["final"])
    assert runs[0]["curve"] != runs[1]["curve"] or runs[0]["final"] != runs[1]["final"], "seeds made the same run"
    assert (tmp_path / "training.png").stat().st_size > 10_000
    assert "| 1 | " in (tmp_path / "training.md").read_text()
