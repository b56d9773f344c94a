"""Serialized python_tacocat states (tacocat/game/openspiel.py, docs/OPENSPIEL.md).

* round trip: ``pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(...))``
  gives an equal state (history, information states, observations, returns, and the same
  future) for random play on several rulesets, stopped anywhere, chance nodes included;
* a crafted text cannot run code: a pickled ``__dict__=`` line is refused everywhere it could
  enter, while pyspiel's own reader does run it (the threat is real);
* bad text and illegal actions raise `TacocatSpielError` (a ``pyspiel.SpielError`` and a
  ``ValueError``) naming the problem, and change nothing.
"""

from __future__ import annotations

import base64
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyspiel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tacocat.game.config import make_config
from tacocat.game.openspiel import (
    _PYSPIEL_DESERIALIZE,
    GAME_NAME,
    MAX_TEXT_CHARS,
    TacocatSpielError,
    TacocatState,
    deserialize_game_and_state,
    load_game,
)

RULESETS = {
    "tiny": "tiny",
    "small": "small",
    "race": "race",
    "default": None,
    "custom": make_config(
        deck={1: 3, 2: 3, 3: 3, 5: 3},
        board=(2, 3, 2),
        arrow_policy="explicit",
        arrows=("player_1", "both", "player_0"),
        tie_policy="arrow_player_wins",
        max_rounds=3,
        round_reward=0.5,
    ),
}
GAMES = {name: load_game(rules) for name, rules in RULESETS.items()}


def _step(state: pyspiel.State, rng: np.random.Generator) -> None:
    if state.is_chance_node():
        actions, probs = zip(*state.chance_outcomes(), strict=True)
        state.apply_action(int(rng.choice(actions, p=probs)))
    else:
        state.apply_action(int(rng.choice(state.legal_actions())))


def _played(game: pyspiel.Game, seed: int, steps: int) -> TacocatState:
    rng = np.random.default_rng(seed)
    state = game.new_initial_state()
    for _ in range(steps):
        if state.is_terminal():
            break
        _step(state, rng)
    return state


def _view(state: TacocatState) -> tuple:
    """Everything a caller can read of a state."""
    terminal = state.is_terminal()
    return (
        state.history(),
        [(h.player, h.action) for h in state.full_history()],
        state.move_number(),
        state.current_player(),
        str(state),
        state.returns(),
        terminal,
        state.chance_outcomes() if state.is_chance_node() else None,
        None if terminal or state.is_chance_node() else state.legal_actions(),
        *(state.information_state_string(p) for p in (0, 1)),
        *(state.observation_string(p) for p in (0, 1)),
    )


def _assert_round_trip(game: pyspiel.Game, state: TacocatState, seed: int) -> None:
    text = pyspiel.serialize_game_and_state(game, state)
    assert "__dict__" not in text and text.isascii()
    game2, state2 = pyspiel.deserialize_game_and_state(text)
    assert game2.serialize() == game.serialize()
    assert _view(state2) == _view(state)
    assert _view(game.deserialize_state(state.serialize())) == _view(state)
    # the same future: both states played on with the same draws and moves stay equal
    rng = [np.random.default_rng(seed), np.random.default_rng(seed)]
    original, copy = state.clone(), state2
    while not original.is_terminal():
        _step(original, rng[0])
        _step(copy, rng[1])
    assert _view(copy) == _view(original)


# ---------------------------------------------------------------------------------------
# round trip
# ---------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(sorted(RULESETS)), seed=st.integers(0, 2**31 - 1), steps=st.integers(0, 400))
def test_round_trip_gives_an_equal_state(name, seed, steps):
    game = GAMES[name]
    _assert_round_trip(game, _played(game, seed, steps), seed)


def test_round_trip_at_chance_nodes_mid_game():
    """Stopped at every chance node after the first deal: replacement draws (R4.3) on the
    default rules and a new round's deal (R6.4) on `race`."""
    kinds = set()
    for name in ("default", "race"):
        game = GAMES[name]
        for seed in range(3):
            rng = np.random.default_rng(seed)
            state = game.new_initial_state()
            checked = 0
            while not state.is_terminal() and checked < 3:  # the first few: each replays the game
                if state.is_chance_node() and state.engine is not None:  # not the first deal
                    kinds.add((name, state.pending_draw()[2]))
                    _assert_round_trip(game, state, seed)
                    checked += 1
                _step(state, rng)
    assert {("default", False), ("race", True)} <= kinds


def test_a_state_built_from_a_position_cannot_be_serialized():
    game = GAMES["tiny"]
    engine = _played(game, 0, 4).engine
    with pytest.raises(TacocatSpielError, match="position"):
        pyspiel.serialize_game_and_state(game, TacocatState(game, engine))


def test_other_games_are_left_to_pyspiel():
    game = pyspiel.load_game("kuhn_poker")
    state = game.new_initial_state()
    for action in (0, 1, 0):
        state.apply_action(action)
    game2, state2 = pyspiel.deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))
    assert str(game2) == "kuhn_poker()" and state2.history() == [0, 1, 0]
    with pytest.raises(TacocatSpielError, match="not a python_tacocat game"):
        deserialize_game_and_state(pyspiel.serialize_game_and_state(game, state))


# ---------------------------------------------------------------------------------------
# a crafted text cannot run code
# ---------------------------------------------------------------------------------------
class _RunsCode:
    """Unpickling this writes a marker file: stands for arbitrary code."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').write('code ran')",))


def _crafted(payload: object, game: str = f"{GAME_NAME}(preset=tiny)") -> str:
    """pyspiel's layout for a Python game's state, its __dict__ line carrying `payload`."""
    pickled = base64.b64encode(pickle.dumps({"_payload": payload})).decode()
    return f"[Meta]\nVersion: 1\n\n[Game]\n{game}\n[State]\nhistory=\nmove_number=0\n__dict__={pickled}\n"


def test_crafted_text_is_refused_and_runs_no_code(tmp_path):
    marker = tmp_path / "marker"
    text = _crafted(_RunsCode(marker))
    state_section = text.split("[State]\n")[1]
    attempts = [
        lambda: pyspiel.deserialize_game_and_state(text),
        lambda: deserialize_game_and_state(text),
        lambda: GAMES["tiny"].deserialize_state(state_section),
        lambda: pyspiel.deserialize_game_and_state(_crafted(_RunsCode(marker), f"cached_tree(game={GAME_NAME}())")),
    ]
    for attempt in attempts:
        with pytest.raises(TacocatSpielError, match=r"pickled|inside another game"):
            attempt()
        assert not marker.exists()
    # pyspiel's own reader (what `pyspiel.deserialize_game_and_state` was) runs it: the threat is real
    _PYSPIEL_DESERIALIZE(text)
    assert marker.read_text() == "code ran"


def test_crafted_text_that_would_exit_is_refused(tmp_path):
    """A payload that ends the process: the reader refuses it and the process carries on."""
    script = tmp_path / "load.py"
    script.write_text(
        "import base64, os, pickle, sys, pyspiel\n"
        "import tacocat.game.openspiel as tos\n"
        "class Exit:\n"
        "    def __reduce__(self):\n"
        "        return (os._exit, (17,))\n"
        "pickled = base64.b64encode(pickle.dumps({'x': Exit()})).decode()\n"
        "text = ('[Meta]\\nVersion: 1\\n\\n[Game]\\npython_tacocat()\\n[State]\\n'\n"
        "        'history=\\nmove_number=0\\n__dict__=' + pickled + '\\n')\n"
        "try:\n"
        "    pyspiel.deserialize_game_and_state(text)\n"
        "except tos.TacocatSpielError as error:\n"
        "    print('refused:', error)\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "refused:" in proc.stdout and "pickled" in proc.stdout


# ---------------------------------------------------------------------------------------
# bad text
# ---------------------------------------------------------------------------------------
def _text(state_lines: str, game: str = f"{GAME_NAME}(preset=tiny)") -> str:
    return f"[Meta]\nVersion: 1\n\n[Game]\n{game}\n[State]\n{state_lines}\n"


def _tiny_history() -> tuple[list[tuple[int, int]], TacocatState]:
    state = _played(GAMES["tiny"], 3, 3)
    return [(h.player, h.action) for h in state.full_history()], state


def _bad_texts() -> dict[str, tuple[object, str]]:
    """name -> (text, what the message must say)."""
    history, state = _tiny_history()
    entries = ",".join(f"{p}:{a}" for p, a in history)
    chance_first = history[0]
    assert chance_first[0] == -1  # the first deal is chance's
    impossible = max(a for a, _ in GAMES["tiny"].new_initial_state().chance_outcomes()) + 1
    illegal = next(a for a in range(GAMES["tiny"].num_distinct_actions()) if a not in state.legal_actions())
    mover = state.current_player()
    finished = _played(GAMES["tiny"], 3, 1000)
    done = ",".join(f"{h.player}:{h.action}" for h in finished.full_history())
    n = len(history)
    return {
        "garbage": ("SECRET garbage\n", "before the [Meta] section"),
        "empty": ("", "no [Meta] [Game] [State] section"),
        "sections out of order": (f"[Game]\n{GAME_NAME}()\n[Meta]\n", "out of order"),
        "state before game": (f"[Meta]\n[State]\n[Game]\n{GAME_NAME}()\n", "out of order"),
        "another game": ("[Meta]\nVersion: 1\n[Game]\nkuhn_poker()\n[State]\n\n", "not a python_tacocat game"),
        "wrapped in another game": (
            _text("history=\nmove_number=0", f"cached_tree(game={GAME_NAME}())"),
            "inside another game",
        ),
        "other version": (_text("history=\nmove_number=0").replace("Version: 1", "Version: 2"), "Version: 1"),
        "game string cut short": (_text("history=\nmove_number=0", f"{GAME_NAME}(preset=tiny"), "closing"),
        "unknown parameter": (_text("history=\nmove_number=0", f"{GAME_NAME}(SECRET=1)"), "not one of"),
        "parameter twice": (_text("history=\nmove_number=0", f"{GAME_NAME}(preset=tiny,preset=race)"), "twice"),
        "parameter of the wrong type": (
            _text("history=\nmove_number=0", f"{GAME_NAME}(max_rounds=SECRET)"),
            "max_rounds is not an integer",
        ),
        "unknown preset": (_text("history=\nmove_number=0", f"{GAME_NAME}(preset=nope)"), "unknown rules preset"),
        "invalid rules": (_text("history=\nmove_number=0", f"{GAME_NAME}(board=2 2)"), "board"),
        "no state section": (f"[Meta]\nVersion: 1\n[Game]\n{GAME_NAME}(preset=tiny)\n", "no [State] section"),
        "state lines swapped": (_text(f"move_number={n}\nhistory={entries}"), "two lines"),
        "extra state line": (_text(f"history={entries}\nmove_number={n}\nSECRET=1"), "two lines"),
        "entry not player:action": (
            _text(f"history={entries},0:SECRET\nmove_number={n + 1}"),
            f"entry {n + 1} is not player:action",
        ),
        "entry of player 2": (_text(f"history={entries},2:0\nmove_number={n + 1}"), "is not player:action"),
        "negative action": (_text(f"history={entries},0:-1\nmove_number={n + 1}"), "is not player:action"),
        "huge action id": (_text(f"history={entries},0:{10**12}\nmove_number={n + 1}"), "is not player:action"),
        "move_number off": (_text(f"history={entries}\nmove_number={n + 1}"), "move_number"),
        "move_number not a number": (_text(f"history={entries}\nmove_number=SECRET"), "move_number"),
        "impossible chance outcome": (
            _text(f"history=-1:{impossible}\nmove_number=1"),
            "entry 1: python_tacocat: chance outcome",
        ),
        "move where chance acts": (_text("history=0:0\nmove_number=1"), "entry 1 is a move of player_0, but chance"),
        "chance where a player acts": (
            _text(f"history={entries},-1:0\nmove_number={n + 1}"),
            f"entry {n + 1} is a move of chance, but player_{mover}",
        ),
        "wrong player": (
            _text(f"history={entries},{1 - mover}:{illegal}\nmove_number={n + 1}"),
            f"is a move of player_{1 - mover}, but player_{mover}",
        ),
        "illegal move": (
            _text(f"history={entries},{mover}:{illegal}\nmove_number={n + 1}"),
            f"entry {n + 1}: python_tacocat: '",
        ),
        "action id out of range": (_text(f"history={entries},{mover}:999\nmove_number={n + 1}"), "out of range"),
        "move after the game ended": (
            _text(f"history={done},0:0\nmove_number={finished.move_number() + 1}"),
            "nobody (the game is over)",
        ),
        "too long": ("#" * (MAX_TEXT_CHARS + 1), "limit"),
        "bytes": (b"[Meta]\n", "must be a str"),
    }


BAD_TEXTS = _bad_texts()


@pytest.mark.parametrize("name", sorted(BAD_TEXTS))
def test_bad_text_is_refused_naming_the_problem(name):
    text, expected = BAD_TEXTS[name]
    for reader in (deserialize_game_and_state, pyspiel.deserialize_game_and_state):
        if reader is pyspiel.deserialize_game_and_state and isinstance(text, str) and GAME_NAME not in text:
            continue  # not a python_tacocat text: pyspiel's to read (below)
        with pytest.raises(TacocatSpielError) as caught:
            reader(text)
        assert expected in str(caught.value)
        assert isinstance(caught.value, pyspiel.SpielError) and isinstance(caught.value, ValueError)
        assert "SECRET" not in str(caught.value)  # the text's contents are not echoed


def test_a_text_that_names_no_game_is_refused_clearly_by_pyspiels_reader():
    for text in ("SECRET garbage\n", f"[Game]\n{GAME_NAME}()\n[Meta]\n".replace(GAME_NAME, "kuhn_poker")):
        with pytest.raises(TacocatSpielError, match=r"before the .Meta. section|out of order"):
            pyspiel.deserialize_game_and_state(text)


def test_every_truncation_is_refused():
    """Every proper prefix of a text (beyond its final newline) is refused: by our reader with
    `TacocatSpielError`; through pyspiel's, a prefix that no longer names the game is pyspiel's
    own `SpielError`."""
    game = GAMES["race"]
    text = pyspiel.serialize_game_and_state(game, _played(game, 5, 12))
    for cut in range(len(text) - 1):
        with pytest.raises(TacocatSpielError):
            deserialize_game_and_state(text[:cut])
        with pytest.raises(pyspiel.SpielError):
            pyspiel.deserialize_game_and_state(text[:cut])


# ---------------------------------------------------------------------------------------
# illegal actions
# ---------------------------------------------------------------------------------------
def _snapshot(state: TacocatState) -> tuple:
    return (*_view(state), state.serialize())


@pytest.mark.parametrize("action", [-1, -7, 999, 10**30, 1.5, True, "0", None])
@pytest.mark.parametrize("node", ["move", "chance"])
def test_illegal_action_is_refused_and_changes_nothing(action, node, capfd):
    game = GAMES["default"]
    state = _played(game, 2, 0 if node == "chance" else 12)
    while state.is_chance_node() != (node == "chance"):
        _step(state, np.random.default_rng(0))
    before = _snapshot(state)
    for apply in (state.apply_action, state.child):
        with pytest.raises(TacocatSpielError, match=r"legal: |possible chance outcomes: "):
            apply(action)
        assert _snapshot(state) == before
    assert "OpenSpiel exception" not in capfd.readouterr().err  # no internal C++ check was hit


def test_not_legal_and_impossible_ids_are_refused():
    state = _played(GAMES["tiny"], 1, 3)
    assert not state.is_chance_node()
    illegal = next(a for a in range(GAMES["tiny"].num_distinct_actions()) if a not in state.legal_actions())
    before = _snapshot(state)
    with pytest.raises(TacocatSpielError, match=f"action {illegal}\\) is not legal"):
        state.apply_action(illegal)
    assert _snapshot(state) == before
    chance = GAMES["tiny"].new_initial_state()
    impossible = max(a for a, _ in chance.chance_outcomes()) + 1
    with pytest.raises(TacocatSpielError, match=f"chance outcome {impossible} is not possible"):
        chance.apply_action(impossible)
    with pytest.raises(TacocatSpielError, match="not a chance node"):
        state.chance_outcomes()


def test_actions_after_the_end_are_refused():
    state = _played(GAMES["tiny"], 0, 1000)
    assert state.is_terminal()
    before = _snapshot(state)
    with pytest.raises(TacocatSpielError, match="the game is over"):
        state.apply_action(0)
    assert _snapshot(state) == before


def test_pyspiels_checked_apply_names_an_invalid_id():
    state = _played(GAMES["tiny"], 1, 3)
    before = _snapshot(state)
    with pytest.raises(pyspiel.SpielError, match="invalid action -1"):
        state.apply_action_with_legality_check(-1)
    assert _snapshot(state) == before
