"""The league's snapshot pool: frozen copies of the learner's parameters, as JAX arrays stacked on
a leading axis, and the learner's games and wins against each (Python bookkeeping). Each
iteration draws the snapshot every slot plays, uniform or PFSP; a checkpoint holds the arrays
and `bookkeeping()` (`tacocat.train.league.checkpoint.LeagueState`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from tacocat.agents.jax_ports import Block
from tacocat.train.league.network import Params


class SnapshotPool:
    """Up to `size` frozen copies of the learner's params, stacked on a leading axis (slot 0
    holds the initial policy from the start), with the learner's results against each."""

    def __init__(self, params: Params, size: int) -> None:
        self.arrays: Params = jax.tree.map(lambda x: jnp.stack([x] * size), params)
        self.size = size
        self.filled = 1
        self.next_slot = 1 % size
        self.games = [0] * size
        self.wins = [0] * size

    def add(self, params: Params) -> None:
        slot = self.next_slot
        self.arrays = jax.tree.map(lambda pool, x: pool.at[slot].set(x), self.arrays, params)
        self.games[slot] = self.wins[slot] = 0
        self.filled = min(self.filled + 1, self.size)
        self.next_slot = (slot + 1) % self.size

    def draw(self, rng: np.random.Generator, slots: int, sampling: str, power: float) -> np.ndarray:
        """The snapshot each slot plays: uniform, or PFSP ((1 - learner's win rate) ** power,
        the win rate with one prior win and one prior loss)."""
        if sampling == "uniform":
            weights = np.ones(self.filled)
        else:
            rate = (np.array(self.wins[: self.filled]) + 1) / (np.array(self.games[: self.filled]) + 2)
            weights = (1 - rate) ** power + 1e-6
        return rng.choice(self.filled, size=slots, p=weights / weights.sum()).astype(np.int32)

    def record(self, blocks: list[Block], snapshot_ids: np.ndarray, games: np.ndarray, wins: np.ndarray) -> None:
        for block in blocks:
            if block.kind == "snapshot":
                slot = int(snapshot_ids[block.index])
                self.games[slot] += int(games[block.start : block.stop].sum())
                self.wins[slot] += int(wins[block.start : block.stop].sum())

    def bookkeeping(self) -> dict[str, Any]:
        return {"filled": self.filled, "next_slot": self.next_slot, "games": self.games, "wins": self.wins}

    def restore(self, arrays: Params, book: dict[str, Any]) -> None:
        self.arrays = arrays
        self.filled, self.next_slot = book["filled"], book["next_slot"]
        self.games, self.wins = list(book["games"]), list(book["wins"])
