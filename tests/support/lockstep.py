"""Lockstep differential check of the batch engine against the reference engine.

Both engines start from the same deal (the reference deals, the position is converted) and
take the same uniformly random legal actions. At every decision of every game we compare the
legal-action mask, both players' observations (bit for bit), the rewards of the step,
terminated/truncated and the player to act. The engines shuffle with different generators
(numpy vs JAX), so whenever a new round is dealt we first compare everything that does not
depend on the deal (space, tiles, rounds, phase, replace caps, ...) and then re-sync the batch
game from the reference's deal (`convert`). The JAX side runs many games in lockstep under
one jitted, vmapped `step`. Test scaffolding (tests/test_batch_engine.py), also run at scale
from the command line (docs/BATCH.md):

    .venv/bin/python tests/support/lockstep.py --games 100000 [--rules variant.yaml] [--round-reward 0.1]
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from tacocat.game.batch import convert, core
from tacocat.game.batch.env import TacocatBatch
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.engine import apply_action, legal_actions, new_game, returns, round_shaping
from tacocat.game.observation import encode
from tacocat.game.state import GameState


@dataclass
class Report:
    """What a lockstep run compared, and every mismatch found (empty when the engines agree)."""

    games: int = 0
    decisions: int = 0
    resyncs: int = 0
    mismatches: list[str] = field(default_factory=list)

    def add(self, other: Report) -> None:
        self.games += other.games
        self.decisions += other.decisions
        self.resyncs += other.resyncs
        self.mismatches += other.mismatches


#: XLA option for quick compilation: the lockstep loop spends its time in the reference
#: engine, so a less optimised (about 3x faster to compile) step costs nothing there
FAST_COMPILE = {"xla_backend_optimization_level": 0}


@functools.lru_cache(maxsize=16)
def compiled_functions(env: TacocatBatch, fast_compile: bool) -> tuple[Callable, Callable]:
    """The jitted, vmapped step and both-players observation of an env (cached per env)."""
    options = FAST_COMPILE if fast_compile else None
    step = jax.jit(jax.vmap(env.step), compiler_options=options)
    both = jax.jit(jax.vmap(lambda s: jnp.stack([env.observe(s, 0), env.observe(s, 1)])), compiler_options=options)
    return step, both


def lockstep(
    env: TacocatBatch,
    n_games: int,
    seed: int,
    batch: int = 1024,
    progress: bool = False,
    fast_compile: bool = False,
    tamper: Callable[[core.State], core.State] | None = None,
) -> Report:
    """Play `n_games` new random games in both engines in lockstep, `batch` at a time.

    `tamper(state)` (tests only) may alter the batch engine's state after each step, to show
    that a wrong engine is caught.
    """
    rng = np.random.default_rng(seed)
    report = Report()
    with tqdm(total=n_games, disable=not progress, unit="game", desc="lockstep") as bar:
        while report.games < n_games:
            size = min(batch, n_games - report.games)
            games = [new_game(env.tables.rules, int(s)) for s in rng.integers(0, 2**63, size)]
            part = lockstep_from(env, games, int(rng.integers(2**31)), fast_compile, tamper, report.games)
            report.add(part)
            bar.update(size)
            if progress:
                bar.write(
                    f"{report.games} games, {report.decisions} decisions, {report.resyncs} re-syncs, "
                    f"{len(report.mismatches)} mismatches"
                )
    return report


def lockstep_from(
    env: TacocatBatch,
    games: list[GameState],
    seed: int,
    fast_compile: bool = False,
    tamper: Callable[[core.State], core.State] | None = None,
    offset: int = 0,
) -> Report:
    """Play reference positions (mutated in place) to their end in both engines in lockstep."""
    t = env.tables
    step, observe_both = compiled_functions(env, fast_compile)
    rng = np.random.default_rng(seed)
    key = jax.random.key(seed)
    report = Report(games=len(games))
    size = len(games)
    state = env.from_games(games)
    live = np.array([not g.is_over for g in games])
    state = _compare(report, games, live, state, observe_both, t, None, offset)
    while live.any():
        actions = np.zeros(size, np.int32)
        expected_rewards = np.zeros((size, 2), np.float32)
        rounds_before = [g.rounds_played for g in games]
        for i in np.flatnonzero(live):
            legal = legal_actions(games[i])
            actions[i] = legal[rng.integers(len(legal))]
            apply_action(games[i], int(actions[i]))
            paid = round_shaping(games[i], rounds_before[i])
            if games[i].is_over:
                paid = [p + r for p, r in zip(paid, returns(games[i]), strict=True)]
            expected_rewards[i] = paid
        key, sub = jax.random.split(key)
        state = step(state, jnp.asarray(actions), jax.random.split(sub, size))
        if tamper is not None:
            state = tamper(state)
        report.decisions += int(live.sum())
        state = _compare(report, games, live, state, observe_both, t, (expected_rewards, rounds_before), offset)
        live &= np.array([not g.is_over for g in games])
    return report


def _compare(report: Report, games, live, state, observe_both, t, step_info, offset) -> core.State:
    """Compare every live game; re-sync new rounds from the reference. Returns the state used.

    Expected values are gathered per game, then compared for the whole batch at once (bit for
    bit: float32 arrays are compared as uint32); messages are written only for mismatches.
    """
    host = jax.device_get(state)
    fail = report.mismatches.append
    rows = np.flatnonzero(live)
    tags = {i: f"game {offset + i}, decision {len(games[i].actions)}" for i in rows}
    if step_info is not None:
        expected_rewards, rounds_before = step_info
        bad = rows[(host.rewards[rows].view(np.uint32) != expected_rewards[rows].view(np.uint32)).any(axis=1)]
        for i in bad:
            fail(f"{tags[i]}: rewards {host.rewards[i].tolist()} != reference {expected_rewards[i].tolist()}")
        terminated = np.array([games[i].winner is not None for i in rows], bool)
        truncated = np.array([games[i].truncated for i in rows], bool)
        bad = rows[(host.terminated[rows] != terminated) | (host.truncated[rows] != truncated)]
        for i in bad:
            fail(
                f"{tags[i]}: terminated/truncated {bool(host.terminated[i])}/{bool(host.truncated[i])} "
                f"!= reference {games[i].winner is not None}/{games[i].truncated}"
            )
        resync = [i for i in rows if games[i].rounds_played != rounds_before[i] and not games[i].is_over]
        if resync:
            fields = {k: np.array(getattr(host, k)) for k in convert.game_fields(games[0], t)}
            for i in resync:
                ref = convert.game_fields(games[i], t)
                for name, value in ref.items():
                    if name not in convert.DEAL_FIELDS and not np.array_equal(fields[name][i], value):
                        fail(
                            f"game {offset + i}, new round {games[i].rounds_played + 1}: {name} "
                            f"{fields[name][i].tolist()} != reference {value.tolist()}"
                        )
                    fields[name][i] = value
            report.resyncs += len(resync)
            rebuilt = convert.rebuild(fields, t)
            state = rebuilt.replace(rewards=state.rewards, _step_count=state._step_count)
            host = jax.device_get(state)
    observations = np.asarray(observe_both(state))
    expected = observations.copy()
    expected_mask = np.ones_like(host.legal_action_mask)
    expected_player = host.current_player.copy()
    for i in rows:
        g = games[i]
        expected[i, 0] = encode(g, 0)
        expected[i, 1] = encode(g, 1)
        if not g.is_over:
            expected_mask[i] = False
            expected_mask[i, legal_actions(g)] = True
            expected_player[i] = g.to_act
    differs = (observations.view(np.uint32) != expected.view(np.uint32)).any(axis=2).any(axis=1)
    for i in rows[differs[rows]]:
        for p in (0, 1):
            bad = np.flatnonzero(observations[i, p].view(np.uint32) != expected[i, p].view(np.uint32))
            if bad.size:
                fail(f"{tags[i]}: observation of player_{p} differs at {bad.tolist()}")
    for i in rows[(host.legal_action_mask != expected_mask).any(axis=1)[rows]]:
        fail(
            f"{tags[i]}: mask {np.flatnonzero(host.legal_action_mask[i]).tolist()} != reference "
            f"{np.flatnonzero(expected_mask[i]).tolist()} (all true once over, pgx's convention)"
        )
    for i in rows[(host.current_player != expected_player)[rows]]:
        fail(f"{tags[i]}: player to act {int(host.current_player[i])} != reference {expected_player[i]}")
    acting = observations[np.arange(len(games)), np.clip(host.current_player, 0, 1)]
    for i in rows[(host.observation[rows].view(np.uint32) != acting[rows].view(np.uint32)).any(axis=1)]:
        fail(f"{tags[i]}: state.observation is not the observation of the player to act")
    return state


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--rules", default=None, help="rules config YAML (default: the default rules)")
    parser.add_argument("--round-reward", type=float, default=None)
    args = parser.parse_args(argv)
    overrides: dict[str, Any] = {} if args.round_reward is None else {"round_reward": args.round_reward}
    config: RulesConfig = make_config(args.rules, **overrides)
    report = lockstep(TacocatBatch(config), args.games, args.seed, args.batch, progress=True)
    print(
        f"ruleset {config.ruleset_hash()}: {report.games} games, {report.decisions} decisions, "
        f"{report.resyncs} new-round re-syncs, {len(report.mismatches)} mismatches"
    )
    for line in report.mismatches[:20]:
        print("  " + line)
    return 1 if report.mismatches else 0


if __name__ == "__main__":
    raise SystemExit(main())
