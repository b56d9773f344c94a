"""Bad input: every mistake is a clear error (naming the problem; for actions, listing the legal
moves) and changes nothing."""

from __future__ import annotations

import numpy as np
import pydantic
import pytest

import tacocat
from conftest import DEFAULT, act, random_game, snapshot
from tacocat import (
    ActionOutOfRangeError,
    GameOverError,
    IllegalActionError,
    InvalidPositionError,
    NotYourTurnError,
    RulesConfig,
    TacocatError,
    apply_action,
    legal_actions,
    make_config,
    new_game,
    setup_position,
)

N = new_game(DEFAULT, 0).rules.codec.size


def fresh():
    return new_game(DEFAULT, 42)


def assert_lists_legal_moves(err: IllegalActionError, state) -> None:
    legal = legal_actions(state)
    assert err.legal_actions == legal and legal
    assert err.legal_moves == [state.rules.codec.name(a) for a in legal]
    text = str(err)
    assert "legal:" in text
    for name in err.legal_moves:
        assert repr(name) in text


# ---------------------------------------------------------------------------------------
# actions
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("action", [-1, N, N + 100, 10**12])
def test_out_of_range_action(action):
    state = fresh()
    before = snapshot(state)
    with pytest.raises(ActionOutOfRangeError, match=rf"action {action} is out of range \[0, {N}\)") as info:
        apply_action(state, action)
    assert_lists_legal_moves(info.value, state)
    assert info.value.action == action
    assert snapshot(state) == before


@pytest.mark.parametrize("action", [1.5, 12.0, "a", "12", None, True, [12], np.float64(3.0)])
def test_non_integer_action(action):
    state = fresh()
    before = snapshot(state)
    with pytest.raises(ActionOutOfRangeError, match="action must be an integer id") as info:
        apply_action(state, action)  # type: ignore[arg-type]  # bad on purpose
    assert_lists_legal_moves(info.value, state)
    assert snapshot(state) == before


def test_numpy_integer_action_is_accepted():
    state = fresh()
    stop = state.rules.codec.stop
    apply_action(state, np.int64(stop))
    assert state.actions == [(0, stop)]


def test_illegal_action_names_the_move_and_lists_legal_ones():
    state = setup_position(([3, 9, 11], [4, 8, 10]), phase="duel")
    before = snapshot(state)
    codec = state.rules.codec
    for name in ["duel: play a 5", "replace: stop", "attack: single 9", "answer: sacrifice"]:
        with pytest.raises(IllegalActionError, match=f"'{name}' .* is not legal for player_0") as info:
            apply_action(state, codec.parse(name))
        assert not isinstance(info.value, ActionOutOfRangeError)
        assert_lists_legal_moves(info.value, state)
        assert set(info.value.legal_moves) == {"duel: play a 3", "duel: play a 9", "duel: play a 11"}
    assert snapshot(state) == before


def test_action_for_the_player_not_acting():
    state = fresh()
    before = snapshot(state)
    stop = state.rules.codec.stop
    assert stop in legal_actions(state)  # legal for player_0, but submitted for player_1
    with pytest.raises(NotYourTurnError, match="player_1 tried to act, but it is player_0's turn"):
        apply_action(state, stop, player=1)
    assert snapshot(state) == before
    apply_action(state, stop, player=0)
    with pytest.raises(NotYourTurnError, match="player_0 tried to act, but it is player_1's turn"):
        apply_action(state, stop, player=0)


def test_action_after_game_over():
    state = random_game(5)
    assert state.is_over
    before = snapshot(state)
    for action in (0, legal_actions(new_game(DEFAULT, 0))[0], -3):
        with pytest.raises(GameOverError, match="the game is over"):
            apply_action(state, action)
    assert snapshot(state) == before


def test_errors_are_value_errors():
    for cls in (ActionOutOfRangeError, IllegalActionError, NotYourTurnError, GameOverError, InvalidPositionError):
        assert issubclass(cls, TacocatError) and issubclass(cls, ValueError)


def test_env_rejects_bad_actions_and_keeps_state():
    e = tacocat.env()
    e.reset(seed=3)
    raw = e.unwrapped
    before = snapshot(raw.game)
    for bad in (-1, N, 2.5, raw.action_id("attack: single 4")):
        with pytest.raises(IllegalActionError, match="legal: "):
            e.step(bad)
        assert snapshot(raw.game) == before and e.agent_selection == "player_0"


def test_env_step_after_game_over_only_accepts_none():
    e = tacocat.env(max_rounds=1)
    e.reset(seed=0)
    rng = np.random.default_rng(0)
    while not e.unwrapped.game.is_over:
        legal = np.flatnonzero(e.observe(e.agent_selection)["action_mask"])
        e.step(int(legal[rng.integers(len(legal))]))
    before = snapshot(e.unwrapped.game)
    with pytest.raises(ValueError, match="None"):
        e.step(0)
    assert snapshot(e.unwrapped.game) == before


# ---------------------------------------------------------------------------------------
# configs
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"decks": {1: 40}}, r"decks\s+Extra inputs are not permitted"),
        ({"max_round": 10}, r"max_round\s+Extra inputs are not permitted"),
        (
            {"deck": dict.fromkeys(range(1, 12), 3)},
            r"33 cards is too few; R1.7 needs at least 4 x the largest deal size \(9\) = 36",
        ),
        ({"board": (4, 6, 9, 7, 9, 6)}, r"odd number .* got 6"),
        ({"board": (4, 7)}, r"odd number .* got 2"),
        ({"board": (4, 1, 4)}, r"space 1 deals 1 card"),
        ({"deck": {**DEFAULT.deck, 5: 0}}, r"value 5 has 0 copies; copies must be positive"),
        ({"deck": {**DEFAULT.deck, 5: -2}}, r"value 5 has -2 copies; copies must be positive"),
        ({"deck": {**DEFAULT.deck, 0: 3}}, r"card values must be in 1..1000, got value 0"),
        ({"deck": {}}, r"at least one card value"),
        (
            {"arrow_policy": "explicit", "arrows": ("both",) * 6},
            r"arrows: arrow_policy 'explicit' needs one arrow per board space \(7\), got 6",
        ),
        ({"arrow_policy": "explicit"}, r"needs one arrow per board space \(7\), got None"),
        ({"arrows": ("both",) * 7}, r"only used with arrow_policy 'explicit'"),
        ({"arrow_policy": "explicit", "arrows": ("both",) * 6 + ("player_2",)}, r"arrows\.6"),
        ({"arrow_policy": "backwards"}, r"arrow_policy"),
        ({"tie_policy": "coin_flip"}, r"tie_policy"),
        ({"max_rounds": 0}, r"max_rounds\s+Input should be greater than 0"),
        ({"round_reward": -0.5}, r"round_reward\s+Input should be greater than or equal to 0"),
    ],
)
def test_malformed_config_is_a_clear_error(kwargs, message):
    with pytest.raises(pydantic.ValidationError, match=message):
        RulesConfig(**kwargs)
    with pytest.raises(ValueError, match=message):
        tacocat.env(**kwargs)


def test_make_config_rejects_other_types_and_non_mapping_yaml(tmp_path):
    with pytest.raises(TypeError, match="got int"):
        make_config(7)  # type: ignore[arg-type]  # bad on purpose
    path = tmp_path / "list.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(ValueError, match="must be a YAML mapping, got list"):
        RulesConfig.from_yaml(path)
    path.write_text("board: [4, 6]\n")
    with pytest.raises(ValueError, match="odd number"):
        make_config(path)


# ---------------------------------------------------------------------------------------
# set-up positions
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        # five 7s, the deck has four
        ({"hands": ([7, 7, 7], [7, 7, 1])}, r"value 7 appears 5 times but the deck has 4 copies"),
        ({"hands": ([12, 1], [1, 2]), "discard": [12, 12]}, r"value 12 appears 3 times but the deck has 2 copies"),
        ({"hands": ([1, 2, 3], [4, 5])}, r"hand sizes must be equal \(R4.4\), got 3 and 2"),
        (
            {"hands": ([1, 2], [4, 5]), "phase": "answer", "attacker": 0, "attack": [9]},
            r"hand sizes must be equal \(R4.4\), got 3 and 2",
        ),
        ({"hands": ([1, 13], [4, 5])}, r"hands\[0\]: 13 is not a card value"),
        ({"hands": ([1, 2], [4, 5]), "space": 7}, r"space 7 is not on the board"),
        ({"hands": ([1, 2], [4, 5]), "space": 2, "covered": [2]}, r"cannot stand on covered space 2"),
        ({"hands": ([1, 2], [4, 5]), "phase": "showdown"}, r"phase must be one of"),
        ({"hands": ([1], [4]), "phase": "attack", "attacker": 0}, r"an attack needs two cards each"),
        ({"hands": ([1, 2], [4, 5]), "phase": "attack"}, r"attacker must be 0 or 1"),
        (
            {"hands": ([1], [4, 5, 6]), "phase": "answer", "attacker": 0, "attack": [2, 9]},
            r"attack \[9, 2\] is not a single, set or sequence",
        ),
        ({"hands": ([1, 2], [4, 5]), "phase": "duel", "to_act": 1}, r"duel_card"),
        (
            {"hands": ([1, 2], [4, 5]), "draw_pile": [1, 2, 3]},
            r"draw_pile must hold exactly the cards placed nowhere else",
        ),
        ({"hands": ([1, 2], [4, 5]), "space": 2, "to_act": 0}, r"replace_cap"),
    ],
)
def test_setup_position_rejects_invalid_positions(kwargs, message):
    with pytest.raises(InvalidPositionError, match=message):
        setup_position(**kwargs)


def test_setup_position_accepts_a_full_valid_position():
    # the counterpart: the same kinds of arguments, valid, give a playable state
    state = setup_position(
        ([1, 2, 12], [3, 6, 8, 9, 10, 11]),
        phase="answer",
        attacker=0,
        attack=[7, 8, 9],
        discard=[5, 5],
        space=2,
        covered=[3],
    )
    assert state.to_act == 1
    act(state, "answer: defend with 9")
    assert state.answers == [DEFAULT.values.index(9)]
