"""The league's checkpoint format (arrays + JSON; nothing is pickled) and the checks of a
checkpoint read back.

A checkpoint (`tacocat.train.checkpoints`) holds `arrays.npz` (every array of the runner, the
pool and the environment state, as the leaves of their pytrees, PRNG keys as their data:
`plain_arrays`) and, in its marker, `LeagueState`: the pool's bookkeeping and the numpy
generator that draws snapshots. A resume trusts nothing it reads: the checkpoint must be one
this config's run can have written (`LeagueState.check_against`, `read_arrays`, `check_runner`,
`check_exploiter`: every field's type, range, shape and finiteness, sizes bounded before
reading); anything else is one RunDirError naming the file.
"""

from __future__ import annotations

import dataclasses
import stat
import zipfile
import zlib
from pathlib import Path
from typing import Annotated, Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tacocat.train.checkpoints import CheckpointMarker
from tacocat.train.league.config import LeagueExperiment
from tacocat.train.league.ppo import Runner
from tacocat.train.run_dir import RunDirError

#: the checkpoint's arrays, beside its marker
ARRAYS = "arrays.npz"


def plain_arrays(tree: Any) -> Any:
    """PRNG keys as their uint32 data, so that every leaf is a plain array."""
    return jax.tree.map(lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x, tree)


#: room for one .npy member's header besides its data (numpy's own header limit is 10,000)
_NPY_HEADER_BYTES = 16 << 10
_EXACT = ConfigDict(extra="forbid", strict=True, frozen=True)


class _PoolBook(BaseModel):
    model_config = _EXACT
    filled: int = Field(ge=1)
    next_slot: int = Field(ge=0)
    games: list[Annotated[int, Field(ge=0)]]
    wins: list[Annotated[int, Field(ge=0)]]


class _PCG64Words(BaseModel):
    model_config = _EXACT
    state: int = Field(ge=0, lt=2**128)
    inc: int = Field(ge=0, lt=2**128)


class _GeneratorState(BaseModel):
    """numpy's `PCG64.state` (the generator that draws the snapshots)."""

    model_config = _EXACT
    bit_generator: Literal["PCG64"]
    state: _PCG64Words
    has_uint32: int = Field(ge=0, le=1)
    uinteger: int = Field(ge=0, lt=2**32)


class LeagueState(BaseModel):
    """The league's part of a checkpoint's marker: the pool's bookkeeping and the snapshot
    generator. Read strictly (no coercion, no extra keys), then checked against the run's
    config (`check_against`)."""

    model_config = _EXACT
    rng: _GeneratorState
    pool: _PoolBook

    def check_against(self, config: LeagueExperiment, marker: CheckpointMarker, path: Path) -> None:
        """RunDirError naming `path` unless this state is one that `config`'s run reaches at the
        marker's iteration."""
        league = config.league
        per_iteration = config.steps_per_iteration
        last = config.iterations * per_iteration
        timesteps, iteration = marker.timesteps, marker.iteration
        problems = []
        if not (per_iteration <= timesteps <= last and timesteps == iteration * per_iteration):
            problems.append(
                f"timesteps {timesteps} at iteration {iteration} is not a point of this run "
                f"({per_iteration} env steps per iteration, at most {last})"
            )
        snapshots, size = 1 + iteration // league.snapshot_every, league.snapshot_pool
        if league.exploiter is not None:
            snapshots += iteration // league.exploiter.snapshot_every
        book = self.pool
        if (book.filled, book.next_slot) != (min(snapshots, size), snapshots % size):
            problems.append(
                f"pool.filled and pool.next_slot must be {min(snapshots, size)} and {snapshots % size} "
                f"at iteration {iteration}"
            )
        if len(book.games) != size or len(book.wins) != size:
            problems.append(f"pool.games and pool.wins must hold league.snapshot_pool = {size} counts")
        elif any(w > g for g, w in zip(book.games, book.wins, strict=True)) or any(book.games[book.filled :]):
            problems.append("pool.wins must not exceed pool.games, and empty slots have no games")
        elif sum(book.games) > timesteps:
            problems.append("pool.games counts more games than the run has played steps")
        if problems:
            raise RunDirError(f"{path}: " + "; ".join(problems))


def read_arrays(path: Path, template: list[np.ndarray]) -> list[np.ndarray]:
    """The arrays of a checkpoint .npz, one per leaf of `template`, each of its dtype and shape
    and finite; sizes are checked from the zip's directory before any member is read, and no
    member is unpickled. RunDirError naming `path` else."""
    names = [f"leaf_{i}" for i in range(len(template))]
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise RunDirError(f"{path}: a checkpoint must be a regular file")
        if info.st_size > sum(x.nbytes + 2 * _NPY_HEADER_BYTES for x in template):
            raise RunDirError(f"{path} is larger than this run's checkpoint can be")
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            if sorted(m.filename for m in members) != sorted(f"{n}.npy" for n in names):
                raise RunDirError(
                    f"{path} holds {len(members)} members, not this run's {len(names)} arrays "
                    "leaf_0 ...: it was written by another version or is not a checkpoint"
                )
            leaves = sorted(zip(names, template, strict=True))
            for member, leaf in zip(sorted(members, key=lambda m: m.filename), leaves, strict=True):
                if member.file_size > leaf[1].nbytes + _NPY_HEADER_BYTES:
                    raise RunDirError(f"{path}: {member.filename} is larger than its array can be")
        with np.load(path, allow_pickle=False) as data:
            loaded = [data[name] for name in names]
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as err:
        if isinstance(err, RunDirError):
            raise
        raise RunDirError(
            f"{path} cannot be read as a checkpoint ({type(err).__name__}): it is damaged or not one"
        ) from None
    for i, (old, new) in enumerate(zip(template, loaded, strict=False)):
        if old.shape != new.shape or old.dtype != new.dtype:
            raise RunDirError(
                f"{path}: array {i} is {new.dtype}{new.shape}, expected "
                f"{old.dtype}{old.shape}: it was written by another version"
            )
        if np.issubdtype(new.dtype, np.floating) and not np.isfinite(new).all():
            raise RunDirError(f"{path}: array {i} holds NaN or infinite values")
    return loaded


def _check_optimizer(opt_state: Any, updates: int, what: str, iteration: int, path: Path) -> None:
    """RunDirError naming `path` unless the optimizer state has made `updates` steps and its
    second moments are not negative."""
    import optax

    counts = [np.asarray(x) for x in jax.tree.leaves(opt_state) if jnp.issubdtype(x.dtype, jnp.integer)]
    if any((c != updates).any() for c in counts):
        raise RunDirError(f"{path}: the {what}'s step counts must be {updates} at iteration {iteration}")
    if any((np.asarray(x) < 0).any() for x in jax.tree.leaves(optax.tree_utils.tree_get(opt_state, "nu"))):
        raise RunDirError(f"{path}: Adam's second moments must not be negative")


def check_runner(
    runner: Runner, critic_opt: Any, env: Any, config: LeagueExperiment, iteration: int, path: Path
) -> None:
    """RunDirError naming `path` unless the restored runner is one the run can have reached: the
    learner's seats, the failed-answer floors, the optimizers' update counts (PPO's after the
    critic's warm-up, the warm-up's during it) and second moments, and environments whose
    observation and mask are what the engine computes from their rules fields
    (`tacocat.game.batch.convert.rebuild`)."""
    per_iteration = config.algo.n_epochs * (config.n_envs * config.algo.n_steps // config.algo.batch_size)
    warmup = min(iteration, config.league.critic_warmup)
    _check_optimizer(runner.opt_state, (iteration - warmup) * per_iteration, "optimizer", iteration, path)
    if critic_opt is not None:
        _check_optimizer(critic_opt, warmup * per_iteration, "critic warm-up optimizer", iteration, path)
    _check_rows(runner, env, config, path, "learner")


def check_exploiter(runner: Runner, env: Any, config: LeagueExperiment, iteration: int, path: Path) -> None:
    """RunDirError naming `path` unless the restored exploiter is one the run can have reached:
    its optimizer has made the updates since its last reset, and its rows are valid."""
    exploiter = config.league.exploiter
    assert exploiter is not None
    per_iteration = config.algo.n_epochs * (exploiter.n_envs * config.algo.n_steps // config.algo.batch_size)
    since_reset = iteration % exploiter.reset_every if exploiter.reset_every else iteration
    _check_optimizer(runner.opt_state, since_reset * per_iteration, "exploiter's optimizer", iteration, path)
    _check_rows(runner, env, config, path, "exploiter")


def _check_rows(runner: Runner, env: Any, config: LeagueExperiment, path: Path, who: str) -> None:
    """RunDirError naming `path` unless a runner's per-row fields are valid: seats, failed-answer
    floors, and environments whose observation and mask are what the engine computes from their
    rules fields."""
    from tacocat.game.batch.convert import rebuild

    seat, floor = np.asarray(runner.seat), np.asarray(runner.floor)
    if not np.isin(seat, (0, 1)).all():
        raise RunDirError(f"{path}: the {who}'s seats must be 0 or 1")
    if floor.min() < 0 or floor.max() > max(config.rules_config.values):
        raise RunDirError(f"{path}: the failed-answer floors must be card values")
    state = runner.env_state
    if config.game != "tacocat":
        _check_poker_rows(state, env, path)
        return
    derived = ("observation", "legal_action_mask", "terminated", "truncated", "rewards")
    fields = {f.name: np.asarray(getattr(state, f.name)) for f in dataclasses.fields(state) if f.name not in derived}
    try:
        fresh = rebuild(fields, env.tables)
    except (ValueError, TypeError, IndexError) as err:
        raise RunDirError(
            f"{path}: the environments' state is not a valid batch state ({type(err).__name__})"
        ) from None
    for name in ("observation", "legal_action_mask"):
        if not np.array_equal(np.asarray(getattr(fresh, name)), np.asarray(getattr(state, name))):
            raise RunDirError(f"{path}: the environments' {name} is not the one their rules state gives")


def _check_poker_rows(state: Any, env: Any, path: Path) -> None:
    """RunDirError naming `path` unless every poker environment is the state its deal, first
    player and bets give (`PokerBatch.replay`, every field), with finite rewards of the last step."""
    inner = state.inner
    try:
        cards, first, history = (np.asarray(x, np.int32) for x in (inner._cards, state.first, state.history))
        valid = (
            cards.shape[1:] == (env.game.cards,)
            and cards.min() >= 0
            and cards.max() <= 2
            and np.isin(first, (0, 1)).all()
            and history.min() >= -1
            and history.max() < env.num_actions
        )
        fresh = env.replay_rows(cards, first, history) if valid else None
    except (ValueError, TypeError, IndexError, AttributeError) as err:
        raise RunDirError(
            f"{path}: the environments' state is not a valid poker state ({type(err).__name__})"
        ) from None
    if fresh is None:
        raise RunDirError(f"{path}: the environments' deals, first players or bets are out of range")
    last_step = ("rewards", "terminated", "truncated")  # of the game a row's last step ended
    saved = jax.tree_util.tree_leaves_with_path(state)
    for (where, leaf), rebuilt in zip(saved, jax.tree.leaves(fresh), strict=True):
        name = jax.tree_util.keystr(where, simple=True, separator=".")
        if name not in last_step and not np.array_equal(np.asarray(leaf), np.asarray(rebuilt)):
            raise RunDirError(f"{path}: the environments' {name} is not the one their deals and bets give")
    if not np.isfinite(np.asarray(state.rewards)).all():
        raise RunDirError(f"{path}: the environments' rewards are not finite")
