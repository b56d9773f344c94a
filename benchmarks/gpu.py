"""The GPU figures in one command (meant to take under 5 minutes on a GPU machine): the batch
engine's steps/s by batch size (pgx leduc in the same run), a league training iteration's env
steps/s, and the time the league takes to train a policy that beats `search`.

    python benchmarks/gpu.py                 # on the GPU machine (JAX with CUDA)
    python benchmarks/gpu.py --quick         # tiny sizes: checks the script on any machine (CPU too)

It prints the backend, and which forms the backend-specific helpers trace (`xla.cpu_forms()`:
the XLA:CPU tricks only on CPU, the plain forms elsewhere, tacocat/game/batch/xla.py) and the
samplers: `uniform` (k-th legal action), `categorical` (`jax.random.categorical`, one Gumbel per
action) and `policy` (the league's inverse-CDF sampler, one uniform number per row), so that the
cheapest exact policy sampler on this backend is measured, not assumed.

Time to beat `search`: a fresh league run (league.yaml with `--envs` games per iteration and 16
minibatches; its snapshot pool, opponents and schedule otherwise) trains on the device and, every
`--eval-every` env steps, plays its exported policy against `search` (96 simulations) over
`--deal-pairs` duplicate deal pairs on the host's CPUs; it stops at the first evaluation whose
paired interval lies above 0.5. Printed: the training seconds (compilation included) and the
evaluation seconds up to then, or that `--budget-s` ran out first.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import jax

from benchmarks.batch_speed import SAMPLERS, measure, pgx_rollout, steps_for
from tacocat.game.batch import TacocatBatch, xla
from tacocat.game.batch.rollout import make_rollout
from tacocat.stamp import describe, stamp
from tacocat.train.config import load_experiment
from tacocat.train.league.trainer import LeagueTrainer, export_policy


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def engine_table(batches: list[int], large_samplers: list[str], budget: int, repeats: int) -> None:
    """Steps/s of the batch engine: the uniform sampler at every batch, the other samplers at
    the largest; pgx leduc at the largest batch under each."""
    import pgx

    env, leduc = TacocatBatch(), pgx.make("leduc_holdem")
    rows = []
    largest = max(batches)
    for name in ["uniform", *large_samplers]:
        for engine in ("tacocat", "pgx leduc_holdem"):
            for batch in batches if name == "uniform" and engine == "tacocat" else [largest]:
                n = steps_for(batch, budget)
                if engine == "tacocat":
                    rollout = make_rollout(env, batch, n, sampler=SAMPLERS[name])
                else:
                    rollout = pgx_rollout(leduc, batch, n, SAMPLERS[name])
                compile_s, speed, _ = measure(rollout, batch, n, repeats)
                rows.append((engine, name, batch, n, compile_s, speed))
                print(
                    f"  {engine}, {name} sampler, batch {batch:,}: {speed:,.0f} steps/s "
                    f"(compiled in {compile_s:.1f} s)",
                    flush=True,
                )
    print("\n| engine | sampler | batch | steps per run | steps/s | compile s |")
    print("|---|---|---:|---:|---:|---:|")
    for engine, name, batch, n, compile_s, speed in rows:
        print(f"| {engine} | {name} | {batch:,} | {n} | {speed:,.0f} | {compile_s:.1f} |")


def league_config(args: argparse.Namespace, extra: list[str]):
    steps = args.envs * args.n_steps
    overrides = [
        f"n_envs={args.envs}",
        f"algo.n_steps={args.n_steps}",
        f"algo.batch_size={steps // 16}",
        f"total_timesteps={args.max_steps}",
        *extra,
    ]
    return load_experiment(args.config, overrides=overrides)


def league_speed(args: argparse.Namespace) -> float:
    trainer = LeagueTrainer(league_config(args, []))
    start = time.perf_counter()
    trainer.iterate()
    compile_s = time.perf_counter() - start
    best = float("inf")
    for _ in range(args.repeats):
        start = time.perf_counter()
        trainer.iterate()
        best = min(best, time.perf_counter() - start)
    steps = args.envs * args.n_steps
    print("\n| league iteration | n_envs | n_steps | env steps/s | first iteration s (compilation) |")
    print("|---|---:|---:|---:|---:|")
    print(f"| {args.config} | {args.envs:,} | {args.n_steps} | {steps / best:,.0f} | {compile_s:.1f} |")
    return compile_s


def time_to_beat_search(args: argparse.Namespace, deadline: float, compile_s: float) -> None:
    """`compile_s`: the league part's first iteration (the same config: this run reuses its
    compiled iteration), counted in the training time."""
    from tacocat.evaluation.matches import match

    config = league_config(args, [])
    trainer = LeagueTrainer(config)
    train_s, eval_s = compile_s, 0.0
    next_eval = args.eval_every
    workers = max(1, min(16, os.cpu_count() or 1))
    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.npz"
        while trainer.timesteps < config.total_timesteps and time.perf_counter() < deadline:
            start = time.perf_counter()
            trainer.iterate()
            train_s += time.perf_counter() - start
            if trainer.timesteps < next_eval:
                continue
            next_eval += args.eval_every
            start = time.perf_counter()
            export_policy(trainer.params(), policy, config, trainer.timesteps)
            result = match(
                f"league:path={policy}",
                args.search,
                deal_pairs=args.deal_pairs,
                seed=2026,
                workers=workers,
                config=config.rules_config,
                progress=False,
            )
            eval_s += time.perf_counter() - start
            print(
                f"  {trainer.timesteps:,} env steps, {train_s:.1f} s training: {result.win_rate_a:.3f} "
                f"[{result.ci_low:.3f}, {result.ci_high:.3f}] against {args.search} ({args.deal_pairs} deal pairs, "
                f"{eval_s:.1f} s of evaluation so far)",
                flush=True,
            )
            if result.ci_low > 0.5:
                print(
                    f"\ntime to beat {args.search}: {train_s:.1f} s of training (compilation included) at "
                    f"{trainer.timesteps:,} env steps, plus {eval_s:.1f} s of evaluation"
                )
                return
    print(
        f"\n{args.search} not beaten within the budget: {trainer.timesteps:,} env steps, {train_s:.1f} s of "
        f"training, {eval_s:.1f} s of evaluation"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, to check the script on any machine")
    parser.add_argument("--batches", type=int, nargs="+", default=[4096, 65536, 1048576])
    parser.add_argument(
        "--samplers",
        nargs="+",
        default=["categorical", "policy"],
        choices=sorted(SAMPLERS),
        help="policy-style samplers measured at the largest batch (uniform runs at every batch)",
    )
    parser.add_argument("--budget", type=int, default=1 << 24, help="env steps per timed engine run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--config", default="tacocat/train/configs/league.yaml")
    parser.add_argument("--envs", type=int, default=4096, help="the league's games per iteration")
    parser.add_argument("--n-steps", type=int, default=128)
    parser.add_argument("--max-steps", type=int, default=40_000_000, help="the time-to-beat run's total_timesteps")
    parser.add_argument("--eval-every", type=int, default=4_000_000)
    parser.add_argument("--deal-pairs", type=int, default=100)
    parser.add_argument("--search", default="search", help="the agent spec to beat")
    parser.add_argument(
        "--budget-s",
        type=float,
        default=280.0,
        help="stop the time-to-beat run after this many seconds from the script's start",
    )
    args = parser.parse_args()
    if args.quick:
        args.batches, args.budget, args.repeats = [64, 256], 4096, 1
        args.envs, args.n_steps, args.max_steps, args.eval_every = 32, 16, 1024, 512
        args.deal_pairs, args.search = 2, "search:simulations=4"
    started = time.perf_counter()
    print(describe(stamp(TacocatBatch().config)))
    print(
        f"jax {jax.__version__}, backend {jax.default_backend()} ({jax.devices()[0].device_kind}), "
        f"{jax.device_count()} device(s), {os.cpu_count()} CPUs; helpers' forms: "
        f"{'XLA:CPU' if xla.cpu_forms() else 'plain'}; load average {load()}"
    )
    print("\n## batch engine")
    engine_table(args.batches, args.samplers, args.budget, args.repeats)
    print("\n## league")
    compile_s = league_speed(args)
    print(f"\n## time to beat {args.search}")
    time_to_beat_search(args, started + args.budget_s, compile_s)
    print(f"\nwhole script: {time.perf_counter() - started:.0f} s; load average at end: {load()}")


if __name__ == "__main__":
    main()
