"""Bad-input sweep: conversion between reference GameStates and the batch engine
(tacocat.game.batch.convert through `TacocatBatch`), issue 24.

Things that are not GameStates, hand-edited states whose cards are not the deck (R0.4, R2.3) or
whose fields have the wrong type or range, states of other rules, and bad arguments of
`to_game`. The cases that need a batch state share one (compiled once, a few seconds).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path

from .case import Case

NOT_A_STATE = (TypeError,)


def cases(tmp: Path) -> Iterator[Case]:
    from tacocat import RulesConfig, new_game
    from tacocat.game.batch import TacocatBatch

    env = TacocatBatch()

    @functools.cache
    def batch():
        return env.from_games([new_game(None, 0), new_game(None, 1)])

    def edited(edit: Callable) -> Callable[[], object]:
        def run() -> object:
            game = new_game(None, 0)
            edit(game)
            return env.from_game(game)

        return run

    # the cases
    yield Case("batch", "from_games(['x'])", lambda: env.from_games(["x"]), NOT_A_STATE)
    yield Case("batch", "from_games([None])", lambda: env.from_games([None]), NOT_A_STATE)
    yield Case("batch", "from_game({})", lambda: env.from_game({}), NOT_A_STATE)
    yield Case("batch", "from_game: 5 extra cards in the draw pile", edited(lambda g: g.draw_pile.extend([0] * 5)))
    # more of the same surface
    yield Case("batch", "from_games('x')", lambda: env.from_games("x"), NOT_A_STATE)
    yield Case("batch", "from_games(a GameState, not a list)", lambda: env.from_games(new_game(None, 0)), NOT_A_STATE)
    yield Case("batch", "from_games([])", lambda: env.from_games([]))
    yield Case("batch", "from_games([good, 'x'])", lambda: env.from_games([new_game(None, 0), "x"]), NOT_A_STATE)
    yield Case("batch", "from_game: a card lost from the draw pile", edited(lambda g: g.draw_pile.pop()))
    yield Case(
        "batch",
        "from_game: a card both in the pile and on the table",
        edited(lambda g: g.attack.append(g.draw_pile[-1])),
    )
    yield Case(
        "batch", "from_game: a card made up in a hand", edited(lambda g: g.hands[1].__setitem__(0, g.hands[1][0] + 1))
    )
    yield Case("batch", "from_game: hands of the wrong length", edited(lambda g: g.hands[0].pop()))
    yield Case("batch", "from_game: a negative count", edited(lambda g: g.discard.__setitem__(0, -1)))
    yield Case("batch", "from_game: draw pile card 99", edited(lambda g: g.draw_pile.append(99)))
    yield Case("batch", "from_game: phase 2 (an int, not a Phase)", edited(lambda g: setattr(g, "phase", 2)))
    yield Case("batch", "from_game: to_act 2", edited(lambda g: setattr(g, "to_act", 2)))
    yield Case("batch", "from_game: space 99", edited(lambda g: setattr(g, "space", 99)))
    yield Case("batch", "from_game: an attack longer than any deal", edited(lambda g: setattr(g, "attack", [0] * 20)))
    yield Case(
        "batch", "from_game: a game of other rules", lambda: env.from_game(new_game(RulesConfig(max_rounds=5), 0))
    )
    yield Case("batch", "to_game({})", lambda: env.to_game({}, 0), NOT_A_STATE)
    yield Case("batch", "to_game(batch, index 5 of 2)", lambda: env.to_game(batch(), 5))
    yield Case("batch", "to_game(batch, index True)", lambda: env.to_game(batch(), True))
    yield Case("batch", "to_game(batch, seed=-1)", lambda: env.to_game(batch(), 0, seed=-1))
    yield Case(
        "batch",
        "to_game: a batch state with a card made up",
        lambda: env.to_game(batch().replace(hands=batch().hands.at[0, 0, 0].add(1)), 0),
    )
