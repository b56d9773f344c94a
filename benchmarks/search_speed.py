"""Decisions per second of the search agent at several simulation budgets.

    python benchmarks/search_speed.py --games 10 --budgets 24,48,96,200

The search agent plays `--games` games against the counter (seats alternating); the table
gives its searched decisions per second of search time (decisions with one legal move and
replace decisions, which follow the counter heuristic, are not searched and not counted).
"""

from __future__ import annotations

import argparse
import time

from tacocat.agents.registry import make_agent
from tacocat.evaluation.arena import play_game
from tacocat.game.config import make_config
from tacocat.stamp import describe, stamp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--budgets", default="24,48,96,200")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| simulations | searched decisions | decisions/s | s per game |\n|---|---|---|---|")
    for budget in (int(b) for b in args.budgets.split(",")):
        search, counter = make_agent("search", simulations=budget), make_agent("counter")
        start = time.perf_counter()
        for game in range(args.games):
            seats = [search, counter] if game % 2 == 0 else [counter, search]
            play_game(seats, seed=args.seed + game, keep_events=False)
        per_game = (time.perf_counter() - start) / args.games
        print(f"| {budget} | {search.decisions} | {search.decisions_per_second:.0f} | {per_game:.2f} |")
    print(f"\n{describe(stamp(make_config(None)))}")


if __name__ == "__main__":
    main()
