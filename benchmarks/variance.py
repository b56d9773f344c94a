"""How much variance reduction (AIVAT, `tacocat.evaluation.variance`) saves on the full game.

    python -m benchmarks.variance                     # the published pairings and sizes
    python -m benchmarks.variance --pairs 40 --only champion,counter   # a quick look (--only repeats)
    python -m benchmarks.variance --exact trio_decided --pairs 2000     # the unbiasedness check

For each pairing, one duplicate match with the shipped value file for the default rules and
that pairing (`shipped_value_file`: the pairing's seated file where one is shipped, else
`tacocat/agents/models/value_default.npz`; `python -m tacocat.train.value_net`), or `--any-pairing`:
the file for any pairing everywhere. A's mean
return per game with its paired 95% interval, plain and reduced, and the variance ratio (plain
per-deal-pair variance over reduced): how many times fewer deal pairs the reduced estimate needs
for an interval of the same width. The ratio's 95% interval is a percentile bootstrap over deal
pairs (2,000 resamples, seed 0). `--draws K`: the decisions of agents whose probabilities are
unknown (`counter`, `search`) get sampled terms from K draws each (`AIVAT.draws`; 0, the
default: uncorrected), recorded in the file. `--rollouts K`: past the replace phase the round is
played out by copies of the two agents, K rollouts per chance expectation (`AIVAT.rollouts`; 0,
the default: the value file alone), with `--playouts P` playouts averaged per value where an
agent samples (`AIVAT.playouts`), and `--stand-in AGENT@STAND_IN` (repeatable): STAND_IN plays
AGENT's part in the rollouts (`AIVAT.stand_ins`), and `--replay`: an agent whose probabilities
are unknown plays its rollouts from its own generator as the game left it (`AIVAT.replay`), all
recorded in the file. Prints a stamped
table and writes
docs/results/variance.json.

`--exact PRESET`: the unbiasedness check on an enumerable preset, with the shipped value file
for it: `planner` (deterministic) against `random` (uniform: its decisions corrected), the exact
expected return of the duplicate match from the enumerated tree (`tacocat.analysis`) beside the
plain and reduced estimates with their paired intervals; writes
docs/results/variance_exact.json.

`--explained A,B --games N`: how much of the variance the shipped value file explains on
games it was not trained on (seeds apart from the training's), at every state before a move
and at the states right after a deal: R^2 of the value V(s) for the return still to come, of
the payoff of the round's actual outcome for that return (the `RoundPayoffs` board values:
the ceiling of a perfect round classifier), and of V(s) for the payoff of the round's actual
outcome (the classifier alone); writes docs/results/variance_explained.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from tacocat.evaluation.matches import MatchResult, match
from tacocat.evaluation.variance import Reduction, parse_stand_in, shipped_value_file
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


def run(
    pairings: list[tuple[str, str, int]],
    workers: int,
    seed: int,
    options: dict[str, Any],
    command: str,
    any_pairing: bool = False,
) -> dict[str, Any]:
    """The published table: `options` are the `Reduction`'s beside its value file (draws,
    rollouts, playouts, stand_ins)."""
    rules = make_config(None)
    rows = []
    used: dict[str, dict[str, Any]] = {}
    for a, b, pairs in pairings:
        value = shipped_value_file(rules, None if any_pairing else (a, b))
        if value is None:
            raise SystemExit("no shipped value file for the default rules (python -m tacocat.train.value_net)")
        used[value.name] = {k: v for k, v in json.loads(json.dumps(_meta(value))).items() if k != "stamp"}
        start = time.perf_counter()
        result = match(
            a,
            b,
            pairs,
            seed,
            workers=workers,
            config=rules,
            progress=False,
            reduction=Reduction(str(value), **options),
        )
        plain, reduced = np.asarray(result.deal_returns), np.asarray(result.deal_reduced)
        rows.append(
            {
                "agent_a": a,
                "agent_b": b,
                "value_file": value.name,
                "deal_pairs": pairs,
                "win_rate_a": result.win_rate_a,
                **estimates(result),
                "variance_ratio_ci95": list(ratio_interval(plain, reduced)),
                "wall_s": round(time.perf_counter() - start, 1),
            }
        )
        print(table_row(rows[-1]), flush=True)
    return {
        "what": "variance-reduced (AIVAT) duplicate evaluation on the default rules: A's mean return per game, "
        "plain and reduced, paired 95% intervals over deal pairs; variance ratio = plain / reduced per-deal-pair "
        "variance (the factor of deal pairs saved at equal width), bootstrap 95% interval over deal pairs",
        "command": command,
        "seed": seed,
        **{key: dict(value) if key == "stand_ins" else value for key, value in options.items()},
        "value_files": used,
        "stamp": stamp(rules),
        "rows": rows,
    }


def estimates(result: MatchResult) -> dict[str, Any]:
    """A reduced match's plain and reduced means with their paired intervals, and the variance ratio."""
    return {
        "plain": [result.mean_return_a, *result.return_ci],
        "reduced": [result.reduced_return_a, *result.reduced_ci],  # type: ignore[misc]
        "variance_ratio": result.variance_ratio(),
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


def exact_check(preset: str, pairs: int, workers: int, seed: int, rollouts: int) -> dict[str, Any]:
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
    result = match(
        "planner",
        "random",
        pairs,
        seed,
        workers=workers,
        config=rules,
        progress=False,
        reduction=Reduction(str(value), rollouts=rollouts),
    )
    row = {
        "preset": preset,
        "agent_a": "planner",
        "agent_b": "random",
        "deal_pairs": pairs,
        "exact": exact,
        **estimates(result),
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
        "command": f"python -m benchmarks.variance --exact {preset} --pairs {pairs}"
        + (f" --rollouts {rollouts}" if rollouts else ""),
        "seed": seed,
        "rollouts": rollouts,
        "value_file": value.name,
        "stamp": stamp(rules),
        "rows": [row],
    }


def explained(a: str, b: str, games: int, seed: int) -> dict[str, Any]:
    from tacocat.agents.base import AgentInput
    from tacocat.agents.registry import make_agent
    from tacocat.evaluation.arena import agent_rngs
    from tacocat.evaluation.variance import ValueFeatures, load_value_net
    from tacocat.game.engine import apply_action, new_game, returns
    from tacocat.game.ruleset import compile_rules

    rules = make_config(None)
    path = shipped_value_file(rules)
    if path is None:
        raise SystemExit("no shipped value file for the default rules (python -m tacocat.train.value_net)")
    net = load_value_net(path, rules)
    features = ValueFeatures(compile_rules(rules))
    pair = (make_agent(a), make_agent(b))
    xs, outcomes, finals, starts = [], [], [], []
    for game in range(games):
        dseed = int(np.random.SeedSequence([seed, 0xE1, game]).generate_state(1)[0])
        agents = pair if game % 2 == 0 else pair[::-1]
        state = new_game(rules, dseed)
        for player, (agent, gen) in enumerate(zip(agents, agent_rngs(dseed, 0), strict=True)):
            agent.reset(player, gen)
        rows, pending, fresh = [], 0, True
        while not state.is_over:
            rows.append(features(state))
            starts.append(fresh)
            pending += 1
            rounds, player = state.rounds_played, state.to_act
            apply_action(state, agents[player].act(AgentInput.from_state(state, player)), player)
            fresh = state.rounds_played > rounds
            if fresh:
                winner = state.last_round_winner
                outcomes += [2 if winner is None else int(winner)] * pending
                pending = 0
        xs += rows
        finals += [returns(state)[0]] * len(rows)
    x, ret, start = np.asarray(xs), np.asarray(finals), np.asarray(starts)
    value = net(x)
    board = net.payoffs(x)[np.arange(len(x)), np.asarray(outcomes)]

    def r2(target: np.ndarray, guess: np.ndarray, rows: np.ndarray) -> float:
        return float(1.0 - np.mean((target[rows] - guess[rows]) ** 2) / np.var(target[rows]))

    out: dict[str, Any] = {
        "what": "share of variance the value file explains on held-out games (R^2): value for the return to come, "
        "the round's actual-outcome payoff (RoundPayoffs) for the return to come, value for that payoff",
        "command": f"python -m benchmarks.variance --explained {a},{b} --games {games}",
        "seed": seed,
        "value_file": path.name,
        "stamp": stamp(rules),
        "games": games,
    }
    for name, rows in (("every_state", np.ones(len(x), dtype=bool)), ("after_deal", start)):
        out[name] = {
            "states": int(rows.sum()),
            "r2_value_for_return": r2(ret, value, rows),
            "r2_outcome_payoff_for_return": r2(ret, board, rows),
            "r2_value_for_outcome_payoff": r2(board, value, rows),
        }
        print(name, json.dumps(out[name]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=None, help="deal pairs for every pairing (default: published)")
    parser.add_argument("--only", action="append", default=None, help="A,B: a pairing (repeatable)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=None, help="default docs/results/variance(_exact).json")
    parser.add_argument("--exact", default=None, help="a preset: the unbiasedness check instead")
    parser.add_argument("--explained", default=None, help="A,B: the value file's explained variance instead")
    parser.add_argument("--games", type=int, default=200, help="games for --explained")
    parser.add_argument("--draws", type=int, default=0, help="sampled decision terms per decision (AIVAT.draws)")
    parser.add_argument("--rollouts", type=int, default=0, help="round rollouts per expectation (AIVAT.rollouts)")
    parser.add_argument("--playouts", type=int, default=1, help="playouts per rollout value (AIVAT.playouts)")
    parser.add_argument(
        "--replay", action="store_true", help="rollouts replay the generators of agents that sample (AIVAT.replay)"
    )
    parser.add_argument("--any-pairing", action="store_true", help="the value file for any pairing, never a seated one")
    parser.add_argument(
        "--stand-in", action="append", default=[], help="AGENT@STAND_IN: who plays AGENT's rollouts (AIVAT.stand_ins)"
    )
    args = parser.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the worker processes' small matrices: threads only contend
    if args.exact is not None:
        print("| preset | pairing | deal pairs | exact | plain | reduced | variance ratio |")
        print("|---|---|---|---|---|---|---|")
        result = exact_check(args.exact, args.pairs or 2000, args.workers, args.seed, args.rollouts)
        write(result, args.out or OUT.with_name("variance_exact.json"))
        return
    for pair in [*(args.only or []), *([args.explained] if args.explained else [])]:
        if len(pair.split(",", 1)) != 2:
            parser.error(f"a pairing is A,B (two agent specs), got {pair!r}")
    if args.explained is not None:
        a, b = args.explained.split(",", 1)
        write(explained(a, b, args.games, args.seed), args.out or OUT.with_name("variance_explained.json"))
        return
    pairings = list(PAIRINGS)
    if args.only:
        published = {(a, b): pairs for a, b, pairs in PAIRINGS}
        wanted = [tuple(only.split(",", 1)) for only in args.only]
        pairings = [(a, b, published.get((a, b), 100)) for a, b in wanted]
    if args.pairs is not None:
        pairings = [(a, b, args.pairs) for a, b, _ in pairings]
    print(HEADER, flush=True)
    command = " ".join(["python -m benchmarks.variance", *sys.argv[1:]])
    try:
        stand_ins = tuple(parse_stand_in(text) for text in args.stand_in)
    except ValueError as err:
        parser.error(str(err))
    options = {
        "draws": args.draws,
        "rollouts": args.rollouts,
        "playouts": args.playouts,
        "stand_ins": stand_ins,
        "replay": args.replay,
    }
    result = run(pairings, args.workers, args.seed, options, command, args.any_pairing)
    write(result, args.out or OUT)


def write(result: dict[str, Any], out: Path) -> None:
    files = result.get("value_files") or [result["value_file"]]
    print(f"\n{describe(result['stamp'])}; seed {result['seed']}; value files {', '.join(files)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
