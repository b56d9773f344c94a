"""Golden training runs: fingerprints of short fixed-seed runs of every deterministic backend,
stored in `tests/data/training_golden.json` and compared by `tests/test_training_golden.py`
(all but the minutes-long `league_main_3_iterations`, which this command checks).
A refactor of the trainers must leave them as they are: the same weights (SHA-256 of every
array of the exported policy), the same per-iteration losses and the same evaluation win rates.

Runs go through the CLI (`tacocat train`), the interface that stays put while the code behind
it moves. RLlib is left out: its env runners are separate processes and its sampling is not
bit-reproducible.

    .venv/bin/python -m benchmarks.training_goldens --record        # rewrite the data file
    .venv/bin/python -m benchmarks.training_goldens                 # compare (exit 1 on a difference)
    .venv/bin/python -m benchmarks.training_goldens --only league_smoke sb3_smoke
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PATH = ROOT / "tests" / "data" / "training_golden.json"
CONFIGS = ROOT / "experiments" / "configs"
#: name -> (config, overrides): the runs pinned
RUNS: dict[str, tuple[str, list[str]]] = {
    "league_smoke": ("league_smoke.yaml", []),
    # main.yaml's league for 3 of its iterations (65,536 env steps each), evaluated once at the end
    "league_main_3_iterations": ("main.yaml", ["total_timesteps=196608", "eval.every=1000000000",
                                               "eval.opponents=[planner]", "eval.deal_pairs=10",
                                               "checkpoint_every=1000000000"]),
    "sb3_smoke": ("smoke.yaml", []),
    # self-play snapshots taken in the middle of a rollout (every 300 steps of 2 x 256)
    "sb3_selfplay": ("smoke.yaml", ["sb3.selfplay.snapshot_every=300", "sb3.selfplay.keep_latest=2"]),
}
#: the progress.csv columns that do not depend on the machine's speed
LEAGUE_PROGRESS = ["iteration", "timesteps", "learner_steps", "decisions_dropped", "games", "learner_win_rate",
                   "policy_loss", "value_loss", "entropy", "approx_kl", "pool_size"]
SLOW = {"league_main_3_iterations"}


def _digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _policy_digest(run_dir: Path) -> str:
    npz = run_dir / "policy.npz"
    if npz.exists():
        with np.load(npz, allow_pickle=False) as data:
            return _digest([data[k] for k in sorted(data.files) if k != "metadata"])
    import io

    import torch

    with zipfile.ZipFile(run_dir / "final_model.zip") as archive:
        state = torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)
    return _digest([state[k].numpy() for k in sorted(state)])


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def fingerprint(run_dir: Path) -> dict[str, Any]:
    """What a run must reproduce: its weights, its evaluations' win rates, its league losses."""
    out: dict[str, Any] = {"policy_sha256": _policy_digest(run_dir)}
    out["eval_win_rates"] = [[r["opponent"], r["win_rate"]] for r in _rows(run_dir / "eval.csv")]
    if (run_dir / "policy.npz").exists() and (run_dir / "progress.csv").exists():
        out["progress"] = [[r[k] for k in LEAGUE_PROGRESS] for r in _rows(run_dir / "progress.csv")]
    return out


def run(name: str, root: Path) -> dict[str, Any]:
    from typer.testing import CliRunner

    from experiments.cli import app

    config, overrides = RUNS[name]
    args = ["train", "--config", str(CONFIGS / config), "--no-progress", "--set", f"run_root={root / name}"]
    for item in overrides:
        args += ["--set", item]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"{name}: tacocat train failed: {result.output[-2000:]}")
    (run_dir,) = (root / name).iterdir()
    return fingerprint(run_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", action="store_true", help="rewrite the data file")
    parser.add_argument("--only", nargs="+", choices=sorted(RUNS), help="these runs only")
    args = parser.parse_args(argv)
    names = args.only or list(RUNS)
    stored = json.loads(PATH.read_text()) if PATH.exists() else {}
    with tempfile.TemporaryDirectory() as tmp:
        found = {name: run(name, Path(tmp)) for name in names}
    if args.record:
        PATH.write_text(json.dumps({**stored, **found}, indent=1, sort_keys=True) + "\n")
        print(f"recorded {', '.join(names)} in {PATH}")
        return 0
    changed = [name for name in names if stored.get(name) != found[name]]
    for name in names:
        print(f"{name}: {'CHANGED' if name in changed else 'same'}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
