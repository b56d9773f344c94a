"""League training on 1 and on N JAX devices in the same run (`league.devices`,
tacocat/train/league/devices.py): env steps/s of a whole training iteration (`LeagueTrainer.iterate`:
the jitted rollout, advantages and updates, plus the host's snapshot draw and metrics), best of
`--repeats` after compilation (the device counts take turns), and the speed-up over one device.
It prints the machine's idle and stolen CPU shares over the timed iterations: a run on N devices
needs N free cores.

On CPU the host is split into max(--devices) XLA devices before JAX starts; a run on one device
uses JAX's first device only. The same config and seed on every device count: the runs train the
same thing (tests/test_league_devices.py).

    python benchmarks/league_devices.py                                  # league_devices.yaml, 1 and 2 devices
    python benchmarks/league_devices.py --devices 1 2 --set algo.n_epochs=2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def _max_devices(argv: list[str]) -> int:
    """`--devices` must reach XLA before JAX starts, so it is read before the imports."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    return max(parser.parse_known_args(argv)[0].devices)


if _max_devices(sys.argv[1:]) > 1:
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={_max_devices(sys.argv[1:])}"
    )

import jax  # noqa: E402 (jax must see XLA_FLAGS first)

from tacocat.stamp import describe, stamp  # noqa: E402 (jax must see XLA_FLAGS first)
from tacocat.train.config import load_experiment  # noqa: E402 (jax must see XLA_FLAGS first)
from tacocat.train.league.trainer import LeagueTrainer  # noqa: E402 (jax must see XLA_FLAGS first)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_times() -> list[int] | None:
    """The machine's CPU time counters (Linux /proc/stat: user, nice, system, idle, iowait, irq,
    softirq, steal), None elsewhere."""
    try:
        with Path("/proc/stat").open() as f:
            return [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None


def shares(before: list[int] | None, after: list[int] | None) -> str:
    """How the machine's CPUs were used between two readings: others' load and, in a virtual
    machine, the time its host took (steal) both slow a run that needs every core."""
    if before is None or after is None:
        return "CPU shares unknown"
    delta = [b - a for a, b in zip(before, after, strict=True)]
    total = max(sum(delta), 1)
    return f"CPUs {100 * delta[3] / total:.0f}% idle, {100 * delta[7] / total:.0f}% stolen by the host"


def first_iteration(config) -> tuple[LeagueTrainer, float]:
    """A trainer of `config` after its first iteration, and that iteration's seconds
    (compilation included)."""
    trainer = LeagueTrainer(config)
    start = time.perf_counter()
    trainer.iterate()
    return trainer, time.perf_counter() - start


def timed(trainer: LeagueTrainer) -> tuple[float, float]:
    """(seconds, cores used) of one iteration: the cores are this process's CPU time (every
    thread) over the wall time, so a one-device run that already keeps every core busy (XLA's
    own threads) shows how much room a second device has."""
    start, cpu = time.perf_counter(), time.process_time()
    trainer.iterate()  # returns host values: the iteration has finished
    seconds = time.perf_counter() - start
    return seconds, (time.process_time() - cpu) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="tacocat/train/configs/league_devices.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE override")
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    base = load_experiment(args.config, overrides=args.overrides)
    print(describe(stamp(base.rules_config)))
    print(
        f"jax backend {jax.default_backend()}, {jax.device_count()} device(s), {os.cpu_count()} CPUs, "
        f"config {args.config} {' '.join(args.overrides)}"
    )
    print(f"load average at start: {load()}")
    steps = base.n_envs * base.algo.n_steps
    trainers = {}
    for devices in args.devices:
        config = load_experiment(args.config, overrides=[*args.overrides, f"league.devices={devices}"])
        trainers[devices], first = first_iteration(config)
        print(f"{devices} device(s): first iteration {first:.1f} s (compilation included)", flush=True)
    # the device counts take turns, so that a change in the machine's load falls on all of them
    best = {devices: (float("inf"), 0.0) for devices in trainers}
    before = cpu_times()
    for _ in range(args.repeats):
        for devices, trainer in trainers.items():
            best[devices] = min(best[devices], timed(trainer))
    print(
        f"timed iterations ({args.repeats} per device count, taking turns): load {load()}, "
        f"{shares(before, cpu_times())}"
    )
    print()
    print("| devices | n_envs | n_steps | env steps/s | speed-up over 1 device | cores used |")
    print("|---:|---:|---:|---:|---:|---:|")
    one = best[1][0] if 1 in best else None
    for devices, (seconds, cores) in best.items():
        speedup = f"{one / seconds:.2f}" if one else "-"
        print(
            f"| {devices} | {base.n_envs:,} | {base.algo.n_steps} | {steps / seconds:,.0f} | {speedup} | {cores:.2f} |"
        )
    print(f"\nload average at end: {load()}")


if __name__ == "__main__":
    main()
