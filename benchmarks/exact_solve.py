"""Exact solving of the rule presets: enumeration, then vectorized CFR+ to a NashConv target.

    python benchmarks/exact_solve.py                                  # every preset but race
    python benchmarks/exact_solve.py --presets skirmish --target 1e-4
    python benchmarks/exact_solve.py --ruleset 'three={"deck": {"1": 4, "2": 4, "3": 4},
        "board": [3, 3, 3], "max_rounds": 1, "round_reward": 1}'     # a ruleset that is no preset
    python benchmarks/exact_solve.py --write                          # also the JSON and the PNG
    python benchmarks/exact_solve.py --from-json docs/results/exact_solve.json   # render only

For every ruleset, in a fresh process (so that its peak memory is its own): the size check
(`tacocat.analysis.store.check_enumerable`), the enumeration of the tree
(`tacocat.analysis.tree.enumerate_tree`; the cache is not used, so the time is measured), its
size (histories, decision nodes, information states, the most legal actions), then
`tacocat.analysis.cfr.CFRSolver` (CFR+) until the NashConv of its average policy is at most
`--target`, checked after iterations spaced geometrically (each check is an exact best response,
`tacocat.analysis.best_response.nash_conv`), or until `--max-seconds` of solving. Reported:
iterations and solver seconds to the target (checks not counted; wall seconds with them), the
final NashConv, the process's peak memory. As an anchor, OpenSpiel's C++ `CFRPlusSolver` on
its `cached_tree` of the same game, seconds per iteration over a few iterations (`--anchor`;
building its cached tree is timed apart), next to ours.

Prints a markdown table, stamped (`tacocat.stamp`: commit, versions) with the load average
(the machine is shared); `--write` writes docs/results/exact_solve.json and
docs/img/exact_cfr_plus.png (NashConv against solver seconds and against iterations, log-log,
one line per ruleset).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import resource
import shlex
import sys
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results" / "exact_solve.json"
PLOT = ROOT / "docs" / "img" / "exact_cfr_plus.png"
DEFAULT_PRESETS = "tiny,small,skirmish,jumbo,trio,grand"
#: OpenSpiel CFR+ iterations timed per preset (small is slow there: a few only)
DEFAULT_ANCHOR = "tiny:50,skirmish:20,small:3"


def check_points(growth: float = 1.2):
    """1, 2, 3, ... then geometrically spaced iteration counts (each at least one more)."""
    t = 1
    while True:
        yield t
        t = max(t + 1, math.ceil(t * growth))


def cfr_plus_curve(
    tree: Any,
    points: Iterable[int],
    target: float = 0.0,
    max_seconds: float = math.inf,
    on_point: Callable[[dict[str, float]], None] | None = None,
) -> list[dict[str, float]]:
    """CFR+ (`tacocat.analysis.cfr.CFRSolver`) on `tree`, the NashConv of its average policy
    checked after each iteration count of `points` (an exact best response each), until it is at
    most `target`, `max_seconds` of solving have passed or `points` ends. One point per check:
    iterations, nash_conv, seconds (solving only) and wall_s (with the checks); `on_point` sees
    each as it comes."""
    from tacocat.analysis.best_response import nash_conv
    from tacocat.analysis.cfr import CFRSolver

    solver, solving, curve = CFRSolver(tree, plus=True), 0.0, []
    wall_start = time.perf_counter()
    for point in points:
        start = time.perf_counter()
        solver.iterate(point - solver.iteration)
        solving += time.perf_counter() - start
        conv = nash_conv(tree, solver.average_policy())
        curve.append(
            {"iterations": point, "nash_conv": conv, "seconds": solving, "wall_s": time.perf_counter() - wall_start}
        )
        if on_point is not None:
            on_point(curve[-1])
        if conv <= target or solving >= max_seconds:
            break
    return curve


def solve(
    name: str, rules_spec: dict[str, Any] | None, target: float, max_seconds: float, anchor_iterations: int
) -> dict[str, Any]:
    """Everything measured for one ruleset (run in its own process)."""
    from tqdm import tqdm

    from tacocat.analysis.store import check_enumerable
    from tacocat.analysis.tree import enumerate_tree
    from tacocat.game.config import make_config
    from tacocat.game.presets import preset_config

    rules = preset_config(name) if rules_spec is None else make_config(rules_spec)
    result: dict[str, Any] = {
        "name": name,
        "ruleset_hash": rules.ruleset_hash(),
        "rules": rules.canonical_dict(),
        "target": target,
    }
    start = time.perf_counter()
    result["histories_counted"] = check_enumerable(rules)
    result["size_check_s"] = time.perf_counter() - start
    start = time.perf_counter()
    tree = enumerate_tree(rules, progress=True)
    result["enumeration_s"] = time.perf_counter() - start
    result.update(
        histories=tree.n_nodes,
        decision_nodes=int((tree.player >= 0).sum()),
        information_states=tree.n_infosets,
        max_actions=tree.max_actions,
        depth=tree.depth,
    )

    bar = tqdm(desc=f"{name}: CFR+", unit=" it", mininterval=1.0)

    def show(point: dict[str, float]) -> None:
        bar.update(point["iterations"] - bar.n)
        bar.set_postfix(nash_conv=f"{point['nash_conv']:.2e}")

    points = cfr_plus_curve(tree, check_points(), target, max_seconds, on_point=show)
    bar.close()
    # (iterations, NashConv, solver s, wall s), as the JSON has it
    curve = [(p["iterations"], p["nash_conv"], p["seconds"], p["wall_s"]) for p in points]
    iterations, final, solver_s, wall_s = curve[-1]
    result.update(
        cfr_plus=curve,
        iterations=iterations,
        nash_conv=final,
        reached=final <= target,
        solver_s=solver_s,
        solve_wall_s=wall_s,
        s_per_iteration=solver_s / iterations,
        peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    if anchor_iterations:
        result["openspiel"] = openspiel_anchor(rules, tree, anchor_iterations)
    return result


def openspiel_anchor(rules, tree, iterations: int) -> dict[str, Any]:
    """OpenSpiel's C++ CFR+ on its cached tree of the same game: build seconds, seconds per
    iteration, and the NashConv of its average policy by our best response (it must equal
    ours after the same iterations: the solvers agree iterate by iterate)."""
    import pyspiel

    from tacocat.analysis.best_response import nash_conv
    from tacocat.analysis.cfr import CFRSolver
    from tacocat.analysis.tabular import from_policy_table
    from tacocat.game.openspiel import GAME_NAME, game_params

    params = ",".join(f"{k}={v}" for k, v in game_params(rules).items())
    start = time.perf_counter()
    game = pyspiel.load_game(f"cached_tree(game={GAME_NAME}({params}))")
    solver = pyspiel.CFRPlusSolver(game)
    build = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    seconds = time.perf_counter() - start
    theirs = nash_conv(tree, from_policy_table(tree, solver.tabular_average_policy().policy_table()))
    ours = CFRSolver(tree)
    ours.iterate(iterations)
    return {
        "iterations": iterations,
        "build_s": build,
        "s_per_iteration": seconds / iterations,
        "nash_conv": theirs,
        "same_as_ours": abs(theirs - nash_conv(tree, ours.average_policy())) <= 1e-9,
    }


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def table(results: list[dict[str, Any]], info: dict[str, Any]) -> str:
    from tacocat.stamp import describe

    lines = [
        (
            "| ruleset | hash | histories | decision nodes | info states | max actions | size check | enumeration "
            "| CFR+ iterations | CFR+ time | NashConv | peak memory | ours s/it | OpenSpiel s/it |"
        ),
        "|" + "---|" * 14,
    ]
    for r in results:
        reached = "" if r["reached"] else " (target not reached)"
        anchor = r.get("openspiel")
        openspiel = f"{anchor['s_per_iteration']:.3g} ({anchor['iterations']} it)" if anchor else "-"
        lines.append(
            f"| {r['name']} | `{r['ruleset_hash']}` | {r['histories']:,} | {r['decision_nodes']:,} | "
            f"{r['information_states']:,} | {r['max_actions']} | {r['size_check_s']:.1f} s | "
            f"{r['enumeration_s']:.1f} s | "
            f"{r['iterations']:,} | {r['solver_s']:.1f} s | {r['nash_conv']:.2e}{reached} | {r['peak_mb']:.0f} MB | "
            f"{r['s_per_iteration']:.3g} | {openspiel} |"
        )
    lines += [
        "",
        (
            f"CFR+ until NashConv <= {info['target']:g} (checked at geometrically spaced iterations; CFR+ time "
            "excludes the checks). Peak memory: the whole process (enumeration included). "
            f"Stamp: {describe(info)}; load average {info['load_average']} at the start and "
            f"{info['load_average_end']} at the end (shared 2-core machine). "
            f"Command: `{info['command']}`."
        ),
    ]
    return "\n".join(lines)


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_time, by_iteration) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for r in results:
        iterations, conv, seconds, _ = zip(*r["cfr_plus"], strict=True)
        by_time.loglog(seconds, conv, marker=".")
        by_iteration.loglog(iterations, conv, marker=".", label=f"{r['name']} ({r['histories']:,} histories)")
    for ax in (by_time, by_iteration):
        ax.axhline(results[0]["target"], color="grey", linestyle=":", linewidth=1)
        ax.grid(True, which="both", alpha=0.3)
    by_time.set_xlabel("solver seconds (NashConv checks excluded)")
    by_iteration.set_xlabel("CFR+ iterations")
    by_time.set_ylabel("NashConv of the average policy")
    by_iteration.legend(fontsize=8, loc="upper right")
    fig.suptitle("Vectorized CFR+ on the exact game trees")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_anchor(text: str) -> dict[str, int]:
    out = {}
    for item in filter(None, text.split(",")):
        name, _, count = item.partition(":")
        out[name] = int(count)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", default=DEFAULT_PRESETS, help="comma-separated preset names ('' for none)")
    parser.add_argument(
        "--ruleset",
        action="append",
        default=[],
        metavar="NAME=JSON",
        help="also a ruleset that is no preset: a name and a JSON rules mapping (repeatable)",
    )
    parser.add_argument("--target", type=float, default=1e-3, help="NashConv to reach")
    parser.add_argument("--max-seconds", type=float, default=1800.0, help="solver seconds per ruleset at most")
    parser.add_argument(
        "--anchor", default=DEFAULT_ANCHOR, help="preset:iterations of OpenSpiel's C++ CFR+ to time ('' for none)"
    )
    parser.add_argument("--write", action="store_true", help="write docs/results/exact_solve.json and the PNG")
    parser.add_argument("--from-json", type=Path, help="render the table (and with --write the PNG) from a JSON")
    args = parser.parse_args()

    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        results, info = saved["results"], saved["stamp"]
    else:
        from tacocat.stamp import stamp

        info = {
            **stamp(),
            "load_average": load_average(),
            "target": args.target,
            "command": "python benchmarks/exact_solve.py " + shlex.join(sys.argv[1:]),
        }
        jobs = [(name, None) for name in filter(None, args.presets.split(","))]
        for spec in args.ruleset:
            name, _, rules = spec.partition("=")
            jobs.append((name, json.loads(rules)))
        anchor = parse_anchor(args.anchor)
        results = []
        for name, spec in jobs:  # one process per ruleset: its peak memory is its own
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                results.append(
                    pool.submit(solve, name, spec, args.target, args.max_seconds, anchor.get(name, 0)).result()
                )
            r = results[-1]
            print(
                f"{name}: {r['histories']:,} histories, {r['iterations']} iterations, NashConv {r['nash_conv']:.2e}, "
                f"{r['solver_s']:.1f} s solving, {r['enumeration_s']:.1f} s enumerating",
                flush=True,
            )
        info["load_average_end"] = load_average()
    print(table(results, info))
    if args.write:
        if not args.from_json:
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps({"stamp": info, "results": results}, indent=1) + "\n")
        plot(results, PLOT)


if __name__ == "__main__":
    main()
