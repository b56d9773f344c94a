"""The JAX form of every fixed league opponent (`make_opponent`): the heuristic ports, `random`
and the agents that play a `tacocat-mlp-v1` policy file (`league:path=`, `rllib:path=`,
`champion`; tacocat/agents/mlp_agent.py), and `mix`es of these.

An opponent is a `heuristics.Policy`: `policy(observation, legal_action_mask, key,
opponent_floor) -> action` for ONE position (vmapped over the rows of its block). A policy
file's network is the file's own layers as constants of the compiled iteration, fed the raw
observation, as the numpy agent is: the export already folded the networks' input scale into
the first layer (`network.actor_layers`). It is greedy (the first legal action of highest
logit, as `MLPPolicyAgent.act`) or, with `deterministic=false`, samples from the softmax over
the legal actions. The numpy agent computes in float64, this form in float32 with full-precision
matrix products (`Precision.HIGHEST`: an accelerator's default would round the products to
fewer bits), which gives the same greedy actions and probabilities to about 1e-6
(tests/test_league_fixed_policies.py: over 10,000 positions). `random` draws uniformly among
the legal actions; like the Python agent it reads nothing else.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from tacocat.agents.heuristic_jax import Policy, make_heuristic
from tacocat.agents.jax_ports import POLICY_FILE_AGENTS, PORTED, check_ported
from tacocat.agents.policy_file import Layers
from tacocat.agents.registry import parse_spec
from tacocat.game.config import RulesConfig

ACTIVATIONS = {"tanh": jnp.tanh, "relu": jax.nn.relu}
#: the logit of an illegal action: finite, so that entropy and log-probabilities stay finite
MASKED_LOGIT = -1e9


def make_opponent(spec: str, rules: RulesConfig) -> Policy:
    """The JAX form of the opponent `spec` under `rules` (NotPortedError for a spec with none,
    or a policy file trained for other rules)."""
    name, agent = check_ported(spec, rules)
    if name == "mix":
        return mix_policy([make_opponent(c, rules) for c in agent.component_specs], agent.weights)  # type: ignore[attr-defined]  # MixAgent
    if name in PORTED:
        return make_heuristic(spec, rules)
    if name == "random":
        return random_policy
    return file_policy(agent.layers, agent.meta["activation"], agent.deterministic)  # type: ignore[attr-defined]  # MLPPolicyAgent


def random_policy(
    observation: jax.Array, legal_action_mask: jax.Array, key: jax.Array, opponent_floor: jax.Array
) -> jax.Array:
    """`random`: uniform over the legal actions."""
    return jax.random.categorical(key, jnp.where(legal_action_mask, 0.0, MASKED_LOGIT)).astype(jnp.int32)


def mix_policy(policies: list[Policy], weights: np.ndarray) -> Policy:
    """`mix`: draw one of `policies` by `weights`, then play its action. Every policy is run
    (each with its own key), and the drawn one's action kept."""
    log_weights = jnp.log(jnp.asarray(weights, jnp.float32))

    def policy(
        observation: jax.Array, legal_action_mask: jax.Array, key: jax.Array, opponent_floor: jax.Array
    ) -> jax.Array:
        draw_key, *keys = jax.random.split(key, len(policies) + 1)
        actions = jnp.stack(
            [p(observation, legal_action_mask, k, opponent_floor) for p, k in zip(policies, keys, strict=True)]
        )
        return actions[jax.random.categorical(draw_key, log_weights)]

    return policy


def file_logits(layers: Layers, activation: str) -> Callable[[jax.Array], jax.Array]:
    """`logits(observation)`: the policy file's MLP (weights (out, in), as `policy_logits`
    reads them) on a raw observation, in float32 at full precision."""
    weights = [(jnp.asarray(weight.T, jnp.float32), jnp.asarray(bias, jnp.float32)) for weight, bias in layers]
    act = ACTIVATIONS[activation]

    def logits(observation: jax.Array) -> jax.Array:
        h = observation.astype(jnp.float32)
        for i, (weight, bias) in enumerate(weights):
            h = jnp.dot(h, weight, precision=jax.lax.Precision.HIGHEST) + bias
            if i < len(weights) - 1:
                h = act(h)
        return h

    return logits


def file_policy(layers: Layers, activation: str, deterministic: bool) -> Policy:
    """A policy file as a league opponent: greedy, or sampling from the masked softmax."""
    logits = file_logits(layers, activation)

    def policy(
        observation: jax.Array, legal_action_mask: jax.Array, key: jax.Array, opponent_floor: jax.Array
    ) -> jax.Array:
        z = jnp.where(legal_action_mask, logits(observation), MASKED_LOGIT)
        if deterministic:
            return jnp.argmax(z).astype(jnp.int32)  # the first of the highest, as the numpy agent
        return jax.random.categorical(key, z).astype(jnp.int32)

    return policy


def opponent_digest(spec: str) -> str:
    """What the compiled iteration depends on besides the spec: the content of a policy file
    (its weights are constants of the compiled code; the same path may hold another file by
    the next run in this process). Empty for the other opponents."""
    name, _ = parse_spec(spec)
    if name == "mix":
        _, mix = check_ported(spec)
        return "+".join(opponent_digest(c) for c in mix.component_specs)  # type: ignore[attr-defined]  # MixAgent
    if name not in POLICY_FILE_AGENTS:
        return ""
    _, agent = check_ported(spec)
    return hashlib.sha256(Path(agent.path).read_bytes()).hexdigest()  # type: ignore[attr-defined]  # MLPPolicyAgent
