"""Positions for the tests that compare a JAX policy with its Python agent decision by decision
(tests/test_league_heuristics.py, tests/test_league_fixed_policies.py)."""

from __future__ import annotations

import numpy as np

from tacocat.agents.base import AgentInput
from tacocat.agents.registry import make_agent
from tacocat.game.config import RulesConfig
from tacocat.game.engine import apply_action, legal_actions, new_game


def mixed_play_positions(config: RulesConfig, count: int, seed: int, guide: str = "planner") -> list[AgentInput]:
    """`count` inputs of the player to act, from games where each move is the `guide`'s or a
    uniformly random one (half each)."""
    rng = np.random.default_rng(seed)
    agent = make_agent(guide)
    out: list[AgentInput] = []
    while len(out) < count:
        state = new_game(config, rng)
        while not state.is_over and len(out) < count:
            inp = AgentInput.from_state(state, state.current_player)
            out.append(inp)
            legal = legal_actions(state)
            apply_action(state, agent.act(inp) if rng.random() < 0.5 else legal[int(rng.integers(len(legal)))])
    return out
