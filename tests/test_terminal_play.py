"""`tacocat play` as a person uses it: in a real terminal (a detached tmux session), `?` explains
the game (its phases, what wins a round); move numbers stay put within a step; a move that is
the only legal one is played after a one-line notice (`--confirm-forced` asks instead); the
players are "you" and the agent's name and the spaces are numbered as the board draws them.

Without /usr/bin/tmux the terminal tests are skipped, except where the CI variable is set (CI
installs it: .ci/run), where they fail."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tacocat.cli.human import play_human
from tacocat.game.engine import apply_action, legal_actions, new_game

TMUX = Path("/usr/bin/tmux")
TACOCAT = Path(sys.executable).parent / "tacocat"  # the console script of this environment
MOVE = re.compile(r"^\s+(\d+)\. (\w+: .+)$")


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must run the terminal tests (.ci/run installs tmux)", pytrace=False)
    pytest.skip(reason)


class Terminal:
    """A detached tmux session (its own server socket) running one command."""

    def __init__(self, name: str) -> None:
        self.base = [str(TMUX), "-L", name]
        self.name = name

    def tmux(self, *args: str) -> str:
        env = {**os.environ, "TERM": "xterm-256color"}
        return subprocess.run([*self.base, *args], capture_output=True, text=True, check=True, env=env).stdout

    def start(self, command: list[str]) -> None:
        self.tmux("new-session", "-d", "-s", self.name, "-x", "110", "-y", "50", shlex.join(command))
        self.tmux("set-option", "-t", self.name, "history-limit", "10000")

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.name, "-l", text)
        self.tmux("send-keys", "-t", self.name, "Enter")

    def screen(self) -> str:
        """Everything the terminal has shown (the scrollback included)."""
        return self.tmux("capture-pane", "-p", "-J", "-t", self.name, "-S", "-10000")

    def wait_for(self, text: str, after: int = 0, timeout: float = 30.0) -> str:
        """The screen once `text` appears `after` characters into it or later."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            shown = self.screen()
            if text in shown[after:]:
                return shown
            time.sleep(0.1)
        raise AssertionError(f"{text!r} did not appear in the terminal:\n{self.screen()[-3000:]}")

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    if not TMUX.exists():
        _unavailable(f"{TMUX} is absent (apt-get install tmux)")
    if not TACOCAT.exists():
        _unavailable(f"the tacocat command is not installed at {TACOCAT}")
    session = Terminal(f"tacocat-test-{uuid.uuid4().hex[:12]}")  # its own tmux server, never one being shut down
    try:
        yield session
    finally:
        session.close()


def _moves(block: str) -> dict[str, int]:
    """The numbered moves of the last listing in `block`: name -> number."""
    listing: dict[str, int] = {}
    for line in block.splitlines():
        match = MOVE.match(line)
        if match:
            listing[match.group(2)] = int(match.group(1))
    return listing


def _last_listing(screen: str) -> dict[str, int]:
    prompts = [m.start() for m in re.finditer(r"^Your move", screen, re.MULTILINE)]
    return _moves(screen[prompts[-1] :])


def test_question_mark_explains_the_game_in_a_terminal(terminal):
    terminal.start([str(TACOCAT), "play", "--opponent", "random", "--seed", "3"])
    shown = terminal.wait_for("? help, q quit]:")
    assert "Type ? for how to play." in shown
    assert "[@4O 7]" in shown and "the Tacocat is on space 4 (O)" in shown  # the space as drawn: the 4th box
    terminal.type("?")
    shown = terminal.wait_for("? help, q quit]:", after=len(shown))
    help_text = " ".join(shown.split("HOW TO PLAY", 1)[1].split())  # lines wrapped to the terminal, joined
    phases = help_text.split("A round, phase by phase", 1)[1]
    for phase in ("Deal:", "Replace:", "Duel:", "Play:", "Showdown:", "The LOWER card wins the round"):
        assert phase in phases, phase
    for word in ("sacrifice", "set", "sequence", "arrow", "void", "fails to defend", "P0 GOAL"):
        assert word in help_text, word
    terminal.type("q")
    terminal.wait_for("Game ended by the player.")


def test_move_numbers_stay_put_while_cards_are_set_aside(terminal):
    """In the replace step a card set aside leaves the list; every other move keeps its number."""
    terminal.start([str(TACOCAT), "play", "--opponent", "random", "--seed", "3"])
    shown = terminal.wait_for("? help, q quit]:")
    first = _last_listing(shown)
    assert first["replace: stop"] == 1 and len(first) > 3
    discard = max(first, key=first.__getitem__)  # the last listed card
    terminal.type(str(first[discard]))
    shown = terminal.wait_for("? help, q quit]:", after=len(shown))
    second = _last_listing(shown)
    assert second and all(first[name] == number for name, number in second.items())
    if discard not in second:  # its only copy: its number is gone, not given to another move
        assert first[discard] not in second.values()
    terminal.type("q")
    terminal.wait_for("Game ended by the player.")


def _first_listed(prompt: str) -> str:
    return re.match(r"move \[(\d+)", prompt).group(1)  # type: ignore[union-attr]


def _forced(seed: int, seat: int) -> int:
    """The person's moves with only one legal move in the game `play_human` plays when the
    person always takes the first listed move: replayed from its record."""
    out: list[str] = []
    result = play_human("random", seat=seat, seed=seed, input_fn=_first_listed, output_fn=out.append)
    state = new_game(None, seed)
    forced = 0
    for player, action in result.record.actions:
        forced += player == seat and len(legal_actions(state)) == 1
        apply_action(state, action, player)
    return forced


@pytest.mark.parametrize("confirm", [False, True])
def test_a_forced_move_is_played_after_a_notice_unless_confirmation_is_asked(confirm):
    seat, seed = 1, 4
    prompts: list[str] = []
    out: list[str] = []

    def answer(prompt: str) -> str:
        prompts.append(prompt)
        return _first_listed(prompt)

    result = play_human("random", seat=seat, seed=seed, input_fn=answer, output_fn=out.append, confirm_forced=confirm)
    assert result.record.winner is not None or result.record.truncated
    mine = [a for p, a in result.record.actions if p == seat]
    forced = _forced(seed, seat)
    assert forced > 0
    notices = [line for line in out if line.startswith("Your only legal move, played for you: ")]
    assert len(notices) == (0 if confirm else forced)
    assert len(prompts) == len(mine) - len(notices)  # one prompt per move the person chose
    history = "\n".join(line for line in out if line.startswith("* "))  # the events, as narrated
    assert "player_" not in history and "random" in history and "You " in history


def test_the_confirm_forced_option_is_offered():
    from typer.testing import CliRunner

    from tacocat.cli.app import app

    result = CliRunner().invoke(app, ["play", "--help"])
    assert "--confirm-forced" in result.output
    played = CliRunner().invoke(app, ["play", "--confirm-forced", "--seed", "3"], input="q\n")
    assert played.exit_code == 0 and "Game ended by the player." in played.output
