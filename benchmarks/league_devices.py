"""League training on 1 and on N JAX devices in the same run (`league.devices`,
experiments/league/devices.py): env steps/s of a whole training iteration (`LeagueTrainer.iterate`:
the jitted rollout, advantages and updates, plus the host's snapshot draw and metrics), best of
`--repeats` after compilation, and the speed-up over one device.

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


def _max_devices(argv: list[str]) -> int:
    """`--devices` must reach XLA before JAX starts, so it is read before the imports."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    return max(parser.parse_known_args(argv)[0].devices)


if _max_devices(sys.argv[1:]) > 1:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                               + f" --xla_force_host_platform_device_count={_max_devices(sys.argv[1:])}")

import jax  # noqa: E402

from experiments.common.config import load_experiment  # noqa: E402
from experiments.league.trainer import LeagueTrainer  # noqa: E402
from tacocat_env.stamp import describe, stamp  # noqa: E402


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_times() -> list[int] | None:
    """The machine's CPU time counters (Linux /proc/stat: user, nice, system, idle, iowait, irq,
    softirq, steal), None elsewhere."""
    try:
        with open("/proc/stat") as f:
            return [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None


def shares(before: list[int] | None, after: list[int] | None) -> str:
    """How the machine's CPUs were used between two readings: others' load and, in a virtual
    machine, the time its host took (steal) both slow a run that needs every core."""
    if before is None or after is None:
        return "CPU shares unknown"
    delta = [b - a for a, b in zip(before, after)]
    total = max(sum(delta), 1)
    return f"CPUs {100 * delta[3] / total:.0f}% idle, {100 * delta[7] / total:.0f}% stolen by the host"


def time_trainer(config, repeats: int) -> tuple[float, float]:
    """(seconds of the first iteration, compilation included; best seconds of `repeats` more)."""
    trainer = LeagueTrainer(config)
    start = time.perf_counter()
    trainer.iterate()
    first = time.perf_counter() - start
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        trainer.iterate()  # returns host values: the iteration has finished
        best = min(best, time.perf_counter() - start)
    return first, best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="experiments/configs/league_devices.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="KEY=VALUE override")
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    base = load_experiment(args.config, overrides=args.overrides)
    print(describe(stamp(base.rules_config)))
    print(f"jax backend {jax.default_backend()}, {jax.device_count()} device(s), {os.cpu_count()} CPUs, "
          f"config {args.config} {' '.join(args.overrides)}")
    print(f"load average at start: {load()}")
    steps = base.n_envs * base.algo.n_steps
    results = []
    for devices in args.devices:
        config = load_experiment(args.config, overrides=[*args.overrides, f"league.devices={devices}"])
        before = cpu_times()
        first, best = time_trainer(config, args.repeats)
        results.append((devices, first, best))
        print(f"{devices} device(s): first iteration {first:.1f} s (compilation included), load {load()}, "
              f"{shares(before, cpu_times())}", flush=True)
    print()
    print("| devices | n_envs | n_steps | env steps/s | speed-up over 1 device |")
    print("|---:|---:|---:|---:|---:|")
    one = next((best for devices, _, best in results if devices == 1), None)
    for devices, _, best in results:
        speedup = f"{one / best:.2f}" if one else "-"
        print(f"| {devices} | {base.n_envs:,} | {base.algo.n_steps} | {steps / best:,.0f} | {speedup} |")
    print(f"\nload average at end: {load()}")


if __name__ == "__main__":
    main()
