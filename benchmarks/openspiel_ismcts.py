"""OpenSpiel's ISMCTS (the `ismcts` agent) against the heuristic ladder, default rules.

    python benchmarks/openspiel_ismcts.py --agent ismcts:simulations=50 --games 20 --write-docs

Duplicate matches (tacocat/evaluation/matches.py): every deal is played twice with the seats swapped.
For each opponent it prints ISMCTS's score (draws count half), the 95% Wilson interval over
games and the 95% interval over deal pairs (mean of the per-pair score, normal approximation:
the deal pair is the unit of the duplicate format). `--write-docs` writes
docs/openspiel_ismcts.json and the table into docs/OPENSPIEL.md (between its "ismcts"
markers), stamped (`tacocat.stamp`: commit, versions) with the ruleset hash.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from tacocat.evaluation.matches import match
from tacocat.evaluation.stats import z_value

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from openspiel_exploitability import stamp, stamp_line, write_docs_block  # noqa: E402  (the same stamp and docs page)

RESULTS = ROOT.parent / "docs" / "openspiel_ismcts.json"


def pair_interval(deal_scores: list[tuple[float, float]]) -> tuple[float, float, float]:
    """Mean score per deal pair and its 95% normal interval over deal pairs."""
    pairs = np.array([(a + b) / 2 for a, b in deal_scores])
    mean = float(pairs.mean())
    half = z_value() * float(pairs.std(ddof=1)) / math.sqrt(len(pairs)) if len(pairs) > 1 else float("nan")
    return mean, mean - half, mean + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", default="ismcts:simulations=50")
    parser.add_argument("--opponents", default="highcard,planner,counter")
    parser.add_argument("--games", type=int, default=20, help="deal pairs per match")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    info = stamp()  # the code that plays the matches: stamped before running
    info["command"] = "python benchmarks/openspiel_ismcts.py " + " ".join(sys.argv[1:])
    rows, results = [], []
    for opponent in args.opponents.split(","):
        result = match(args.agent, opponent, deal_pairs=args.games, seed=args.seed, workers=args.workers)
        mean, low, high = pair_interval(result.deal_scores)
        summary = result.to_dict()
        summary["pair_interval"] = [mean, low, high]
        results.append(summary)
        rows.append(
            f"| `{args.agent}` | {opponent} | {args.games} | {result.wins_a}-{result.wins_b}-{result.draws} | "
            f"{result.win_rate_a:.3f} | [{result.ci_low:.3f}, {result.ci_high:.3f}] | [{low:.3f}, {high:.3f}] | "
            f"{result.wall_s:.0f} s |"
        )
        print(rows[-1], flush=True)
    text = "\n".join(
        [
            "| agent | opponent | deal pairs | W-L-D | score | 95% Wilson (games) | 95% interval (deal pairs) "
            "| wall time |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"Default rules (ruleset `{results[0]['ruleset_hash']}`), seed {args.seed}, workers {args.workers}. "
            + stamp_line(info),
        ]
    )
    print("\n" + text)
    if args.write_docs:
        RESULTS.write_text(json.dumps({"stamp": info, "results": results}, indent=1) + "\n")
        write_docs_block("ismcts", text)


if __name__ == "__main__":
    main()
