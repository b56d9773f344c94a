"""How much variance reduction (AIVAT, `tacocat.evaluation.variance`) saves on the full game.

    python -m benchmarks.variance                     # the published pairings and sizes
    python -m benchmarks.variance --pairs 40 --only champion,counter   # a quick look
    python -m benchmarks.variance --exact trio_decided --pairs 2000     # the unbiasedness check

For each pairing, one duplicate match with the shipped value file for the default rules
(`tacocat/agents/models/value_default.npz`, `python -m tacocat.train.value_net`): A's mean
return per game with its paired 95% interval, plain and reduced, and the variance ratio (plain
per-deal-pair variance over reduced): how many times fewer deal pairs the reduced estimate needs
for an interval of the same width. The ratio's 95% interval is a percentile bootstrap over deal
pairs (2,000 resamples, seed 0). Prints a stamped table and writes docs/results/variance.json.

`--exact PRESET`: the unbiasedness check on an enumerable preset, with the shipped value file
for it: `planner` (deterministic) against `random` (uniform: its decisions corrected), the exact
expected return of the duplicate match from the enumerated tree (`tacocat.analysis`) beside the
plain and reduced estimates with their paired intervals; writes
docs/results/variance_exact.json.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from tacocat.evaluation.matches import match
from tacocat.evaluation.variance import shipped_value_file
from tacocat.game.config import make_config
from tacocat.stamp import describe, stamp

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "results" / "variance.json"
#: (A, B, deal pairs): the published pairings
PAIRINGS = (
    ("champion", "counter", 300),
    ("champion", "search", 100),
    ("counter", "search", 100),
    ("champion", "champion:deterministic=false", 100),
)
SEED = 2026


def ratio_interval(plain: np.ndarray, reduced: np.ndarray, boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap 95% interval of var(plain) / var(reduced), resampling deal pairs."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(len(plain), size=(boot, len(plain)))
    ratios = plain[idx].var(axis=1, ddof=1) / reduced[idx].var(axis=1, ddof=1)
    low, high = np.quantile(ratios, [0.025, 0.975])
    return float(low), float(high)


def run(pairings: list[tuple[str, str, int]], workers: int, seed: int) -> dict[str, Any]:
    rules = make_config(None)
    value = shipped_value_file(rules)
    if value is None:
        raise SystemExit("no shipped value file for the default rules (python -m tacocat.train.value_net)")
    rows = []
    for a, b, pairs in pairings:
        start = time.perf_counter()
        result = match(a, b, pairs, seed, workers=workers, config=rules, progress=False, value_file=value)
        plain, reduced = np.asarray(result.deal_returns), np.asarray(result.deal_reduced)
        rows.append(
            {
                "agent_a": a,
                "agent_b": b,
                "deal_pairs": pairs,
                "win_rate_a": result.win_rate_a,
                "plain": [result.mean_return_a, *result.return_ci],
                "reduced": [result.reduced_return_a, *result.reduced_ci],  # type: ignore[misc]
                "variance_ratio": result.variance_ratio(),
                "variance_ratio_ci95": list(ratio_interval(plain, reduced)),
                "wall_s": round(time.perf_counter() - start, 1),
            }
        )
        print(table_row(rows[-1]), flush=True)
    return {
        "what": "variance-reduced (AIVAT) duplicate evaluation on the default rules: A's mean return per game, "
        "plain and reduced, paired 95% intervals over deal pairs; variance ratio = plain / reduced per-deal-pair "
        "variance (the factor of deal pairs saved at equal width), bootstrap 95% interval over deal pairs",
        "command": "python -m benchmarks.variance",
        "seed": seed,
        "value_file": value.name,
        "value_meta": {k: v for k, v in json.loads(json.dumps(_meta(value))).items() if k != "stamp"},
        "stamp": stamp(rules),
        "rows": rows,
    }


def _meta(path: Path) -> dict[str, Any]:
    from tacocat.evaluation.variance import load_value_net

    return load_value_net(path, make_config(None)).meta


HEADER = (
    "| A | B | deal pairs | win rate A | mean return A (plain) | reduced | variance ratio [95%] |\n"
    "|---|---|---|---|---|---|---|"
)


def table_row(row: dict[str, Any]) -> str:
    p, r = row["plain"], row["reduced"]
    lo, hi = row["variance_ratio_ci95"]
    return (
        f"| {row['agent_a']} | {row['agent_b']} | {row['deal_pairs']} | {row['win_rate_a']:.3f} | "
        f"{p[0]:+.3f} [{p[1]:+.3f}, {p[2]:+.3f}] | {r[0]:+.3f} [{r[1]:+.3f}, {r[2]:+.3f}] | "
        f"{row['variance_ratio']:.2f} [{lo:.2f}, {hi:.2f}] |"
    )


def exact_check(preset: str, pairs: int, workers: int, seed: int) -> dict[str, Any]:
    from tacocat.analysis.agent_tables import agent_policy
    from tacocat.analysis.best_response import combine, policy_values
    from tacocat.analysis.store import load_tree
    from tacocat.game.presets import preset_config

    rules = preset_config(preset)
    value = shipped_value_file(rules)
    if value is None:
        raise SystemExit(f"no shipped value file for {preset} (python -m tacocat.train.value_net --preset {preset})")
    tree = load_tree(rules)
    a, b = agent_policy(tree, "planner"), agent_policy(tree, "random")
    exact = float(policy_values(tree, combine(tree, a, b))[0] + policy_values(tree, combine(tree, b, a))[1]) / 2
    result = match("planner", "random", pairs, seed, workers=workers, config=rules, progress=False, value_file=value)
    row = {
        "preset": preset,
        "agent_a": "planner",
        "agent_b": "random",
        "deal_pairs": pairs,
        "exact": exact,
        "plain": [result.mean_return_a, *result.return_ci],
        "reduced": [result.reduced_return_a, *result.reduced_ci],  # type: ignore[misc]
        "variance_ratio": result.variance_ratio(),
        "exact_inside_plain": result.return_ci[0] <= exact <= result.return_ci[1],
        "exact_inside_reduced": result.reduced_ci[0] <= exact <= result.reduced_ci[1],  # type: ignore[index]
    }
    p, r = row["plain"], row["reduced"]
    print(
        f"| {preset} | planner vs random | {pairs} | {exact:+.4f} | {p[0]:+.4f} [{p[1]:+.4f}, {p[2]:+.4f}] | "
        f"{r[0]:+.4f} [{r[1]:+.4f}, {r[2]:+.4f}] | {row['variance_ratio']:.2f} |"
    )
    return {
        "what": "unbiasedness check: exact expected return of the duplicate match (enumerated tree) against the "
        "plain and variance-reduced estimates, paired 95% intervals over deal pairs",
        "command": f"python -m benchmarks.variance --exact {preset} --pairs {pairs}",
        "seed": seed,
        "value_file": value.name,
        "stamp": stamp(rules),
        "rows": [row],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=None, help="deal pairs for every pairing (default: published)")
    parser.add_argument("--only", default=None, help="A,B: one pairing")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=None, help="default docs/results/variance(_exact).json")
    parser.add_argument("--exact", default=None, help="a preset: the unbiasedness check instead")
    args = parser.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the worker processes' small matrices: threads only contend
    if args.exact is not None:
        print("| preset | pairing | deal pairs | exact | plain | reduced | variance ratio |")
        print("|---|---|---|---|---|---|---|")
        result = exact_check(args.exact, args.pairs or 2000, args.workers, args.seed)
        write(result, args.out or OUT.with_name("variance_exact.json"))
        return
    pairings = list(PAIRINGS)
    if args.only:
        a, b = args.only.split(",", 1)
        pairings = [p for p in pairings if (p[0], p[1]) == (a, b)] or [(a, b, 100)]
    if args.pairs is not None:
        pairings = [(a, b, args.pairs) for a, b, _ in pairings]
    print(HEADER, flush=True)
    result = run(pairings, args.workers, args.seed)
    write(result, args.out or OUT)


def write(result: dict[str, Any], out: Path) -> None:
    print(f"\n{describe(result['stamp'])}; seed {result['seed']}; value file {result['value_file']}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
