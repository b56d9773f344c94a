"""The baseline ladder: each rung against the rung below, duplicate format, one table.

    python benchmarks/ladder.py --games 2000 --workers 2 --out ladder.json

Prints a markdown table (win rate of the upper rung with its 95% paired interval over deal
pairs, and the Wilson interval over games) and, with --out, writes the raw match results as
JSON. A rung is "strictly above" when the paired interval's lower bound is above 50%. The
published ladder is made by `python -m benchmarks.regenerate --only ladder`.
"""

from __future__ import annotations

import argparse
import json
import platform
from pathlib import Path

from agents.evaluation import match

LADDER = ["random", "highcard", "planner", "counter", "search"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=2000, help="deal pairs per match")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ladder", default=",".join(LADDER), help="comma-separated agent specs, weakest first")
    parser.add_argument("--out", type=Path, default=None, help="write the match results here (JSON)")
    args = parser.parse_args()
    ladder = args.ladder.split(",")
    rows, results = [], []
    for lower, upper in zip(ladder, ladder[1:]):
        result = match(upper, lower, games=args.games, seed=args.seed, workers=args.workers)
        summary = result.to_dict()
        summary.pop("deal_scores")  # per-deal points: large, and re-made by the same command
        results.append(summary)
        verdict = "yes" if result.ci_low > 0.5 else "NO"
        rows.append(f"| {upper} | {lower} | {args.games} | {result.win_rate_a:.3f} | "
                    f"[{result.ci_low:.3f}, {result.ci_high:.3f}] | [{result.wilson_low:.3f}, {result.wilson_high:.3f}] | "
                    f"{verdict} | {result.wall_s:.0f} s |")
        print(rows[-1], flush=True)
    header = ["| upper rung | lower rung | deal pairs | upper's win rate | 95% paired CI | 95% Wilson CI | strictly above? | wall time |",
              "|---|---|---|---|---|---|---|---|"]
    print("\n" + "\n".join(header + rows))
    print(f"\nseed {args.seed}, workers {args.workers}, python {platform.python_version()}, "
          f"ruleset {results[0]['ruleset_hash']}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
