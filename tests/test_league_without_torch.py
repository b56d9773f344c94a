"""The league path needs only the `[jax]` extra (issue 27): training `league_smoke.yaml` through
`tacocat train` imports neither torch, SB3 nor Ray. Checked in a fresh interpreter in which
importing any of them fails, so a stray import anywhere on the path (the run loop, the stamp,
the logger, the evaluation) fails this test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKED = ("torch", "stable_baselines3", "sb3_contrib", "ray", "gymnasium.wrappers.vector")
PROGRAM = f"""
import importlib.abc, sys
BLOCKED = {BLOCKED!r}

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError(f"the league path imported {{name}}")
        return None

sys.meta_path.insert(0, Refuse())
from tacocat.cli.app import app
app(["train", "--config", "tests/support/configs/league_smoke.yaml", "--no-progress", "--evaluate",
     "--set", "run_root=" + sys.argv[1]], standalone_mode=False)
HEAVY = ("torch", "stable_baselines3", "sb3_contrib", "ray")
print("LOADED", sorted(m for m in sys.modules if m.split(".")[0] in HEAVY))
"""


@pytest.mark.slow  # a fresh interpreter compiles the league: over 15 s
def test_league_training_imports_neither_torch_nor_sb3_nor_ray(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "LOADED []" in result.stdout
    (run_dir,) = tmp_path.iterdir()
    final = json.loads((run_dir / "final.json").read_text())
    assert final["policy"] == {"agent": "league", "file": "policy.npz", "options": {}}
    assert (run_dir / "final_eval.json").is_file()
