"""Conversion of reference positions to the batch engine checks them as a whole (issue 24).

`from_game(s)` takes GameStates only (errors name the index in the list), of the engine's
rules, with every field of the right type and range and every card of the deck in exactly one
place (R0.4, R2.3). Most tests call `check_game_state` and the refusals of `from_game(s)`,
which come before any JAX work; one module fixture compiles the conversion once.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("jax")
pytest.importorskip("pgx")

from conftest import DEFAULT, card_counts, resample_hidden, rules_configs, seeds, walk
from tacocat import InvalidPositionError, Phase, RulesConfig, new_game, setup_position
from tacocat.game.batch import TacocatBatch
from tacocat.game.batch.convert import check_game_state
from tacocat.game.batch.tables import compile_tables
from tacocat.game.checks import card_counts as engine_card_counts

TABLES = compile_tables(DEFAULT)
DEFAULT_VALUES = TABLES.rules.values


@pytest.fixture(scope="module")
def env() -> TacocatBatch:
    return TacocatBatch()


@pytest.mark.parametrize(
    "games, message",
    [
        (["x"], r"from_games: games\[0\]: expected a GameState .*got str"),
        ([None], r"from_games: games\[0\]: expected a GameState .*got NoneType"),
        ([new_game(DEFAULT, 0), {}], r"from_games: games\[1\]: expected a GameState .*got dict"),
        ("x", "from_games takes a list of GameStates, got str"),
        (new_game(DEFAULT, 0), "from_games takes a list of GameStates, got GameState"),
        (None, "from_games takes a list of GameStates, got NoneType"),
    ],
)
def test_from_games_takes_a_list_of_game_states_only(env, games, message):
    with pytest.raises(TypeError, match=message):
        env.from_games(games)


@pytest.mark.parametrize("game", [{}, "x", None, 3])
def test_from_game_takes_a_game_state_only(env, game):
    with pytest.raises(TypeError, match="from_game: expected a GameState"):
        env.from_game(game)


def _edited(edit) -> object:
    game = new_game(DEFAULT, 0)
    edit(game)
    return game


def test_a_state_with_five_extra_cards_is_refused(env):
    game = _edited(lambda g: g.draw_pile.extend([0] * 5))  # five more 1s than the deck has
    before = list(game.draw_pile)
    with pytest.raises(
        InvalidPositionError,
        match=r"value 1 is held 7 time\(s\), but the deck has 2 "
        r"\(43 cards in the state, 38 in the deck\)",
    ):
        env.from_game(game)
    assert game.draw_pile == before  # the state was only read


@pytest.mark.parametrize(
    "edit",
    [
        lambda g: g.draw_pile.pop(),  # a card lost
        lambda g: g.hands[0].__setitem__(3, g.hands[0][3] + 1),  # a card made up
        lambda g: g.discard.__setitem__(0, 1),  # a card both in the pile and face up
        lambda g: g.attack.append(g.draw_pile[-1]),  # a card both on the table and in the pile
        lambda g: g.duel.__setitem__(0, g.draw_pile[-1]),  # ... and in a hidden duel slot
    ],
)
def test_every_card_must_be_in_exactly_one_place(env, edit):
    game = _edited(edit)
    with pytest.raises(InvalidPositionError, match="every card must be in exactly one place"):
        env.from_games([new_game(DEFAULT, 1), game])
    with pytest.raises(InvalidPositionError, match=r"games\[1\]"):
        env.from_games([new_game(DEFAULT, 1), game])


@pytest.mark.parametrize(
    "name, value",
    [
        ("phase", 2),
        ("phase", "duel"),
        ("to_act", 2),
        ("to_act", True),
        ("to_act", None),
        ("space", 7),
        ("space", -1),
        ("space", 1.0),
        ("covered", [False] * 6),
        ("covered", [0] * 7),
        ("rounds_played", -1),
        ("rounds_played", 61),
        ("hands", [[0] * 11, [0] * 12]),
        ("hands", [[0] * 12]),
        ("hands", [[-1] + [0] * 11] * 2),
        ("hands", "x"),
        ("set_aside", None),
        ("draw_pile", [99]),
        ("draw_pile", [-1]),
        ("draw_pile", [1.0]),
        ("draw_pile", np.arange(3)),
        ("discard", [0] * 11),
        ("replace_queue", [0, 1, 0]),
        ("replace_queue", [2]),
        ("replace_cap", [0, 99]),
        ("replaced", [0, -1]),
        ("duel", [12, None]),
        ("duel", [None]),
        ("last_duel", (0,)),
        ("attacker", 2),
        ("attack", [0] * 9),
        ("answers", [12]),
        ("winner", -1),
        ("truncated", 0),
        ("last_round_winner", -2),
    ],
)
def test_a_field_of_the_wrong_type_or_range_is_named(env, name, value):
    game = _edited(lambda g: setattr(g, name, value))
    with pytest.raises(InvalidPositionError, match=f"from_game: field {name} must be"):
        env.from_game(game)


def test_another_ruleset_is_refused(env):
    with pytest.raises(ValueError, match=r"games\[0\]: the game was played under another rules config"):
        env.from_games([new_game(RulesConfig(max_rounds=5), 0)])


@settings(max_examples=25, deadline=None)
@given(seed=seeds, cfg=st.one_of(st.just(DEFAULT), rules_configs()))
def test_every_state_of_play_passes_the_check_and_counts_as_the_tests_count(seed, cfg):
    """The check is never stricter than the rules: every state random play reaches (R0.4, R2.3),
    and a resampled hidden deal of it, passes; checks.card_counts agrees with the tests'
    independent count."""
    tables = compile_tables(cfg)
    rng = np.random.default_rng(seed)
    state = new_game(cfg, rng)
    for live in walk(state, rng):
        assert engine_card_counts(live) == card_counts(live) == list(live.rules.copies)
        assert check_game_state(live, tables) is live
        check_game_state(resample_hidden(live, live.to_act, rng), tables)
    check_game_state(state, tables)  # the finished game too
    assert state.phase is Phase.OVER


@settings(max_examples=40, deadline=None)
@given(seed=seeds, place=st.sampled_from(["hands", "set_aside", "discard", "draw_pile"]), data=st.data())
def test_one_card_more_anywhere_is_refused(seed, place, data):
    game = new_game(DEFAULT, seed)
    value = data.draw(st.integers(0, TABLES.n_values - 1))
    if place == "draw_pile":
        game.draw_pile.append(value)
    elif place == "discard":
        game.discard[value] += 1
    else:
        getattr(game, place)[data.draw(st.integers(0, 1))][value] += 1
    with pytest.raises(InvalidPositionError, match=f"value {DEFAULT_VALUES[value]} is held"):
        check_game_state(game, TABLES)


def test_converted_positions_cross_and_to_game_checks_its_arguments(env):
    position = setup_position(([1, 12], [5, 9]), space=0, phase="duel", seed=0)
    state = env.from_games([new_game(DEFAULT, 0), position])
    back = env.to_game(state, 1)
    assert back.hands == position.hands and back.draw_pile == position.draw_pile
    for index in (2, -1, True, 1.0, None):
        with pytest.raises(ValueError, match="index"):
            env.to_game(state, index)
    for seed in (-1, "x"):
        with pytest.raises(ValueError, match="seed must be a non-negative integer"):
            env.to_game(state, 0, seed=seed)
    with pytest.raises(TypeError, match="to_game takes a batch State, got dict"):
        env.to_game({}, 0)
    edited = state.replace(hands=state.hands.at[0, 0, 0].add(1))  # a card made up in the batch state
    with pytest.raises(InvalidPositionError, match="the converted game: value 1 is held"):
        env.to_game(edited, 0)
