"""`tacocat replay --gif`: the output path is checked before any work, and an error leaves no
progress bar behind (issue 24). Drawing a frame is made to fail in these tests, so any test in
which a frame is drawn before the refusal fails."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tacocat import RulesConfig, apply_action, legal_actions, new_game
from tacocat.agents.registry import make_agent
from tacocat.cli.app import app
from tacocat.evaluation.arena import play_game
from tacocat.evaluation.game_files import check_output_file, game_to_dict

runner = CliRunner()
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


@pytest.fixture(scope="module")
def game() -> dict:
    record = play_game([make_agent("random"), make_agent("highcard")], seed=5)
    return game_to_dict(record, ["random", "highcard"], RulesConfig())


@pytest.fixture
def no_drawing(monkeypatch):
    """Every frame drawn is counted, and drawing one fails the command."""
    drawn = []

    def refuse(state):
        drawn.append(state)
        raise AssertionError("a frame was drawn")

    monkeypatch.setattr("tacocat.game.render.raster.render_image", refuse)
    return drawn


def _games_file(folder: Path, game: dict) -> Path:
    path = folder / "games.jsonl"
    path.write_text(json.dumps(game) + "\n")
    return path


def _refused(args: list[str]) -> str:
    """The single error line of a refused command (and no progress bar, no traceback)."""
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output and "drawing frames" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    return errors[0]


@pytest.mark.parametrize(
    "where, message",
    [
        (lambda tmp: tmp / "missing" / "x.gif", "is not an existing folder"),
        (lambda tmp: tmp / "games.jsonl" / "x.gif", "is not an existing folder"),
        (lambda tmp: tmp, "is a folder; give a file name"),
        (lambda tmp: tmp / "x.png", "the file name must end in .gif"),
        (lambda tmp: Path("/proc/tacocat.gif"), "cannot write in /proc"),
    ],
)
def test_a_gif_path_that_cannot_be_written_fails_before_any_frame(tmp_path, game, no_drawing, where, message):
    games = _games_file(tmp_path, game)
    target = where(tmp_path)
    if str(target).startswith("/proc") and not Path("/proc").is_dir():
        pytest.skip("no /proc here")
    error = _refused(["replay", games, "--gif", target])
    assert "--gif" in error and message in error
    assert no_drawing == []


@pytest.mark.skipif(ROOT_USER, reason="root may write into read-only folders and files")
def test_read_only_folder_and_file_are_refused_before_any_frame(tmp_path, game, no_drawing):
    games = _games_file(tmp_path, game)
    locked = tmp_path / "locked"
    locked.mkdir()
    existing = tmp_path / "old.gif"
    existing.write_bytes(b"GIF89a")
    locked.chmod(0o500)
    existing.chmod(0o400)
    try:
        assert "cannot write in" in _refused(["replay", games, "--gif", locked / "x.gif"])
        assert "the file is read-only" in _refused(["replay", games, "--gif", existing])
    finally:
        locked.chmod(0o700)
    assert no_drawing == []


def test_an_illegal_game_is_refused_before_any_frame_and_without_a_progress_bar(tmp_path, game, no_drawing):
    state = new_game(RulesConfig(), game["seed"])
    for player, action, _name in game["actions"][:5]:
        apply_action(state, action, player)
    illegal = next(a for a in range(state.rules.codec.size) if a not in legal_actions(state))
    bad = dict(game, actions=[*game["actions"][:5], [state.to_act, illegal], *game["actions"][6:]])
    games = _games_file(tmp_path, bad)
    error = _refused(["replay", games, "--gif", tmp_path / "out.gif"])
    assert "action 5" in error and "cannot be replayed" in error and "is not legal" in error
    assert no_drawing == [] and not (tmp_path / "out.gif").exists()


def test_check_output_file_accepts_a_new_or_writable_file_and_leaves_no_probe(tmp_path):
    check_output_file(tmp_path / "new.gif", ".gif")
    (tmp_path / "old.GIF").write_bytes(b"GIF89a")
    check_output_file(tmp_path / "old.GIF", ".gif")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.GIF"]  # nothing created, nothing left
