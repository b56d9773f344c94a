"""A ruleset compiled for fast play: the config plus lookup tables derived from it."""

from __future__ import annotations

import json

from tacocat_env.actions import ActionCodec
from tacocat_env.config import RulesConfig


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
        #: set_ids[v][size] -> action id (None where the codec has no such set)
        self.set_ids: list[list[int | None]] = []
        for v in range(self.n_values):
            row: list[int | None] = [None] * (max(self.board) + 1)
            for size in range(2, len(row)):
                try:
                    row[size] = codec.set_action(v, size)
                except KeyError:
                    pass
            self.set_ids.append(row)
        #: seq_ids[start][length] -> action id
        self.seq_ids: list[list[int | None]] = []
        for start in range(self.n_values):
            row = [None] * (max(self.board) + 1)
            for length in range(3, len(row)):
                try:
                    row[length] = codec.sequence_action(start, length)
                except KeyError:
                    pass
            self.seq_ids.append(row)
        #: consecutive[v]: value v+1 is exactly one more than value v
        self.consecutive = [
            v + 1 < self.n_values and self.values[v + 1] == self.values[v] + 1 for v in range(self.n_values)
        ]


_COMPILED: dict[str, Ruleset] = {}


def compile_rules(config: RulesConfig) -> Ruleset:
    """The compiled ruleset of a config, cached by every field of the config (the ruleset
    hash leaves reward shaping out, so it cannot be the key)."""
    key = json.dumps(config.canonical_dict(), sort_keys=True)
    if key not in _COMPILED:
        _COMPILED[key] = Ruleset(config)
    return _COMPILED[key]
