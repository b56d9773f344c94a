"""The Gymnasium view (tacocat.train.gym_env) refuses bad input as the AEC env does (issue 24).

Opponent pools: (agent spec, weight) pairs with finite weights > 0, one clear error otherwise;
arguments and seeds checked with the AEC env's and the engine's messages; an id outside the
action space raises in both illegal-action modes (only moves of the action space are
penalized), and a refused input leaves the env as it was.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tacocat
from tacocat.game.errors import ActionOutOfRangeError, GameOverError, TacocatError
from tacocat.train.gym_env import OpponentPool, PoolEntry, TacocatSingleAgentEnv

ONE = [("random", 1.0)]


@pytest.mark.parametrize("weight", [-1, 0, 0.0, -0.5, math.nan, math.inf, -math.inf, True, "1", None, [1.0]])
def test_opponent_weight_must_be_a_finite_number_above_zero(weight):
    with pytest.raises(ValueError, match=r"opponent 'random': the weight must be a finite number > 0"):
        TacocatSingleAgentEnv([("random", weight)])


@pytest.mark.parametrize(
    "opponents, error, message",
    [
        ("random", TypeError, "list of \\(agent spec, weight\\) pairs"),
        ({"random": 1.0}, TypeError, "list of \\(agent spec, weight\\) pairs"),
        (None, TypeError, "list of \\(agent spec, weight\\) pairs"),
        (["random"], ValueError, r"opponents\[0\] must be an \(agent spec, weight\) pair"),
        ([("random", 1.0), ("highcard",)], ValueError, r"opponents\[1\] must be an \(agent spec, weight\) pair"),
        ([("random", 1.0, 2.0)], ValueError, r"opponents\[0\] must be an \(agent spec, weight\) pair"),
        ([], ValueError, "the opponent pool is empty"),
        ([(3, 1.0)], ValueError, "an agent spec must be a non-empty string"),
        ([("", 1.0)], ValueError, "an agent spec must be a non-empty string"),
    ],
)
def test_opponents_of_another_shape_get_one_clear_error(opponents, error, message):
    with pytest.raises(error, match=message):
        TacocatSingleAgentEnv(opponents)


def test_opponent_pairs_may_be_lists_or_tuples_and_a_pool_is_taken_as_is():
    env = TacocatSingleAgentEnv((["random", 2], ("highcard", 0.5)))
    assert [(e.spec, e.weight) for e in env.pool.entries] == [("random", 2), ("highcard", 0.5)]
    pool = OpponentPool([PoolEntry("random", 1.0)])
    assert TacocatSingleAgentEnv(pool).pool is pool


@settings(max_examples=60, deadline=None)
@given(
    weights=st.lists(st.floats(min_value=1e-300, max_value=1.7e308), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_pool_either_refuses_its_weights_or_samples_from_them(weights, seed):
    """Invariant: whatever finite positive weights are given, the pool is refused with one
    clear error (their total overflows) or every draw is one of its opponents -- never
    numpy's 'Probabilities contain NaN'."""
    specs = ["random", "highcard", "planner", "counter"][: len(weights)]
    entries = [PoolEntry(s, w) for s, w in zip(specs, weights, strict=True)]
    if not math.isfinite(sum(weights)):
        with pytest.raises(ValueError, match="add up to more than a float holds"):
            OpponentPool(entries)
        return
    pool = OpponentPool(entries)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        spec, _agent = pool.sample(rng)
        assert spec in specs


def test_add_and_remove_opponent_refuse_bad_input_and_leave_the_pool_unchanged():
    env = TacocatSingleAgentEnv(ONE)
    for weight in (-1, 0, math.nan):
        with pytest.raises(ValueError, match="finite number > 0"):
            env.add_opponent("highcard", weight)
    env.add_opponent("highcard", 1.7e308)
    with pytest.raises(ValueError, match="add up to more than a float holds"):
        env.add_opponent("planner", 1.7e308)
    assert [e.spec for e in env.pool.entries] == ["random", "highcard"]
    env.remove_opponent("highcard")
    with pytest.raises(ValueError, match="no opponent 'planner' in the pool"):
        env.remove_opponent("planner")
    with pytest.raises(ValueError, match="would leave the opponent pool empty"):
        env.remove_opponent("random")
    assert [e.spec for e in env.pool.entries] == ["random"]
    env.reset(seed=0)  # the pool still samples


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"learner_seat": True}, "learner_seat must be"),
        ({"learner_seat": 1.0}, "learner_seat must be"),
        ({"learner_seat": 2}, "learner_seat must be"),
        ({"learner_seat": "left"}, "learner_seat must be"),
        ({"illegal_action": "ignore"}, "illegal_action must be 'raise' or 'penalize'"),
        ({"render_mode": "human"}, "render_mode must be one of"),
        ({"render_mode": "rgb"}, "render_mode must be one of"),
    ],
)
def test_arguments_are_checked(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TacocatSingleAgentEnv(ONE, **kwargs)


@pytest.mark.parametrize("kwargs", [{"illegal_action": "ignore"}, {"render_mode": "rgb"}])
def test_argument_errors_read_as_the_aec_envs(kwargs):
    with pytest.raises(ValueError) as gym_error:
        TacocatSingleAgentEnv(ONE, **kwargs)
    with pytest.raises(ValueError) as aec_error:
        tacocat.env(**kwargs)
    # the same message, up to the list of render modes each env has
    assert str(gym_error.value).split(" one of ")[0] == str(aec_error.value).split(" one of ")[0]
    assert str(gym_error.value).split(" got ")[1] == str(aec_error.value).split(" got ")[1]


def test_a_numpy_integer_seat_is_a_seat():
    env = TacocatSingleAgentEnv(ONE, learner_seat=np.int64(1))
    env.reset(seed=0)
    assert env.seat == 1


@pytest.mark.parametrize("seed", [-1, "x", 1.5, True, np.random.default_rng(0)])
def test_a_bad_seed_is_refused_and_changes_nothing(seed):
    env = TacocatSingleAgentEnv(ONE)
    env.reset(seed=3)
    before = (env._rng.bit_generator.state, env._episodes, list(env.game.actions), env.game_seed)
    with pytest.raises(TacocatError, match="seed"):
        env.reset(seed=seed)
    assert (env._rng.bit_generator.state, env._episodes, list(env.game.actions), env.game_seed) == before


def test_a_numpy_integer_seed_seeds_as_the_same_int():
    a, b = TacocatSingleAgentEnv(ONE), TacocatSingleAgentEnv(ONE)
    assert (a.reset(seed=np.int64(4))[0] == b.reset(seed=4)[0]).all()


@pytest.mark.parametrize("mode", ["raise", "penalize"])
@pytest.mark.parametrize("action", [-1, 121, 10**6, None, 1.5, "3", np.float64(3.0)])
def test_ids_outside_the_action_space_raise_in_both_modes_as_the_aec_env(mode, action):
    env = TacocatSingleAgentEnv(ONE, illegal_action=mode)
    env.reset(seed=0)
    assert env.action_space.n == 121  # (default rules)
    before = list(env.game.actions)
    with pytest.raises(ActionOutOfRangeError, match="action"):
        env.step(action)
    assert env.game.actions == before and env.action_masks().any()  # nothing changed, play goes on
    aec = tacocat.env(illegal_action=mode)
    aec.reset(seed=0)
    with pytest.raises((ValueError, AssertionError)):  # (PettingZoo's AssertOutOfBoundsWrapper asserts)
        aec.step(action)


def test_penalize_ends_the_episode_on_an_illegal_move_of_the_action_space():
    env = TacocatSingleAgentEnv(ONE, illegal_action="penalize")
    env.reset(seed=0)
    illegal = int(np.flatnonzero(~env.action_masks())[0])
    _, reward, terminated, truncated, info = env.step(illegal)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    assert not env.action_masks().any()
    legal = tacocat.legal_actions(env.game)[0]
    with pytest.raises(GameOverError, match="call reset"):
        env.step(legal)  # the episode ended; the game is not played on
    env.reset()
    env.step(int(np.flatnonzero(env.action_masks())[0]))  # a new episode plays
