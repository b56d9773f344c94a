"""`backend: league`: jitted PPO on the batch engine against a league.

Reads top to bottom: the config becomes PPO settings, the blocks of rows of the mixture
(`mixture.split_rows`) and the JAX forms of the fixed opponents (`fixed.make_opponent`: heuristic
ports, `random`, policy files) -> one jitted iteration (`ppo.make_iteration`)
-> `LeagueTrainer`: per iteration, in Python, the snapshot pool (add a snapshot every
`league.snapshot_every` iterations, draw the snapshot each slot plays, uniform or PFSP) around
the jitted call. The policy, `policy.npz`, is the actor as the ladder agent
`league:path=RUN/policy.npz`. The run loop around it is `tacocat.train.loop`.

A warm start (`league.init_actor`) replaces the fresh actor by a policy file's network before
anything else reads it (the snapshot pool's first slot holds it too); `league.critic_warmup`
runs that many first iterations through a second compiled iteration that trains the critic
alone, with its own Adam state (checkpointed with the rest), so that PPO's optimizer makes its
first step at the first PPO iteration, as in a run without warm-up.

A checkpoint (`tacocat.train.checkpoints`) holds `arrays.npz` (every array of the runner,
the pool and the environment state, as the leaves of their pytrees, no pickle) and, in its
marker, `LeagueState`: the pool's bookkeeping and the numpy generator that draws snapshots. A
resumed run continues bit for bit where the checkpoint left off. A resume trusts nothing it
reads: the checkpoint must be one this config's run can have written (`LeagueState.check_against`,
`_read_arrays`, `_check_runner`: every field's type, range, shape and finiteness, sizes bounded
before reading); anything else is one RunDirError naming the file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import stat
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tacocat.train.checkpoints import CheckpointMarker
from tacocat.train.config_files import one_line
from tacocat.train.loop import no_session
from tacocat.train.policy import ExportedPolicy
from tacocat.train.run_dir import RunDirError
from tacocat.train.league.config import LeagueExperiment
from tacocat.train.league.devices import Placement, RowLayout, ask_host_devices, check_devices, make_mesh
from tacocat.agents.jax_forms import make_opponent, opponent_digest
from tacocat.agents.jax_ports import Block, split_rows
from tacocat.train.league.network import Params, actor_from_layers, actor_layers, input_scale
from tacocat.train.league.ppo import Coefficients, PPOSettings, Runner, init_runner, make_iteration, make_optimizer
from tacocat.game.ruleset import compile_rules

POLICY_FILE = "policy.npz"
ARRAYS = "arrays.npz"
_FAST_COMPILE = {"xla_backend_optimization_level": 0}
#: compiled iterations by (rules, settings, blocks, opponents, fast): a second run in the same
#: process (a resume, a test) does not compile again
_COMPILED: dict[tuple, Any] = {}


# ---------------------------------------------------------------------------------------
# from the config
# ---------------------------------------------------------------------------------------
def ppo_settings(config: LeagueExperiment) -> PPOSettings:
    """The PPO settings of a league config; `anneal_lr` decays the rate over the PPO iterations
    (those after `league.critic_warmup`)."""
    algo = config.algo
    iterations = config.iterations - config.league.critic_warmup
    updates = iterations * algo.n_epochs * (config.n_envs * algo.n_steps // algo.batch_size)
    return PPOSettings(
        n_envs=config.n_envs, n_steps=algo.n_steps, minibatch_size=algo.batch_size, n_epochs=algo.n_epochs,
        learning_rate=algo.learning_rate, gamma=algo.gamma, gae_lambda=algo.gae_lambda, clip_range=algo.clip_range,
        vf_coef=algo.vf_coef, max_grad_norm=algo.max_grad_norm,
        hidden=tuple(algo.net_arch), activation=algo.activation, learner_seat=config.learner_seat,
        anneal_updates=updates if config.league.anneal_lr else 0, privileged_critic=config.league.privileged_critic,
        decision_slots=decision_slots(config),
        magnet=config.league.magnet.kind if config.league.magnet is not None else "none")


def linear(start: float, final: float | None, step: int, steps: int) -> float:
    """`start` moved linearly to `final` over `steps` (optax's linear_schedule): `start` at step
    0, `final` from step `steps` on; `start` throughout when `final` is None."""
    if final is None or steps <= 0:
        return start
    return start + (final - start) * min(step / steps, 1.0)


def coefficients(config: LeagueExperiment, iteration: int) -> Coefficients:
    """The entropy and KL weights of iteration `iteration` (0-based): their schedules run over
    the PPO iterations, after the critic's warm-up; the last PPO iteration has the final values."""
    league = config.league
    step, steps = max(iteration - league.critic_warmup, 0), config.iterations - league.critic_warmup - 1
    magnet = league.magnet
    kl = 0.0 if magnet is None else linear(magnet.kl_coef, magnet.kl_coef_final, step, steps)
    return Coefficients.of(linear(config.algo.ent_coef, league.ent_coef_final, step, steps), kl)


def decision_slots(config: LeagueExperiment, n_envs: int | None = None) -> int:
    """The update's slots for the learner's decisions (`league.decision_share` of every minibatch,
    rounded up) in a rollout of `n_envs` games (the config's by default); 0 for a share of 1
    (the update reads every env step)."""
    share = config.league.decision_share
    if share >= 1:
        return 0
    minibatches = (n_envs or config.n_envs) * config.algo.n_steps // config.algo.batch_size
    return minibatches * math.ceil(share * config.algo.batch_size)


def blocks_of(config: LeagueExperiment) -> list[Block]:
    league = config.league
    return split_rows(config.n_envs, league.selfplay_weight, league.snapshot_weight, league.snapshot_slots,
                      [o.weight for o in config.opponents])


def build(config: LeagueExperiment, critic_only: bool = False) -> tuple[Any, PPOSettings, Any]:
    """(env, settings, jitted iteration) of a league config; with `critic_only`, the critic's
    warm-up iteration (`ppo.make_iteration`), whose own optimizer keeps a constant rate."""
    from tacocat.game.batch import TacocatBatch

    env = TacocatBatch(config.rules_config)
    settings = ppo_settings(config)
    blocks = blocks_of(config)
    specs = tuple(o.agent for o in config.opponents)
    iteration_settings = dataclasses.replace(settings, anneal_updates=0) if critic_only else settings
    devices = config.league.devices
    key = (json.dumps(config.rules_config.canonical_dict(), sort_keys=True), iteration_settings, tuple(blocks), specs,
           tuple(opponent_digest(spec) for spec in specs), config.league.fast_compile, critic_only, devices)
    if key not in _COMPILED:
        opponents = [make_opponent(spec, config.rules_config) for spec in specs]
        scale = input_scale(compile_rules(env.config))
        mesh = make_mesh(devices) if devices > 1 else None
        _COMPILED[key] = make_iteration(env, iteration_settings, blocks, opponents, scale,
                                        _FAST_COMPILE if config.league.fast_compile else None, critic_only=critic_only,
                                        mesh=mesh)
    return env, settings, _COMPILED[key]


def exploiter_settings(config: LeagueExperiment) -> PPOSettings:
    """The exploiter's PPO: `algo`'s, on its own games, at a constant rate, entropy weight and
    without a magnet (it best-responds; `league.exploiter`)."""
    exploiter = config.league.exploiter
    assert exploiter is not None
    return dataclasses.replace(ppo_settings(config), n_envs=exploiter.n_envs, anneal_updates=0, magnet="none",
                               decision_slots=decision_slots(config, exploiter.n_envs))


def build_exploiter(config: LeagueExperiment) -> Any:
    """The exploiter's jitted iteration: every one of its games against the current main policy,
    given as a one-snapshot pool (`ppo.make_iteration` with a single snapshot block)."""
    from tacocat.game.batch import TacocatBatch

    env = TacocatBatch(config.rules_config)
    settings = exploiter_settings(config)
    blocks = (Block("snapshot", 0, 0, settings.n_envs),)
    key = (json.dumps(config.rules_config.canonical_dict(), sort_keys=True), settings, blocks, "exploiter",
           config.league.fast_compile)
    if key not in _COMPILED:
        scale = input_scale(compile_rules(env.config))
        _COMPILED[key] = make_iteration(env, settings, blocks, [], scale,
                                        _FAST_COMPILE if config.league.fast_compile else None)
    return _COMPILED[key]


def placement_of(config: LeagueExperiment) -> Placement | None:
    """Where a multi-device run (`league.devices` > 1) keeps its state; None on one device.
    ValueError, one line, unless JAX has that many devices."""
    devices = config.league.devices
    if devices == 1:
        return None
    check_devices(devices)
    return Placement(RowLayout(tuple(blocks_of(config)), devices), make_mesh(devices))


# ---------------------------------------------------------------------------------------
# the snapshot pool (arrays in JAX, bookkeeping in Python)
# ---------------------------------------------------------------------------------------
class SnapshotPool:
    """Up to `size` frozen copies of the learner's params, stacked on a leading axis (slot 0
    holds the initial policy from the start), with the learner's results against each."""

    def __init__(self, params: Params, size: int) -> None:
        self.arrays: Params = jax.tree.map(lambda x: jnp.stack([x] * size), params)
        self.size = size
        self.filled = 1
        self.next_slot = 1 % size
        self.games = [0] * size
        self.wins = [0] * size

    def add(self, params: Params) -> None:
        slot = self.next_slot
        self.arrays = jax.tree.map(lambda pool, x: pool.at[slot].set(x), self.arrays, params)
        self.games[slot] = self.wins[slot] = 0
        self.filled = min(self.filled + 1, self.size)
        self.next_slot = (slot + 1) % self.size

    def draw(self, rng: np.random.Generator, slots: int, sampling: str, power: float) -> np.ndarray:
        """The snapshot each slot plays: uniform, or PFSP ((1 - learner's win rate) ** power,
        the win rate with one prior win and one prior loss)."""
        if sampling == "uniform":
            weights = np.ones(self.filled)
        else:
            rate = (np.array(self.wins[:self.filled]) + 1) / (np.array(self.games[:self.filled]) + 2)
            weights = (1 - rate) ** power + 1e-6
        return rng.choice(self.filled, size=slots, p=weights / weights.sum()).astype(np.int32)

    def record(self, blocks: list[Block], snapshot_ids: np.ndarray, games: np.ndarray, wins: np.ndarray) -> None:
        for block in blocks:
            if block.kind == "snapshot":
                slot = int(snapshot_ids[block.index])
                self.games[slot] += int(games[block.start:block.stop].sum())
                self.wins[slot] += int(wins[block.start:block.stop].sum())

    def bookkeeping(self) -> dict[str, Any]:
        return {"filled": self.filled, "next_slot": self.next_slot, "games": self.games, "wins": self.wins}

    def restore(self, arrays: Params, book: dict[str, Any]) -> None:
        self.arrays = arrays
        self.filled, self.next_slot = book["filled"], book["next_slot"]
        self.games, self.wins = list(book["games"]), list(book["wins"])


# ---------------------------------------------------------------------------------------
# checkpoints and export (arrays + JSON; nothing is pickled)
# ---------------------------------------------------------------------------------------
def _plain(tree: Any) -> Any:
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
            problems.append(f"timesteps {timesteps} at iteration {iteration} is not a point of this run "
                            f"({per_iteration} env steps per iteration, at most {last})")
        snapshots, size = 1 + iteration // league.snapshot_every, league.snapshot_pool
        if league.exploiter is not None:
            snapshots += iteration // league.exploiter.snapshot_every
        book = self.pool
        if (book.filled, book.next_slot) != (min(snapshots, size), snapshots % size):
            problems.append(f"pool.filled and pool.next_slot must be {min(snapshots, size)} and {snapshots % size} "
                            f"at iteration {iteration}")
        if len(book.games) != size or len(book.wins) != size:
            problems.append(f"pool.games and pool.wins must hold league.snapshot_pool = {size} counts")
        elif any(w > g for g, w in zip(book.games, book.wins)) or any(book.games[book.filled:]):
            problems.append("pool.wins must not exceed pool.games, and empty slots have no games")
        elif sum(book.games) > timesteps:
            problems.append("pool.games counts more games than the run has played steps")
        if problems:
            raise RunDirError(f"{path}: " + "; ".join(problems))


def _read_arrays(path: Path, template: list[np.ndarray]) -> list[np.ndarray]:
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
                raise RunDirError(f"{path} holds {len(members)} members, not this run's {len(names)} arrays "
                                  "leaf_0 ...: it was written by another version or is not a checkpoint")
            for member, leaf in zip(sorted(members, key=lambda m: m.filename), sorted(zip(names, template))):
                if member.file_size > leaf[1].nbytes + _NPY_HEADER_BYTES:
                    raise RunDirError(f"{path}: {member.filename} is larger than its array can be")
        with np.load(path, allow_pickle=False) as data:
            loaded = [data[name] for name in names]
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error) as err:
        if isinstance(err, RunDirError):
            raise
        raise RunDirError(f"{path} cannot be read as a checkpoint ({type(err).__name__}): it is damaged or not "
                          "one") from None
    for i, (old, new) in enumerate(zip(template, loaded)):
        if old.shape != new.shape or old.dtype != new.dtype:
            raise RunDirError(f"{path}: array {i} is {new.dtype}{new.shape}, expected "
                              f"{old.dtype}{old.shape}: it was written by another version")
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


def _check_runner(runner: Runner, critic_opt: Any, env: Any, config: LeagueExperiment, iteration: int,
                  path: Path) -> None:
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


def _check_exploiter(runner: Runner, env: Any, config: LeagueExperiment, iteration: int, path: Path) -> None:
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
    derived = ("observation", "legal_action_mask", "terminated", "truncated", "rewards")
    fields = {f.name: np.asarray(getattr(state, f.name)) for f in dataclasses.fields(state) if f.name not in derived}
    try:
        fresh = rebuild(fields, env.tables)
    except (ValueError, TypeError, IndexError) as err:
        raise RunDirError(f"{path}: the environments' state is not a valid batch state ({type(err).__name__})") from None
    for name in ("observation", "legal_action_mask"):
        if not np.array_equal(np.asarray(getattr(fresh, name)), np.asarray(getattr(state, name))):
            raise RunDirError(f"{path}: the environments' {name} is not the one their rules state gives")


def export_policy(params: Params, path: Path, config: LeagueExperiment, timesteps: int) -> Path:
    """The actor as a `tacocat-mlp-v1` file (`tacocat.agents.mlp_agent` plays it with numpy)."""
    from tacocat.agents.mlp_agent import LEAGUE_ALGORITHM
    from tacocat.agents.policy_file import save_policy

    scale = input_scale(compile_rules(config.rules_config))
    return save_policy(path, actor_layers(params, scale), activation=config.algo.activation, rules_config=config.rules_config,
                       algorithm=LEAGUE_ALGORITHM, experiment=config.name, seed=config.seed, timesteps=timesteps)


# ---------------------------------------------------------------------------------------
# the trainer
# ---------------------------------------------------------------------------------------
def initial_actor(spec: str, config: LeagueExperiment) -> list[tuple[jax.Array, jax.Array]]:
    """The actor of the policy file that agent `spec` plays (`league.init_actor`), as the
    learner's parameters (`network.actor_from_layers`; validation checked its rules and shape)."""
    from tacocat.agents.registry import make_agent

    agent = make_agent(spec)
    return actor_from_layers(agent.layers, input_scale(compile_rules(config.rules_config)))  # type: ignore[attr-defined]


@jax.jit
def _moved_toward(magnet: Any, actor: Any, rate: jax.Array) -> Any:
    """The EMA magnet's refresh: every parameter `rate` of the way to the actor's."""
    return jax.tree.map(lambda m, a: m + rate * (a - m), magnet, actor)


class LeagueTrainer:
    progress_fields: tuple[str, ...] = (
        "learner_steps", "decisions_dropped", "games", "learner_win_rate", "policy_loss", "value_loss", "entropy",
        "approx_kl", "pool_size")

    def __init__(self, config: LeagueExperiment) -> None:
        self.config, self.league = config, config.league
        #: several devices: where the state lives (None: JAX's default device)
        self.placement = placement_of(config)
        self.env, self.settings, self.iteration_fn = build(config)
        self.blocks = blocks_of(config)
        runner = init_runner(self.env, self.settings, jax.random.key(config.seed))
        if self.league.init_actor is not None:  # warm start; Adam's moments are zeros whatever the weights
            actor = initial_actor(self.league.init_actor, config)
            runner = runner._replace(params={**runner.params, "actor": actor},
                                     magnet=None if runner.magnet is None else actor)
        #: the critic's warm-up: its iteration and its own optimizer state (None without one)
        self.warmup_fn, self.critic_opt = None, None
        if self.league.magnet is not None:
            self.progress_fields = (*self.progress_fields, "magnet_kl")
        if self.league.critic_warmup:
            self.warmup_fn = build(config, critic_only=True)[2]
            warmup_settings = dataclasses.replace(self.settings, anneal_updates=0)
            self.critic_opt = self._on_devices(make_optimizer(warmup_settings).init(runner.params["critic"]))
            self.progress_fields = (*self.progress_fields, "critic_warmup")
        self.pool = SnapshotPool(runner.params, self.league.snapshot_pool)
        self.pool.arrays = self._on_devices(self.pool.arrays)
        self.runner = self._runner_on_devices(runner)
        #: the main exploiter (`league.exploiter`): its iteration and its runner (None without one)
        self.exploiter_fn, self.exploiter = None, None
        if self.league.exploiter is not None:
            self.exploiter_fn = build_exploiter(config)
            self.exploiter_settings = exploiter_settings(config)
            fresh = init_runner(self.env, self.exploiter_settings, jax.random.fold_in(jax.random.key(config.seed), 1))
            self.exploiter = self._exploiter_restarted(fresh, 0)
            self.progress_fields = (*self.progress_fields, "exploiter_games", "exploiter_win_rate")
        self.rng = np.random.default_rng(config.seed)
        self.per_iteration = config.steps_per_iteration
        self.iteration = 0

    @property
    def timesteps(self) -> int:
        return self.iteration * self.per_iteration

    # -- where the arrays live (several devices: tacocat/train/league/devices.py) -----------
    def _on_devices(self, tree: Any, rows: bool = False) -> Any:
        return tree if self.placement is None else self.placement.place(tree, rows)

    def _on_host(self, tree: Any, rows: bool = False) -> Any:
        return jax.device_get(tree) if self.placement is None else self.placement.fetch(tree, rows)

    def _runner_on_devices(self, runner: Runner) -> Runner:
        if self.placement is None:
            return runner
        return Runner(self._on_devices(runner.params), self._on_devices(runner.opt_state),
                      self._on_devices(runner.env_state, rows=True), self._on_devices(runner.seat, rows=True),
                      self._on_devices(runner.floor, rows=True), self._on_devices(runner.key),
                      self._on_devices(runner.magnet))

    def _runner_on_host(self) -> Runner:
        runner = self.runner
        if self.placement is None:
            return runner
        return Runner(self._on_host(runner.params), self._on_host(runner.opt_state),
                      self._on_host(runner.env_state, rows=True), self._on_host(runner.seat, rows=True),
                      self._on_host(runner.floor, rows=True), self._on_host(runner.key), self._on_host(runner.magnet))

    def params(self) -> Params:
        """The learner's parameters, on the host when they live on several devices."""
        return self._on_host(self.runner.params) if self.placement is not None else self.runner.params

    # -- the main exploiter (league.exploiter) -------------------------------------------
    def _exploiter_restarted(self, exploiter: Runner, restart: int) -> Runner:
        """The exploiter at its start (`restart` 0) and at each reset: the main policy's current
        weights or fresh ones (drawn from the seed and the restart's number), fresh Adam
        statistics; its games go on."""
        config = self.config
        if config.league.exploiter.reset_to == "main":
            params = self.params()
        else:
            key = jax.random.fold_in(jax.random.fold_in(jax.random.key(config.seed), 2), restart)
            params = init_runner(self.env, self.exploiter_settings, key).params
        return exploiter._replace(params=params, opt_state=make_optimizer(self.exploiter_settings).init(params))

    def _train_exploiter(self) -> dict[str, Any]:
        """One exploiter iteration, every game against the main policy as it is now."""
        main = jax.tree.map(lambda x: x[None], self.params())
        coefs = Coefficients.of(self.config.algo.ent_coef, 0.0)
        self.exploiter, metrics = self.exploiter_fn(self.exploiter, main, jnp.zeros(1, jnp.int32), coefs)
        games, wins = jax.device_get((metrics["games_per_row"], metrics["wins_per_row"]))
        return {"exploiter_games": int(games.sum()), "exploiter_win_rate": float(wins.sum() / max(games.sum(), 1))}

    def iterate(self) -> dict[str, Any]:
        league, pool = self.league, self.pool
        exploiter_row = self._train_exploiter() if self.exploiter is not None else {}
        snapshot_ids = pool.draw(self.rng, league.snapshot_slots, league.sampling, league.pfsp_power)
        warming = self.iteration < league.critic_warmup
        ids = self._on_devices(jnp.asarray(snapshot_ids))
        coefs = self._on_devices(coefficients(self.config, self.iteration))
        if warming:
            self.runner, self.critic_opt, metrics = self.warmup_fn(self.runner, pool.arrays, ids, coefs,
                                                                   self.critic_opt)
        else:
            self.runner, metrics = self.iteration_fn(self.runner, pool.arrays, ids, coefs)
        metrics = self._on_host(metrics)
        self.iteration += 1
        magnet = league.magnet
        if magnet is not None and magnet.kind == "ema" and self.iteration % magnet.refresh_every == 0:
            self.runner = self.runner._replace(magnet=_moved_toward(self.runner.magnet, self.runner.params["actor"],
                                                                    jnp.float32(magnet.ema_rate)))
        games, wins = metrics["games_per_row"], metrics["wins_per_row"]
        pool.record(self.blocks, snapshot_ids, games, wins)
        if self.iteration % league.snapshot_every == 0:
            pool.add(self.runner.params)
        exploiter = league.exploiter
        if exploiter is not None:
            if self.iteration % exploiter.snapshot_every == 0:
                pool.add(self.exploiter.params)
            if exploiter.reset_every and self.iteration % exploiter.reset_every == 0:
                self.exploiter = self._exploiter_restarted(self.exploiter, self.iteration // exploiter.reset_every)
        row = {"learner_steps": int(metrics["learner_steps"]), "decisions_dropped": int(metrics["decisions_dropped"]),
               "games": int(games.sum()), "learner_win_rate": float(wins.sum() / max(games.sum(), 1)),
               "pool_size": pool.filled,
               **{k: float(metrics[k]) for k in ("policy_loss", "value_loss", "entropy", "approx_kl")}}
        if league.magnet is not None:
            row["magnet_kl"] = float(metrics["magnet_kl"])
        if league.critic_warmup:
            row["critic_warmup"] = int(warming)
        return {**row, **exploiter_row}

    # -- checkpoints ----------------------------------------------------------------------
    def _state(self) -> tuple:
        """The arrays a checkpoint holds: the runner, the pool and, with a critic warm-up, its
        optimizer state, and with an exploiter, its runner."""
        state = (self._runner_on_host(), self._on_host(self.pool.arrays))
        if self.critic_opt is not None:
            state = (*state, self._on_host(self.critic_opt))
        return state if self.exploiter is None else (*state, self.exploiter)

    def save(self, folder: Path | None) -> dict[str, Any]:
        """The checkpoint into `folder`; None on a process that does not write the run (a
        multi-process run's others): it takes its part in gathering the state, and writes nothing."""
        leaves = jax.tree.leaves(_plain(self._state()))
        if folder is not None:
            np.savez(folder / ARRAYS, **{f"leaf_{i}": np.asarray(x) for i, x in enumerate(leaves)})
        return LeagueState(rng=self.rng.bit_generator.state, pool=self.pool.bookkeeping()).model_dump()

    def restore(self, folder: Path, marker: CheckpointMarker) -> None:
        """The checkpoint read into the shapes of this (fresh) trainer's runner and pool and
        checked against them and the config; nothing changes unless everything checks."""
        path = folder.with_suffix(".json")
        try:
            state = LeagueState.model_validate(marker.trainer)
        except ValidationError as err:
            raise RunDirError(f"{path}: trainer: {one_line(err)}") from None
        state.check_against(self.config, marker, path)
        leaves, treedef = jax.tree.flatten(_plain(self._state()))
        loaded = _read_arrays(folder / ARRAYS, [np.asarray(x) for x in leaves])
        runner, arrays, *rest = jax.tree.unflatten(treedef, [jnp.asarray(x) for x in loaded])
        runner = runner._replace(key=jax.random.wrap_key_data(runner.key))
        critic_opt = rest.pop(0) if self.critic_opt is not None else None
        exploiter = rest.pop(0) if self.exploiter is not None else None
        _check_runner(runner, critic_opt, self.env, self.config, marker.iteration, folder / ARRAYS)
        if exploiter is not None:
            exploiter = exploiter._replace(key=jax.random.wrap_key_data(exploiter.key))
            _check_exploiter(exploiter, self.env, self.config, marker.iteration, folder / ARRAYS)
            self.exploiter = exploiter
        self.runner, self.iteration = self._runner_on_devices(runner), marker.iteration
        self.critic_opt = None if critic_opt is None else self._on_devices(critic_opt)
        self.pool.restore(self._on_devices(arrays), state.pool.model_dump())
        self.rng.bit_generator.state = state.rng.model_dump()

    # -- the policy -----------------------------------------------------------------------
    def evaluation_agent(self, run_dir: Path) -> str:
        return self.export(run_dir).spec(run_dir)

    def export(self, run_dir: Path, best: bool = False) -> ExportedPolicy:
        name = "best_policy.npz" if best else POLICY_FILE
        export_policy(self.params(), run_dir / name, self.config, self.timesteps)
        return ExportedPolicy("league", name)

    def close(self) -> None:
        pass


@contextlib.contextmanager
def session(config: LeagueExperiment, address: str | None) -> Iterator[dict[str, Any]]:
    """No runtime to start; run.json adds JAX's backend, devices and processes. With
    `league.devices` > 1 in one process, the host CPU is split into that many XLA devices if JAX
    has not started yet; JAX must then have exactly that many devices (every process's), and
    every process of a multi-process run the same config (process 0's), before anything is
    written. The loop reads `process_index` (process 0 writes the run)."""
    from tacocat.train import distributed

    with no_session(config, address):
        if distributed.joined() is None:
            ask_host_devices(config.league.devices)
        if config.league.devices > 1 or distributed.joined() is not None:
            check_devices(config.league.devices)
        distributed.check_same_config(config.to_yaml())
        yield {"jax_backend": jax.default_backend(), "jax_devices": [str(d) for d in jax.devices()],
               "jax_processes": jax.process_count(), "process_index": jax.process_index()}


def make_trainer(config: LeagueExperiment, run_dir: Path) -> LeagueTrainer:
    return LeagueTrainer(config)
