"""Training toward equilibrium on a preset: exact NashConv against env steps and wall time.

    python -m benchmarks.equilibrium                                   # jumbo, every method, seeds 0 1 2
    python -m benchmarks.equilibrium --preset skirmish --methods league_ppo --seeds 0 --steps 2000000
    python -m benchmarks.equilibrium --write                           # also the JSON and the PNG
    python -m benchmarks.equilibrium --from-json docs/results/equilibrium_jumbo.json   # render only

Every method is a training config: `tacocat/train/configs/league_preset.yaml` with the preset's
rules, the seed, `--steps` env steps and the method's overrides (`METHODS`), evaluated every
`--every` steps with `eval.nash_conv: sampling` (the run loop writes the exact NashConv of the
policy's action probabilities to exploitability.csv; `tacocat.analysis`). The wall time of a
point is the run's summed iteration seconds up to it (training only: the exact evaluations are
not counted). CFR+ (`tacocat.analysis.cfr`) on the same tree is the anchor on the time axis.

Reported per method and seed: the NashConv reached, the env steps and seconds to the target
(`--target` times the uniform random policy's NashConv; issue 26 asks for 5 %), and the curve.
Prints a markdown table stamped (`tacocat.stamp`) with the load average; `--write` writes
docs/results/equilibrium_<preset>.json and docs/img/equilibrium_<preset>.png.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "tacocat" / "train" / "configs" / "league_preset.yaml"
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


def train_curve(preset: str, method: str, seed: int, steps: int, every: int, out: Path) -> list[dict[str, float]]:
    """One training run of `method`: [(env steps, training seconds, NashConv)] at every evaluation."""
    import yaml

    from tacocat.game.presets import preset_rules
    from tacocat.train.config import load_experiment
    from tacocat.train.loop import train

    config = out / f"{method}_{preset}_{seed}.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "base_config": str(CONFIG),
                "name": f"{method}_{preset}",
                "rules": preset_rules(preset),
                "seed": seed,
                "total_timesteps": steps,
                "checkpoint_every": steps,
                "run_root": str(out),
                "eval": {"every": every, "nash_conv": "sampling", "deal_pairs": 10},
            }
        )
    )
    run_dir = train(load_experiment(config, overrides=METHODS[method]), progress=False).run_dir
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
                "nash_conv": float(r["nash_conv"]),
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


def first_below(points: list[dict[str, float]], target: float) -> dict[str, float] | None:
    return next((p for p in points if p["nash_conv"] <= target), None)


def run(
    preset: str, methods: list[str], seeds: list[int], steps: int, every: int, cfr_seconds: float, target_share: float
) -> dict[str, Any]:
    from tacocat.analysis.best_response import nash_conv
    from tacocat.analysis.store import load_tree
    from tacocat.game.presets import preset_config

    tree = load_tree(preset_config(preset))
    uniform = nash_conv(tree, tree.uniform_policy())
    runs = []
    with tempfile.TemporaryDirectory(prefix="equilibrium_") as tmp:
        for method in methods:
            for seed in seeds:
                started = time.perf_counter()
                curve = train_curve(preset, method, seed, steps, every, Path(tmp))
                runs.append(
                    {
                        "method": method,
                        "seed": seed,
                        "overrides": METHODS[method],
                        "curve": curve,
                        "wall_s": time.perf_counter() - started,
                    }
                )
                print(f"{method} seed {seed}: NashConv {curve[-1]['nash_conv']:.4f} after {steps:,} steps", flush=True)
    return {
        "preset": preset,
        "histories": tree.n_nodes,
        "information_states": tree.n_infosets,
        "uniform_nash_conv": uniform,
        "target": target_share * uniform,
        "target_share": target_share,
        "steps": steps,
        "every": every,
        "config": str(CONFIG.relative_to(ROOT)),
        "runs": runs,
        "cfr_plus": cfr_curve(tree, cfr_seconds),
    }


def render(results: dict[str, Any]) -> str:
    target = results["target"]
    lines = [
        f"Preset `{results['preset']}` ({results['histories']:,} histories, {results['information_states']:,} "
        f"information states); uniform random NashConv {results['uniform_nash_conv']:.4f}, target "
        f"{results['target_share']:.0%} of it = {target:.4f}. Policies played by their action probabilities.",
        "",
        "| method | seed | NashConv at the end | steps to target | training s to target |",
        "|---|---|---|---|---|",
    ]
    for r in results["runs"]:
        hit = first_below(r["curve"], target)
        lines.append(
            f"| {r['method']} | {r['seed']} | {r['curve'][-1]['nash_conv']:.4f} | "
            + (f"{hit['steps']:,} | {hit['seconds']:.0f} |" if hit else "not reached | – |")
        )
    cfr = results["cfr_plus"]
    hit = first_below(cfr, target)
    lines.append(
        f"| CFR+ | – | {cfr[-1]['nash_conv']:.2e} after {cfr[-1]['iterations']} iterations | – | "
        + (f"{hit['seconds']:.2f} |" if hit else "not reached |")
    )
    return "\n".join([*lines, "", summary(results)])


def summary(results: dict[str, Any]) -> str:
    """Per method, over its seeds: the runs under the target, the NashConv at the end (median and
    range) and the mean NashConv of each run's second half of evaluations (the curves are not
    monotone, so the end point alone is noisy), median and range."""
    lines = [
        "| method | seeds under the target | NashConv at the end: median [min, max] | "
        "mean of the second half: median [min, max] |",
        "|---|---|---|---|",
    ]
    for method in dict.fromkeys(r["method"] for r in results["runs"]):
        runs = [r for r in results["runs"] if r["method"] == method]
        ends = [r["curve"][-1]["nash_conv"] for r in runs]
        halves = [statistics.fmean(p["nash_conv"] for p in r["curve"][len(r["curve"]) // 2 :]) for r in runs]
        under = sum(first_below(r["curve"], results["target"]) is not None for r in runs)
        lines.append(
            f"| {method} | {under} of {len(runs)} | {statistics.median(ends):.4f} [{min(ends):.4f}, "
            f"{max(ends):.4f}] | {statistics.median(halves):.4f} [{min(halves):.4f}, {max(halves):.4f}] |"
        )
    return "\n".join(lines)


def plot(results: dict[str, Any], path: Path) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10, 4))
    by_steps, by_time = fig.subplots(1, 2)
    colours = dict(zip(METHODS, ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"), strict=False))
    for r in results["runs"]:
        label = r["method"] if r["seed"] == results["runs"][0]["seed"] else None
        for ax, x in ((by_steps, "steps"), (by_time, "seconds")):
            ax.plot(
                [p[x] for p in r["curve"]],
                [max(p["nash_conv"], 1e-6) for p in r["curve"]],
                marker="o",
                ms=2,
                color=colours.get(r["method"]),
                label=label,
            )
    cfr = results["cfr_plus"]
    by_time.plot([p["seconds"] for p in cfr], [max(p["nash_conv"], 1e-6) for p in cfr], color="black", label="CFR+")
    for ax, xlabel in ((by_steps, "env steps"), (by_time, "seconds (training or solving)")):
        ax.axhline(results["target"], color="grey", ls="--", lw=0.8, label=f"{results['target_share']:.0%} of uniform")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("exact NashConv")
        ax.legend(fontsize=8)
    by_time.set_xscale("log")
    fig.suptitle(f"Toward equilibrium on {results['preset']}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="jumbo")
    parser.add_argument("--methods", default=",".join(METHODS), help="comma-separated, from: " + ", ".join(METHODS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=4_000_000, help="env steps per run")
    parser.add_argument("--every", type=int, default=500_000, help="env steps between exact evaluations")
    parser.add_argument("--cfr-seconds", type=float, default=60.0, help="CFR+ solving time on the same tree")
    parser.add_argument("--target", type=float, default=0.05, help="share of the uniform policy's NashConv")
    parser.add_argument(
        "--write", action="store_true", help="write docs/results/equilibrium_<preset>.json and the plot"
    )
    parser.add_argument("--from-json", type=Path, help="render a written result instead of running")
    args = parser.parse_args()
    methods = args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown method(s) {', '.join(unknown)}; methods: {', '.join(METHODS)}")
    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        results, info = saved["results"], saved["stamp"]
    else:
        from benchmarks.exact_solve import load_average
        from tacocat.game.presets import preset_config
        from tacocat.stamp import stamp

        # stamped before the runs: the commit that trained them, even if one lands meanwhile
        info = {
            **stamp(preset_config(args.preset)),
            "command": "python -m benchmarks.equilibrium "
            + " ".join(
                f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
                for k, v in vars(args).items()
                if k not in ("write", "from_json")
            ),
        }
        results = run(args.preset, methods, args.seeds, args.steps, args.every, args.cfr_seconds, args.target)
        info["load_average"] = load_average()
    print(render(results))
    print(f"\n{info.get('command', '')} at {info.get('commit', '?')}, load {info.get('load_average', '?')}")
    if args.write and not args.from_json:
        path, image = (Path(str(p).format(preset=results["preset"])) for p in (RESULTS, PLOT))
        path.write_text(json.dumps({"stamp": info, "results": results}, indent=1) + "\n")
        plot(results, image)
        print(f"wrote {path.relative_to(ROOT)} and {image.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
