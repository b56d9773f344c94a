"""The actor-critic: two MLPs (policy logits, value) as plain pytrees of JAX arrays.

Plain JAX rather than flax or equinox: the network is two small MLPs, their parameters are a
dict of lists of (weight, bias) arrays, so checkpoints are npz members in a fixed order, the
export to the numpy ladder agent is a transpose, and the only new dependency is optax (docs/LEAGUE.md).
Weights are stored (in, out) as JAX multiplies them; exported (out, in) as `tacocat.agents.policy_file`'s
`tacocat-mlp-v1` format reads them. Both networks see the observation scaled into [0, 1]
(`input_scale`); the export folds that scale into the first layer.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from tacocat.agents.jax_forms import ACTIVATIONS, MASKED_LOGIT
from tacocat.game.observation import ObservationLayout
from tacocat.game.ruleset import Ruleset

Params = dict[str, list[tuple[jax.Array, jax.Array]]]


def init_mlp(key: jax.Array, sizes: list[int], last_gain: float) -> list[tuple[jax.Array, jax.Array]]:
    """Orthogonal weights (gain sqrt 2, `last_gain` for the output layer) and zero biases (CleanRL's init)."""
    layers = []
    keys = jax.random.split(key, len(sizes) - 1)
    for i, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        gain = last_gain if i == len(sizes) - 2 else float(np.sqrt(2))
        weight = jax.nn.initializers.orthogonal(gain)(keys[i], (n_in, n_out), jnp.float32)
        layers.append((weight, jnp.zeros(n_out, jnp.float32)))
    return layers


def init_params(
    key: jax.Array, obs_size: int, n_actions: int, hidden: list[int], critic_size: int | None = None
) -> Params:
    """Actor (`obs_size` inputs) and critic (`critic_size` inputs, default `obs_size`; twice
    that for the privileged critic, which also reads the opponent's observation)."""
    actor_key, critic_key = jax.random.split(key)
    return {
        "actor": init_mlp(actor_key, [obs_size, *hidden, n_actions], 0.01),
        "critic": init_mlp(critic_key, [critic_size or obs_size, *hidden, 1], 1.0),
    }


def mlp(layers: list[tuple[jax.Array, jax.Array]], x: jax.Array, activation: str) -> jax.Array:
    act = ACTIVATIONS[activation]
    for i, (weight, bias) in enumerate(layers):
        x = x @ weight + bias
        if i < len(layers) - 1:
            x = act(x)
    return x


def masked_logits(
    actor: list[tuple[jax.Array, jax.Array]], obs: jax.Array, mask: jax.Array, activation: str
) -> jax.Array:
    return jnp.where(mask, mlp(actor, obs, activation), MASKED_LOGIT)


def value(critic: list[tuple[jax.Array, jax.Array]], obs: jax.Array, activation: str) -> jax.Array:
    return mlp(critic, obs, activation)[..., 0]


def input_scale(rules: Ruleset) -> np.ndarray:
    """What the networks multiply an observation by before their first layer: 1 / each entry's
    upper bound (`ObservationLayout.high`), so that every input lies in [0, 1] (the draw pile's
    size would otherwise reach 38 next to one-hots)."""
    return (1.0 / ObservationLayout(rules).high).astype(np.float32)


def actor_layers(params: Params, scale: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The actor as (weight (out, in), bias) numpy pairs, the export format's orientation, with
    the input `scale` folded into the first layer: the exported network reads raw observations."""
    layers = [(np.asarray(weight, np.float32), np.asarray(bias, np.float32)) for weight, bias in params["actor"]]
    layers[0] = (layers[0][0] * scale[:, None], layers[0][1])
    return [(weight.T.copy(), bias) for weight, bias in layers]


def actor_from_layers(
    layers: list[tuple[np.ndarray, np.ndarray]], scale: np.ndarray
) -> list[tuple[jax.Array, jax.Array]]:
    """The inverse of `actor_layers`: a policy file's layers (weight (out, in), reading raw
    observations) as the actor's (in, out) float32 pairs reading scaled ones, the input `scale`
    taken out of the first layer again (exact up to float32 rounding)."""
    weights = [(np.asarray(weight, np.float64).T, np.asarray(bias, np.float64)) for weight, bias in layers]
    weights[0] = (weights[0][0] / np.asarray(scale, np.float64)[:, None], weights[0][1])
    return [(jnp.asarray(weight, jnp.float32), jnp.asarray(bias, jnp.float32)) for weight, bias in weights]
