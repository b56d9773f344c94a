"""R7.3 for agents: nothing reachable from an agent's input leads to hidden information.

An agent gets an `AgentInput` (a `PlayerView` and an observation vector). We walk every
attribute, slot, container item and closure cell reachable from it and require that none of
them is the `GameState`, its generator (which would predict the next deals) or one of the
lists holding the opponent's hand, the hidden set-aside or the draw pile.
"""

from __future__ import annotations

import types

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEFAULT, random_game, rules_configs, sample_states, seeds
from tacocat import GameState, encode
from tacocat.agents.base import AgentInput
from tacocat.game.observation import encode_view
from tacocat.game.view import player_view


def reachable(root: object, limit: int = 200_000) -> list[object]:
    """Every object reachable from `root` through attributes, slots, items and closures
    (modules, classes and a function's globals are not followed: they are code, not data)."""
    seen: dict[int, object] = {}
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (types.ModuleType, type, str, bytes, int, float)):
            continue
        seen[id(obj)] = obj
        assert len(seen) < limit, "object graph too large to walk"
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple, set, frozenset)):
            stack.extend(obj)
        if isinstance(obj, types.FunctionType):
            stack.extend(c.cell_contents for c in obj.__closure__ or () if _filled(c))
            stack.extend(obj.__defaults__ or ())
            continue
        if isinstance(obj, types.MethodType):
            stack.append(obj.__self__)
            stack.append(obj.__func__)
        if hasattr(obj, "__dict__"):
            stack.append(vars(obj))
        for klass in type(obj).__mro__:
            for slot in getattr(klass, "__slots__", ()):
                if hasattr(obj, slot):
                    stack.append(getattr(obj, slot))
    return list(seen.values())


def _filled(cell: types.CellType) -> bool:
    try:
        _ = cell.cell_contents
    except ValueError:
        return False
    return True


def test_walker_finds_a_state_hidden_in_a_closure():
    # the walker itself must be able to fail: the old AgentInput kept `lambda: encode(state, p)`
    state = next(sample_states(0, DEFAULT))
    leaky = types.SimpleNamespace(encoder=lambda: state.hands)
    assert any(obj is state for obj in reachable(leaky))


def test_no_attribute_path_from_an_agent_input_reaches_hidden_cards():
    checked = 0
    for state in sample_states(3, DEFAULT, every=5):
        player = state.to_act
        opponent = 1 - player
        hidden = {
            id(state),
            id(state.rng),
            id(state.hands),
            id(state.hands[opponent]),
            id(state.set_aside),
            id(state.set_aside[opponent]),
            id(state.draw_pile),
            id(state.duel),
        }
        inp = AgentInput.from_state(state, player)
        inp.observation, inp.action_mask  # noqa: B018 (computed, then walked too)
        found = reachable(inp)
        assert not any(isinstance(obj, GameState) for obj in found)
        assert not any(isinstance(obj, np.random.Generator) for obj in found)
        assert not hidden & {id(obj) for obj in found}
        # and the input is a copy: changing the game afterwards does not change it
        before = (inp.view.hand, inp.observation.tobytes())
        state.hands[player][0] += 1
        assert (inp.view.hand, inp.observation.tobytes()) == before
        state.hands[player][0] -= 1
        checked += 1
    assert checked > 10


@settings(max_examples=30, deadline=None)
@given(seed=seeds, cfg=st.one_of(st.just(DEFAULT), rules_configs()))
def test_the_view_encodes_to_the_same_observation_as_the_state(seed, cfg):
    """Agents' observations come from their view: bit-identical to the env's, every step."""
    checked = 0
    for state in sample_states(seed, cfg):
        for player in (0, 1):
            assert encode_view(player_view(state, player)).tobytes() == encode(state, player).tobytes()
            checked += 1
    final = random_game(seed, cfg)  # and the finished game
    for player in (0, 1):
        assert encode_view(player_view(final, player)).tobytes() == encode(final, player).tobytes()
    assert checked > 0
