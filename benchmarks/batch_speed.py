"""Speed of the batch engine (tacocat.game.batch) on this machine's JAX backend, with pgx's
`leduc_holdem` at batch 4,096 in the same run as the anchor, under each sampler.

Steps/s = batch x steps / wall time of a jitted `lax.scan` of random auto-reset steps
(`tacocat.game.batch.rollout.make_rollout`; pgx leduc runs the same loop), after compilation.
Compilation is timed on its own. The table also prints the load average, since other
processes on a shared machine slow every figure down.

The samplers (`--samplers`): `uniform`, the k-th legal action for a random k (one random
integer per row: a random-play baseline); and two policy-style ones, drawing from a softmax
over the masked logits as a policy does (here the logits of a uniform policy, 0 on the legal
actions, -1e9 elsewhere: the sampler's cost does not depend on their values): `categorical`
(`jax.random.categorical`, Gumbel-max: one random number per action) and `policy` (the
league's `rollout.policy_actions`, inverse CDF: one random number per row). pgx leduc runs under
each sampler too, and each tacocat row is compared with pgx leduc under the same sampler.

    python benchmarks/batch_speed.py                      # the table of docs/PERFORMANCE.md
    python benchmarks/batch_speed.py --batches 1 64 4096  # a subset
    python benchmarks/batch_speed.py --batches 4096 --samplers uniform categorical policy
    python benchmarks/batch_speed.py --devices 2          # the batch split over 2 CPU devices

XLA:CPU runs one step's operations on about one core. `--devices N` splits the host CPU into N
XLA devices (`--xla_force_host_platform_device_count`) and each engine, pgx leduc included,
plays batch / N games on each (`jax.shard_map` over a one-axis mesh), so N cores work at once.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


def _devices_from_argv(argv: list[str]) -> int:
    """`--devices N` has to reach XLA before JAX starts, so it is read before the imports."""
    for i, arg in enumerate(argv):
        if arg == "--devices" and i + 1 < len(argv) and argv[i + 1].isdigit():
            return int(argv[i + 1])
        if arg.startswith("--devices=") and arg.split("=", 1)[1].isdigit():
            return int(arg.split("=", 1)[1])
    return 1


if _devices_from_argv(sys.argv) > 1:
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={_devices_from_argv(sys.argv)}"
    )

import jax  # noqa: E402 (jax must see XLA_FLAGS first)
import jax.numpy as jnp  # noqa: E402 (jax must see XLA_FLAGS first)
import numpy as np  # noqa: E402 (jax must see XLA_FLAGS first)
import pgx  # noqa: E402 (jax must see XLA_FLAGS first)
from pgx.experimental import auto_reset  # noqa: E402 (jax must see XLA_FLAGS first)

from tacocat.game.batch import TacocatBatch  # noqa: E402 (jax must see XLA_FLAGS first)
from tacocat.game.batch.rollout import make_rollout, policy_actions, random_legal_actions  # noqa: E402 (jax must see XLA_FLAGS first)
from tacocat.stamp import describe, stamp  # noqa: E402 (jax must see XLA_FLAGS first)

BATCHES = (1, 64, 1024, 4096, 16384, 65536)


def _uniform_policy_logits(mask: jax.Array) -> jax.Array:
    return jnp.where(mask, 0.0, -1e9)


#: name -> sampler(key, mask) -> actions (see the module docstring)
SAMPLERS = {
    "uniform": random_legal_actions,
    "categorical": lambda key, mask: jax.random.categorical(key, _uniform_policy_logits(mask)).astype(jnp.int32),
    "policy": lambda key, mask: policy_actions(key, _uniform_policy_logits(mask), mask),
}


def pgx_rollout(env, batch_size: int, num_steps: int, sampler=random_legal_actions):
    """The same random auto-reset loop for a pgx env."""
    init = jax.vmap(env.init)
    step = jax.vmap(auto_reset(env.step, env.init))

    def body(carry, _):
        state, key = carry
        key, act_key, step_key = jax.random.split(key, 3)
        action = sampler(act_key, state.legal_action_mask)
        return (step(state, action, jax.random.split(step_key, batch_size)), key), None

    def rollout(key):
        key, init_key = jax.random.split(key)
        state = init(jax.random.split(init_key, batch_size))
        (state, _), _ = jax.lax.scan(body, (state, key), None, length=num_steps)
        return state, {}

    return jax.jit(rollout)


def on_devices(make, batch_size: int, devices: int):
    """The rollout `make(rows)` of `batch_size` games, split over `devices` CPU devices."""
    if devices == 1:
        return make(batch_size)
    if batch_size % devices:
        raise SystemExit(f"error: batch {batch_size} does not split over {devices} devices")
    rollout = make(batch_size // devices)
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:devices]), ("devices",))
    split = jax.sharding.PartitionSpec("devices")
    per_device = jax.shard_map(
        lambda keys: jax.tree.map(lambda x: x[None], rollout(keys[0])), mesh=mesh, in_specs=split, out_specs=split
    )
    return jax.jit(lambda key: per_device(jax.random.split(key, devices)))


def measure(rollout, batch_size: int, num_steps: int, repeats: int) -> tuple[float, float, float]:
    """(compile seconds, steps per second of wall time, steps per CPU-second of this process):
    the best of `repeats` timed runs after compilation. On a shared machine other processes
    stretch the wall time; the CPU time counts only this process's work (all its threads)."""
    key = jax.random.key(0)
    start = time.perf_counter()
    compiled = rollout.lower(key).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(key))  # warm-up run
    best_wall = best_cpu = float("inf")
    for r in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        jax.block_until_ready(compiled(jax.random.key(r + 1)))
        best_wall = min(best_wall, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    steps = batch_size * num_steps
    return compile_s, steps / best_wall, steps / best_cpu


def steps_for(batch_size: int, budget: int) -> int:
    return max(20, min(2000, budget // batch_size))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, nargs="+", default=list(BATCHES))
    parser.add_argument("--budget", type=int, default=2_000_000, help="steps per timed run (batch x steps)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--devices", type=int, default=1, help="split the host CPU into this many XLA devices")
    parser.add_argument(
        "--samplers",
        nargs="+",
        choices=sorted(SAMPLERS),
        default=["uniform"],
        help="the samplers to run each engine under",
    )
    args = parser.parse_args()
    if args.devices != jax.local_device_count():
        raise SystemExit(f"error: asked for {args.devices} devices, JAX has {jax.local_device_count()}")

    env = TacocatBatch()
    print(describe(stamp(env.config)))
    print(
        f"jax backend {jax.default_backend()} ({jax.devices()[0].device_kind}), {os.cpu_count()} CPUs, "
        f"{args.devices} XLA device(s)"
    )
    print(f"load average at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    leduc = pgx.make("leduc_holdem")
    leduc_speeds, rows = {}, []
    for name in args.samplers:
        sampler = SAMPLERS[name]
        n = steps_for(4096, args.budget)
        leduc_rollout = on_devices(
            lambda rows: pgx_rollout(leduc, rows, n, sampler),  # noqa: B023 (used in this iteration)
            4096,
            args.devices,
        )
        leduc_compile, leduc_speed, leduc_cpu = measure(leduc_rollout, 4096, n, args.repeats)
        leduc_speeds[name] = leduc_speed
        rows.append(("pgx leduc_holdem", name, 4096, n, leduc_speed, leduc_cpu))
        print(f"compile time: pgx leduc_holdem batch 4096, {name} sampler: {leduc_compile:.1f} s", flush=True)
        for batch in args.batches:
            if batch % args.devices:
                continue
            n = steps_for(batch, args.budget)
            rollout = on_devices(
                lambda rows: make_rollout(env, rows, n, sampler=sampler),  # noqa: B023 (used in this iteration)
                batch,
                args.devices,
            )
            compile_s, speed, cpu = measure(rollout, batch, n, args.repeats)
            rows.append(("tacocat (batch)", name, batch, n, speed, cpu))
            print(f"compile time: tacocat batch {batch}, {name} sampler: {compile_s:.1f} s", flush=True)
    print()
    print(
        "| engine | sampler | batch | steps per run | steps/s | ratio to pgx leduc (4,096, same sampler) | "
        "ratio to the uniform sampler | steps per CPU-second |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    uniform = {(engine, batch): speed for engine, name, batch, _, speed, _ in rows if name == "uniform"}
    for engine, name, batch, n, speed, cpu in rows:
        base = uniform.get((engine, batch))
        versus = f"{base / speed:.2f}x slower" if base and name != "uniform" else "-"
        print(
            f"| {engine} | {name} | {batch:,} | {n} | {speed:,.0f} | {speed / leduc_speeds[name]:.2f} | {versus} | "
            f"{cpu:,.0f} |"
        )
    print(f"\nload average at end: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
