"""Speed of league training (experiments/league) on this machine's JAX backend, with the batch
engine's random-legal rollout (`tacocat.game.batch.rollout.make_rollout`) at the same batch and
rollout length in the same run as the anchor.

Training steps/s = n_envs x n_steps / wall time of one jitted league iteration (rollout with the
league's opponents, advantages, `n_epochs` of minibatch updates), best of `--repeats` after
compilation. Compilation is timed on its own; the load average is printed, since other processes
on a shared machine slow every figure down.

The FLOP ceiling, in the same run: the iteration's matrix-product FLOPs per env step, counted from
its jaxpr with every loop unrolled (`benchmarks/flop_count.py`; XLA's cost analysis, printed
beside it, counts each loop body once), then every distinct product timed alone at its own shape.
"Matmul time alone" is what the iteration's products would take at those rates; its share of the
iteration's wall time is the fraction of the machine's matmul rate, at the network's shapes, that
training reaches. The rest is the batch engine, the opponents and the element-wise work.

    python benchmarks/league_speed.py                                   # tacocat/train/configs/league.yaml
    python benchmarks/league_speed.py --set n_envs=2048 --set algo.n_epochs=2
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.flop_count import matmul_products, product_seconds
from tacocat.game.batch.rollout import make_rollout
from tacocat.stamp import describe, stamp
from tacocat.train.config import load_experiment
from tacocat.train.league.pool import SnapshotPool
from tacocat.train.league.ppo import init_runner
from tacocat.train.league.trainer import build, coefficients


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="tacocat/train/configs/league.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE override")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    config = load_experiment(args.config, overrides=args.overrides)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(describe(stamp(config.rules_config)))
    print(
        f"jax backend {jax.default_backend()}, {os.cpu_count()} CPUs, config {args.config} {' '.join(args.overrides)}"
    )
    print(f"load average at start: {load}")
    env, s, iteration = build(config)
    steps = s.n_envs * s.n_steps

    rollout = make_rollout(env, s.n_envs, s.n_steps)
    start = time.perf_counter()
    jax.block_until_ready(rollout(jax.random.key(0)))
    rollout_compile = time.perf_counter() - start
    rollout_s = best_of(lambda: rollout(jax.random.key(1)), args.repeats)

    runner = init_runner(env, s, jax.random.key(0))
    pool = SnapshotPool(runner.params, config.league.snapshot_pool)
    ids = jnp.asarray(np.zeros(config.league.snapshot_slots, np.int32))
    start = time.perf_counter()
    coefs = coefficients(config, 0)
    runner, _ = iteration(runner, pool.arrays, ids, coefs)
    jax.block_until_ready(runner)
    train_compile = time.perf_counter() - start
    state = {"runner": runner}

    def one() -> object:
        state["runner"], metrics = iteration(state["runner"], pool.arrays, ids, coefs)
        return metrics

    train_s = best_of(one, args.repeats)
    print(f"compile time: random rollout {rollout_compile:.1f} s, league iteration {train_compile:.1f} s\n")
    print("| loop | n_envs | n_steps | env steps/s | ratio to random rollout |")
    print("|---|---:|---:|---:|---:|")
    print(f"| random-legal rollout (anchor) | {s.n_envs:,} | {s.n_steps} | {steps / rollout_s:,.0f} | 1.00 |")
    print(
        f"| league PPO iteration ({s.n_epochs} epochs, net {list(s.hidden)}) | {s.n_envs:,} | {s.n_steps} | "
        f"{steps / train_s:,.0f} | {rollout_s / train_s:.2f} |"
    )
    print_flop_ceiling(iteration, (state["runner"], pool.arrays, ids, coefs), steps, train_s)
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def print_flop_ceiling(iteration: Any, args: tuple, steps: int, train_s: float) -> None:
    """The iteration's matmul FLOPs per env step and the share of the matmul rate it reaches."""
    products = matmul_products(iteration, *args)
    flops = sum(p.flops * n for p, n in products.items())
    xla = iteration.lower(*args).compile().cost_analysis()
    xla_flops = float((xla[0] if isinstance(xla, list) else xla).get("flops", 0.0))
    per_step = flops / steps
    print(f"\nmatmul FLOPs per env step: {per_step:,.0f} ({flops / 1e9:.1f} GFLOP an iteration, loops unrolled)")
    print(f"XLA cost analysis, loop bodies counted once: {xla_flops / 1e9:.2f} GFLOP an iteration\n")
    print("| product (lhs x rhs) | per iteration | share of FLOPs | GFLOP/s alone |")
    print("|---|---:|---:|---:|")
    alone = 0.0
    for product, n in sorted(products.items(), key=lambda item: -item[0].flops * item[1]):
        seconds = product_seconds(product)
        alone += seconds * n
        if product.flops * n >= 0.01 * flops:
            print(
                f"| {product.lhs} x {product.rhs} | {n} | {product.flops * n / flops:.1%} | "
                f"{product.flops / seconds / 1e9:.1f} |"
            )
    print(
        f"\nachieved {flops / train_s / 1e9:.1f} GFLOP/s; the same products alone: {flops / alone / 1e9:.1f} GFLOP/s "
        f"({alone:.2f} s of the iteration's {train_s:.2f} s: {alone / train_s:.0%} of the matmul rate at these shapes)"
    )


if __name__ == "__main__":
    main()
