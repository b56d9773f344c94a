"""Training toward equilibrium: exact NashConv, greedy and sampling, against env steps and wall time.

    python -m benchmarks.equilibrium                                   # jumbo, every method, seeds 0 1 2
    python -m benchmarks.equilibrium --preset skirmish --methods league_ppo --seeds 0 --steps 2000000
    python -m benchmarks.equilibrium --game kuhn_poker --steps 1000000 --every 100000 --target-nash-conv 0.01
    python -m benchmarks.equilibrium --write                           # also the JSON and the PNG
    python -m benchmarks.equilibrium --from-json docs/results/equilibrium_kuhn_poker.json   # render only

Every method is a training config plus the method's `--set` overrides: on a Tacocat preset
`tacocat/train/configs/league_preset.yaml` with the preset's rules (`METHODS`); on Kuhn or
Leduc poker (`--game`) `tacocat/train/configs/league_kuhn.yaml` or `league_leduc.yaml`
(`POKER_METHODS`: PPO with the settings of Rudolph et al., ICLR 2026, pure self-play or with
the snapshot pool, the league's own PPO, high-entropy PPO, MMD, the league with a main
exploiter). Each is evaluated every `--every` steps with `eval.nash_conv` on: the run loop
writes the exact NashConv of the policy, played greedily and by its action probabilities, to
exploitability.csv (Tacocat: `tacocat.analysis`; poker: OpenSpiel through
`tacocat.analysis.poker`). The wall time of a point is the run's summed iteration seconds up to
it (training only: the exact evaluations are not counted). CFR+ on the same tree is the anchor
(`tacocat.analysis.cfr` on a preset, OpenSpiel's `CFRPlusSolver` on poker), on the time axis and,
as tree nodes visited, on the steps axis.

Reported per method and seed: the sampling and greedy NashConv reached, the env steps and
seconds to the target (sampling NashConv; `--target` times the uniform random policy's
NashConv, issue 26 asks for 5 %, or `--target-nash-conv`), and the curve. On a pure
equilibrium (every enumerable Tacocat preset) greedy NashConv can reach 0 while sampling
NashConv measures how fast the softmax collapses; on a mixed one (Kuhn, Leduc) only the sampling
policy can be an equilibrium (docs/EXPLOITABILITY.md). Prints markdown tables stamped
(`tacocat.stamp`) with the load average; `--write` writes docs/results/equilibrium_<game>.json
and docs/img/equilibrium_<game>.png (<game>: the preset's name, or the poker game's).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tacocat" / "train" / "configs"
CONFIG = CONFIGS / "league_preset.yaml"
POKER_CONFIGS = {"kuhn_poker": CONFIGS / "league_kuhn.yaml", "leduc_holdem": CONFIGS / "league_leduc.yaml"}
RESULTS = ROOT / "docs" / "results" / "equilibrium_{preset}.json"
PLOT = ROOT / "docs" / "img" / "equilibrium_{preset}.png"
#: method -> the `--set` overrides of league_preset.yaml that make it
METHODS: dict[str, list[str]] = {
    "league_ppo": [],  # today's league: self-play, snapshots, counter
    "ppo_high_entropy": ["algo.ent_coef=0.05"],  # Rudolph et al. (ICLR 2026): 0.05-0.1 among the best
    # MMD (Sokota et al., ICLR 2023): PPO plus a KL pull toward a slowly moving magnet
    "mmd": ["league.magnet={kind: ema, kl_coef: 0.05, refresh_every: 1, ema_rate: 0.05}"],
    # AlphaStar's main exploiter: trained against the current policy only, its snapshots in the pool
    "league_exploiters": ["league.exploiter={n_envs: 128, snapshot_every: 5, reset_every: 25}"],
}
#: the league's own PPO (tacocat/train/configs/league.yaml) over a poker config
LEAGUE_PPO = ["algo.learning_rate=1.0e-3", "algo.clip_range=0.2", "algo.ent_coef=0.01", "algo.gamma=0.995"]
#: self-play without an entropy bonus, KL 1.0 toward a magnet that moves 5 % of the way to the actor an iteration
MOVING_MAGNET = [
    "league.snapshot_weight=0",
    "algo.ent_coef=0.0",
    "league.magnet={kind: ema, kl_coef: 1.0, refresh_every: 1, ema_rate: 0.05}",
]
#: method -> the `--set` overrides of league_kuhn.yaml / league_leduc.yaml (Rudolph et al.'s PPO
#: settings, nathanlct/IIG-RL-Benchmark configs/algorithm/ppo.yaml, with the snapshot pool)
POKER_METHODS: dict[str, list[str]] = {
    "ppo_paper": ["league.snapshot_weight=0"],  # their PPO: pure self-play
    # their PPO with the entropy bonus annealed to 0 (with the learning rate): toward Nash, not a QRE
    "ppo_paper_annealed": ["league.snapshot_weight=0", "league.ent_coef_final=0"],
    "league_paper": [],  # their settings, half the games against snapshots
    "league_ppo": LEAGUE_PPO,
    "ppo_high_entropy": [*LEAGUE_PPO[:2], "algo.ent_coef=0.1", "algo.gamma=0.995"],
    # their MMD (configs/algorithm/mmd.yaml, algorithms/mmd/mmd.py): their PPO plus KL 0.05 toward
    # the previous iterate (a magnet copied from the actor every iteration)
    "mmd": ["league.snapshot_weight=0", "league.magnet={kind: ema, kl_coef: 0.05, refresh_every: 1, ema_rate: 1.0}"],
    "league_exploiters": ["league.exploiter={n_envs: 64, snapshot_every: 5, reset_every: 25}"],
    # MMD with a slowly moving magnet (Sokota et al., ICLR 2023): no entropy bonus, KL 1.0 toward
    # an average of the actor's parameters that moves 5 % of the way every iteration, so the
    # regularised game's solution moves toward an equilibrium; 8,192 env steps per iteration
    "mmd_moving_magnet": [*MOVING_MAGNET, "n_envs=512", "algo.batch_size=2048"],
    # the same with four times the data per update: 32,768 env steps an iteration, minibatches of 8,192
    "mmd_moving_magnet_large_batch": [*MOVING_MAGNET, "n_envs=2048", "algo.batch_size=8192"],
}


def methods_of(game: str) -> dict[str, list[str]]:
    return METHODS if game == "tacocat" else POKER_METHODS


def train_curve(
    game: str, preset: str, method: str, seed: int, steps: int, every: int, out: Path
) -> list[dict[str, float]]:
    """One training run of `method`: [(env steps, training seconds, NashConv greedy and
    sampling)] at every evaluation."""
    import yaml

    from tacocat.train.config import load_experiment
    from tacocat.train.loop import train

    name = preset if game == "tacocat" else game
    config = out / f"{method}_{name}_{seed}.yaml"
    data: dict[str, Any] = {
        "name": f"{method}_{name}",
        "seed": seed,
        "total_timesteps": steps,
        "checkpoint_every": steps,
        "run_root": str(out),
    }
    if game == "tacocat":
        from tacocat.game.presets import preset_rules

        data |= {
            "base_config": str(CONFIG),
            "rules": preset_rules(preset),
            "eval": {"every": every, "nash_conv": True, "deal_pairs": 10},
        }
    else:
        data |= {"base_config": str(POKER_CONFIGS[game]), "eval": {"every": every}}
    config.write_text(yaml.safe_dump(data))
    run_dir = train(load_experiment(config, overrides=methods_of(game)[method]), progress=False).run_dir
    elapsed, seconds_at = 0.0, {}
    with (run_dir / "progress.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            elapsed += float(row["iteration_s"])
            seconds_at[int(row["timesteps"])] = elapsed
    with (run_dir / "exploitability.csv").open(newline="") as f:
        return [
            {
                "steps": int(r["timesteps"]),
                "seconds": seconds_at[int(r["timesteps"])],
                "nash_conv_greedy": float(r["nash_conv_greedy"]),
                "nash_conv_sampling": float(r["nash_conv_sampling"]),
                # poker: the average policy of the evaluations in the second half so far
                **({"nash_conv_average": float(r["nash_conv_average"])} if r.get("nash_conv_average") else {}),
            }
            for r in csv.DictReader(f)
        ]


def cfr_curve(tree: Any, max_seconds: float) -> list[dict[str, float]]:
    """CFR+ on `tree`: [(iterations, solver seconds, NashConv of the average policy)], checked
    at geometrically spaced iterations until `max_seconds` of solving."""
    from benchmarks.exact_solve import cfr_plus_curve, check_points

    return [
        {k: p[k] for k in ("iterations", "seconds", "nash_conv")}
        for p in cfr_plus_curve(tree, check_points(1.5), max_seconds=max_seconds)
    ]


def openspiel_cfr_curve(openspiel: Any, max_seconds: float) -> list[dict[str, float]]:
    """OpenSpiel's CFR+ (`pyspiel.CFRPlusSolver`) on a poker game: the same points as
    `cfr_curve`; the NashConv checks are not counted in the seconds."""
    import pyspiel

    from benchmarks.exact_solve import check_points

    solver, points, seconds, done = pyspiel.CFRPlusSolver(openspiel), [], 0.0, 0
    for iterations in check_points(1.5):
        start = time.perf_counter()
        for _ in range(iterations - done):
            solver.evaluate_and_update_policy()
        seconds, done = seconds + time.perf_counter() - start, iterations
        conv = pyspiel.nash_conv(openspiel, solver.average_policy())
        points.append({"iterations": iterations, "seconds": seconds, "nash_conv": float(conv)})
        if seconds >= max_seconds:
            return points
    return points


def first_below(points: list[dict[str, float]], target: float, key: str = "nash_conv_sampling") -> dict | None:
    return next((p for p in points if p[key] <= target), None)


def game_facts(game: str, preset: str) -> tuple[Any, dict[str, Any], Callable[[float], list]]:
    """(tree, its facts for the results: size and the uniform policy's NashConv, CFR+ on it)."""
    if game == "tacocat":
        from tacocat.analysis.best_response import nash_conv
        from tacocat.analysis.store import load_tree
        from tacocat.game.presets import preset_config

        tree = load_tree(preset_config(preset))
        facts = {
            "preset": preset,
            "histories": tree.n_nodes,
            "information_states": tree.n_infosets,
            "uniform_nash_conv": nash_conv(tree, tree.uniform_policy()),
        }
        return tree, facts, lambda seconds: cfr_curve(tree, seconds)
    import pyspiel
    from open_spiel.python.policy import TabularPolicy

    from tacocat.analysis.poker import poker_tree

    poker = poker_tree(game)
    openspiel = poker.openspiel
    facts = {
        "preset": game,
        "openspiel": poker.game.openspiel,
        "histories": len(poker.info_states) + len(poker.terminal_returns),
        "information_states": len(poker.first_history),
        "uniform_nash_conv": float(pyspiel.nash_conv(openspiel, _native(TabularPolicy(openspiel)))),
    }
    return poker, facts, lambda seconds: openspiel_cfr_curve(openspiel, seconds)


def _native(table: Any) -> Any:
    from open_spiel.python.policy import python_policy_to_pyspiel_policy

    return python_policy_to_pyspiel_policy(table)


def run(
    game: str,
    preset: str,
    methods: list[str],
    seeds: list[int],
    steps: int,
    every: int,
    cfr_seconds: float,
    target_share: float,
    target_nash_conv: float | None = None,
) -> dict[str, Any]:
    _, facts, cfr = game_facts(game, preset)
    runs = []
    with tempfile.TemporaryDirectory(prefix="equilibrium_") as tmp:
        for method in methods:
            for seed in seeds:
                started = time.perf_counter()
                curve = train_curve(game, preset, method, seed, steps, every, Path(tmp))
                runs.append(
                    {
                        "method": method,
                        "seed": seed,
                        "steps": steps,
                        "every": every,
                        "overrides": methods_of(game)[method],
                        "curve": curve,
                        "wall_s": time.perf_counter() - started,
                    }
                )
                end = curve[-1]
                print(
                    f"{method} seed {seed}: NashConv sampling {end['nash_conv_sampling']:.4f}, greedy "
                    f"{end['nash_conv_greedy']:.4f} after {steps:,} steps",
                    flush=True,
                )
    target = target_nash_conv if target_nash_conv is not None else target_share * facts["uniform_nash_conv"]
    return {
        **facts,
        "game": game,
        "target": target,
        "target_share": target / facts["uniform_nash_conv"],
        "steps": steps,
        "every": every,
        "config": str((CONFIG if game == "tacocat" else POKER_CONFIGS[game]).relative_to(ROOT)),
        "runs": runs,
        "cfr_plus": cfr(cfr_seconds),
    }


def added(path: Path, results: dict[str, Any], info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """`results` with the other runs kept from the written file `path` (`--add`): a run of the
    same method and seed is replaced, the rest keep their steps and the command that made them
    (the file's, for runs written before runs recorded their own); the stamp lists every command."""
    if not path.is_file():
        return results, info
    old = json.loads(path.read_text())
    ran = {(r["method"], r["seed"]) for r in results["runs"]}
    kept = [
        {
            "steps": old["results"]["steps"],
            "every": old["results"]["every"],
            "command": old["stamp"]["command"],
            "commit": old["stamp"]["commit"],
            **r,
        }
        for r in old["results"]["runs"]
        if (r["method"], r["seed"]) not in ran
    ]
    commands = [*old["stamp"].get("commands", [old["stamp"]["command"]]), info["command"]]
    return {**results, "runs": kept + results["runs"]}, {**info, "commands": commands}


def render(results: dict[str, Any]) -> str:
    target = results["target"]
    lines = [
        f"`{results['preset']}` ({results['histories']:,} histories, {results['information_states']:,} "
        f"information states); uniform random NashConv {results['uniform_nash_conv']:.4f}, target "
        f"{results['target_share']:.1%} of it = {target:.4f} (sampling NashConv).",
        "",
        "| method | seed | env steps | NashConv at the end: sampling | greedy | average policy | steps to target "
        "| training s to target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in results["runs"]:
        hit = first_below(r["curve"], target)
        end = r["curve"][-1]
        average = f"{end['nash_conv_average']:.4f}" if "nash_conv_average" in end else "–"
        lines.append(
            f"| {r['method']} | {r['seed']} | {end['steps']:,} | {end['nash_conv_sampling']:.4f} | "
            f"{end['nash_conv_greedy']:.4f} | {average} | "
            + (f"{hit['steps']:,} | {hit['seconds']:.0f} |" if hit else "not reached | – |")
        )
    cfr = results["cfr_plus"]
    hit = first_below(cfr, target, "nash_conv")
    lines.append(
        f"| CFR+ | – | {cfr[-1]['nash_conv']:.2e} after {cfr[-1]['iterations']} iterations | – | – | – | "
        + (f"{hit['seconds']:.2f} |" if hit else "not reached |")
    )
    return "\n".join([*lines, "", summary(results)])


def summary(results: dict[str, Any]) -> str:
    """Per method, over its seeds: the runs under the target, the sampling and greedy NashConv
    at the end (median and range), the mean sampling NashConv of each run's second half of
    evaluations (the curves are not monotone, so the end point alone is noisy), median and
    range, and on poker the NashConv of the average policy at the end (seeds at or under the
    target at the end, median and range)."""
    lines = [
        "| method | seeds under the target | sampling NashConv at the end: median [min, max] | "
        "greedy NashConv at the end: median [min, max] | sampling, mean of the second half: median [min, max] | "
        "average policy at the end: seeds under the target; median [min, max] |",
        "|---|---|---|---|---|---|",
    ]

    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.4f} [{min(values):.4f}, {max(values):.4f}]"

    def averaged(runs: list[dict[str, Any]]) -> str:
        ends = [r["curve"][-1].get("nash_conv_average") for r in runs]
        if None in ends:
            return "–"
        under = sum(end <= results["target"] for end in ends)
        return f"{under} of {len(ends)}; {spread(ends)}"

    for method in dict.fromkeys(r["method"] for r in results["runs"]):
        runs = [r for r in results["runs"] if r["method"] == method]
        ends = [r["curve"][-1]["nash_conv_sampling"] for r in runs]
        greedy = [r["curve"][-1]["nash_conv_greedy"] for r in runs]
        halves = [statistics.fmean(p["nash_conv_sampling"] for p in r["curve"][len(r["curve"]) // 2 :]) for r in runs]
        under = sum(first_below(r["curve"], results["target"]) is not None for r in runs)
        lines.append(
            f"| {method} | {under} of {len(runs)} | {spread(ends)} | {spread(greedy)} | {spread(halves)} | "
            f"{averaged(runs)} |"
        )
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    """Sampling NashConv (solid), greedy NashConv (dotted) and on poker the average policy's
    (dashed) against env steps and seconds, CFR+ in black on the time axis."""
    import matplotlib
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    by_steps, by_time = fig.subplots(1, 2)
    palette = itertools.cycle(matplotlib.colormaps["tab10"].colors)
    colours = dict(zip(dict.fromkeys(r["method"] for r in results["runs"]), palette, strict=False))
    for r in results["runs"]:
        label = r["method"] if r["seed"] == results["runs"][0]["seed"] else None
        for ax, x in ((by_steps, "steps"), (by_time, "seconds")):
            xs = [p[x] for p in r["curve"]]
            colour = colours[r["method"]]
            ax.plot(xs, [max(p["nash_conv_sampling"], 1e-6) for p in r["curve"]], color=colour, label=label, lw=1)
            ax.plot(xs, [max(p["nash_conv_greedy"], 1e-6) for p in r["curve"]], color=colour, ls=":", lw=0.8)
            if "nash_conv_average" in r["curve"][-1]:
                averages = [max(p.get("nash_conv_average", float("nan")), 1e-6) for p in r["curve"]]
                ax.plot(xs, averages, color=colour, ls="--", lw=1)
    cfr = results["cfr_plus"]
    by_time.plot([p["seconds"] for p in cfr], [max(p["nash_conv"], 1e-6) for p in cfr], color="black", label="CFR+")
    for ax, xlabel in ((by_steps, "env steps"), (by_time, "seconds (training or solving)")):
        ax.axhline(results["target"], color="grey", ls="--", lw=0.8, label=f"target {results['target']:.3g}")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("exact NashConv (solid: sampling, dotted: greedy, dashed: average)")
        ax.legend(fontsize=7)
    by_time.set_xscale("log")
    fig.suptitle(f"Toward equilibrium on {results['preset']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--game", default="tacocat", choices=["tacocat", *POKER_CONFIGS])
    parser.add_argument("--preset", default="jumbo", help="with --game tacocat: the preset")
    parser.add_argument(
        "--methods",
        help="comma-separated (default: all of the game's): "
        + ", ".join(METHODS)
        + "; poker: "
        + ", ".join(POKER_METHODS),
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=4_000_000, help="env steps per run")
    parser.add_argument("--every", type=int, default=500_000, help="env steps between exact evaluations")
    parser.add_argument("--cfr-seconds", type=float, default=60.0, help="CFR+ solving time on the same tree")
    parser.add_argument("--target", type=float, default=0.05, help="share of the uniform policy's NashConv")
    parser.add_argument("--target-nash-conv", type=float, help="instead: the target NashConv itself")
    parser.add_argument(
        "--write",
        action="store_true",
        help="write docs/results/equilibrium_<game>.json and the plot (with --from-json: the plot)",
    )
    parser.add_argument(
        "--add",
        action="store_true",
        help="with --write: keep the written file's other runs (each keeps its own steps and command) and "
        "replace those of the same method and seed",
    )
    parser.add_argument("--from-json", type=Path, help="render a written result instead of running")
    args = parser.parse_args()
    known = methods_of(args.game)
    methods = args.methods.split(",") if args.methods else list(known)
    unknown = sorted(set(methods) - set(known))
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)} for --game {args.game}; methods: {', '.join(known)}")
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        results, info = saved["results"], saved["stamp"]
        if "nash_conv_sampling" not in results["runs"][0]["curve"][0]:
            parser.error(f"{args.from_json}: written before greedy and sampling NashConv were both recorded; rerun it")
    else:
        from benchmarks.exact_solve import load_average
        from tacocat.stamp import stamp

        rules = None
        if args.game == "tacocat":
            from tacocat.game.presets import preset_config

            rules = preset_config(args.preset)
        # stamped before the runs: the commit that trained them, even if one lands meanwhile
        info = {
            **stamp(rules),
            "command": "python -m benchmarks.equilibrium "
            + " ".join(
                f"--{k.replace('_', '-')}"
                + ("" if v is True else f" {' '.join(map(str, v)) if isinstance(v, list) else v}")
                for k, v in vars(args).items()
                if k not in ("write", "from_json")
                and v not in (None, False)
                and (k != "preset" or args.game == "tacocat")
            ),
        }
        results = run(
            args.game,
            args.preset,
            methods,
            args.seeds,
            args.steps,
            args.every,
            args.cfr_seconds,
            args.target,
            args.target_nash_conv,
        )
        info["load_average"] = load_average()
        for r in results["runs"]:
            r["command"], r["commit"] = info["command"], info["commit"]
        if args.add:
            results, info = added(Path(str(RESULTS).format(preset=results["preset"])), results, info)
    print(render(results))
    print(f"\n{info.get('command', '')} at {info.get('commit', '?')}, load {info.get('load_average', '?')}")
    if args.write:  # with --from-json: the plot only, redrawn from the written results
        path, image = (Path(str(p).format(preset=results["preset"])) for p in (RESULTS, PLOT))
        if not args.from_json:
            path.write_text(json.dumps({"stamp": info, "results": results}, indent=1) + "\n")
        plot(results, image)
        print(f"wrote {'' if args.from_json else f'{path.relative_to(ROOT)} and '}{image.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
