"""Hardening (issue 12): every class of bad input is a clear error that names the field.

Rules config limits, set-up positions, game files, agent specs, engine/env edges and paths.
The CLI side is in test_cli_errors.py; model files in test_model_security.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pydantic
import pytest

import tacocat
from conftest import DEFAULT
from tacocat import InvalidPositionError, RulesConfig, legal_actions, new_game, setup_position
from tacocat.agents.registry import AgentSpecError, format_spec, make_agent, parse_spec, split_specs
from tacocat.evaluation.arena import play_game
from tacocat.evaluation.game_files import ReplayError, game_to_dict, load_games, replay_game
from tacocat.game.config import LIMITS


# ---------------------------------------------------------------------------------------
# rules config
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_rounds": True}, "max_rounds: a boolean is not a number"),
        ({"max_rounds": "60"}, "max_rounds"),
        ({"max_rounds": 10**6}, "max_rounds"),
        ({"round_reward": math.inf}, r"round_reward\s+Input should be a finite number"),
        ({"round_reward": math.nan}, r"round_reward\s+Input should be a finite number"),
        ({"round_reward": True}, "round_reward: a boolean"),
        ({"round_reward": "0.5"}, "round_reward: must be a number"),
        ({"round_reward": 1e9}, "round_reward"),
        ({"deck": {1: 10**9}}, "value 1 has 1000000000 copies; at most 100"),
        ({"deck": dict.fromkeys(range(1, 12), 100)}, "a deck of at most 1000"),
        ({"deck": dict.fromkeys(range(1, 60), 4)}, "at most 50 are supported"),
        ({"deck": {5000: 40}}, "card values must be in 1..1000"),
        ({"deck": {1: True, 2: 40}}, "deck: a boolean"),
        ({"deck": {1: 40.5}}, "deck"),
        ({"deck": {1: "40"}}, "copies of value 1 must be a number"),
        ({"deck": "1:40"}, "the deck must be a mapping"),
        ({"board": [4] * 301}, "301 spaces; at most 25"),
        ({"board": (4, 600, 4)}, "space 1 deals 600 cards; at most 50"),
        ({"board": "4,6,9"}, "the board must be a list"),
        ({"board": (4, True, 4)}, "board: a boolean"),
    ],
)
def test_rules_config_rejects_and_names_the_field(fields, message):
    with pytest.raises(pydantic.ValidationError, match=message):
        RulesConfig(**fields)


def test_rules_limits_are_documented():
    rows = {}
    for line in (Path(__file__).parents[1] / "docs" / "RULES.md").read_text().splitlines():
        if line.startswith("| `") and line.count("|") == 3:
            name, value = (cell.strip() for cell in line.strip("|").split("|"))
            rows[name.split("`")[1]] = value.replace(" ", "")
    assert {name: float(rows[name]) for name in LIMITS} == {name: float(v) for name, v in LIMITS.items()}


def test_yaml_yes_is_not_a_round_count(tmp_path):
    path = tmp_path / "rules.yaml"
    path.write_text("max_rounds: yes\n")
    with pytest.raises(ValueError, match="max_rounds: a boolean"):
        tacocat.make_config(path)
    path.write_text("max_rounds: [\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        tacocat.make_config(path)


# ---------------------------------------------------------------------------------------
# setup_position
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"hands": ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])},
            "largest deal of this board is 9",
        ),
        ({"hands": ([3], [4])}, "replace step needs at least two cards each"),
        ({"hands": ([3, 4], [5, 6]), "rounds_played": -1}, "rounds_played must be >= 0"),
        ({"hands": ([3, 4], [5, 6]), "rounds_played": 60}, "rounds_played=60: the game ends after max_rounds=60"),
        ({"hands": ([3, 4], [5, 6]), "rounds_played": 1.5}, "rounds_played must be an integer"),
        ({"hands": ([3, 4], [5, 6]), "covered": [1, 2], "rounds_played": 1}, r"2 covered space\(s\) after 1 round"),
        (
            {"hands": ([3, 4], [5, 6]), "space": 2, "to_act": 0, "replace_cap": 99},
            r"replace_cap=99: .* deal size of space 2 \(9\)",
        ),
        (
            {
                "hands": "3 4",
            },
            "hands must be a pair of card lists",
        ),
        ({"hands": ([3, 4], "56")}, "hands\\[1\\] must be a list of integers"),
        ({"hands": ([3, 4], [5, None])}, "hands\\[1\\]: item None must be an integer"),
        ({"hands": ([3, 4], [5, True])}, "hands\\[1\\]: item True must be an integer"),
        ({"hands": ([3, 4], [5, 6]), "covered": 2}, "covered must be a list"),
        ({"hands": ([3, 4], [5, 6]), "space": "3"}, "space must be an integer"),
        ({"hands": ([3, 4], [5, 6]), "to_act": 2}, "to_act must be 0 or 1"),
        ({"hands": ([3, 4], [5, 6]), "phase": 2}, "phase must be one of"),
        ({"hands": ([3, 4], [5, 6]), "seed": -1}, "seed must be >= 0"),
    ],
)
def test_setup_position_names_the_field(kwargs, message):
    with pytest.raises(InvalidPositionError, match=message):
        setup_position(**kwargs)


def test_setup_position_defaults_rounds_played_to_the_tiles():
    state = setup_position(([3, 4], [5, 6]), covered=[1, 2])
    assert state.rounds_played == 2 and legal_actions(state)


# ---------------------------------------------------------------------------------------
# game files
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved_game() -> dict:
    record = play_game([make_agent("random"), make_agent("highcard")], seed=5)
    return game_to_dict(record, ["random", "highcard"], DEFAULT)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"seed": "five"}, "field seed: Input should be a valid integer"),
        ({"seed": None}, "field seed"),
        ({"seed": -1}, "field seed: Input should be greater than or equal to 0"),
        ({"seed": True}, "field seed"),
        ({"actions": "0,12"}, "field actions"),
        ({"actions": None}, "field actions"),
        ({"actions": [[0]]}, r"field actions: entry 0 \[0\]: needs \[player, action id\]"),
        ({"actions": [[0, 10**6]]}, r"field actions\[0\] .*action id 1000000 is out of range"),
        ({"actions": [["x", 12]]}, "field actions: entry 0 .* the player must be 0 or 1"),
        ({"actions": [[2, 12]]}, "the player must be 0 or 1, got 2"),
        ({"actions": [[0, 1.5]]}, "the action id must be a non-negative integer"),
        ({"actions": [[0, 12, 7]]}, "the action name must be a string"),
        ({"rules": "default"}, "field rules"),
        ({"rules": {"max_rounds": True}}, "field rules: not a valid rules config"),
        ({"winner": 2}, "field winner"),
        ({"agents": ["only one"]}, "field agents"),
        ({"format": "tacocat-game/9"}, "field format"),
    ],
)
def test_game_file_schema_names_field_and_entry(saved_game, tmp_path, change, message):
    game = {**saved_game, **change}
    with pytest.raises(ReplayError, match=message):
        replay_game(game)
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps(saved_game) + "\n" + json.dumps(game) + "\n")
    if "out of range" not in message and "rules config" not in message:  # checked by the schema:
        with pytest.raises(ReplayError, match="line 2: .*" + message):  # a file's error names the line
            load_games(path)


def test_valid_game_still_replays(saved_game):
    assert replay_game(saved_game).state.winner == saved_game["winner"]


def test_binary_or_folder_game_file_is_a_clear_error(tmp_path):
    (tmp_path / "bin.jsonl").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ReplayError, match="not a text file"):
        load_games(tmp_path / "bin.jsonl")
    with pytest.raises(ReplayError, match="is a folder"):
        load_games(tmp_path)


# ---------------------------------------------------------------------------------------
# agent specs
# ---------------------------------------------------------------------------------------
def test_spec_values_are_yaml_checked_against_the_parameters():
    assert make_agent("search:search_replace=False").search_replace is False
    assert make_agent("search:search_replace=true,simulations=8").simulations == 8
    assert make_agent("counter:samples=4,keep_from=5").samples == 4


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("search:search_replace=maybe", "search_replace='maybe' must be of type bool"),
        ("search:search_replace=2", "search_replace=2 must be of type bool"),
        ("search:simulations=-1", "simulations must be >= 1"),
        ("search:simulations=1.5", "simulations=1.5 must be of type int"),
        ("search:simulations=true", "simulations=True must be of type int"),
        ("counter:samples=-1", "samples must be >= 1"),
        ("planner:keep_from=-3", "keep_from is a card value index and must be >= 0"),
        ("planner:depth=3", "agent 'planner' has no parameter 'depth'; it accepts: keep_from"),
        ("random:x=1", "has no parameter 'x'; it accepts: no parameters"),
        ("ppo:model=1", "agent 'ppo' has no parameter 'model'"),
        ("search:simulations", "parameter 'simulations' is not key=value"),
        ("search:simulations=8,", "empty parameter"),
        ("search:simulations=8,simulations=9", "given twice"),
        ('ppo:path="a,b', "unclosed quote"),
        ("", "non-empty string"),
        ("nope", "unknown agent 'nope'"),
    ],
)
def test_bad_specs_name_the_parameter(spec, message):
    with pytest.raises(AgentSpecError, match=message):
        make_agent(spec)


def test_quoted_values_keep_commas_and_split_specs_respects_quotes():
    assert parse_spec('ppo:path="runs/a,b/m.zip",deterministic=0') == (
        "ppo",
        {"path": '"runs/a,b/m.zip"', "deterministic": "0"},
    )
    assert split_specs(['random,ppo:path="x,y.zip",deterministic=0,search:simulations=4']) == [
        "random",
        'ppo:path="x,y.zip",deterministic=0',
        "search:simulations=4",
    ]
    spec = format_spec("ppo", path="runs/my,run/snap.zip", deterministic=False)
    assert parse_spec(spec)[1]["path"] == '"runs/my,run/snap.zip"'


# ---------------------------------------------------------------------------------------
# engine and env
# ---------------------------------------------------------------------------------------
def test_legal_actions_cannot_be_mutated_by_the_caller():
    state = new_game(DEFAULT, 0)
    legal = legal_actions(state)
    with pytest.raises((TypeError, AttributeError)):
        legal.append(999)  # type: ignore[attr-defined]  # a tuple: must fail
    with pytest.raises(TypeError):
        legal[0] = 999  # type: ignore[index]  # a tuple: must fail
    tacocat.apply_action(state, legal[0])


def test_last_before_reset_and_after_the_end_say_what_to_do():
    raw = tacocat.raw_env()
    with pytest.raises(RuntimeError, match="call reset"):
        raw.last()
    e = tacocat.env(max_rounds=1)
    e.reset(seed=0)
    for _ in e.agent_iter():
        _, _, term, trunc, _ = e.last()
        e.step(None if term or trunc else int(e.last()[0]["action_mask"].nonzero()[0][0]))
    with pytest.raises(tacocat.GameOverError, match="call reset"):
        e.last()
