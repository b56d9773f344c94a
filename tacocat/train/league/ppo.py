"""One jitted PPO iteration on the batch engine (PureJaxRL style), for a two-player game.

`make_iteration` returns `iteration(runner, pool, snapshot_ids, coefficients) -> (runner, metrics)`: collect
`n_steps` auto-reset steps of `n_envs` games under one `lax.scan`, compute advantages, then
`n_epochs` passes of clipped-objective minibatch updates; all inside one `jax.jit`. It reads
top to bottom:

1. **Rollout.** Every step, the policy is run on every row; each row's opponent (its block of
   rows, `mixture.split_rows`) acts where the player to act is not the learner's seat
   (`state.current_player != seat`). The learner's seat of a row is flipped (or redrawn) every
   time a game on it ends, so the learner plays both seats.
2. **Credit.** Only the learner's decisions are trained on (`learner_turn`). A reward can arrive
   on any step (the game ends on the opponent's move, a round ends, ...): a learner decision
   gets the sum of the learner's rewards from its own step up to its next decision in the same
   game. Discounting (`gamma`) and GAE (`lambda`) count learner decisions, not env steps. The
   last decision of the rollout bootstraps from the value of the learner's observation of the
   final state (`env.observe`).
3. **Update.** Clipped surrogate, value loss, entropy bonus and, with a magnet (MMD, Sokota et
   al. 2023), a KL penalty `KL(policy || magnet)` per decision, toward the uniform policy over the
   legal actions or a moving average of the actor's own parameters (`Runner.magnet`); the
   entropy and KL coefficients come in each call (`Coefficients`), so that they follow a
   schedule without recompiling. Every mean is over learner decisions only (the opponent's steps
   weigh 0); advantages are normalised per minibatch.
   With `decision_slots`, the update reads the learner's decisions only, packed into that many
   entries (`pack_learner_decisions`), instead of every env step.

The engine is used through its public interface only (`init`, `step_autoreset`, `observe`,
`State.observation`, `legal_action_mask`, `current_player`, `rewards`, `terminated`,
`truncated`), so a faster engine with the same interface drops in, and so do pgx's Kuhn and
Leduc poker (`tacocat.analysis.poker_batch.PokerBatch`, `PPOSettings.game`): only Tacocat's
failed-answer floors (`rounds_played`, for the heuristics' ports) are Tacocat's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from tacocat.agents.heuristic_jax import Policy, failed_answer_floor
from tacocat.agents.jax_ports import Block
from tacocat.game.batch.rollout import pick_by_logits
from tacocat.train.league.devices import AXIS, RowLayout
from tacocat.train.league.network import Params, init_params, masked_logits, value


@dataclass(frozen=True)
class PPOSettings:
    """What the compiled iteration is built for. The entropy and KL weights are not among them:
    they come with each call (`Coefficients`), so runs that differ only in them share one
    compilation."""

    n_envs: int
    n_steps: int
    minibatch_size: int
    n_epochs: int
    learning_rate: float
    gamma: float
    gae_lambda: float
    clip_range: float
    vf_coef: float
    max_grad_norm: float
    hidden: tuple[int, ...]
    activation: str
    learner_seat: str  # "alternate" or "random"
    anneal_updates: int = 0  # gradient steps over which the learning rate decays linearly to 0 (0: constant)
    privileged_critic: bool = False  # the critic also reads the opponent's observation (training only)
    decision_slots: int = 0  # the update's slots for learner decisions (pack_learner_decisions); 0: every env step
    magnet: str = "none"  # the KL penalty's magnet (kl_to_magnet): "none", "uniform" or "ema" (Runner.magnet)
    game: str = "tacocat"  # the batch env's game: Tacocat tracks the failed-answer floors (Runner.floor), poker none


class Runner(NamedTuple):
    """Everything an iteration carries to the next (and a checkpoint saves)."""

    params: Params
    opt_state: Any
    env_state: Any
    seat: jax.Array  # (n_envs,) the learner's seat in each row's current game
    floor: jax.Array  # (n_envs, 2) each player's failed-answer floor this round (heuristics.failed_answer_floor)
    key: jax.Array
    magnet: Any = None  # magnet "ema": the magnet's actor (a moving average of the learner's); else None


class Coefficients(NamedTuple):
    """The loss's regularisation weights of one iteration (scalars, traced: a schedule changes
    them without recompiling)."""

    ent_coef: jax.Array
    kl_coef: jax.Array

    @classmethod
    def of(cls, ent_coef: float, kl_coef: float) -> Coefficients:
        return cls(jnp.float32(ent_coef), jnp.float32(kl_coef))


class Transition(NamedTuple):
    obs: jax.Array  # scaled (the networks' input)
    mask: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array  # the learner's reward of this step
    done: jax.Array  # the game ended at this step (the next row state is a new game)
    learner_turn: jax.Array
    critic_extra: jax.Array  # what the critic reads besides `obs`: the opponent's scaled observation, or width 0


def critic_extra(observe: Callable, state: Any, other: jax.Array, scale: jax.Array, privileged: bool) -> jax.Array:
    """What the critic reads besides the learner's observation: with the privileged critic,
    player `other`'s (scaled) observation, their hand included (an asymmetric actor-critic; the
    actor, which is what plays and is exported, never reads it: R7.3); otherwise nothing (width
    0). `observe` is the batch env's `observe`, vmapped over rows."""
    if privileged:
        return observe(state, other) * scale
    return jnp.zeros((*other.shape, 0), jnp.float32)


def critic_value(critic: list, obs: jax.Array, extra: jax.Array, activation: str) -> jax.Array:
    """The critic's value of the learner's scaled observation `obs` and its `critic_extra`."""
    return value(critic, jnp.concatenate([obs, extra], axis=-1), activation)


def make_optimizer(s: PPOSettings) -> optax.GradientTransformation:
    rate = optax.linear_schedule(s.learning_rate, 0.0, s.anneal_updates) if s.anneal_updates else s.learning_rate
    return optax.chain(optax.clip_by_global_norm(s.max_grad_norm), optax.adam(rate, eps=1e-5))


def init_runner(env: Any, s: PPOSettings, key: jax.Array) -> Runner:
    params_key, env_key, key = jax.random.split(key, 3)
    obs_size, n_actions = env.observation_shape[0], env.num_actions
    critic_size = 2 * obs_size if s.privileged_critic else obs_size
    params = init_params(params_key, obs_size, n_actions, list(s.hidden), critic_size)
    env_state = jax.jit(jax.vmap(env.init))(jax.random.split(env_key, s.n_envs))  # jitted: eager vmap takes ~13 s
    seat = (jnp.arange(s.n_envs) % 2).astype(jnp.int32)  # half the rows start as player_0, half as player_1
    floor = jnp.zeros((s.n_envs, 2), jnp.int32)
    magnet = params["actor"] if s.magnet == "ema" else None
    return Runner(params, make_optimizer(s).init(params), env_state, seat, floor, key, magnet)


def kl_to_magnet(log_probs: jax.Array, magnet_log_probs: jax.Array, mask: jax.Array) -> jax.Array:
    """KL(policy || magnet) = sum over the legal actions of p (log p - log q), per row: MMD's
    penalty, whose gradient with respect to the logits is p (log p - log q - KL). Illegal actions
    have probability 0 under both and add nothing."""
    probs = jnp.exp(log_probs)
    return jnp.where(mask, probs * (log_probs - magnet_log_probs), 0.0).sum(-1)


def uniform_log_probs(mask: jax.Array) -> jax.Array:
    """The log-probabilities of the uniform policy over each row's legal actions (MMD's uniform
    magnet: its KL is log(legal actions) minus the entropy, so it pulls like an entropy bonus)."""
    legal = jnp.maximum(mask.sum(-1, keepdims=True), 1).astype(jnp.float32)
    return jnp.broadcast_to(-jnp.log(legal), mask.shape)


def sample(u: jax.Array, logits: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(action, its log-probability) drawn from the softmax over the legal actions of the
    masked `logits`, given one uniform number in [0, 1) per row (`rollout.pick_by_logits`, by
    inverse CDF: on XLA:CPU, `jax.random.categorical`'s one draw per action cost about a fifth
    of a league iteration)."""
    action = pick_by_logits(u, logits, mask)
    log_prob = jnp.take_along_axis(jax.nn.log_softmax(logits), action[..., None], axis=-1)[..., 0]
    return action, log_prob


def learner_advantages(traj: Transition, last_value: jax.Array, gamma: float, gae_lambda: float) -> jax.Array:
    """GAE over the learner's decisions of a (time, rows) trajectory; 0 at the opponent's steps.

    A decision's reward is the learner's reward summed from its step up to (not including) its
    next decision in the same game; a game that ends cuts the sum and the bootstrap. Scanned
    backwards; `last_value` bootstraps the last decision of each row if its game goes on.
    """

    def back(carry: tuple, t: Transition) -> tuple[tuple, jax.Array]:
        reward_sum, next_value, next_gae = carry
        # the game ended at this step: what the carry holds belongs to the next game
        reward_sum, next_value, next_gae = (jnp.where(t.done, 0.0, x) for x in (reward_sum, next_value, next_gae))
        reward_sum = reward_sum + t.reward
        delta = reward_sum + gamma * next_value - t.value
        gae = delta + gamma * gae_lambda * next_gae
        carry = (
            jnp.where(t.learner_turn, 0.0, reward_sum),
            jnp.where(t.learner_turn, t.value, next_value),
            jnp.where(t.learner_turn, gae, next_gae),
        )
        return carry, jnp.where(t.learner_turn, gae, 0.0)

    zeros = jnp.zeros_like(last_value)
    _, adv = jax.lax.scan(back, (zeros, last_value, zeros), traj, reverse=True)
    return adv


def pack_learner_decisions(data: tuple, slots: int, key: jax.Array) -> tuple[tuple, jax.Array]:
    """The learner's decisions of a flattened rollout packed, in a random order, into `slots`
    entries, for the update. The opponent's steps weigh 0 in every loss, so leaving them out
    changes no loss and saves their share of the update's compute (about half the rollout).
    Entries past the decisions' count are padding (a copy of some step with `learner_turn`
    False: weight 0); decisions past `slots` are dropped at random. Returns the packed `data`
    (a tuple whose first item is the `Transition`) and how many decisions were dropped."""
    learner_turn = data[0].learner_turn
    order = jax.random.permutation(key, learner_turn.shape[0])
    picked = order[jnp.nonzero(learner_turn[order], size=slots, fill_value=0)[0]]
    count = learner_turn.sum()
    traj, *rest = jax.tree.map(lambda x: x[picked], data)
    traj = traj._replace(learner_turn=jnp.arange(slots) < count)
    return (traj, *rest), jnp.maximum(count - slots, 0)


def make_iteration(
    env: Any,
    s: PPOSettings,
    blocks: Sequence[Block],
    heuristics: Sequence[Policy],
    obs_scale: np.ndarray,
    compiler_options: dict | None = None,
    critic_only: bool = False,
    mesh: jax.sharding.Mesh | None = None,
) -> Callable[..., tuple]:
    """The jitted iteration; `pool` is the snapshot pool (params stacked on a leading axis) and
    `snapshot_ids` the pool index each snapshot slot plays this iteration. The networks see
    observations times `obs_scale` (`network.input_scale`); the fixed opponents (`heuristics`:
    the ports, `random`, policy files) see them raw, as their Python twins do. `compiler_options`
    go to `jax.jit` (`{"xla_backend_optimization_level": 0}` compiles several times faster and
    runs slower: for smoke runs and tests).

    `iteration(runner, pool, snapshot_ids, coefficients) -> (runner, metrics)`; with `critic_only`
    (the critic's warm-up, `league.critic_warmup`) `iteration(runner, pool, snapshot_ids,
    coefficients, critic_opt_state) -> (runner, critic_opt_state, metrics)`: the same rollout and losses, but
    the gradient is the critic's only and goes through its own optimizer state (built by
    `make_optimizer(s).init(params["critic"])`); the actor and `runner.opt_state` stay as they
    are, so that PPO later starts with fresh Adam statistics for both networks.

    With a `mesh` (tacocat/train/league/devices.py), the iteration runs on its devices under
    `jax.shard_map`, each on its share of every block (`RowLayout`): the runner's per-row
    fields are split over the mesh's axis (physical order), the rest replicated; the same
    iteration as on one device, to the rounding of the sums."""
    layout = RowLayout(tuple(blocks), 1 if mesh is None else mesh.size)
    local_blocks = layout.local_blocks
    step = jax.vmap(env.step_autoreset)
    observe = jax.vmap(env.observe)
    #: Tacocat's heuristics read each player's failed-answer floor; a poker game has none (it stays 0)
    track_floor = jax.vmap(failed_answer_floor(env.config)) if s.game == "tacocat" else None
    optimizer = make_optimizer(s)
    rows = jnp.arange(layout.rows)
    scale = jnp.asarray(obs_scale)
    n_minibatches = s.n_envs * s.n_steps // s.minibatch_size
    update_size = s.decision_slots or s.n_envs * s.n_steps  # entries the epochs shuffle and split

    def opponent_actions(
        pool: Params,
        snapshot_ids: jax.Array,
        obs: jax.Array,
        net_obs: jax.Array,
        mask: jax.Array,
        opponent_floor: jax.Array,
        learner_action: jax.Array,
        learner_turn: jax.Array,
        key: jax.Array,
    ) -> jax.Array:
        """Each block's opponent on its own rows (static slices): snapshots read the scaled
        observations `net_obs`, heuristics the raw ones. Where the learner is to act, the
        heuristics get an empty mask: their action there is not used, and an empty mask spares
        `counter` its hand sampling on those rows (only rows with a choice of attacks sample), so
        the rows that do sample fit its smaller buffer; the rows where the opponent acts are
        computed exactly as before."""
        parts = []
        for whole, block, block_key in zip(blocks, local_blocks, jax.random.split(key, len(blocks)), strict=True):
            o, m = obs[block.start : block.stop], mask[block.start : block.stop]
            if block.kind == "self":  # the current policy: its sampled action, already computed
                parts.append(learner_action[block.start : block.stop])
            elif block.kind == "snapshot":
                actor = jax.tree.map(lambda leaf: leaf[snapshot_ids[block.index]], pool["actor"])  # noqa: B023 (map calls it at once)
                u = layout.mine_of_block(jax.random.uniform(block_key, (whole.rows,)), whole)
                parts.append(sample(u, masked_logits(actor, net_obs[block.start : block.stop], m, s.activation), m)[0])
            else:
                policy = jax.vmap(heuristics[block.index])
                idle = learner_turn[block.start : block.stop, None]
                keys = layout.mine_of_block(jax.random.split(block_key, whole.rows), whole)
                parts.append(policy(o, m & ~idle, keys, opponent_floor[block.start : block.stop]))
        return jnp.concatenate(parts)

    # -- 1. rollout ----------------------------------------------------------------------
    def env_step(carry: tuple, _: None) -> tuple[tuple, tuple[Transition, jax.Array, jax.Array]]:
        params, pool, snapshot_ids, state, seat, floor, key = carry
        key, act_key, opp_key, env_key, seat_key = jax.random.split(key, 5)
        obs, mask = state.observation, state.legal_action_mask
        net_obs = obs * scale
        logits = masked_logits(params["actor"], net_obs, mask, s.activation)
        learner_action, log_prob = sample(layout.mine(jax.random.uniform(act_key, (s.n_envs,))), logits, mask)
        actor = state.current_player
        # at the learner's decisions: the opponent's observation (privileged critic)
        extra = critic_extra(observe, state, 1 - actor, scale, s.privileged_critic)
        learner_turn = actor == seat
        opp_action = opponent_actions(
            pool, snapshot_ids, obs, net_obs, mask, floor[rows, 1 - actor], learner_action, learner_turn, opp_key
        )
        action = jnp.where(learner_turn, learner_action, opp_action)
        before = state
        state = step(state, action, layout.mine(jax.random.split(env_key, s.n_envs)))
        reward = state.rewards[rows, seat]
        done = state.terminated | state.truncated
        if track_floor is not None:
            floor = track_floor(floor, obs, action, actor, done | (state.rounds_played != before.rounds_played))
        won = state.terminated & (reward > state.rewards[rows, 1 - seat])
        if s.learner_seat == "alternate":
            next_seat = 1 - seat
        else:
            next_seat = layout.mine(jax.random.bernoulli(seat_key, 0.5, (s.n_envs,))).astype(jnp.int32)
        seat = jnp.where(done, next_seat, seat)
        learner_value = critic_value(params["critic"], net_obs, extra, s.activation)
        transition = Transition(
            net_obs, mask, learner_action, log_prob, learner_value, reward, done, learner_turn, extra
        )
        return (params, pool, snapshot_ids, state, seat, floor, key), (transition, done, won)

    # -- 2. credit (learner_advantages, above) and 3. update -------------------------------
    def magnet_log_probs(magnet: Any, batch: Transition) -> jax.Array:
        if s.magnet == "uniform":
            return uniform_log_probs(batch.mask)
        return jax.nn.log_softmax(masked_logits(magnet, batch.obs, batch.mask, s.activation))

    def loss_fn(
        params: Params, batch: Transition, adv: jax.Array, ret: jax.Array, magnet: Any, coefs: Coefficients
    ) -> tuple[jax.Array, dict]:
        w = batch.learner_turn.astype(jnp.float32)
        n = jnp.maximum(layout.total(w), 1.0)

        def wmean(x: jax.Array) -> jax.Array:  # over the whole minibatch (every device's part)
            return layout.total(w * x) / n

        def part(x: jax.Array) -> jax.Array:
            """This device's part of the mean over the minibatch (the mean itself on one device):
            the loss is differentiated locally and the gradients summed (`update_minibatch`)."""
            return (w * x).sum() / n

        logits = masked_logits(params["actor"], batch.obs, batch.mask, s.activation)
        log_probs = jax.nn.log_softmax(logits)
        log_prob = jnp.take_along_axis(log_probs, batch.action[:, None], axis=-1)[:, 0]
        ratio = jnp.exp(log_prob - batch.log_prob)
        adv_mean = wmean(adv)
        adv = (adv - adv_mean) / (jnp.sqrt(wmean((adv - adv_mean) ** 2)) + 1e-8)
        policy_loss = part(jnp.maximum(-adv * ratio, -adv * jnp.clip(ratio, 1 - s.clip_range, 1 + s.clip_range)))
        values = critic_value(params["critic"], batch.obs, batch.critic_extra, s.activation)
        value_loss = 0.5 * part((values - ret) ** 2)
        entropy = part(-(jnp.exp(log_probs) * log_probs).sum(-1))
        loss = policy_loss + s.vf_coef * value_loss - coefs.ent_coef * entropy
        approx_kl = part((ratio - 1) - jnp.log(ratio))
        info = {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy, "approx_kl": approx_kl}
        if s.magnet != "none":
            info["magnet_kl"] = part(kl_to_magnet(log_probs, magnet_log_probs(magnet, batch), batch.mask))
            loss = loss + coefs.kl_coef * info["magnet_kl"]
        return loss, info

    def summed(tree: Any) -> Any:
        """The devices' parts (gradients, losses) summed: the same on every device."""
        return tree if layout.devices == 1 else jax.lax.psum(tree, AXIS)

    def update_minibatch(carry: tuple, mb: tuple, fixed: tuple) -> tuple[tuple, dict]:
        """One gradient step on minibatch `mb`; `fixed` (the magnet, the coefficients) is read,
        not trained."""
        params, opt_state = carry
        mb = (*mb, *fixed)
        if critic_only:  # the actor frozen: the loss's gradient with respect to the critic alone
            grads, info = summed(
                jax.grad(lambda critic: loss_fn({**params, "critic": critic}, *mb), has_aux=True)(params["critic"])
            )
            updates, opt_state = optimizer.update(grads, opt_state, params["critic"])
            return ({**params, "critic": optax.apply_updates(params["critic"], updates)}, opt_state), info
        grads, info = summed(jax.grad(loss_fn, has_aux=True)(params, *mb))
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state), info

    def update_epoch(carry: tuple, key: jax.Array, data: tuple, fixed: tuple) -> tuple[tuple, dict]:
        order = jax.random.permutation(key, update_size)
        if layout.devices == 1:
            shuffled = jax.tree.map(
                lambda x: x[order].reshape(n_minibatches, update_size // n_minibatches, *x.shape[1:]), data
            )
        else:  # this device's part of every minibatch
            mine = order.reshape(n_minibatches, layout.devices, -1)[:, jax.lax.axis_index(AXIS)]
            shuffled = jax.tree.map(lambda x: x[mine], data)
        return jax.lax.scan(lambda c, mb: update_minibatch(c, mb, fixed), carry, shuffled)

    def iteration(
        runner: Runner, pool: Params, snapshot_ids: jax.Array, coefs: Coefficients, critic_opt_state: Any = None
    ) -> tuple:
        params, opt_state, state, seat, floor, key, magnet = runner
        carry = (params, pool, snapshot_ids, state, seat, floor, key)
        (_, _, _, state, seat, floor, key), (traj, done, won) = jax.lax.scan(env_step, carry, None, length=s.n_steps)
        last_extra = critic_extra(observe, state, 1 - seat, scale, s.privileged_critic)
        last_value = critic_value(params["critic"], observe(state, seat) * scale, last_extra, s.activation)
        adv = learner_advantages(traj, last_value, s.gamma, s.gae_lambda)
        ret = adv + traj.value
        every_row = jax.tree.map(lambda x: layout.gathered(x, axis=1), (traj, adv, ret))  # logical order
        flat = jax.tree.map(lambda x: x.reshape(s.n_envs * s.n_steps, *x.shape[2:]), every_row)
        key, epoch_key = jax.random.split(key)
        dropped = jnp.int32(0)
        if s.decision_slots:
            key, pack_key = jax.random.split(key)
            flat, dropped = pack_learner_decisions(flat, s.decision_slots, pack_key)
        trained = critic_opt_state if critic_only else opt_state
        (params, trained), info = jax.lax.scan(
            lambda c, k: update_epoch(c, k, flat, (magnet, coefs)),
            (params, trained),
            jax.random.split(epoch_key, s.n_epochs),
        )
        metrics = {name: x.mean() for name, x in info.items()}
        metrics["learner_steps"] = layout.total(traj.learner_turn)
        metrics["decisions_dropped"] = dropped
        metrics["games_per_row"] = layout.gathered(done.sum(axis=0), axis=0)
        metrics["wins_per_row"] = layout.gathered(won.sum(axis=0), axis=0)
        metrics["learner_reward"] = layout.total(traj.reward)
        if critic_only:
            return Runner(params, opt_state, state, seat, floor, key, magnet), trained, metrics
        return Runner(params, trained, state, seat, floor, key, magnet), metrics

    if mesh is not None:
        split, whole = jax.sharding.PartitionSpec(AXIS), jax.sharding.PartitionSpec()
        # shard_map's specs: a Runner of PartitionSpecs, not of arrays
        runner_specs = Runner(whole, whole, split, split, split, whole, whole)  # type: ignore[arg-type]  # specs
        in_specs: tuple[Any, ...]
        out_specs: tuple[Any, ...]
        if critic_only:
            in_specs, out_specs = (runner_specs, whole, whole, whole, whole), (runner_specs, whole, whole)
        else:
            in_specs, out_specs = (runner_specs, whole, whole, whole), (runner_specs, whole)
        # check_vma off: the gathered trajectories and the summed gradients are the same on every
        # device by construction (all_gather, psum), which the check cannot infer for all_gather
        iteration = jax.shard_map(iteration, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=False)
    return jax.jit(iteration, compiler_options=compiler_options)
