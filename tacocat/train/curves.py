"""The learning curve of a run: evaluation win rate vs timesteps, one line per opponent."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path


def plot_learning_curve(run_dir: Path, out_name: str = "learning_curve.png") -> Path | None:
    """Plot `eval.csv` of a run (95% paired bands over deal pairs) into `run_dir/out_name`; None if no data."""
    from matplotlib.figure import Figure  # not pyplot: the caller's backend stays as it is

    path = Path(run_dir) / "eval.csv"
    if not path.exists():
        return None
    series: dict[str, list[tuple[int, float, float, float]]] = defaultdict(list)
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            series[row["opponent"]].append(
                (int(row["timesteps"]), float(row["win_rate"]), float(row["ci_low"]), float(row["ci_high"]))
            )
    fig = Figure(figsize=(7, 4.2))
    ax = fig.subplots()
    for opponent, points in series.items():
        points.sort()
        steps = [p[0] for p in points]
        ax.plot(steps, [p[1] for p in points], marker="o", ms=3, label=opponent)
        ax.fill_between(steps, [p[2] for p in points], [p[3] for p in points], alpha=0.15)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("timesteps")
    ax.set_ylabel("win rate (duplicate format, 95% CI)")
    ax.set_ylim(0, 1)
    ax.set_title(Path(run_dir).name)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = Path(run_dir) / out_name
    fig.savefig(out, dpi=120)
    return out
