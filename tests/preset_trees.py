"""The game trees of the rules presets, built once per test process and shared by the tests of
the exact solver and of agents as tables (test_exact_solver, test_exact_cfr, test_exact_store,
test_tabular_agents).

On the loaded 2-core machine enumerating `skirmish` takes about 4 s and OpenSpiel's
`cached_tree` of it about 5 s more (built on first use and kept with the game object); each
module used to build its own. The shared trees are read-only (their arrays' `writeable` flag is
off), so a test that changed one would fail there rather than corrupt the tests after it.
"""

from __future__ import annotations

import dataclasses
from functools import cache

import numpy as np
import pyspiel

from tacocat.analysis.tree import GameTree, enumerate_tree
from tacocat.game.openspiel import GAME_NAME
from tacocat.game.presets import preset_config


@cache
def preset_tree(name: str) -> GameTree:
    """Preset `name`'s enumerated tree, read-only."""
    tree = enumerate_tree(preset_config(name))
    for field in dataclasses.fields(tree):
        value = getattr(tree, field.name)
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    return tree


@cache
def cached_game(name: str) -> pyspiel.Game:
    """OpenSpiel's `cached_tree` of preset `name`'s Python game: the same game, its tree walked
    once and kept, which OpenSpiel's solvers and best responses run on."""
    return pyspiel.load_game(f"cached_tree(game={GAME_NAME}(preset={name}))")
