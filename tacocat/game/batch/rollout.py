"""Batched random-legal play with auto-reset: the building block of a pgx-style training loop
and of `benchmarks/batch_speed.py`."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from tacocat.game.batch import xla
from tacocat.game.batch.core import State
from tacocat.game.batch.env import TacocatBatch


def random_legal_actions(key: jax.Array, mask: jax.Array) -> jax.Array:
    """One uniformly random legal action per row of a (batch, N) mask (each row has one).

    Draws one random integer k per row (modulo bias below N / 2**32) and takes the k-th legal
    action (`xla.count_and_find`). On XLA:CPU this is several times faster than a Gumbel
    draw per action (`jax.random.categorical`: N random numbers per row)."""
    count, find = xla.count_and_find(mask)
    k = (jax.random.bits(key, count.shape, jnp.uint32) % jnp.maximum(count, 1).astype(jnp.uint32)).astype(jnp.int32)
    return find(k)


def policy_actions(key: jax.Array, logits: jax.Array, mask: jax.Array) -> jax.Array:
    """One action per row of (batch, N) `logits`, drawn from the softmax over the legal actions
    of the (batch, N) `mask` (each row has one): the distribution of `jax.random.categorical`
    over the masked logits, never an illegal action.

    By inverse CDF (`xla.weighted_pick` of the legal actions' `exp(logit - max)`): one uniform
    number per row. `jax.random.categorical` (Gumbel-max) draws one per action, N = 121 threefry
    outputs and two logarithms per row, which on XLA:CPU cost more than the engine's step
    (`benchmarks/batch_speed.py` measures both). The draws are not the ones `categorical`
    makes from the same key, only their distribution (tests/test_sampling.py)."""
    return pick_by_logits(jax.random.uniform(key, logits.shape[:-1]), logits, mask)


def pick_by_logits(u: jax.Array, logits: jax.Array, mask: jax.Array) -> jax.Array:
    """`policy_actions` given its uniform numbers `u` in [0, 1), one per row (a caller that
    splits the batch, as the league over several devices, draws them for the whole batch and
    picks on its own rows)."""
    top = jnp.max(jnp.where(mask, logits, -jnp.inf), axis=-1, keepdims=True)
    weights = jnp.where(mask, jnp.exp(logits - top), 0.0)
    return xla.weighted_pick(weights, u)


#: a sampler: `sampler(key, legal_action_mask) -> actions`, one per row
Sampler = Callable[[jax.Array, jax.Array], jax.Array]


def make_rollout(
    env: TacocatBatch,
    batch_size: int,
    num_steps: int,
    compiler_options: dict | None = None,
    sampler: Sampler = random_legal_actions,
) -> Callable[[jax.Array], tuple[State, dict]]:
    """A jitted function `rollout(key) -> (final state, stats)`: `batch_size` games played with
    uniformly random legal actions (or `sampler`'s) for `num_steps` auto-reset steps (`lax.scan`).

    stats: `finished` games (terminated or truncated), `terminated`, `truncated`, and
    `reward_sum` (per player, summed over every step of every game).
    """
    init = jax.vmap(env.init)
    step = jax.vmap(env.step_autoreset)

    def body(carry: tuple[State, jax.Array, dict], _: None) -> tuple[tuple[State, jax.Array, dict], None]:
        state, key, stats = carry
        key, act_key, step_key = jax.random.split(key, 3)
        action = sampler(act_key, state.legal_action_mask)
        state = step(state, action, jax.random.split(step_key, batch_size))
        stats = {
            "finished": stats["finished"] + jnp.sum(state.terminated | state.truncated),
            "terminated": stats["terminated"] + jnp.sum(state.terminated),
            "truncated": stats["truncated"] + jnp.sum(state.truncated),
            "reward_sum": stats["reward_sum"] + jnp.sum(state.rewards, axis=0),
        }
        return (state, key, stats), None

    def rollout(key: jax.Array) -> tuple[State, dict]:
        key, init_key = jax.random.split(key)
        state = init(jax.random.split(init_key, batch_size))
        zero = jnp.int32(0)
        stats = {"finished": zero, "terminated": zero, "truncated": zero, "reward_sum": jnp.zeros(2, jnp.float32)}
        (state, _, stats), _ = jax.lax.scan(body, (state, key, stats), None, length=num_steps)
        return state, stats

    return jax.jit(rollout, compiler_options=compiler_options)
