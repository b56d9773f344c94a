"""Bad-input sweep cases for the OpenSpiel adapter (tacocat/game/openspiel.py): serialized
texts and actions. Each must raise `TacocatSpielError` (a ``pyspiel.SpielError`` and a
``ValueError``); a pickled payload that ran would raise SystemExit, which the sweep counts as
a traceback."""

from __future__ import annotations

import base64
import pickle
from collections.abc import Iterator
from pathlib import Path

from .case import Case

CHANNEL = "openspiel"


class _RunsCode:
    def __reduce__(self):
        return (exec, ("raise SystemExit('code from a serialized OpenSpiel state ran')",))


def cases(tmp: Path) -> Iterator[Case]:
    import numpy as np
    import pyspiel

    from tacocat.game.openspiel import (
        GAME_NAME,
        MAX_TEXT_CHARS,
        TacocatSpielError,
        TacocatState,
        deserialize_game_and_state,
        load_game,
    )

    expect = (TacocatSpielError,)
    tiny = load_game("tiny")

    def played(steps: int, seed: int = 0) -> TacocatState:
        rng = np.random.default_rng(seed)
        state = tiny.new_initial_state()
        for _ in range(steps):
            if state.is_terminal():
                break
            if state.is_chance_node():
                actions, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(actions, p=probs)))
            else:
                state.apply_action(int(rng.choice(state.legal_actions())))
        return state

    def text(state_lines: str, game: str = f"{GAME_NAME}(preset=tiny)") -> str:
        return f"[Meta]\nVersion: 1\n\n[Game]\n{game}\n[State]\n{state_lines}\n"

    mid = played(3)
    entries = ",".join(f"{h.player}:{h.action}" for h in mid.full_history())
    n = len(mid.full_history())
    mover = mid.current_player()
    illegal = next(a for a in range(tiny.num_distinct_actions()) if a not in mid.legal_actions())
    finished = played(1000)
    done = ",".join(f"{h.player}:{h.action}" for h in finished.full_history())
    valid = pyspiel.serialize_game_and_state(tiny, mid)
    pickled = base64.b64encode(pickle.dumps({"_payload": _RunsCode()})).decode()
    crafted = text(f"history=\nmove_number=0\n__dict__={pickled}")

    texts = {
        # the cases
        "pickled __dict__ payload": crafted,
        "impossible chance outcome in the history": text("history=-1:9\nmove_number=1"),
        "garbage": "garbage\n",
        "truncated text": valid[: len(valid) // 2],
        # more
        "pickled payload inside cached_tree": crafted.replace(
            f"{GAME_NAME}(preset=tiny)", f"cached_tree(game={GAME_NAME}(preset=tiny))"
        ),
        "truncated history": valid[: valid.index("move_number")],
        "illegal move in the history": text(f"history={entries},{mover}:{illegal}\nmove_number={n + 1}"),
        "move of the wrong player": text(f"history={entries},{1 - mover}:0\nmove_number={n + 1}"),
        "move after the game ended": text(f"history={done},0:0\nmove_number={finished.move_number() + 1}"),
        "action id out of range": text(f"history={entries},{mover}:999\nmove_number={n + 1}"),
        "entry not player:action": text(f"history={entries},x:y\nmove_number={n + 1}"),
        "move_number off": text(f"history={entries}\nmove_number={n + 5}"),
        "unknown game parameter": text("history=\nmove_number=0", f"{GAME_NAME}(no_such=1)"),
        "invalid rules in [Game]": text("history=\nmove_number=0", f"{GAME_NAME}(board=2 2)"),
        "sections out of order": f"[Game]\n{GAME_NAME}()\n[Meta]\n",
        "Version 2": text("history=\nmove_number=0").replace("Version: 1", "Version: 2"),
        "over the size limit": "#" * (MAX_TEXT_CHARS + 1) + GAME_NAME,
    }
    for name, bad in texts.items():
        yield Case(
            CHANNEL,
            f"pyspiel.deserialize_game_and_state: {name}",
            lambda t=bad: pyspiel.deserialize_game_and_state(t),
            expect,
        )
    yield Case(
        CHANNEL,
        "deserialize_game_and_state: another game's text",
        lambda: deserialize_game_and_state(
            pyspiel.serialize_game_and_state(
                pyspiel.load_game("kuhn_poker"), pyspiel.load_game("kuhn_poker").new_initial_state()
            )
        ),
        expect,
    )
    yield Case(CHANNEL, "deserialize_game_and_state(bytes)", lambda: deserialize_game_and_state(valid.encode()), expect)
    yield Case(
        CHANNEL,
        "game.deserialize_state: pickled __dict__ payload",
        lambda: tiny.deserialize_state(crafted.split("[State]\n")[1]),
        expect,
    )

    # actions
    for action in (-1, -7, 999, 10**30, 1.5, "0", None, True):
        yield Case(CHANNEL, f"state.apply_action({action!r})", lambda a=action: played(3).apply_action(a), expect)
    yield Case(CHANNEL, "state.apply_action(an id not legal)", lambda: played(3).apply_action(illegal), expect)
    yield Case(CHANNEL, "state.child(-1)", lambda: played(3).child(-1), expect)
    yield Case(
        CHANNEL, "chance: apply_action(an impossible count)", lambda: tiny.new_initial_state().apply_action(9), expect
    )
    yield Case(CHANNEL, "apply_action after the end", lambda: played(1000).apply_action(0), expect)
    yield Case(CHANNEL, "chance_outcomes() at a player node", lambda: played(3).chance_outcomes(), expect)
    yield Case(
        CHANNEL,
        "serialize a state built from a position",
        lambda: TacocatState(tiny, played(3).engine).serialize(),
        expect,
    )
    yield Case(
        CHANNEL,
        "serialize_game_and_state with another game",
        lambda: pyspiel.serialize_game_and_state(load_game("small"), played(3)),
        expect,
    )
