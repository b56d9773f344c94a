"""R7.3: a player's observation (vector, text twin) and action mask are functions of its own private
information and the public information only (R7.1 / R7.2).

Method: take states reached by random play, redistribute every card the observer cannot see (the
opponent's hand, the opponent's unrevealed set-aside or duel card, the draw pile and its order)
while keeping every public quantity (hand sizes, pile size, face-up cards, history) equal, and
require the observer's encoding and mask to stay bit-identical.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEFAULT, act, resample_hidden, rules_configs, sample_states, seeds, walk
from tacocat import GameState, Phase, apply_action, describe, encode, env, legal_actions, new_game
from tacocat.game.observation import ObservationLayout

configs = st.one_of(st.just(DEFAULT), rules_configs())


def view(state: GameState, player: int) -> tuple[bytes, str, tuple[int, ...] | None]:
    """Everything `player` is shown: observation bytes, text twin and (if acting) its mask."""
    mask = tuple(legal_actions(state)) if state.current_player == player else None
    return encode(state, player).tobytes(), describe(state, player), mask


@settings(max_examples=40, deadline=None)
@given(seed=seeds, cfg=configs)
def test_R7_3_observation_and_mask_ignore_opponent_cards_and_pile_order(seed, cfg):
    rng = np.random.default_rng(seed)
    changed = 0
    checked = 0
    for state in sample_states(seed, cfg, every=3):
        for observer in (0, 1):
            twin = resample_hidden(state, observer, rng)
            assert view(twin, observer) == view(state, observer), (state.phase, observer)
            checked += 1
            changed += twin.hands[1 - observer] != state.hands[1 - observer] or twin.draw_pile != state.draw_pile
    assert checked > 0
    if cfg == DEFAULT:
        # the check is not vacuous: the hidden cards really were changed in most samples (tiny
        # decks of two or three values may often redeal the same cards, so only checked here)
        assert changed >= checked // 2


def test_R7_3_resampling_changes_the_privileged_view():
    # sanity for the method above: the opponent's own view (and env.state()) do see the change
    state = new_game(DEFAULT, 3)
    rng = np.random.default_rng(0)
    differs = 0
    for _ in range(20):
        twin = resample_hidden(state, 0, rng)
        differs += encode(twin, 1).tobytes() != encode(state, 1).tobytes()
    assert differs >= 15


def test_R7_3_env_observation_is_unchanged_by_hidden_cards():
    e = env()
    e.reset(seed=11)
    rng = np.random.default_rng(11)
    checked = 0
    for _ in e.agent_iter():
        observation, _, terminated, truncated, _ = e.last()
        if terminated or truncated:
            e.step(None)
            continue
        state = e.unwrapped.game
        for observer, name in enumerate(e.possible_agents):
            before = e.observe(name)
            e.unwrapped.game = resample_hidden(state, observer, rng)
            after = e.observe(name)
            e.unwrapped.game = state
            assert before["observation"].tobytes() == after["observation"].tobytes()
            assert before["action_mask"].tobytes() == after["action_mask"].tobytes()
            checked += 1
        legal = np.flatnonzero(observation["action_mask"])
        e.step(int(legal[rng.integers(len(legal))]))
    assert checked > 20


def replace_choices(state: GameState) -> list[list[str]]:
    """Several different complete replace choices of player_0: nothing, one card, three, all."""
    held = state.hand_values(0)
    picks = [[], held[:1], held[-3:], held]
    return [[f"replace: discard a {v}" for v in pick] + ["replace: stop"] for pick in picks]


@settings(max_examples=30, deadline=None)
@given(seed=seeds)
def test_R4_1_R7_3_player_1_view_independent_of_player_0_simultaneous_replace(seed):
    start = new_game(DEFAULT, seed)  # the first round is on the two-arrow centre (R4.1)
    assert start.arrow is None and start.to_act == 0
    views_1, views_0 = set(), set()
    for choice in replace_choices(start):
        state = act(start.clone(), *choice)
        assert state.to_act == 1 and state.phase is Phase.REPLACE
        views_1.add(view(state, 1))
        views_0.add(encode(state, 0).tobytes())
    assert len(views_1) == 1, "player_1 must not learn player_0's hidden replacement"
    assert len(views_0) == 4, "player_0's own view does show its choice (the test can tell them apart)"


@settings(max_examples=30, deadline=None)
@given(seed=seeds, cfg=configs)
def test_R5_1_R7_3_player_1_view_independent_of_player_0_duel_card(seed, cfg):
    rng = np.random.default_rng(seed)
    state = new_game(cfg, rng)
    duels = 0
    for live in walk(state, rng):
        if live.phase is Phase.DUEL and live.to_act == 0 and len(legal_actions(live)) > 1:
            views = set()
            for action in legal_actions(live):
                twin = live.clone()
                apply_action(twin, action)
                assert twin.to_act == 1 and twin.phase is Phase.DUEL
                views.add(view(twin, 1))
            assert len(views) == 1, "player_1 must not learn player_0's duel card before choosing"
            duels += 1
    if cfg == DEFAULT:
        # the first duel alone offers a choice: 7 cards hold at least two values (4 copies at most)
        assert duels >= 1


def test_R7_1_own_private_cards_are_observed():
    # the counterpart of hiding: my own hand and my own hidden choices are in my observation
    state = new_game(DEFAULT, 5)
    layout = ObservationLayout(state.rules)
    views = layout.views(encode(state, 0))
    assert views["own_hand"].tolist() == state.hands[0]
    held = state.hand_values(0)
    act(state, f"replace: discard a {held[0]}")
    views = layout.views(encode(state, 0))
    assert views["own_set_aside"].sum() == 1 and views["own_set_aside"][DEFAULT.values.index(held[0])] == 1
    assert views["hand_sizes"].tolist() == [7, 7]
