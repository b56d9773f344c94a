"""The JAX ports of `highcard` and `planner` (experiments/league/heuristics.py) against the
Python agents (agents/heuristic.py): the same action in the same position, bit-exact (neither
agent uses randomness), over at least 10,000 positions of the default rules and positions of a
variant. Positions come from the reference engine under mixed play (random moves and the
planner's), so both early replace steps and late tricks are visited; the port sees the same
observation vector and mask the Python agent sees (R7.3: nothing else)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from agents.base import AgentInput
from agents.registry import make_agent
from experiments.league.heuristics import NotPortedError, make_heuristic
from tacocat_env import RulesConfig, apply_action, legal_actions, new_game
from tacocat_env.engine import Phase

VARIANT = RulesConfig(deck={1: 4, 2: 4, 4: 5, 5: 4, 7: 4, 8: 4, 10: 5}, board=(3, 5, 7, 5, 3), round_reward=0.1)


def positions(config: RulesConfig, count: int, seed: int) -> list[AgentInput]:
    """`count` inputs of the player to act, from games of mixed random/planner play."""
    rng = np.random.default_rng(seed)
    guide = make_agent("planner")
    out: list[AgentInput] = []
    while len(out) < count:
        state = new_game(config, rng)
        while not state.is_over and len(out) < count:
            inp = AgentInput.from_state(state, state.current_player)
            out.append(inp)
            legal = legal_actions(state)
            move = guide.act(inp) if rng.random() < 0.5 else legal[int(rng.integers(len(legal)))]
            apply_action(state, move)
    return out


def compare(spec: str, config: RulesConfig, inputs: list[AgentInput]) -> tuple[int, set[Phase]]:
    agent = make_agent(spec)
    expected = np.array([agent.act(inp) for inp in inputs])
    obs = jnp.asarray(np.stack([inp.observation for inp in inputs]))
    mask = jnp.asarray(np.stack([inp.action_mask.astype(bool) for inp in inputs]))
    keys = jax.random.split(jax.random.key(0), len(inputs))
    got = np.asarray(jax.jit(jax.vmap(make_heuristic(spec, config)))(obs, mask, keys))
    wrong = np.flatnonzero(got != expected)
    assert wrong.size == 0, (
        f"{spec}: {wrong.size} of {len(inputs)} positions differ; first: {inputs[wrong[0]].view.phase.name}, "
        f"python {expected[wrong[0]]}, jax {got[wrong[0]]}")
    assert all(inputs[i].action_mask[a] for i, a in enumerate(got)), f"{spec}: the port chose an illegal action"
    return len(inputs), {inp.view.phase for inp in inputs}


@pytest.fixture(scope="module")
def default_positions() -> list[AgentInput]:
    return positions(RulesConfig(), 10_000, seed=9)


@pytest.mark.parametrize("spec", ["highcard", "planner", "planner:keep_from=5"])
def test_port_equals_python_agent_on_10000_positions(spec: str, default_positions: list[AgentInput]) -> None:
    n, phases = compare(spec, RulesConfig(), default_positions)
    assert n >= 10_000
    assert {Phase.REPLACE, Phase.DUEL, Phase.ATTACK, Phase.ANSWER} <= phases


@pytest.mark.parametrize("spec", ["highcard", "planner"])
def test_port_equals_python_agent_on_a_variant(spec: str) -> None:
    compare(spec, VARIANT, positions(VARIANT, 2_000, seed=10))


def test_the_comparison_catches_a_wrong_port(default_positions: list[AgentInput]) -> None:
    """highcard's port is not planner's: comparing the wrong pair fails (the test can fail)."""
    agent = make_agent("planner")
    expected = np.array([agent.act(inp) for inp in default_positions[:2000]])
    obs = jnp.asarray(np.stack([inp.observation for inp in default_positions[:2000]]))
    mask = jnp.asarray(np.stack([inp.action_mask.astype(bool) for inp in default_positions[:2000]]))
    keys = jax.random.split(jax.random.key(0), 2000)
    got = np.asarray(jax.jit(jax.vmap(make_heuristic("highcard", RulesConfig())))(obs, mask, keys))
    assert (got != expected).sum() > 100


@pytest.mark.parametrize("spec, message", [
    ("counter", "no JAX port"), ("search", "no JAX port"), ("planner:sacrifice_rate=0.5", "sacrifice_rate=0"),
    ("highcard:keep_from=3", "no parameter 'keep_from'"),
])
def test_unported_specs_are_refused(spec: str, message: str) -> None:
    with pytest.raises(NotPortedError, match=message):
        make_heuristic(spec, RulesConfig())
