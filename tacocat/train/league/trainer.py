"""`backend: league`: jitted PPO on the batch engine against a league.

Reads top to bottom: the config becomes PPO settings, the blocks of rows of the mixture
(`tacocat.agents.jax_ports.split_rows`) and the JAX forms of the fixed opponents
(`tacocat.agents.jax_forms.make_opponent`: heuristic ports, `random`, policy files) -> one
jitted iteration (`ppo.make_iteration`) -> `LeagueTrainer`: per iteration, in Python, the
snapshot pool (`pool.SnapshotPool`: add a snapshot every `league.snapshot_every` iterations,
draw the snapshot each slot plays, uniform or PFSP) around the jitted call. The policy,
`policy.npz`, is the actor as the ladder agent `league:path=RUN/policy.npz`. The run loop around
it is `tacocat.train.loop`.

A warm start (`league.init_actor`) replaces the fresh actor by a policy file's network before
anything else reads it (the snapshot pool's first slot holds it too); `league.critic_warmup`
runs that many first iterations through a second compiled iteration that trains the critic
alone, with its own Adam state (checkpointed with the rest), so that PPO's optimizer makes its
first step at the first PPO iteration, as in a run without warm-up.

A checkpoint holds `arrays.npz` (every array of the runner, the pool and the environment state,
no pickle) and, in its marker, `LeagueState`: the pool's bookkeeping and the numpy generator
that draws snapshots; its format and the checks of a resume, which trusts nothing it reads, are
`tacocat.train.league.checkpoint`. A resumed run continues bit for bit where the checkpoint left
off.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import ValidationError

from tacocat.agents.jax_forms import make_opponent, opponent_digest
from tacocat.agents.jax_ports import Block, split_rows
from tacocat.game.errors import one_line
from tacocat.game.ruleset import compile_rules
from tacocat.train.checkpoints import CheckpointMarker
from tacocat.train.league.checkpoint import (
    ARRAYS,
    LeagueState,
    check_exploiter,
    check_runner,
    plain_arrays,
    read_arrays,
)
from tacocat.train.league.config import LeagueExperiment
from tacocat.train.league.devices import Placement, RowLayout, ask_host_devices, check_devices, make_mesh
from tacocat.train.league.network import Params, actor_from_layers, actor_layers, input_scale
from tacocat.train.league.pool import SnapshotPool
from tacocat.train.league.ppo import Coefficients, PPOSettings, Runner, init_runner, make_iteration, make_optimizer
from tacocat.train.loop import no_session
from tacocat.train.policy import ExportedPolicy
from tacocat.train.run_dir import RunDirError

POLICY_FILE = "policy.npz"
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
        n_envs=config.n_envs,
        n_steps=algo.n_steps,
        minibatch_size=algo.batch_size,
        n_epochs=algo.n_epochs,
        learning_rate=algo.learning_rate,
        gamma=algo.gamma,
        gae_lambda=algo.gae_lambda,
        clip_range=algo.clip_range,
        vf_coef=algo.vf_coef,
        max_grad_norm=algo.max_grad_norm,
        hidden=tuple(algo.net_arch),
        activation=algo.activation,
        learner_seat=config.learner_seat,
        anneal_updates=updates if config.league.anneal_lr else 0,
        privileged_critic=config.league.privileged_critic,
        decision_slots=decision_slots(config),
        magnet=config.league.magnet.kind if config.league.magnet is not None else "none",
        game=config.game,
    )


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
    return split_rows(
        config.n_envs,
        league.selfplay_weight,
        league.snapshot_weight,
        league.snapshot_slots,
        [o.weight for o in config.opponents],
    )


def batch_env(config: LeagueExperiment) -> tuple[Any, np.ndarray]:
    """The batch env the league trains on (`league.game`) and what its networks multiply an
    observation by (`network.input_scale` for Tacocat; a poker observation is 0/1 already)."""
    if config.game == "tacocat":
        from tacocat.game.batch import TacocatBatch

        env = TacocatBatch(config.rules_config)
        return env, input_scale(compile_rules(env.config))
    from tacocat.analysis.poker_batch import PokerBatch

    poker = PokerBatch(config.game)
    return poker, np.ones(poker.observation_shape, np.float32)


def _compile_key(config: LeagueExperiment) -> tuple:
    """What a compiled iteration is built for besides its settings: Tacocat's rules, or the poker game."""
    if config.game == "tacocat":
        return (json.dumps(config.rules_config.canonical_dict(), sort_keys=True),)
    return (config.game,)


def build(config: LeagueExperiment, critic_only: bool = False) -> tuple[Any, PPOSettings, Any]:
    """(env, settings, jitted iteration) of a league config; with `critic_only`, the critic's
    warm-up iteration (`ppo.make_iteration`), whose own optimizer keeps a constant rate."""
    env, scale = batch_env(config)
    settings = ppo_settings(config)
    blocks = blocks_of(config)
    specs = tuple(o.agent for o in config.opponents)
    iteration_settings = dataclasses.replace(settings, anneal_updates=0) if critic_only else settings
    devices = config.league.devices
    key = (
        *_compile_key(config),
        iteration_settings,
        tuple(blocks),
        specs,
        tuple(opponent_digest(spec) for spec in specs),
        config.league.fast_compile,
        critic_only,
        devices,
    )
    if key not in _COMPILED:
        opponents = [make_opponent(spec, config.rules_config) for spec in specs]
        mesh = make_mesh(devices) if devices > 1 else None
        _COMPILED[key] = make_iteration(
            env,
            iteration_settings,
            blocks,
            opponents,
            scale,
            _FAST_COMPILE if config.league.fast_compile else None,
            critic_only=critic_only,
            mesh=mesh,
        )
    return env, settings, _COMPILED[key]


def exploiter_settings(config: LeagueExperiment) -> PPOSettings:
    """The exploiter's PPO: `algo`'s, on its own games, at a constant rate, entropy weight and
    without a magnet (it best-responds; `league.exploiter`)."""
    exploiter = config.league.exploiter
    assert exploiter is not None
    return dataclasses.replace(
        ppo_settings(config),
        n_envs=exploiter.n_envs,
        anneal_updates=0,
        magnet="none",
        decision_slots=decision_slots(config, exploiter.n_envs),
    )


def build_exploiter(config: LeagueExperiment) -> Any:
    """The exploiter's jitted iteration: every one of its games against the current main policy,
    given as a one-snapshot pool (`ppo.make_iteration` with a single snapshot block)."""
    env, scale = batch_env(config)
    settings = exploiter_settings(config)
    blocks = (Block("snapshot", 0, 0, settings.n_envs),)
    key = (
        *_compile_key(config),
        settings,
        blocks,
        "exploiter",
        config.league.fast_compile,
    )
    if key not in _COMPILED:
        _COMPILED[key] = make_iteration(
            env, settings, blocks, [], scale, _FAST_COMPILE if config.league.fast_compile else None
        )
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
# export (the actor as a policy file)
# ---------------------------------------------------------------------------------------
def export_policy(params: Params, path: Path, config: LeagueExperiment, timesteps: int) -> Path:
    """The actor as a `tacocat-mlp-v1` file (`tacocat.agents.mlp_agent` plays it with numpy),
    or on a poker game as a `tacocat-poker-mlp-v1` file (`tacocat.analysis.poker`)."""
    from tacocat.agents.mlp_agent import LEAGUE_ALGORITHM
    from tacocat.agents.policy_file import save_policy

    if config.game != "tacocat":
        from tacocat.analysis import poker

        layers = actor_layers(params, batch_env(config)[1])
        meta = {"experiment": config.name, "seed": config.seed, "timesteps": timesteps}
        return poker.save_policy(path, layers, config.game, config.algo.activation, **meta)
    scale = input_scale(compile_rules(config.rules_config))
    return save_policy(
        path,
        actor_layers(params, scale),
        activation=config.algo.activation,
        rules_config=config.rules_config,
        algorithm=LEAGUE_ALGORITHM,
        experiment=config.name,
        seed=config.seed,
        timesteps=timesteps,
    )


# ---------------------------------------------------------------------------------------
# the trainer
# ---------------------------------------------------------------------------------------
def initial_actor(spec: str, config: LeagueExperiment) -> list[tuple[jax.Array, jax.Array]]:
    """The actor of the policy file that agent `spec` plays (`league.init_actor`), as the
    learner's parameters (`network.actor_from_layers`; validation checked its rules and shape)."""
    from tacocat.agents.registry import make_agent

    agent = make_agent(spec)
    return actor_from_layers(agent.layers, input_scale(compile_rules(config.rules_config)))  # type: ignore[attr-defined]  # MLPPolicyAgent


@jax.jit
def _moved_toward(magnet: Any, actor: Any, rate: jax.Array) -> Any:
    """The EMA magnet's refresh: every parameter `rate` of the way to the actor's."""
    return jax.tree.map(lambda m, a: m + rate * (a - m), magnet, actor)


class LeagueTrainer:
    progress_fields: tuple[str, ...] = (
        "learner_steps",
        "decisions_dropped",
        "games",
        "learner_win_rate",
        "policy_loss",
        "value_loss",
        "entropy",
        "approx_kl",
        "pool_size",
    )

    def __init__(self, config: LeagueExperiment) -> None:
        self.config, self.league = config, config.league
        #: several devices: where the state lives (None: JAX's default device)
        self.placement = placement_of(config)
        self.env, self.settings, self.iteration_fn = build(config)
        self.blocks = blocks_of(config)
        runner = init_runner(self.env, self.settings, jax.random.key(config.seed))
        if self.league.init_actor is not None:  # warm start; Adam's moments are zeros whatever the weights
            actor = initial_actor(self.league.init_actor, config)
            runner = runner._replace(
                params={**runner.params, "actor": actor}, magnet=None if runner.magnet is None else actor
            )
        #: the critic's warm-up: its iteration and its own optimizer state (None without one)
        self.warmup_fn: Callable[..., Any] | None = None
        self.critic_opt: Any = None
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
        self.exploiter_fn: Callable[..., Any] | None = None
        self.exploiter: Runner | None = None
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
        return Runner(
            self._on_devices(runner.params),
            self._on_devices(runner.opt_state),
            self._on_devices(runner.env_state, rows=True),
            self._on_devices(runner.seat, rows=True),
            self._on_devices(runner.floor, rows=True),
            self._on_devices(runner.key),
            self._on_devices(runner.magnet),
        )

    def _runner_on_host(self) -> Runner:
        runner = self.runner
        if self.placement is None:
            return runner
        return Runner(
            self._on_host(runner.params),
            self._on_host(runner.opt_state),
            self._on_host(runner.env_state, rows=True),
            self._on_host(runner.seat, rows=True),
            self._on_host(runner.floor, rows=True),
            self._on_host(runner.key),
            self._on_host(runner.magnet),
        )

    def params(self) -> Params:
        """The learner's parameters, on the host when they live on several devices."""
        return self._on_host(self.runner.params) if self.placement is not None else self.runner.params

    # -- the main exploiter (league.exploiter) -------------------------------------------
    def _exploiter_restarted(self, exploiter: Runner, restart: int) -> Runner:
        """The exploiter at its start (`restart` 0) and at each reset: the main policy's current
        weights or fresh ones (drawn from the seed and the restart's number), fresh Adam
        statistics; its games go on."""
        config = self.config
        assert config.league.exploiter is not None, "an exploiter is only (re)started in a league with one"
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
        assert self.exploiter_fn is not None and self.exploiter is not None, "trained only in a league with one"
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
            assert self.warmup_fn is not None, "a critic warm-up has its iteration (built with it)"
            self.runner, self.critic_opt, metrics = self.warmup_fn(
                self.runner, pool.arrays, ids, coefs, self.critic_opt
            )
        else:
            self.runner, metrics = self.iteration_fn(self.runner, pool.arrays, ids, coefs)
        metrics = self._on_host(metrics)
        self.iteration += 1
        magnet = league.magnet
        if magnet is not None and magnet.kind == "ema" and self.iteration % magnet.refresh_every == 0:
            self.runner = self.runner._replace(
                magnet=_moved_toward(self.runner.magnet, self.runner.params["actor"], jnp.float32(magnet.ema_rate))
            )
        games, wins = metrics["games_per_row"], metrics["wins_per_row"]
        pool.record(self.blocks, snapshot_ids, games, wins)
        if self.iteration % league.snapshot_every == 0:
            pool.add(self.runner.params)
        exploiter = league.exploiter
        if exploiter is not None:
            assert self.exploiter is not None, "a league with an exploiter config has its runner"
            if self.iteration % exploiter.snapshot_every == 0:
                pool.add(self.exploiter.params)
            if exploiter.reset_every and self.iteration % exploiter.reset_every == 0:
                self.exploiter = self._exploiter_restarted(self.exploiter, self.iteration // exploiter.reset_every)
        row = {
            "learner_steps": int(metrics["learner_steps"]),
            "decisions_dropped": int(metrics["decisions_dropped"]),
            "games": int(games.sum()),
            "learner_win_rate": float(wins.sum() / max(games.sum(), 1)),
            "pool_size": pool.filled,
            **{k: float(metrics[k]) for k in ("policy_loss", "value_loss", "entropy", "approx_kl")},
        }
        if league.magnet is not None:
            row["magnet_kl"] = float(metrics["magnet_kl"])
        if league.critic_warmup:
            row["critic_warmup"] = int(warming)
        return {**row, **exploiter_row}

    # -- checkpoints ----------------------------------------------------------------------
    def _state(self) -> tuple:
        """The arrays a checkpoint holds: the runner, the pool and, with a critic warm-up, its
        optimizer state, and with an exploiter, its runner."""
        state: tuple[Any, ...] = (self._runner_on_host(), self._on_host(self.pool.arrays))
        if self.critic_opt is not None:
            state = (*state, self._on_host(self.critic_opt))
        return state if self.exploiter is None else (*state, self.exploiter)

    def save(self, folder: Path | None) -> dict[str, Any]:
        """The checkpoint into `folder`; None on a process that does not write the run (a
        multi-process run's others): it takes its part in gathering the state, and writes nothing."""
        leaves = jax.tree.leaves(plain_arrays(self._state()))
        if folder is not None:
            # plain numeric arrays (keys as their data): no pickle written, none read (read_arrays);
            # named, the flag is also not one that the ** leaves could fill (numpy's stub types it bool)
            leaves_by_name = {f"leaf_{i}": np.asarray(x) for i, x in enumerate(leaves)}
            np.savez(folder / ARRAYS, allow_pickle=False, **leaves_by_name)
        # validated from plain data (the generator's state and the pool's book are dicts)
        state = {"rng": self.rng.bit_generator.state, "pool": self.pool.bookkeeping()}
        return LeagueState.model_validate(state).model_dump()

    def restore(self, folder: Path, marker: CheckpointMarker) -> None:
        """The checkpoint read into the shapes of this (fresh) trainer's runner and pool and
        checked against them and the config; nothing changes unless everything checks."""
        path = folder.with_suffix(".json")
        try:
            state = LeagueState.model_validate(marker.trainer)
        except ValidationError as err:
            raise RunDirError(f"{path}: trainer: {one_line(err)}") from None
        state.check_against(self.config, marker, path)
        leaves, treedef = jax.tree.flatten(plain_arrays(self._state()))
        loaded = read_arrays(folder / ARRAYS, [np.asarray(x) for x in leaves])
        runner, arrays, *rest = jax.tree.unflatten(treedef, [jnp.asarray(x) for x in loaded])
        runner = runner._replace(key=jax.random.wrap_key_data(runner.key))
        critic_opt = rest.pop(0) if self.critic_opt is not None else None
        exploiter = rest.pop(0) if self.exploiter is not None else None
        check_runner(runner, critic_opt, self.env, self.config, marker.iteration, folder / ARRAYS)
        if exploiter is not None:
            exploiter = exploiter._replace(key=jax.random.wrap_key_data(exploiter.key))
            check_exploiter(exploiter, self.env, self.config, marker.iteration, folder / ARRAYS)
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
        # a poker policy is no ladder agent: `poker:path=...` names it for tacocat.analysis.poker
        return ExportedPolicy("league" if self.config.game == "tacocat" else "poker", name)

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
        yield {
            "jax_backend": jax.default_backend(),
            "jax_devices": [str(d) for d in jax.devices()],
            "jax_processes": jax.process_count(),
            "process_index": jax.process_index(),
        }


def make_trainer(config: LeagueExperiment, run_dir: Path) -> LeagueTrainer:
    return LeagueTrainer(config)
