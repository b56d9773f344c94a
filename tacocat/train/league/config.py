"""The `league` section of an experiment config and `LeagueExperiment` (backend: league)."""

from __future__ import annotations

import itertools
import math
from typing import Literal

from pydantic import Field, model_validator

from tacocat.train.settings import (
    MAX_LEAGUE_MEMORY_BYTES,
    MAX_N_ENVS,
    MAX_ROLLOUT_STEPS,
    MAX_SNAPSHOTS,
    ExperimentBase,
    _Strict,
)

#: league.critic_warmup's bound (a typo must not stall a run in warm-up)
MAX_CRITIC_WARMUP = 1_000_000
#: league.devices' bound
MAX_DEVICES = 4096


class MagnetConfig(_Strict):
    """Magnetic mirror descent (MMD, Sokota et al., ICLR 2023) in PPO: the loss adds
    `kl_coef x KL(policy || magnet)` per learner decision (tacocat/train/league/ppo.py,
    `kl_to_magnet`). The magnet is the uniform policy over the legal actions (`uniform`: the same
    pull as an entropy bonus of `kl_coef`) or a moving average of the learner's own actor (`ema`:
    every `refresh_every` iterations the magnet's parameters move `ema_rate` of the way to the
    actor's; with `ema_rate` 1 it is a copy of the actor, refreshed every `refresh_every`)."""

    kind: Literal["uniform", "ema"] = Field(description="the policy the KL penalty pulls toward")
    kl_coef: float = Field(ge=0, le=1e3, description="the KL penalty's weight at the first PPO iteration")
    kl_coef_final: float | None = Field(
        default=None,
        ge=0,
        le=1e3,
        description="the weight at the last PPO iteration, reached linearly; None: kl_coef throughout",
    )
    refresh_every: int = Field(
        default=1, gt=0, le=1_000_000, description="ema: iterations between refreshes of the magnet"
    )
    ema_rate: float = Field(
        default=0.05,
        gt=0,
        le=1,
        description="ema: how far the magnet moves toward the actor "
        "at a refresh (magnet += ema_rate x (actor - magnet))",
    )


class ExploiterConfig(_Strict):
    """A main exploiter (AlphaStar's league, Vinyals et al. 2019): a second learner that trains
    only against the current main policy, on `n_envs` games of its own per iteration (`algo`'s
    PPO, constant entropy weight, no magnet), and whose snapshots join the main policy's snapshot
    pool every `snapshot_every` iterations, so that the main policy learns to answer what exploits
    it. Every `reset_every` iterations it starts again, from the main policy's current weights
    (`reset_to: main`) or from fresh ones (`fresh`), with fresh Adam statistics. Its env steps
    count toward `total_timesteps`."""

    n_envs: int = Field(
        gt=0, le=MAX_N_ENVS, description="games the exploiter plays at once, all against the current main policy"
    )
    snapshot_every: int = Field(
        default=10, gt=0, le=1_000_000, description="iterations between the exploiter's snapshots joining the pool"
    )
    reset_every: int | None = Field(
        default=None,
        gt=0,
        le=1_000_000,
        description="iterations between restarts of the exploiter; None: it never restarts",
    )
    reset_to: Literal["main", "fresh"] = Field(
        default="main",
        description="what the exploiter starts from, at the "
        "start and at every reset: the main policy's weights or fresh ones",
    )


class LeagueConfig(_Strict):
    """League backend (jitted PPO on the batch engine, docs/LEAGUE.md): the opponents' mixture.

    The games of a batch are shared out by weight between the current policy (`selfplay_weight`),
    frozen snapshots of it (`snapshot_weight`, split into `snapshot_slots` blocks, each playing
    one snapshot drawn per iteration) and the JAX forms of the top-level `opponents` (each with
    its `weight`: a heuristic port, `random` or a policy file, `tacocat.agents.jax_ports`).
    `n_envs` games run at once, `algo.n_steps` steps each per iteration;
    `algo.batch_size` is the minibatch in env steps (both players' steps; the opponent's weigh 0).
    A run may start from a trained actor (`init_actor`) and train its critic alone first
    (`critic_warmup`): how `tacocat exploit` starts a best response at parity with its target.
    """

    game: Literal["tacocat", "kuhn_poker", "leduc_holdem"] = Field(
        default="tacocat",
        description="the game the league trains on: Tacocat (the batch engine, `rules`), or pgx's "
        "kuhn_poker or leduc_holdem, observed by information state (tacocat/analysis/poker_batch.py) and valued "
        "exactly through OpenSpiel (eval.nash_conv; docs/EXPLOITABILITY.md#calibration); Tacocat's options (rules, "
        "opponents, the evaluation ladder, init_actor) are refused there",
    )
    selfplay_weight: float = Field(default=1.0, ge=0, le=1e6, description="share of games against the current policy")
    snapshot_weight: float = Field(default=0.0, ge=0, le=1e6, description="share of games against frozen snapshots")
    snapshot_every: int = Field(default=10, gt=0, description="iterations between snapshots of the learner")
    snapshot_pool: int = Field(default=8, gt=0, le=MAX_SNAPSHOTS, description="snapshots kept (the oldest is dropped)")
    snapshot_slots: int = Field(
        default=2, gt=0, le=MAX_SNAPSHOTS, description="blocks of games playing snapshots, one snapshot each"
    )
    sampling: Literal["uniform", "pfsp"] = Field(
        default="uniform",
        description="how a slot draws its snapshot: uniformly, or prioritized fictitious "
        "self-play (weight (1 - learner's win rate against it) ** pfsp_power)",
    )
    pfsp_power: float = Field(default=2.0, ge=0, description="PFSP exponent: higher plays the hardest snapshots more")
    fast_compile: bool = Field(
        default=False,
        description="compile with XLA backend optimisation 0: compiles several times faster, runs slower (smoke runs)",
    )
    anneal_lr: bool = Field(
        default=False, description="decay algo.learning_rate linearly to 0 over total_timesteps (CleanRL's anneal_lr)"
    )
    privileged_critic: bool = Field(
        default=False,
        description="the critic, used only in training, also reads the opponent's observation "
        "(their hand included): an asymmetric actor-critic. The actor, the policy that plays and is exported, "
        "reads only its own observation (R7.3)",
    )
    decision_share: float = Field(
        default=1.0,
        gt=0,
        le=1,
        description="the update's room for the learner's decisions, as a share of each "
        "minibatch's env steps: below 1 the update reads only the learner's decisions (the opponent's steps weigh "
        "0 anyway) and runs that much faster; a rollout with more decisions than the room drops the excess at "
        "random (progress.csv: decisions_dropped). 1: every env step, as before",
    )
    init_actor: str | None = Field(
        default=None,
        description="warm start: an agent spec that plays a tacocat-mlp-v1 policy file (champion, "
        "league:path=..., rllib:path=...) whose network the learner's actor starts as; the file must be trained for "
        "these rules and have algo.net_arch's hidden layers and algo.activation (set them to the file's). The critic "
        "starts fresh (see critic_warmup). None: a fresh actor (orthogonal init)",
    )
    critic_warmup: int = Field(
        default=0,
        ge=0,
        le=MAX_CRITIC_WARMUP,
        description="iterations at the start of the run that train the "
        "critic only, the actor frozen, on rollouts against the league (with init_actor, a critic that knows the "
        "actor's values before PPO moves the actor). They play env steps like any iteration, count toward "
        "total_timesteps and are marked critic_warmup=1 in progress.csv. 0: none, as before",
    )
    magnet: MagnetConfig | None = Field(
        default=None, description="a KL penalty toward a magnet policy (MMD); None: none, as before"
    )
    ent_coef_final: float | None = Field(
        default=None,
        ge=0,
        le=1e3,
        description="the entropy bonus's weight at the last PPO iteration, reached "
        "linearly from algo.ent_coef; None: algo.ent_coef throughout",
    )
    exploiter: ExploiterConfig | None = Field(
        default=None, description="a main exploiter whose snapshots join the pool; None: none, as before"
    )
    devices: int = Field(
        default=1,
        ge=1,
        le=MAX_DEVICES,
        description="JAX devices the league trains on, data parallel "
        "(docs/SCALING.md): each plays n_envs / devices games, its share of every block of the mixture, and "
        "computes its share of every minibatch; the gradients are summed over the devices. The run equals the "
        "one-device run to float rounding. Every device of every process (jax.distributed) counts; on CPU, "
        "`tacocat train --devices N` splits the host into N XLA devices. 1: JAX's default device, as before",
    )


class LeagueExperiment(ExperimentBase):
    backend: Literal["league"] = Field(description="jitted PPO on the batch engine against a league")
    league: LeagueConfig

    @property
    def steps_per_iteration(self) -> int:
        """Env steps of one iteration: the main policy's games and the exploiter's."""
        exploiter = self.league.exploiter
        return (self.n_envs + (exploiter.n_envs if exploiter is not None else 0)) * self.algo.n_steps

    @property
    def iterations(self) -> int:
        """Iterations of the whole run (the last one may pass total_timesteps)."""
        return -(-self.total_timesteps // self.steps_per_iteration)

    @property
    def game(self) -> str:
        return self.league.game

    @model_validator(mode="after")
    def _league_fits(self) -> LeagueExperiment:
        """Opponents with a JAX port, a batch that splits into whole minibatches and gives every
        opponent of the mixture at least one game, and memory within the limit."""
        from tacocat.agents.jax_ports import check_ported, split_rows

        if self.game != "tacocat":
            check_poker(self)
        for i, opponent in enumerate(self.opponents):
            try:
                check_ported(opponent.agent, self.rules_config)
            except ValueError as err:
                raise ValueError(f"opponents.{i}.agent: {err}") from None
        if self.league.init_actor is not None:
            check_init_actor(self.league.init_actor, self)
        check_rollout(self, self.n_envs, "n_envs", "algo.batch_size")
        league = self.league
        if league.decision_share < 1 and math.ceil(league.decision_share * self.algo.batch_size) < 2:
            raise ValueError(
                f"league.decision_share: {league.decision_share} x algo.batch_size "
                f"{self.algo.batch_size} leaves minibatches of fewer than 2 decisions "
                "(their normalised advantage is NaN)"
            )
        if league.exploiter is not None:
            check_exploiter(self)
        iterations = self.iterations
        if league.critic_warmup >= iterations:
            raise ValueError(
                f"league.critic_warmup: {league.critic_warmup} warm-up iterations leave no PPO iteration "
                f"of the run's {iterations} (total_timesteps {self.total_timesteps:,} at "
                f"{self.steps_per_iteration:,} env steps per iteration)"
            )
        blocks = split_rows(
            self.n_envs,
            league.selfplay_weight,
            league.snapshot_weight,
            league.snapshot_slots,
            [o.weight for o in self.opponents],
        )
        if league.devices > 1:
            check_devices_split(self, blocks)
        needed = league_memory_bytes(self)
        if needed > MAX_LEAGUE_MEMORY_BYTES:
            raise ValueError(
                f"the league needs about {needed / 2**30:.1f} GiB for its rollout, environments and "
                f"parameters (n_envs {self.n_envs}, algo.n_steps {self.algo.n_steps}, league.snapshot_pool "
                f"{league.snapshot_pool}, algo.net_arch {self.algo.net_arch}), over the limit of "
                f"{MAX_LEAGUE_MEMORY_BYTES / 2**30:.0f} GiB"
            )
        return self


def check_poker(config: LeagueExperiment) -> None:
    """ValueError, one line naming the option, unless a league on a poker game asks for nothing
    of Tacocat's: rule overrides (presets), opponents (the heuristics and their JAX ports), the
    evaluation ladder (Tacocat agents), a warm start from a Tacocat policy file; and unless it
    evaluates the exact NashConv (its only evaluation)."""
    game = config.game
    tacocat_only = {
        "rules": bool(config.rules),
        "opponents": bool(config.opponents),
        "eval.opponents": bool(config.eval.opponents),
        "eval.final": bool(config.eval.final),
        "league.init_actor": config.league.init_actor is not None,
    }
    for option, given in tacocat_only.items():
        if given:
            raise ValueError(
                f"{option}: a Tacocat option; league.game {game} has none (set {option} to its empty value)"
            )
    if not config.eval.nash_conv:
        raise ValueError(f"eval.nash_conv: a league on {game} is evaluated by its exact NashConv; set it to true")


def check_rollout(config: LeagueExperiment, games: int, field: str, blamed: str) -> None:
    """ValueError, one line, unless a rollout of `games` x algo.n_steps env steps (the main
    policy's, or the exploiter's) is within the limit and splits into whole minibatches; the
    split's message names `blamed`."""
    rollout = games * config.algo.n_steps
    if rollout > MAX_ROLLOUT_STEPS:
        raise ValueError(
            f"{field} x algo.n_steps = {rollout:,} env steps per rollout is over the limit of {MAX_ROLLOUT_STEPS:,}"
        )
    if rollout % config.algo.batch_size:
        raise ValueError(
            f"{blamed}: a rollout of {field} x algo.n_steps = {rollout} steps does not split into "
            f"minibatches of {config.algo.batch_size} (algo.batch_size; choose a divisor of {rollout})"
        )


def check_exploiter(config: LeagueExperiment) -> None:
    """ValueError, one line, unless the exploiter has a main policy to exploit and to feed: the
    main policy must play snapshots (the exploiter's reach it only through the pool), and the
    exploiter's rollout must split into whole minibatches; on one device only."""
    league, exploiter = config.league, config.league.exploiter
    assert exploiter is not None
    if league.snapshot_weight == 0:
        raise ValueError(
            "league.exploiter: the main policy plays the exploiter's snapshots only through the snapshot "
            "pool; give league.snapshot_weight a positive weight"
        )
    check_rollout(config, exploiter.n_envs, "league.exploiter.n_envs", "league.exploiter.n_envs")
    if league.devices > 1:
        raise ValueError("league.exploiter: an exploiter trains on one device; set league.devices to 1")


def check_devices_split(config: LeagueExperiment, blocks: list) -> None:
    """ValueError, one line, unless `league.devices` share the batch, every block of the
    mixture and every minibatch evenly (each device runs the same program on its share)."""
    from tacocat.train.league.devices import block_split_error

    devices, league = config.league.devices, config.league
    if config.n_envs % devices:
        raise ValueError(
            f"league.devices: n_envs {config.n_envs} does not split over {devices} devices (choose a "
            f"multiple of {devices})"
        )
    if any(b.rows % devices for b in blocks):
        raise ValueError(block_split_error(blocks, devices, even_n_envs(config)))
    slots = math.ceil(league.decision_share * config.algo.batch_size) if league.decision_share < 1 else 0
    if config.algo.batch_size % devices or slots % devices:
        what = (
            f"league.decision_share x algo.batch_size = {slots} decision slots"
            if slots % devices
            else f"algo.batch_size {config.algo.batch_size}"
        )
        raise ValueError(
            f"league.devices: each device computes 1/{devices} of every minibatch; {what} does not split "
            f"over {devices} devices"
        )


def even_n_envs(config: LeagueExperiment, tries: int = 4096) -> int | None:
    """The n_envs nearest the config's whose mixture splits over `league.devices` (within
    `tries` values either side); None if none does."""
    from tacocat.agents.jax_ports import split_rows

    league, devices = config.league, config.league.devices
    candidates = range(max(devices, config.n_envs - tries), config.n_envs + tries)
    for n in sorted(candidates, key=lambda n: abs(n - config.n_envs)):
        if n % devices:
            continue
        try:
            blocks = split_rows(
                n,
                league.selfplay_weight,
                league.snapshot_weight,
                league.snapshot_slots,
                [o.weight for o in config.opponents],
            )
        except ValueError:
            continue
        if not any(b.rows % devices for b in blocks):
            return n
    return None


def check_init_actor(spec: str, config: LeagueExperiment) -> None:
    """ValueError, one line, unless `spec` plays a policy file trained for the config's rules
    whose hidden layers and activation are `algo.net_arch` and `algo.activation`."""
    from tacocat.agents.jax_ports import POLICY_FILE_AGENTS, check_ported
    from tacocat.agents.mlp_agent import MLPPolicyAgent
    from tacocat.agents.registry import parse_spec

    name, _ = parse_spec(spec)
    if name not in POLICY_FILE_AGENTS:
        raise ValueError(
            f"league.init_actor: agent {name!r} has no network to start from; init_actor takes an agent "
            f"that plays a policy file: {', '.join(POLICY_FILE_AGENTS)}"
        )
    try:
        _, agent = check_ported(spec, config.rules_config)
    except ValueError as err:
        raise ValueError(f"league.init_actor: {err}") from None
    assert isinstance(agent, MLPPolicyAgent)  # every agent of POLICY_FILE_AGENTS plays a policy file
    hidden = [int(weight.shape[0]) for weight, _ in agent.layers[:-1]]
    activation = agent.meta["activation"]
    if hidden != list(config.algo.net_arch) or activation != config.algo.activation:
        raise ValueError(
            f"league.init_actor: {agent.path} has hidden layers {hidden} and activation {activation}; "
            f"algo.net_arch is {list(config.algo.net_arch)} and algo.activation {config.algo.activation}: "
            "set them to the file's"
        )


def league_memory_bytes(config: LeagueExperiment) -> int:
    """What the league's jitted iteration (tacocat/train/league/ppo.py) holds, in bytes, checked at
    validation, before anything compiles: the rollout (`n_envs x n_steps` transitions: the scaled
    observation and the critic's extra input, the mask, four 4-byte and two 1-byte fields, and the
    advantage and return computed from them), the environments (each row's observation and mask,
    old and new state) and the parameters (actor and critic: the learner, its gradient, Adam's two
    moments and `snapshot_pool` frozen copies). XLA's working memory comes on top of it."""
    from tacocat.game.observation import ObservationLayout
    from tacocat.game.ruleset import compile_rules

    league = config.league
    if config.game == "tacocat":
        rules = compile_rules(config.rules_config)
        obs, actions = ObservationLayout(rules).size, rules.codec.size
    else:
        from tacocat.analysis.poker_batch import PokerBatch

        env = PokerBatch(config.game)
        obs, actions = env.observation_shape[0], env.num_actions
    critic_in = 2 * obs if league.privileged_critic else obs
    transition = 4 * critic_in + actions + 4 * 4 + 2 + 2 * 4
    games = config.n_envs + (league.exploiter.n_envs if league.exploiter is not None else 0)
    rollout = games * config.algo.n_steps * transition
    environments = 2 * games * (4 * obs + actions)

    def mlp(sizes: list[int]) -> int:
        return sum((a + 1) * b for a, b in itertools.pairwise(sizes))

    hidden = list(config.algo.net_arch)
    params = mlp([obs, *hidden, actions]) + mlp([critic_in, *hidden, 1])
    learners = 2 if league.exploiter is not None else 1  # each: params, gradient, Adam's two moments
    return rollout + environments + 4 * params * (4 * learners + league.snapshot_pool)
