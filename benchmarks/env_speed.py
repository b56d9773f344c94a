"""Speed of the Tacocat environment under uniform random legal play, beside PettingZoo classics.

Measured in one run, each for `--seconds` of wall-clock time:

* ``tacocat.env()``   -- the wrapped AEC env (what users get), standard AEC loop;
* ``tacocat.raw_env()`` -- the same env without PettingZoo's wrappers;
* the raw engine         -- ``new_game`` / ``legal_actions`` / ``apply_action``, no observations;
* ``pettingzoo.classic.leduc_holdem_v4`` and ``connect_four_v3`` -- same loop as env().

The AEC loop is the standard one::

    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        action = None if term or trunc else <uniform random legal action from obs["action_mask"]>
        env.step(action)

"env steps" counts every ``env.step`` call of that loop, the final ``None`` steps of finished
agents included; for the raw engine a step is one ``apply_action`` (a transition). Actions are
drawn with an explicit ``numpy.random.Generator`` seeded from ``--seed``. Every env is reset with
``--seed`` once, then with a plain ``reset()`` before each game, as in training. The subjects are
measured in interleaved slices of about 0.5 s (round robin) so that a change of the machine's
load during the run hits all of them alike; each gets ``--seconds`` in total.

Targets: env() >= 3x leduc_holdem_v4 env-steps/s; raw engine >= 40,000 transitions/s.

Usage::

    .venv/bin/python benchmarks/env_speed.py [--seconds 5] [--seed 0] [--markdown] [--profile N] [--check]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import platform
import pstats
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")  # leduc/connect_four import pygame (render only)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import tacocat
from tacocat.game.config import make_config
from tacocat.game.engine import apply_action, legal_actions, new_game
from tacocat.stamp import describe, stamp

ENV_TARGET_RATIO = 3.0
ENGINE_TARGET = 40_000.0
ENGINE_NAME = "raw engine (new_game/legal_actions/apply_action)"


@dataclass
class Result:
    name: str
    unit: str  # "env steps" or "transitions"
    steps: int
    games: int
    seconds: float

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds

    @property
    def games_per_s(self) -> float:
        return self.games / self.seconds

    @property
    def steps_per_game(self) -> float:
        return self.steps / self.games


# ---------------------------------------------------------------------------------------
# the loops
# ---------------------------------------------------------------------------------------
def play_aec_game(env, rng: np.random.Generator) -> int:
    """One game of the standard AEC loop with uniform random legal actions; returns env steps."""
    steps = 0
    for _agent in env.agent_iter():
        obs, _rew, term, trunc, _info = env.last()
        if term or trunc:
            action = None
        else:
            legal = np.flatnonzero(obs["action_mask"])
            action = int(legal[rng.integers(len(legal))])
        env.step(action)
        steps += 1
    return steps


def play_engine_game(config, rng: np.random.Generator) -> int:
    state = new_game(config, rng)
    steps = 0
    while not state.is_over:
        legal = legal_actions(state)
        apply_action(state, legal[rng.integers(len(legal))])
        steps += 1
    return steps


class Runner:
    """One subject under measurement; `run_for` plays whole games and accumulates the totals.

    Measurements are interleaved in short slices (see `measure_all`) so that a change in the
    machine's load during the run affects every subject alike.
    """

    def __init__(self, name: str, unit: str, play_game: Callable[[], int]) -> None:
        self.name, self.unit, self.play_game = name, unit, play_game
        self.steps = self.games = 0
        self.seconds = 0.0

    def run_for(self, seconds: float) -> None:
        start = time.perf_counter()
        deadline = start + seconds
        steps = games = 0
        while True:
            steps += self.play_game()
            games += 1
            if time.perf_counter() >= deadline:
                break
        self.seconds += time.perf_counter() - start
        self.steps += steps
        self.games += games

    def result(self) -> Result:
        return Result(self.name, self.unit, self.steps, self.games, self.seconds)


def aec_runner(name: str, make: Callable[[], object], seed: int) -> Runner:
    env = make()
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)  # seeded once; every later game starts with a plain reset()
    play_aec_game(env, rng)  # warm-up (imports, caches); not timed

    def play() -> int:
        env.reset()
        return play_aec_game(env, rng)

    return Runner(name, "env steps", play)


def engine_runner(seed: int) -> Runner:
    config = tacocat.make_config()
    rng = np.random.default_rng(seed)
    play_engine_game(config, rng)  # warm-up
    return Runner(ENGINE_NAME, "transitions", lambda: play_engine_game(config, rng))


def measure_all(runners: list[Runner], seconds: float, slice_s: float = 0.5) -> None:
    """Round-robin slices of about `slice_s` seconds until each runner had `seconds`."""
    slices = max(1, round(seconds / slice_s))
    for _ in range(slices):
        for runner in runners:
            runner.run_for(seconds / slices)


def reference_makers() -> dict[str, Callable[[], object] | str]:
    """PettingZoo's classic envs, or the reason one cannot be imported."""
    makers: dict[str, Callable[[], object] | str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from pettingzoo.classic import leduc_holdem_v4

            makers["pettingzoo leduc_holdem_v4.env()"] = leduc_holdem_v4.env
        except ImportError as err:  # needs rlcard and pygame (pettingzoo[classic])
            makers["pettingzoo leduc_holdem_v4.env()"] = f"unavailable: {err}"
        try:
            from pettingzoo.classic import connect_four_v3

            makers["pettingzoo connect_four_v3.env()"] = connect_four_v3.env
        except ImportError as err:
            makers["pettingzoo connect_four_v3.env()"] = f"unavailable: {err}"
    return makers


# ---------------------------------------------------------------------------------------
# output
# ---------------------------------------------------------------------------------------
def build_rows(results: list[Result], missing: dict[str, str]) -> tuple[list[list[str]], dict[str, bool | None]]:
    by_name = {r.name: r for r in results}
    env_r = by_name["tacocat.env()"]
    leduc = by_name.get("pettingzoo leduc_holdem_v4.env()")
    engine = by_name[ENGINE_NAME]
    ratio = env_r.steps_per_s / leduc.steps_per_s if leduc else None
    verdicts: dict[str, bool | None] = {
        "env": None if ratio is None else ratio >= ENV_TARGET_RATIO,
        "engine": engine.steps_per_s >= ENGINE_TARGET,
    }

    def verdict(ok: bool | None) -> str:
        return "n/a" if ok is None else ("PASS" if ok else "FAIL")

    rows: list[list[str]] = []
    for r in results:
        target = result = ""
        if r is env_r:
            target = f">= {ENV_TARGET_RATIO:g}x leduc steps/s"
            result = verdict(verdicts["env"])
        elif r is engine:
            target = f">= {ENGINE_TARGET:,.0f} transitions/s"
            result = verdict(verdicts["engine"])
        rows.append(
            [
                r.name,
                r.unit,
                f"{r.steps_per_s:,.0f}",
                f"{1e6 / r.steps_per_s:.1f}",
                f"{r.games_per_s:,.1f}",
                f"{r.steps_per_game:.1f}",
                f"{r.games:,}",
                target,
                result,
            ]
        )
    for name, why in missing.items():
        rows.append([name, "-", "-", "-", "-", "-", "-", "", why])
    rows.append(
        [
            "ratio env() / leduc env-steps/s",
            "x",
            "-" if ratio is None else f"{ratio:.2f}x",
            "",
            "",
            "",
            "",
            f">= {ENV_TARGET_RATIO:g}x",
            verdict(verdicts["env"]),
        ]
    )
    return rows, verdicts


HEADERS = ["measurement", "step unit", "steps/s", "us/step", "games/s", "steps/game", "games", "target", "result"]


def print_markdown(rows: list[list[str]], caption: str) -> None:
    print(caption + "\n")
    print("| " + " | ".join(HEADERS) + " |")
    print("|" + "|".join("---" if i in (0, 1, 7, 8) else "---:" for i in range(len(HEADERS))) + "|")
    for row in rows:
        print("| " + " | ".join(f"`{c}`" if i == 0 and c.endswith(")") else c for i, c in enumerate(row)) + " |")


def print_table(rows: list[list[str]], caption: str) -> None:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(HEADERS)]
        print(caption)
        print("  ".join(h.ljust(w) for h, w in zip(HEADERS, widths, strict=True)))
        for row in rows:
            print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
        return
    table = Table(title="Tacocat env speed, uniform random legal play", caption=caption)
    for i, h in enumerate(HEADERS):
        table.add_column(h, justify="right" if i in (2, 3, 4, 5, 6) else "left")
    for i, row in enumerate(rows):
        if i == len(rows) - 1:
            table.add_section()
        style = {"PASS": "green", "FAIL": "bold red"}.get(row[-1])
        table.add_row(*row[:-1], f"[{style}]{row[-1]}[/{style}]" if style else row[-1])
    Console(width=180).print(table)


def load_average() -> str:
    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def machine_line(args: argparse.Namespace, load_before: str) -> str:
    return (
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {describe(stamp(make_config(None)))}; "
        f"{platform.python_implementation()}, {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"tacocat {tacocat.__version__}; "
        f"{args.seconds:g} s per measurement (interleaved), seed {args.seed}; "
        f"load average 1/5/15 min before {load_before}, after {load_average()}"
    )


def profile_env(games: int, seed: int, top: int = 20) -> str:
    """cProfile of the env() loop over `games` games, functions sorted by own time."""
    env = tacocat.env()
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(games):
        env.reset()
        play_aec_game(env, rng)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="wall-clock seconds per measurement (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the envs and of the action Generator")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown (for docs)")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="GAMES",
        help="also cProfile the env() loop for GAMES games and print the hotspots",
    )
    parser.add_argument("--check", action="store_true", help="exit with status 1 if a target is missed")
    args = parser.parse_args(argv)

    runners = [
        aec_runner("tacocat.env()", tacocat.env, args.seed),
        aec_runner("tacocat.raw_env()", tacocat.raw_env, args.seed),
        engine_runner(args.seed),
    ]
    missing: dict[str, str] = {}
    for name, make in reference_makers().items():
        if isinstance(make, str):
            missing[name] = make
        else:
            runners.append(aec_runner(name, make, args.seed))
    load_before = load_average()
    measure_all(runners, args.seconds)
    results = [r.result() for r in runners]

    rows, verdicts = build_rows(results, missing)
    caption = machine_line(args, load_before)
    (print_markdown if args.markdown else print_table)(rows, caption)
    if args.profile:
        print(f"\ncProfile of the tacocat.env() loop, {args.profile} games, by own time:")
        print(profile_env(args.profile, args.seed))
    if args.check and not all(verdicts.values()):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
