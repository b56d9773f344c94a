"""Golden results: exact outcomes of short fixed-seed duplicate matches for every pair of
built-in agents, stored in `tests/data/golden_matches.json` and compared by
`tests/test_golden.py`. Any change of behaviour (an agent's play, the engine, the deal or
agent seeding) changes some count and fails that test.

A deliberate change is re-recorded on purpose (like OpenSpiel's playthrough files), and the
diff of the data file shows what moved:

    .venv/bin/python tests/support/goldens.py --record     # rewrite the data file
    .venv/bin/python tests/support/goldens.py              # compare only (exit 1 on a difference)
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path
from typing import Any

PATH = Path(__file__).resolve().parents[1] / "data" / "golden_matches.json"
AGENTS = ["random", "highcard", "planner", "counter", "search", "champion"]
SEED = 7
DEAL_PAIRS = 6


def pairings() -> list[tuple[str, str]]:
    return list(itertools.combinations(AGENTS, 2))


def play(a: str, b: str, seed: int = SEED, deal_pairs: int = DEAL_PAIRS) -> dict[str, Any]:
    """The golden record of one pairing: win counts, A's points per deal ("seat-0 game/seat-1
    game", one token per deal) and the mean game length."""
    from tacocat.evaluation.matches import match

    m = match(a, b, deal_pairs=deal_pairs, seed=seed, progress=False)
    return {
        "wins_a": m.wins_a,
        "wins_b": m.wins_b,
        "draws": m.draws,
        "deal_scores": " ".join(f"{x:g}/{y:g}" for x, y in m.deal_scores),
        "mean_length": m.mean_length,
    }


def compute() -> dict[str, Any]:
    from tacocat.game.config import make_config

    return {
        "seed": SEED,
        "deal_pairs": DEAL_PAIRS,
        "ruleset_hash": make_config(None).ruleset_hash(),
        "results": {f"{a} vs {b}": play(a, b) for a, b in pairings()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", action="store_true", help=f"rewrite {PATH.name}")
    args = parser.parse_args(argv)
    data = compute()
    if args.record:
        PATH.write_text(json.dumps(data, indent=1) + "\n")
        print(f"recorded {len(data['results'])} pairings into {PATH}")
        return 0
    stored = json.loads(PATH.read_text())
    changed = [k for k in data["results"] if stored["results"].get(k) != data["results"][k]]
    print("golden results unchanged" if not changed else f"changed: {', '.join(changed)}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
