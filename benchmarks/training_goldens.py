"""Golden training runs: fingerprints of short fixed-seed runs of every deterministic backend,
stored in `tests/data/training_golden.json` and compared by `tests/test_training_golden.py`
(all but the minutes-long `league_main_3_iterations`, which this command checks).
A refactor of the trainers must leave them as they are: the same evaluation win rates and
game counts, the same weights and per-iteration losses. Floats are bit-exact only on one machine
and set of versions (XLA and torch choose kernels by the CPU), so each record holds, per
`platform_key`, the SHA-256 of every weight array and the losses' exact digits, checked where
that key is recorded, and everywhere else weight norms and losses within a tolerance. Recording
on a new platform adds its key to a record the run reproduces within tolerance.

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
#: progress.csv columns that count games and decisions: the same on every machine
LEAGUE_COUNTS = ["iteration", "timesteps", "learner_steps", "decisions_dropped", "games", "learner_win_rate",
                 "pool_size"]
#: progress.csv columns that are float reductions: their last bits depend on the CPU's kernels
LEAGUE_LOSSES = ["policy_loss", "value_loss", "entropy", "approx_kl"]
SLOW = {"league_main_3_iterations"}
#: how far a float may move between machines. Measured: the league runs' losses on an AVX-512
#: machine against the record of another machine, at most 3.1e-8 absolute (2e-3 relative on a
#: loss of 1e-5); weight norms with XLA and torch held to AVX2 on one machine, under 2e-8 relative
LOSS_RTOL, LOSS_ATOL = 1e-3, 1e-6
WEIGHT_RTOL = 1e-4


def platform_key() -> str:
    """The machine and library versions that bit-exact results belong to: the CPU's widest SIMD
    (XLA and torch pick their kernels by it) and the versions of everything that computes."""
    import platform

    from tacocat_env.stamp import installed_versions

    flags: set[str] = set()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        line = next((x for x in cpuinfo.read_text().splitlines() if x.startswith(("flags", "Features"))), "")
        flags = set(line.partition(":")[2].split())
    simd = next((f for f in ("avx512f", "avx2", "avx", "asimd", "sse2") if f in flags), "unknown simd")
    versions = installed_versions(("numpy", "jax", "jaxlib", "torch"))
    return f"{platform.machine()} {simd}, " + ", ".join(f"{name} {v}" for name, v in versions.items())


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


def _digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def fingerprint(run_dir: Path) -> dict[str, Any]:
    """What a run must reproduce. Everywhere: its evaluations' win rates and the league's game
    and decision counts exactly; each weight array's shape, L1 and L2 norms and sum, and the
    league's losses, within the tolerances above. On the platform that recorded them
    (`platform_key`): the SHA-256 of the weights and the losses to the last bit."""
    arrays = _arrays(run_dir)
    weights = [[list(a.shape), float(np.abs(a, dtype=np.float64).sum()), float(np.linalg.norm(a.astype(np.float64))),
                float(a.sum(dtype=np.float64))] for a in arrays]
    out: dict[str, Any] = {"eval_win_rates": [[r["opponent"], r["win_rate"]] for r in _rows(run_dir / "eval.csv")],
                           "weights": weights}
    exact: dict[str, Any] = {"policy_sha256": _digest(arrays)}
    if (run_dir / "policy.npz").exists() and (run_dir / "progress.csv").exists():
        progress = _rows(run_dir / "progress.csv")
        out["progress_counts"] = [[r[k] for k in LEAGUE_COUNTS] for r in progress]
        exact["progress_losses"] = [[r[k] for k in LEAGUE_LOSSES] for r in progress]
    out["platforms"] = {platform_key(): exact}
    return out


def differences(found: dict[str, Any], recorded: dict[str, Any]) -> list[str]:
    """What `found` (one platform's fingerprint) does not reproduce of `recorded`; [] if all."""
    out = [f"{key}: {found.get(key)} != recorded {recorded.get(key)}" for key in ("eval_win_rates", "progress_counts")
           if found.get(key) != recorded.get(key)]
    (platform, exact), = found["platforms"].items()
    if [w[0] for w in found["weights"]] != [w[0] for w in recorded["weights"]]:
        out.append("weights: other array shapes")
    else:
        for i, (mine, theirs) in enumerate(zip(found["weights"], recorded["weights"])):
            l1, l2, total = theirs[1:]
            if not (np.isclose(mine[1], l1, rtol=WEIGHT_RTOL, atol=0) and np.isclose(mine[2], l2, rtol=WEIGHT_RTOL, atol=0)
                    and abs(mine[3] - total) <= WEIGHT_RTOL * l1):
                out.append(f"weights: array {i} has L1, L2, sum {mine[1:]} against recorded {theirs[1:]}")
    reference = next(iter(recorded["platforms"].values()), {})
    if "progress_losses" in exact:
        mine, theirs = (np.array(x.get("progress_losses", []), dtype=float) for x in (exact, reference))
        if mine.shape != theirs.shape or not np.allclose(mine, theirs, rtol=LOSS_RTOL, atol=LOSS_ATOL):
            out.append(f"progress_losses: {mine.tolist()} != recorded {theirs.tolist()}")
    if platform in recorded["platforms"] and recorded["platforms"][platform] != exact:
        out.append(f"not bit-exact on the platform that recorded it ({platform}): {exact} != {recorded['platforms'][platform]}")
    return out


def merge(found: dict[str, Any], stored: dict[str, Any] | None) -> dict[str, Any]:
    """The record after `--record`: this platform's exact results added to a record that the run
    still reproduces; a new record (other platforms dropped) where it does not."""
    if stored is None or "platforms" not in stored:
        return found
    if differences(found, stored):
        return found
    return {**stored, "platforms": {**stored["platforms"], **found["platforms"]}}


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
        merged = {name: merge(found[name], stored.get(name)) for name in names}
        PATH.write_text(json.dumps({**stored, **merged}, indent=1, sort_keys=True) + "\n")
        print(f"recorded {', '.join(names)} in {PATH}")
        return 0
    changed = False
    for name in names:
        if name not in stored:
            print(f"{name}: not recorded")
            changed = True
            continue
        problems = differences(found[name], stored[name])
        platform = next(iter(found[name]["platforms"]))
        exact = "bit-exact" if platform in stored[name]["platforms"] else f"no bit-exact record for {platform}"
        print(f"{name}: {'CHANGED' if problems else 'same'} ({exact})")
        for problem in problems:
            print(f"  {problem}")
        changed = changed or bool(problems)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
