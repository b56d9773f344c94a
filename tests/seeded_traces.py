"""Digests of seeded play, recorded before chance became an engine seam (issue 27, commit
9621d90) and compared by tests/test_chance_seam.py: whole random games of four rulesets
(every field of every state, the generator's state included), `sample_state` worlds along
them, and OpenSpiel traversals (the whole `tiny` tree, random walks of `race` and the default
rules: histories, chance probabilities, legal actions, information states, observations,
returns). Re-record only for a deliberate change of behaviour:
``python tests/seeded_traces.py > tests/data/seeded_traces.json``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from conftest import random_action, snapshot
from tacocat import apply_action, make_config, new_game
from tacocat.game.config import RulesConfig
from tacocat.game.presets import preset_config
from tacocat.game.view import player_view, sample_state

PATH = Path(__file__).parent / "data" / "seeded_traces.json"
CONFIGS: dict[str, RulesConfig] = {
    "default": make_config(None),
    "tiny": preset_config("tiny"),
    "race": preset_config("race"),
    "leading_tie": make_config(
        {
            "arrow_policy": "leading",
            "tie_policy": "arrow_player_wins",
            "max_rounds": 12,
            "board": [3, 5, 8, 5, 3],
            "deck": {2: 3, 3: 4, 5: 4, 7: 5, 8: 5, 9: 4, 11: 4, 13: 3},
            "round_reward": 0.1,
        }
    ),
}
GAMES, SAMPLED_GAMES, RACE_WALKS, DEFAULT_WALKS = 12, 3, 20, 4


def digest(items: Iterable[object]) -> str:
    h = hashlib.sha256()
    for item in items:
        h.update(repr(item).encode())
        h.update(b"\n")
    return h.hexdigest()[:32]


def game_trace(cfg: RulesConfig, seed: int) -> list[tuple]:
    """Every state of a random game: the deal from `seed`, the moves from another stream."""
    moves = np.random.default_rng(seed + 10_000)
    state = new_game(cfg, np.random.default_rng(seed))
    out = [snapshot(state)]
    while not state.is_over:
        apply_action(state, random_action(state, moves))
        out.append(snapshot(state))
    return out


def sample_trace(cfg: RulesConfig, seed: int) -> list[tuple]:
    """A `sample_state` world of each player's view at every state of a random game."""
    moves, sampler = np.random.default_rng(seed + 10_000), np.random.default_rng(seed + 20_000)
    state = new_game(cfg, np.random.default_rng(seed))
    out = []
    while not state.is_over:
        out += [snapshot(sample_state(player_view(state, p), sampler)) for p in (0, 1)]
        apply_action(state, random_action(state, moves))
    return out


def _node(state) -> list:
    items = [state.history(), state.current_player(), str(state)]
    if state.is_terminal():
        return [*items, state.returns()]
    items.append(state.chance_outcomes() if state.is_chance_node() else state.legal_actions())
    for p in (0, 1):
        items += [state.information_state_string(p), state.observation_string(p), list(state.observation_tensor(p))]
    return items


def spiel_tree(preset: str) -> list[list]:
    """Every node of a preset's OpenSpiel game tree, depth first."""
    from tacocat.game.openspiel import load_game

    out, stack = [], [load_game(preset).new_initial_state()]
    while stack:
        state = stack.pop()
        out.append(_node(state))
        if not state.is_terminal():
            actions = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
            stack += [state.child(a) for a in actions]
    return out


def spiel_walk(preset: str | None, seed: int) -> list[list]:
    """Every node of one OpenSpiel game, chance outcomes drawn with their probabilities."""
    from tacocat.game.openspiel import load_game

    rng = np.random.default_rng(seed)
    state = load_game(preset).new_initial_state()
    out = []
    while not state.is_terminal():
        out.append(_node(state))
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            action = outcomes[int(rng.choice(len(outcomes), p=[p for _, p in outcomes]))][0]
        else:
            legal = state.legal_actions()
            action = legal[int(rng.integers(len(legal)))]
        state.apply_action(action)
    out.append(_node(state))
    return out


def record() -> dict:
    return {
        "games": {name: [digest(game_trace(cfg, s)) for s in range(GAMES)] for name, cfg in CONFIGS.items()},
        "samples": {
            name: [digest(sample_trace(cfg, s)) for s in range(SAMPLED_GAMES)] for name, cfg in CONFIGS.items()
        },
        "spiel": {
            "tiny_tree": digest(spiel_tree("tiny")),
            "race_walks": [digest(spiel_walk("race", s)) for s in range(RACE_WALKS)],
            "default_walks": [digest(spiel_walk(None, s)) for s in range(DEFAULT_WALKS)],
        },
    }


if __name__ == "__main__":
    print(json.dumps(record(), indent=1))
