"""Several seeds of a league run side by side: a markdown table and learning curves over env
steps and over training wall time (the issue asks for both).

    python -m benchmarks.league_seeds RUN_SEED0 RUN_SEED1 RUN_SEED2 --png docs/img/league_seeds.png

Reads each run directory (`progress.csv`: env steps and seconds per iteration; `eval.csv`: the
duplicate-format evaluations made during training; `run.json`: seed and commit), so it costs
no games. Training wall time is the sum of the iterations' seconds (the first includes
compilation); the evaluations between iterations are not in it.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any


def read_run(run_dir: Path) -> dict[str, Any]:
    """Seed, commit, env steps, training seconds and the evaluation points of one run."""
    meta = json.loads((run_dir / "run.json").read_text())
    elapsed, seconds_at = 0.0, {}
    with (run_dir / "progress.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            elapsed += float(row["iteration_s"])
            seconds_at[int(row["timesteps"])] = elapsed
    curves: dict[str, list[tuple[int, float, float, float, float]]] = defaultdict(list)
    with (run_dir / "eval.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            steps = int(row["timesteps"])
            curves[row["opponent"]].append(
                (steps, seconds_at[steps], float(row["win_rate"]), float(row["ci_low"]), float(row["ci_high"]))
            )
    return {
        "run": run_dir.name,
        "seed": meta["seed"],
        "commit": meta["git_commit"][:10],
        "timesteps": max(seconds_at),
        "train_s": elapsed,
        "curves": dict(curves),
    }


def table(runs: list[dict[str, Any]]) -> str:
    opponents = sorted({o for r in runs for o in r["curves"]})
    head = "| seed | env steps | training wall time | " + " | ".join(f"last eval vs `{o}`" for o in opponents) + " |"
    lines = [head, "|---:|---:|---:|" + "---|" * len(opponents)]
    for r in runs:
        cells = []
        for o in opponents:
            points = r["curves"].get(o)
            if points:
                _, _, rate, low, high = points[-1]
                cells.append(f"{rate:.3f} [{low:.3f}, {high:.3f}]")
            else:
                cells.append("–")
        lines.append(f"| {r['seed']} | {r['timesteps']:,} | {r['train_s'] / 60:.1f} min | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot(runs: list[dict[str, Any]], path: Path) -> Path:
    from matplotlib.figure import Figure  # not pyplot: the caller's backend stays as it is

    fig = Figure(figsize=(11, 4.2))
    by_steps, by_time = fig.subplots(1, 2, sharey=True)
    styles = ["-", "--", ":", "-."]
    colours: dict[str, str] = {}
    for i, r in enumerate(runs):
        for opponent, points in r["curves"].items():
            colour = colours.setdefault(opponent, f"C{len(colours)}")
            label = f"{opponent}, seed {r['seed']}"
            for ax, x in ((by_steps, [p[0] / 1e6 for p in points]), (by_time, [p[1] / 60 for p in points])):
                ax.plot(x, [p[2] for p in points], styles[i % len(styles)], color=colour, marker="o", ms=3, label=label)
                ax.fill_between(x, [p[3] for p in points], [p[4] for p in points], color=colour, alpha=0.08)
    for ax, xlabel in ((by_steps, "env steps (millions)"), (by_time, "training wall time (minutes)")):
        ax.axhline(0.5, color="grey", lw=0.8, ls="--")
        ax.set_xlabel(xlabel)
        ax.set_ylim(0.3, 1)
    by_steps.set_ylabel("win rate (duplicate format, 95% paired CI)")
    by_time.legend(loc="lower right", fontsize=7)
    fig.suptitle("league runs: evaluations during training")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="league run directories")
    parser.add_argument("--png", type=Path, default=None, help="write the learning curves here")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.runs if not (r / "progress.csv").is_file() or not (r / "eval.csv").is_file()]
    if missing:
        parser.error(f"not a league run directory with progress.csv and eval.csv: {', '.join(missing)}")
    runs = [read_run(r) for r in args.runs]
    print(table(runs))
    if args.png is not None:
        print(f"wrote {plot(runs, args.png)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
