"""Golden training runs: fingerprints of short fixed-seed runs of every deterministic backend,
stored in `tests/data/training_golden.json` and compared by `tests/test_training_golden.py`
(all but the longer `league_main_3_iterations`, about a minute on 2 cores, which this command checks).
A refactor of the trainers must leave them as they are: the same evaluation win rates and
game and decision counts, exactly, and the same weights (each array's shape, L1 and L2 norms
and sum) and per-iteration losses within a float tolerance.

The file holds only what is the same on every machine. The last bits of the weights and
losses are not: XLA and torch pick their kernels by the CPU, by more than its instruction set
(two AVX-512 machines with the same versions trained other bits), so bits recorded on one
machine fail on another. Bit-for-bit determinism is a property of the machine running the
tests, and is tested there: the same run twice gives the same `bits`
(tests/test_training_golden.py).

Runs go through the CLI (`tacocat train`), the interface that stays put while the code behind
it moves. RLlib is left out: its env runners are separate processes and its sampling is not
bit-reproducible.

    .venv/bin/python tests/support/training_goldens.py --record        # rewrite the data file
    .venv/bin/python tests/support/training_goldens.py                 # compare (exit 1 on a difference)
    .venv/bin/python tests/support/training_goldens.py --only league_smoke sb3_smoke
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

TESTS = Path(__file__).resolve().parents[1]
PATH = TESTS / "data" / "training_golden.json"
SHIPPED_CONFIGS = TESTS.parent / "tacocat" / "train" / "configs"
SMOKE_CONFIGS = TESTS / "support" / "configs"
#: name -> (config, overrides): the runs pinned
RUNS: dict[str, tuple[Path, list[str]]] = {
    "league_smoke": (SMOKE_CONFIGS / "league_smoke.yaml", []),
    # main.yaml's league for 3 of its iterations (65,536 env steps each), evaluated once at the end
    "league_main_3_iterations": (
        SHIPPED_CONFIGS / "main.yaml",
        [
            "total_timesteps=196608",
            "eval.every=1000000000",
            "eval.opponents=[planner]",
            "eval.deal_pairs=10",
            "checkpoint_every=1000000000",
        ],
    ),
    "sb3_smoke": (SMOKE_CONFIGS / "smoke.yaml", []),
    # self-play snapshots taken in the middle of a rollout (every 300 steps of 2 x 256)
    "sb3_selfplay": (SMOKE_CONFIGS / "smoke.yaml", ["sb3.selfplay.snapshot_every=300", "sb3.selfplay.keep_latest=2"]),
}
#: progress.csv columns that count games and decisions: the same on every machine
LEAGUE_COUNTS = [
    "iteration",
    "timesteps",
    "learner_steps",
    "decisions_dropped",
    "games",
    "learner_win_rate",
    "pool_size",
]
#: progress.csv columns that are float reductions: their last bits depend on the CPU's kernels
LEAGUE_LOSSES = ["policy_loss", "value_loss", "entropy", "approx_kl"]
SLOW = {"league_main_3_iterations"}
#: how far a float may move between machines. Measured against a record made on an AVX-512 EPYC,
#: on an AVX2 EPYC (Zen 3; two cores, and one): the weights' norms at most 6.7e-8 relative and
#: their sums at most 1.4e-7 of the L1 norm; the losses at most 2.4e-7 absolute (2e-7 relative,
#: an entropy of 1.24 in league_main_3_iterations; 6.8e-8 in the smoke runs). A learning rate
#: 1e-4 higher (3.0003e-4) moves the norms by 1e-4 with the same games, counts and win rates:
#: the tolerances lie about a decade from each, so that run is told apart and a machine's
#: rounding is not.
LOSS_RTOL, LOSS_ATOL = 1e-5, 1e-6
WEIGHT_RTOL = 1e-5


def _arrays(run_dir: Path) -> list[np.ndarray]:
    npz = run_dir / "policy.npz"
    if npz.exists():
        with np.load(npz, allow_pickle=False) as data:
            return [data[k] for k in sorted(data.files) if k != "metadata"]
    import io

    import torch

    with zipfile.ZipFile(run_dir / "final_model.zip") as archive:
        state = torch.load(io.BytesIO(archive.read("policy.pth")), weights_only=True)
    return [state[k].numpy() for k in sorted(state)]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def _league_progress(run_dir: Path) -> list[dict[str, str]] | None:
    if (run_dir / "policy.npz").exists() and (run_dir / "progress.csv").exists():
        return _rows(run_dir / "progress.csv")
    return None


def fingerprint(run_dir: Path) -> dict[str, Any]:
    """What a run must reproduce on any machine, as recorded: its evaluations' win rates and the
    league's game and decision counts (compared exactly); each weight array's shape, L1 and L2
    norms and sum, and the league's per-iteration losses (compared within the tolerances above)."""
    arrays = _arrays(run_dir)
    weights = [
        [
            list(a.shape),
            float(np.abs(a, dtype=np.float64).sum()),
            float(np.linalg.norm(a.astype(np.float64))),
            float(a.sum(dtype=np.float64)),
        ]
        for a in arrays
    ]
    out: dict[str, Any] = {
        "eval_win_rates": [[r["opponent"], r["win_rate"]] for r in _rows(run_dir / "eval.csv")],
        "weights": weights,
    }
    progress = _league_progress(run_dir)
    if progress is not None:
        out["progress_counts"] = [[r[k] for k in LEAGUE_COUNTS] for r in progress]
        out["progress_losses"] = [[r[k] for k in LEAGUE_LOSSES] for r in progress]
    return out


def bits(run_dir: Path) -> dict[str, Any]:
    """A run's results to the last bit, which only the machine that made them can reproduce:
    the SHA-256 of every weight array (with its dtype and shape) and the league's losses as
    progress.csv writes them."""
    digests = []
    for a in _arrays(run_dir):
        h = hashlib.sha256(str(a.dtype).encode() + str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
        digests.append(h.hexdigest())
    progress = _league_progress(run_dir)
    losses = None if progress is None else [[r[k] for k in LEAGUE_LOSSES] for r in progress]
    return {"weights_sha256": digests, "progress_losses": losses}


def differences(found: dict[str, Any], recorded: dict[str, Any]) -> list[str]:
    """What `found` (a `fingerprint`) does not reproduce of `recorded`; [] if all."""
    out = [
        f"{key}: {found.get(key)} != recorded {recorded.get(key)}"
        for key in ("eval_win_rates", "progress_counts")
        if found.get(key) != recorded.get(key)
    ]
    if [w[0] for w in found["weights"]] != [w[0] for w in recorded["weights"]]:
        out.append("weights: other array shapes")
    else:
        for i, (mine, theirs) in enumerate(zip(found["weights"], recorded["weights"], strict=True)):
            l1, l2, total = theirs[1:]
            if not (
                np.isclose(mine[1], l1, rtol=WEIGHT_RTOL, atol=0)
                and np.isclose(mine[2], l2, rtol=WEIGHT_RTOL, atol=0)
                and abs(mine[3] - total) <= WEIGHT_RTOL * l1
            ):
                out.append(f"weights: array {i} has L1, L2, sum {mine[1:]} against recorded {theirs[1:]}")
    mine, theirs = (np.array(x.get("progress_losses", []), dtype=float) for x in (found, recorded))
    if mine.shape != theirs.shape or not np.allclose(mine, theirs, rtol=LOSS_RTOL, atol=LOSS_ATOL):
        out.append(f"progress_losses: {mine.tolist()} != recorded {theirs.tolist()}")
    return out


def run(name: str, root: Path) -> Path:
    """Train golden run `name` under `root` through the CLI; its run directory."""
    from typer.testing import CliRunner

    from tacocat.cli.app import app

    config, overrides = RUNS[name]
    args = ["train", "--config", str(config), "--no-progress", "--set", f"run_root={root / name}"]
    for item in overrides:
        args += ["--set", item]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(f"{name}: tacocat train failed: {result.output[-2000:]}")
    (run_dir,) = (root / name).iterdir()
    return run_dir


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", action="store_true", help="rewrite the data file")
    parser.add_argument("--only", nargs="+", choices=sorted(RUNS), help="these runs only")
    args = parser.parse_args(argv)
    names = args.only or list(RUNS)
    stored = json.loads(PATH.read_text()) if PATH.exists() else {}
    found, seconds = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            start = time.perf_counter()
            found[name] = fingerprint(run(name, Path(tmp)))
            seconds[name] = time.perf_counter() - start
    if args.record:
        PATH.write_text(json.dumps({**stored, **found}, indent=1, sort_keys=True) + "\n")
        print(f"recorded {', '.join(names)} in {PATH}")
        return 0
    changed = False
    for name in names:
        problems = differences(found[name], stored[name]) if name in stored else ["not recorded"]
        print(f"{name}: {'CHANGED' if problems else 'same'} ({seconds[name]:.0f} s)")
        for problem in problems:
            print(f"  {problem}")
        changed = changed or bool(problems)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
