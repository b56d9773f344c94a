"""`mix` (tacocat/agents/mix.py): a behavioural mixture of agents, compared in its three forms.

* the Python agent draws one of its agents at every decision, by the weights;
* its exact table (`agent_policy`) is the weighted average of its agents' tables; the Python
  agent's moves, drawn many times at each information state, agree with that table;
* its JAX form (`make_opponent`, what the exploiter trains against) plays the same
  distribution as the Python form at mixed-play positions of the decisive preset trio_decided,
  where both of its agents are deterministic (`counter` never samples there).

The weights are 3:1 throughout, so a form that swapped or ignored them would be off by 0.25.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from play_positions import mixed_play_positions
from preset_trees import preset_tree

from support.lockstep import FAST_COMPILE
from tacocat.agents.jax_forms import make_opponent
from tacocat.agents.jax_ports import NotPortedError, check_ported
from tacocat.agents.mix import MixAgent
from tacocat.agents.registry import AgentSpecError, make_agent
from tacocat.analysis.agent_tables import _python_rows, agent_policy
from tacocat.game.presets import preset_config
from tacocat.game.view import opponent_bounds

MIX = "mix:agents=counter+planner,weights=3+1"
COUNTER_SHARE = 0.75


def _share_bound(n: int) -> float:
    """Four standard deviations of a share of COUNTER_SHARE over n draws."""
    return 4 * np.sqrt(COUNTER_SHARE * (1 - COUNTER_SHARE) / n)


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("mix:agents=counter+", "agent specs joined by '+'"),
        ("mix:agents=counter+planner,weights=1", "gives 1 weights for 2 agents"),
        ("mix:agents=counter+planner,weights=a+b", "must be numbers"),
        ("mix:agents=counter+planner,weights=0+0", "not all zero"),
        ("mix:agents=counter+planner,weights=-1+2", "non-negative"),
        ("mix:agents=mix+counter", "cannot hold another mix"),
        ("mix:agents=counter+chess", "unknown agent 'chess'"),
        ("mix:agents=counter+planner,depth=3", "has no parameter 'depth'"),
    ],
)
def test_a_bad_mix_is_refused_in_one_line(spec: str, words: str) -> None:
    with pytest.raises(AgentSpecError, match=re.escape(words)) as error:
        make_agent(spec)
    assert "\n" not in str(error.value)


def test_the_spec_keeps_agents_with_parameters() -> None:
    agent = make_agent('mix:agents="counter:samples=16,duel_from=3+planner"')
    assert isinstance(agent, MixAgent)
    assert agent.component_specs == ["counter:samples=16,duel_from=3", "planner"]
    assert [c.spec for c in agent.components] == ["counter:samples=16,duel_from=3", "planner"]
    np.testing.assert_array_equal(agent.weights, [0.5, 0.5])
    assert make_agent(agent.spec).component_specs == agent.component_specs  # the recorded spec rebuilds it


def test_the_exact_table_is_the_weighted_average_and_the_python_agent_plays_it() -> None:
    """On skirmish (on tiny the heuristics disagree at 4 information states only)."""
    tree = preset_tree("skirmish")
    counter, planner = agent_policy(tree, "highcard"), agent_policy(tree, "planner")
    mix = agent_policy(tree, "mix:agents=highcard+planner,weights=3+1")
    rows = np.flatnonzero(np.isin(tree.infoset_player, [0, 1]))
    np.testing.assert_allclose(mix[rows], COUNTER_SHARE * counter[rows] + (1 - COUNTER_SHARE) * planner[rows])
    np.testing.assert_allclose(mix.sum(axis=1), 1.0)
    differ = rows[np.abs(counter[rows] - planner[rows]).sum(axis=1) > 0]
    assert differ.size >= 20, "the two agents must disagree somewhere for the test to mean anything"
    chosen = differ[:40]
    draws = 200
    played = _python_rows(tree, make_agent("mix:agents=highcard+planner,weights=3+1"), chosen, range(draws), False)
    counter_column = counter[chosen].argmax(axis=1)  # both agents are deterministic here
    share = played[np.arange(chosen.size), counter_column].mean()
    assert abs(share - COUNTER_SHARE) < _share_bound(chosen.size * draws)
    # every move is one of the two agents' moves
    np.testing.assert_allclose((played * ((counter[chosen] + planner[chosen]) > 0)).sum(axis=1), 1.0)


def test_the_sampling_mode_reaches_the_agents() -> None:
    """In sampling mode each agent's table is its sampled one (random is uniform either way)."""
    tree = preset_tree("tiny")
    sampled = agent_policy(tree, "mix:agents=random+planner,weights=1+3", sampling=True, samples=4)
    expected = 0.25 * agent_policy(tree, "random") + 0.75 * agent_policy(tree, "planner", sampling=True, samples=4)
    np.testing.assert_allclose(sampled, expected)


def test_the_jax_form_plays_the_python_forms_distribution() -> None:
    config = preset_config("trio_decided")
    inputs = mixed_play_positions(config, 1000, seed=7)
    agents = {name: make_agent(name) for name in ("counter", "planner")}
    moves = {}
    for name, agent in agents.items():
        agent.reset(0, np.random.default_rng(0))  # neither draws on trio_decided
        moves[name] = np.array([agent.act(inp) for inp in inputs])
    differ = moves["counter"] != moves["planner"]
    assert differ.sum() >= 30
    chosen = [inp for inp, d in zip(inputs, differ, strict=True) if d]
    counter_moves = moves["counter"][differ]
    planner_moves = moves["planner"][differ]

    draws = 64
    policy = jax.jit(jax.vmap(make_opponent(MIX, config)), compiler_options=FAST_COMPILE)
    rows = [inp for inp in chosen for _ in range(draws)]
    obs = jnp.asarray(np.stack([inp.observation for inp in rows]))
    mask = jnp.asarray(np.stack([inp.action_mask.astype(bool) for inp in rows]))
    floor = jnp.asarray([opponent_bounds(inp.view)[0] for inp in rows], jnp.int32)
    jax_moves = np.asarray(policy(obs, mask, jax.random.split(jax.random.key(3), len(rows)), floor))
    jax_moves = jax_moves.reshape(len(chosen), draws)
    assert ((jax_moves == counter_moves[:, None]) | (jax_moves == planner_moves[:, None])).all()
    jax_share = (jax_moves == counter_moves[:, None]).mean()
    assert abs(jax_share - COUNTER_SHARE) < _share_bound(jax_moves.size)

    mix = make_agent(MIX)
    python_moves = np.empty_like(jax_moves)
    for k, inp in enumerate(chosen):
        for i in range(draws):
            mix.reset(inp.view.player, np.random.default_rng([k, i]))
            python_moves[k, i] = mix.act(inp)
    python_share = (python_moves == counter_moves[:, None]).mean()
    assert abs(python_share - COUNTER_SHARE) < _share_bound(python_moves.size)


def test_a_mix_has_a_jax_form_only_if_every_agent_has_one() -> None:
    name, agent = check_ported(MIX, preset_config("trio_decided"))
    assert name == "mix" and isinstance(agent, MixAgent)
    with pytest.raises(NotPortedError, match="'search' has no JAX port"):
        check_ported("mix:agents=counter+search")
    with pytest.raises(NotPortedError, match="sacrifice_rate=0 only"):
        check_ported('mix:agents="planner:sacrifice_rate=0.5+counter"')


def test_the_mix_draws_all_its_randomness_from_the_games_generator() -> None:
    inputs = mixed_play_positions(preset_config("trio_decided"), 40, seed=5)

    def moves(seed: int) -> list[int]:
        mix = make_agent(MIX)
        mix.reset(0, np.random.default_rng(seed))
        return [mix.act(inp) for inp in inputs]

    assert moves(1) == moves(1)
    assert any(moves(seed) != moves(1) for seed in range(2, 6))
