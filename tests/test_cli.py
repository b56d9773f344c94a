"""The `tacocat` CLI, terminal play (tacocat.cli.human) and game files (tacocat.evaluation.game_files)."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from tacocat.agents.base import AgentInput
from tacocat.agents.registry import make_agent
from tacocat.cli.app import app, match_table, split_specs
from tacocat.cli.human import HumanAgent, HumanQuit, play_human
from tacocat.evaluation.arena import agent_rngs, play_game
from tacocat.evaluation.game_files import ReplayError, game_to_dict, load_games, replay_game, save_games
from tacocat.evaluation.matches import match, speed_text
from tacocat.game.config import make_config
from tacocat.game.engine import new_game
from tacocat.game.render.text import render_view
from tacocat.game.view import player_view

runner = CliRunner()


def invoke(*args, **kwargs):
    return runner.invoke(app, [str(a) for a in args], **kwargs)


# ---------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [[], ["agents"], ["match"], ["tournament"], ["play"], ["replay"]])
def test_help_everywhere(command):
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_agents_lists_names_and_descriptions():
    result = invoke("agents")
    assert result.exit_code == 0, result.output
    assert "random" in result.output and "Uniformly random legal action." in result.output


def test_match_json_save_and_replay(tmp_path):
    out, games = tmp_path / "m.json", tmp_path / "games.jsonl"
    result = invoke(
        "match",
        "random",
        "test-last",
        "--deal-pairs",
        3,
        "--seed",
        7,
        "--json",
        out,
        "--save-games",
        games,
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    assert "win rate A" in result.output and "as player_0" in result.output
    data = json.loads(out.read_text())
    assert data["games"] == 3 and data["agent_b"] == "test-last"
    lines = load_games(games)
    assert len(lines) == 6
    assert lines[1]["agents"] == ["test-last", "random"] and lines[1]["deal"] == 0
    assert lines[0]["seed"] == lines[1]["seed"]
    replayed = invoke("replay", games, "--game", 1)
    assert replayed.exit_code == 0, replayed.output
    assert "Round 1:" in replayed.output and "Game over" in replayed.output
    with_actions = invoke("replay", games, "--game", 2, "--actions")
    assert "replace: stop" in with_actions.output
    assert invoke("replay", games, "--game", 6).exit_code != 0


@pytest.mark.parametrize(
    "games_per_s, text",
    [
        (1234.5, "1,234 games/s"),
        (150.0, "150 games/s"),
        (12.34, "12.3 games/s"),
        (2.5, "2.5 games/s"),
        (1.0, "1 games/s"),
        (0.31, "3.23 s/game"),
        (0.04, "25 s/game"),
        (0.001, "1,000 s/game"),
        (float("inf"), "too fast to time"),
    ],
)
def test_match_speed_keeps_three_significant_digits(games_per_s, text):
    assert speed_text(games_per_s) == text


def test_a_slow_match_prints_seconds_per_game_not_zero_games_per_second():
    # issue 36: a match slower than 0.5 games/s printed "0 games/s"
    result = dataclasses.replace(match("random", "random", 1, seed=0), wall_s=6.5, games_per_s=2 / 6.5)
    console = Console(record=True, width=200)
    console.print(match_table(result))
    caption = console.export_text()
    assert "3.25 s/game, 6.50 s" in caption and "0 games/s" not in caption


def test_match_rejects_unknown_agent():
    result = invoke("match", "random", "nope", "--deal-pairs", 1, "--no-progress")
    assert result.exit_code != 0
    assert "unknown agent" in result.output


def test_tournament_command(tmp_path):
    result = invoke(
        "tournament",
        "--agents",
        "random,test-first,test-last",
        "--deal-pairs",
        3,
        "--seed",
        1,
        "--workers",
        1,
        "--out",
        tmp_path / "t",
        "--boot",
        20,
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    for name in ("results.json", "matrix.csv", "ratings.csv", "tournament.md", "heatmap.png", "ratings.png"):
        assert (tmp_path / "t" / name).exists()
    assert "test-last" in result.output


def test_split_specs():
    assert split_specs(["random,search:simulations=20,rollout=planner,highcard"]) == [
        "random",
        "search:simulations=20,rollout=planner",
        "highcard",
    ]
    assert split_specs(["a", "b,c"]) == ["a", "b", "c"]


def test_replay_hash_mismatch_is_a_clear_error(tmp_path):
    r = match("random", "random", deal_pairs=1, seed=3, progress=False, keep_records=True)
    cfg = make_config()
    line = game_to_dict(r.records[0], ["random", "random"], cfg)
    tampered = dict(line, rules={**line["rules"], "max_rounds": 59})
    path = tmp_path / "bad.jsonl"
    save_games(path, [tampered])
    result = invoke("replay", path)
    assert result.exit_code == 1
    assert "ruleset hash mismatch" in result.output
    with pytest.raises(ReplayError, match="ruleset hash mismatch"):
        replay_game(line, config=make_config(max_rounds=59))


def test_play_command_quits_cleanly():
    result = invoke("play", "--opponent", "random", "--seed", 3, input="x\nq\n")
    assert result.exit_code == 0, result.output
    assert "Game ended by the player." in result.output


def test_play_command_plays_a_game_and_saves_it(tmp_path):
    path = tmp_path / "human.jsonl"
    result = invoke(
        "play", "--opponent", "test-first", "--seat", 1, "--seed", 2, "--save-game", path, input="1\n" * 500
    )
    assert result.exit_code == 0, result.output
    assert "Game over" in result.output
    game = load_games(path)[0]
    assert game["agents"] == ["test-first", "human"] and game["finished"] is True
    assert invoke("replay", path).exit_code == 0


# ---------------------------------------------------------------------------------------
# game files
# ---------------------------------------------------------------------------------------
def test_save_load_replay_roundtrip(tmp_path):
    cfg = make_config()
    r = match("random", "test-last", deal_pairs=2, seed=8, progress=False, keep_records=True)
    path = tmp_path / "g.jsonl"
    assert save_games(path, list(zip(r.records, r.seat_pairs(), strict=True)), config=cfg) == 4
    games = load_games(path)
    for record, game in zip(r.records, games, strict=True):
        assert game["ruleset_hash"] == cfg.ruleset_hash() and game["rules"] == cfg.canonical_dict()
        assert all(len(a) == 3 and isinstance(a[2], str) for a in game["actions"])
        rep = replay_game(game)
        assert rep.state.winner == record.winner == game["winner"]
        assert rep.state.actions == record.actions
        assert any("Showdown" in line for line in rep.lines)
    broken = dict(games[0], actions=[[0, 0, "attack: single 99"], *games[0]["actions"][1:]])
    with pytest.raises(ReplayError):
        replay_game(broken)


# ---------------------------------------------------------------------------------------
# terminal play
# ---------------------------------------------------------------------------------------
def test_play_survives_bad_input_and_finishes():
    bad = ["", "abc", "0", "999", "-3", "  ", "2.5", "?", "defend with everything"]
    script = itertools.chain(bad, itertools.cycle([*bad[:3], "1"]))
    out: list[str] = []
    res = play_human("random", seat=0, seed=4, input_fn=lambda prompt: next(script), output_fn=out.append)
    assert not res.quit and (res.record.winner is not None or res.record.truncated)
    text = "\n".join(out)
    assert "Empty entry." in text and "is not a legal move" in text and "is not a move number" in text
    assert "Game over" in text


@pytest.mark.parametrize("seat", [0, 1])
def test_eof_and_quit_end_the_game_cleanly(seat):
    def eof(prompt):
        raise EOFError

    out: list[str] = []
    res = play_human("random", seat=seat, seed=1, input_fn=eof, output_fn=out.append)
    assert res.quit and res.winner is None
    assert "Game ended by the player." in out
    script = iter(["1", "1", "quit"])
    res = play_human("random", seat=seat, seed=1, input_fn=lambda p: next(script), output_fn=lambda s: None)
    assert res.quit and len([a for a in res.record.actions if a[0] == seat]) == 2


def test_moves_can_be_typed_by_name():
    cfg = make_config()
    names = new_game(cfg, 0).rules.codec.names
    script = iter(["replace: stop"])
    agent = HumanAgent(input_fn=lambda p: next(script), output_fn=lambda s: None)
    agent.reset(0, agent_rngs(0, 0)[0])
    action = agent.act(AgentInput.from_state(new_game(cfg, 0), 0))
    assert names[action] == "replace: stop"


def test_human_agent_works_in_play_game():
    script = itertools.cycle(["1"])
    human = HumanAgent(input_fn=lambda p: next(script), output_fn=lambda s: None)
    record = play_game([make_agent("random"), human], seed=6)
    assert record.winner is not None or record.truncated
    with pytest.raises(HumanQuit):
        HumanAgent(input_fn=lambda p: "q", output_fn=lambda s: None).act(
            AgentInput.from_state(new_game(make_config(), 0), 0)
        )


def test_human_sees_only_own_cards_and_public_information():
    state = new_game(make_config(), 12)
    twin = state.clone()
    # give the opponent (player_1) a different hand, drawn from the hidden draw pile
    opp_cards = [v for v, n in enumerate(twin.hands[1]) for _ in range(n)]
    pile = list(twin.draw_pile)
    swapped = 0
    for i, card in enumerate(pile):
        if card not in opp_cards and swapped < 3:
            victim = opp_cards[swapped]
            twin.hands[1][victim] -= 1
            twin.hands[1][card] += 1
            pile[i] = victim
            swapped += 1
    twin.draw_pile = pile[::-1]
    assert twin.hands[1] != state.hands[1]
    assert render_view(player_view(state, 0)) == render_view(player_view(twin, 0))
    assert render_view(player_view(state, 0)) != render_view(player_view(state, 1))
    # the human agent never needs more than the view: an input with an empty observation works
    inp = AgentInput(player_view(state, 0), np.zeros(0, dtype=np.float32))
    out: list[str] = []
    agent = HumanAgent(input_fn=lambda p: "1", output_fn=out.append)
    agent.reset(0, agent_rngs(0, 0)[0])
    agent.act(inp)
    hand = " ".join(str(v) for v in state.hand_values(0))
    assert f"Your hand: {hand}" in "\n".join(out)


def test_replay_draws_the_game_as_a_gif(tmp_path):
    from PIL import Image

    games = tmp_path / "games.jsonl"
    assert (
        invoke(
            "match", "random", "random", "--deal-pairs", 1, "--seed", 3, "--save-games", games, "--no-progress"
        ).exit_code
        == 0
    )
    game = load_games(games)[0]
    del game["actions"][12:], game["winner"]  # the first 12 actions are enough (and quick to draw)
    games.write_text(json.dumps(game) + "\n")
    gif = tmp_path / "game.gif"
    result = invoke("replay", games, "--gif", gif)
    assert result.exit_code == 0, result.output
    frames = 12 + 1  # the deal, then one frame per action
    with Image.open(gif) as image:
        assert image.size == (800, 280) and 1 < image.n_frames <= frames
        shown = 0  # Pillow merges identical consecutive frames and adds up their durations
        for index in range(image.n_frames):
            image.seek(index)
            shown += image.info["duration"]
    assert shown == frames * 500
    assert f"({frames} frames)" in result.output
    bad = invoke("replay", games, "--gif", tmp_path / "missing" / "x.gif")
    assert bad.exit_code != 0 and "--gif" in bad.output


def test_deal_pairs_is_the_option_name_and_games_its_old_alias(tmp_path):
    new, old = tmp_path / "new.json", tmp_path / "old.json"
    assert (
        invoke("match", "random", "highcard", "--deal-pairs", 2, "--seed", 3, "--json", new, "--no-progress").exit_code
        == 0
    )
    assert (
        invoke("match", "random", "highcard", "--deal-pairs", 2, "--seed", 3, "--json", old, "--no-progress").exit_code
        == 0
    )
    a, b = json.loads(new.read_text()), json.loads(old.read_text())
    assert a["games"] == b["games"] == 2 and a["deal_scores"] == b["deal_scores"]
