"""A ruleset compiled for fast play: the config plus lookup tables derived from it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

from tacocat.game.actions import ActionCodec
from tacocat.game.config import RulesConfig


class Ruleset:
    """Immutable tables the engine reads on every move; one instance per config (cached)."""

    def __init__(self, config: RulesConfig) -> None:
        self.config = config
        self.codec = ActionCodec(config)
        self.values = config.values
        self.n_values = len(self.values)
        self.copies = list(config.deck.values())
        self.deck_cards = [v for v, c in enumerate(self.copies) for _ in range(c)]
        self.board = list(config.board)
        self.n_spaces = len(self.board)
        self.arrows = [config.arrow(s) for s in range(self.n_spaces)]
        self.hash = config.ruleset_hash()
        codec = self.codec
        width = max(self.board) + 1
        #: set_ids[v][size] -> action id of the set of `size` cards of value index v (or None)
        self.set_ids = _id_table(codec.set_action, self.n_values, 2, width)
        #: seq_ids[start][length] -> action id of that sequence (or None)
        self.seq_ids = _id_table(codec.sequence_action, self.n_values, 3, width)
        #: consecutive[v]: value v+1 is exactly one more than value v
        self.consecutive = [
            v + 1 < self.n_values and self.values[v + 1] == self.values[v] + 1 for v in range(self.n_values)
        ]


def _id_table(lookup: Callable[[int, int], int], rows: int, first: int, width: int) -> list[list[int | None]]:
    """table[row][n] = lookup(row, n) for first <= n < width, None where the codec has none."""
    table: list[list[int | None]] = []
    for row in range(rows):
        ids: list[int | None] = [None] * width
        for n in range(first, width):
            with contextlib.suppress(KeyError):
                ids[n] = lookup(row, n)
        table.append(ids)
    return table


_COMPILED: dict[str, Ruleset] = {}


def compile_rules(config: RulesConfig) -> Ruleset:
    """The compiled ruleset of a config, cached by every field of the config (the ruleset
    hash leaves reward shaping out, so it cannot be the key)."""
    key = json.dumps(config.canonical_dict(), sort_keys=True)
    if key not in _COMPILED:
        _COMPILED[key] = Ruleset(config)
    return _COMPILED[key]
