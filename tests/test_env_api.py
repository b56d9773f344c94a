"""The PettingZoo AEC environment tacocat_v0: API conformance, spaces, masks, infos, rendering,
state(), rewards (R6.4, R1.5, round_reward shaping) and illegal-action handling."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pettingzoo.test import api_test, render_test, seed_test

import tacocat
from conftest import DEFAULT, resample_hidden
from tacocat import IllegalActionError, RulesConfig, encode, setup_position
from tacocat.game.observation import ObservationLayout

SMALL = RulesConfig(
    deck=dict.fromkeys(range(1, 9), 3),
    board=(4, 6, 4),
    tie_policy="arrow_player_wins",
    arrow_policy="leading",
    max_rounds=10,
)


def random_env_game(e, seed: int, on_step=None) -> dict[str, float]:
    """Play one game through the AEC loop with random legal moves; returns each agent's total reward."""
    e.reset(seed=seed)
    rng = np.random.default_rng(seed)
    totals = dict.fromkeys(e.possible_agents, 0.0)
    for agent in e.agent_iter():
        observation, reward, terminated, truncated, info = e.last()
        totals[agent] += reward
        if terminated or truncated:
            e.step(None)
            continue
        if on_step is not None:
            on_step(e, agent, observation, info)
        legal = np.flatnonzero(observation["action_mask"])
        e.step(int(legal[rng.integers(len(legal))]))
    return totals


# ---------------------------------------------------------------------------------------
# PettingZoo conformance
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [tacocat.env, tacocat.raw_env])
@pytest.mark.parametrize("config", [None, SMALL])
def test_pettingzoo_api_test(make, config):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Dict observation with action_mask: PettingZoo's usual notes
        api_test(make(config=config), num_cycles=1000, verbose_progress=False)


@pytest.mark.parametrize("make", [tacocat.env, tacocat.raw_env])
def test_pettingzoo_seed_test(make):
    seed_test(make, num_cycles=500)
    seed_test(lambda: make(config=SMALL), num_cycles=500)


def test_metadata_and_agents():
    e = tacocat.env()
    assert e.metadata["name"] == "tacocat_v0"
    e.reset(seed=0)
    assert e.possible_agents == ["player_0", "player_1"] and e.agents == ["player_0", "player_1"]
    assert e.agent_selection == "player_0"  # the first round is a simultaneous replace asked of player_0 first


# ---------------------------------------------------------------------------------------
# spaces
# ---------------------------------------------------------------------------------------
def test_spaces_are_the_same_object_every_call():
    e = tacocat.env()
    for agent in e.possible_agents:
        assert e.observation_space(agent) is e.observation_space(agent)
        assert e.action_space(agent) is e.action_space(agent)
    n = e.unwrapped.codec.size
    assert e.action_space("player_0").n == n == 121
    obs_space = e.observation_space("player_0")
    assert obs_space["observation"].shape == (ObservationLayout(e.unwrapped.rules).size,)
    assert obs_space["action_mask"].shape == (n,)


def test_observations_and_state_lie_in_their_spaces():
    e = tacocat.env(config=SMALL)

    def check(env_, agent, observation, info):
        for a in env_.possible_agents:
            o = env_.observe(a)
            assert env_.observation_space(a).contains(o), a
        s = env_.state()
        assert s.shape == env_.unwrapped.state_space.shape and s.dtype == np.float32
        assert env_.unwrapped.state_space.contains(s)

    random_env_game(e, 4, check)


def test_state_is_player_0_view_plus_player_1_hidden_cards():
    e = tacocat.env()
    e.reset(seed=2)
    game = e.unwrapped.game
    s = e.state()
    n = game.rules.n_values
    assert np.array_equal(s[: -2 * n], encode(game, 0))
    assert s[-2 * n : -n].tolist() == game.hands[1]
    assert s[-n:].sum() == 0


# ---------------------------------------------------------------------------------------
# masks and infos
# ---------------------------------------------------------------------------------------
def test_mask_zero_for_non_acting_agent_and_infos_list_legal_moves():
    e = tacocat.env()
    seen = set()

    def check(env_, agent, observation, info):
        game = env_.unwrapped.game
        legal = tacocat.legal_actions(game)
        assert agent == f"player_{game.current_player}"
        assert tuple(np.flatnonzero(observation["action_mask"]).tolist()) == legal
        other = "player_1" if agent == "player_0" else "player_0"
        assert not env_.observe(other)["action_mask"].any()
        assert info["legal_moves"] == [env_.unwrapped.action_name(a) for a in legal]
        assert env_.infos[other]["legal_moves"] == []
        assert env_.unwrapped.legal_moves() == info["legal_moves"]
        seen.add(game.phase)

    random_env_game(e, 0, check)
    assert len(seen) == 4, "replace, duel, attack and answer were all visited"


def test_action_names_round_trip_and_text_views():
    e = tacocat.env()
    e.reset(seed=0)
    raw = e.unwrapped
    for a in range(raw.codec.size):
        assert raw.action_id(raw.action_name(a)) == a
    views = raw.observation_views("player_0")
    assert list(views) == [name for name, _, _ in raw.layout.table()]
    assert views["hand_sizes"].tolist() == [7, 7]
    assert "You are player_1:" in raw.observation_text("player_1")
    assert raw.public_history() == raw.game.events and raw.public_history() is not raw.game.events
    assert len(raw.ruleset_hash) == 16


def test_observation_is_egocentric():
    # Tacocat on space 1, space 0 covered: player_0 sees it one space from its goal, player_1
    # sees the mirror image; player_0 needs 1 decisive round (0 is covered), player_1 needs 6
    state = setup_position(([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6]), space=1, covered=[0], seed=0)
    layout = ObservationLayout(state.rules)
    v0 = layout.views(encode(state, 0))
    v1 = layout.views(encode(state, 1))
    assert v0["tacocat"].tolist() == [0, 1, 0, 0, 0, 0, 0]
    assert v1["tacocat"].tolist() == [0, 0, 0, 0, 0, 1, 0]
    assert v0["covered"].tolist() == [1, 0, 0, 0, 0, 0, 0]
    assert v1["covered"].tolist() == [0, 0, 0, 0, 0, 0, 1]
    assert v0["moves_to_goal"].tolist() == [1, 6] and v1["moves_to_goal"].tolist() == [6, 1]
    # the arrow of space 1 points at player_1 (trailing): "opp" for player_0, "me" for player_1
    assert v0["arrow"].tolist() == [0, 1, 0] and v1["arrow"].tolist() == [1, 0, 0]
    assert v1["my_turn"].tolist() == [1] and v0["my_turn"].tolist() == [0]


# ---------------------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------------------
def test_render_ansi_returns_the_board():
    e = tacocat.env(render_mode="ansi")
    e.reset(seed=0)
    text = e.render()
    assert isinstance(text, str)
    first = text.splitlines()[0]
    assert first.startswith("P0 GOAL") and first.endswith("P1 GOAL")
    assert "[@4O 7]" in first  # the Tacocat on the centre space (space 4, the O of TACOCAT, deal 7)
    assert first.count("[") == 7
    assert "hands: player_0 7 / player_1 7" in text and "to act: player_0 (replace)" in text


def test_render_shows_no_hidden_cards():
    e = tacocat.env(render_mode="ansi")
    e.reset(seed=1)
    game = e.unwrapped.game
    text = e.render()
    assert "face-up this round: -" in text
    # the spectator view is fully public: it does not change when hands are redealt at random
    e.unwrapped.game = resample_hidden(game, 0, np.random.default_rng(1))
    e.unwrapped.game.hands[0], e.unwrapped.game.hands[1] = game.hands[1], game.hands[0]
    assert e.render() == text


def test_render_human_prints_and_none_warns(capsys):
    e = tacocat.env(render_mode="human")
    e.reset(seed=0)
    assert e.render() is None
    assert "P0 GOAL" in capsys.readouterr().out
    quiet = tacocat.env()
    quiet.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert quiet.render() is None


def test_render_rgb_array_is_an_image_of_public_facts_only():
    e = tacocat.env(render_mode="rgb_array")
    e.reset(seed=1)
    image = e.render()
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 4  # a drawing, not a blank frame
    game = e.unwrapped.game
    e.unwrapped.game = resample_hidden(game, 0, np.random.default_rng(1))  # other hidden cards
    e.unwrapped.game.hands[0], e.unwrapped.game.hands[1] = game.hands[1], game.hands[0]
    assert np.array_equal(e.render(), image)
    e.unwrapped.game = game
    e.step(e.unwrapped.codec.stop)  # player_0 stops replacing: the table changes
    assert not np.array_equal(e.render(), image)


def test_pettingzoo_render_test_passes_for_every_mode():
    render_test(tacocat.env)


def test_bad_render_mode_and_illegal_action_option():
    with pytest.raises(ValueError, match="render_mode"):
        tacocat.env(render_mode="rgb")
    with pytest.raises(ValueError, match="illegal_action"):
        tacocat.env(illegal_action="ignore")


# ---------------------------------------------------------------------------------------
# rewards
# ---------------------------------------------------------------------------------------
def test_R6_4_rewards_plus_minus_one_at_game_end():
    decided = 0
    for seed in range(6):
        e = tacocat.env()
        totals = random_env_game(e, seed)
        game = e.unwrapped.game
        assert game.is_over
        if game.winner is None:
            assert totals == {"player_0": 0.0, "player_1": 0.0}
            continue
        decided += 1
        winner, loser = f"player_{game.winner}", f"player_{1 - game.winner}"
        assert totals == {winner: 1.0, loser: -1.0}
        assert all(e.terminations.values()) and not any(e.truncations.values())
    assert decided >= 1


def test_R1_5_truncation_rewards_zero():
    # one round from the centre of the default board cannot reach a goal: max_rounds=1 truncates
    e = tacocat.env(max_rounds=1)
    for seed in range(3):
        totals = random_env_game(e, seed)
        assert e.unwrapped.game.truncated
        assert totals == {"player_0": 0.0, "player_1": 0.0}
        assert all(e.truncations.values()) and not any(e.terminations.values())


def test_round_reward_shaping():
    tacocat.raw_env()  # the same rules without shaping built first must not hide the shaping
    e = tacocat.env(round_reward=0.25)
    assert e.unwrapped.config.round_reward == 0.25
    step_rewards = []

    def check(env_, agent, observation, info):
        step_rewards.append(dict(env_.rewards))

    totals = random_env_game(e, 3, check)
    game = e.unwrapped.game
    rounds = [ev[3] for ev in game.events if ev[0] == "showdown" and ev[3] is not None]
    won = [rounds.count(0), rounds.count(1)]
    final = tacocat.returns(game)
    assert totals["player_0"] == pytest.approx(final[0] + 0.25 * (won[0] - won[1]))
    assert totals["player_1"] == pytest.approx(final[1] + 0.25 * (won[1] - won[0]))
    # a decisive round that does not end the game is rewarded +0.25 / -0.25 on its step
    shaped = [r for r in step_rewards if r["player_0"] != 0]
    assert len(shaped) == len(rounds) - (1 if game.winner is not None else 0)
    assert all(sorted(r.values()) == [-0.25, 0.25] for r in shaped)


def test_illegal_action_raise_leaves_env_unchanged():
    e = tacocat.env()
    e.reset(seed=0)
    raw = e.unwrapped
    before = (raw.game.clone(), e.agent_selection, raw.observe("player_0")["observation"].copy())
    duel = raw.action_id("duel: play a 5")
    with pytest.raises(IllegalActionError, match="legal: "):
        e.step(duel)
    assert e.agent_selection == before[1]
    assert np.array_equal(raw.observe("player_0")["observation"], before[2])
    assert raw.game.hands == before[0].hands and raw.game.actions == []
    e.step(raw.action_id("replace: stop"))  # play goes on
    assert e.agent_selection == "player_1"


@pytest.mark.parametrize("action", [-1, 121, 10**9, 2.0, "3", True, np.int64(-5)])
def test_penalize_mode_raises_for_ids_outside_the_action_space(action):
    # penalize mode penalizes illegal moves of the action space only; anything else is the
    # same ActionOutOfRangeError as in raise mode, and the game goes on unchanged
    e = tacocat.env(illegal_action="penalize")
    e.reset(seed=0)
    before = e.observe("player_0")["observation"].copy()
    with pytest.raises(tacocat.ActionOutOfRangeError, match=r"out of range|integer id"):
        e.step(action)
    assert not any(e.terminations.values()) and e.agent_selection == "player_0"
    assert np.array_equal(e.observe("player_0")["observation"], before)
    e.step(e.unwrapped.action_id("replace: stop"))  # play goes on
    assert e.agent_selection == "player_1"


def test_illegal_action_penalize_terminates_with_minus_one_for_offender():
    e = tacocat.env(illegal_action="penalize")
    e.reset(seed=0)
    e.step(e.unwrapped.action_id("replace: stop"))
    assert e.agent_selection == "player_1"
    mask = e.observe("player_1")["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e.step(illegal)
    assert all(e.terminations.values())
    totals = dict.fromkeys(e.possible_agents, 0.0)
    for agent in e.agent_iter():
        _, reward, terminated, truncated, _ = e.last()
        assert terminated or truncated
        totals[agent] += reward
        e.step(None)
    assert totals == {"player_0": 0.0, "player_1": -1.0}


def test_reset_with_seed_reproduces_and_reset_without_seed_continues():
    e = tacocat.env()
    e.reset(seed=9)
    first = e.unwrapped.game.draw_pile
    e.reset(seed=9)
    assert e.unwrapped.game.draw_pile == first
    e.reset()  # no seed: the env's generator moves on, a new deal
    assert e.unwrapped.game.draw_pile != first
    e.reset(seed=10)
    assert e.unwrapped.game.draw_pile != first


def test_default_config_env_matches_defaults():
    raw = tacocat.raw_env()
    assert raw.config == DEFAULT
    raw2 = tacocat.raw_env(config={"max_rounds": 5}, tie_policy="arrow_player_wins")
    assert raw2.config.max_rounds == 5 and raw2.config.tie_policy == "arrow_player_wins"


def test_wrapper_keeps_pettingzoo_order_checks_with_its_direct_step_and_agent_iter():
    # env() overrides the order-enforcing wrapper's step and agent_iter for speed
    # (docs/PERFORMANCE.md); PettingZoo's checks must still hold
    e = tacocat.env(max_rounds=1)
    with pytest.raises(AssertionError, match="reset"):
        e.agent_iter()
    with pytest.raises(AssertionError, match="reset"):
        e.step(0)
    e.reset(seed=0)
    iterator = iter(e.agent_iter())
    assert next(iterator) == e.agent_selection
    with pytest.raises(AssertionError, match=r"need to call step\(\) or reset\(\)"):
        next(iterator)  # no step in between
    e.reset(seed=0)
    steps = 0
    for agent in e.agent_iter(max_iter=3):
        assert agent == e.unwrapped.agent_selection
        e.step(int(np.flatnonzero(e.last()[0]["action_mask"])[0]))
        steps += 1
    assert steps == 3, "max_iter stops the iteration"
    for _ in e.agent_iter():  # play to the end; then a step with no agents left only warns
        _, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else int(np.flatnonzero(e.last()[0]["action_mask"])[0]))
    assert e.agents == []
    e.step(None)
