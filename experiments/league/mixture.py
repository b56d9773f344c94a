"""League opponents without JAX: which specs have a port, and which rows of the batch play
which opponent (config validation uses this module).

Which rows of the batch play which opponent (plain Python, no JAX: config validation uses it).

The league's mixture weights become fixed blocks of rows, so that each opponent's policy runs
on its own rows only (a static slice) instead of every policy on every row: `self` (the current
policy), `snapshot_j` (one block per snapshot slot; each slot plays one frozen snapshot, drawn
anew every iteration) and `opponent_i` (the JAX port of `opponents[i]`).
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.base import Agent
from agents.registry import make_agent, parse_spec

#: the ladder agents that have a JAX port (experiments/league/heuristics.py)
PORTED = ("highcard", "planner", "counter")
_PORTED_PARAMS = {"highcard": set(), "planner": {"keep_from", "sacrifice_rate"},
                  "counter": {"keep_from", "sacrifice_rate", "samples", "duel_from", "replace_keeper_from"}}


class NotPortedError(ValueError):
    """An opponent spec with no JAX port (or with parameters the port does not support)."""


def check_ported(spec: str) -> tuple[str, Agent]:
    """(name, the Python agent it builds) of a spec the league can play as a JAX port;
    NotPortedError else. The agent carries the parameters, defaults included."""
    name, params = parse_spec(spec)
    if name not in PORTED:
        raise NotPortedError(f"agent {name!r} has no JAX port; the league's opponents can be {', '.join(PORTED)}")
    for key in params:
        if key not in _PORTED_PARAMS[name]:
            raise NotPortedError(f"the JAX port of {name!r} takes no parameter {key!r}")
    if float(params.get("sacrifice_rate", 0) or 0) != 0.0:
        raise NotPortedError(f"the JAX port of {name!r} supports sacrifice_rate=0 only (the default)")
    try:  # the Python agent's own checks of the values, each naming the parameter
        agent = make_agent(spec)
    except ValueError as error:
        raise NotPortedError(str(error)) from None
    return name, agent


@dataclass(frozen=True)
class Block:
    kind: str  # "self", "snapshot" or "heuristic"
    index: int  # snapshot slot or heuristic opponent index (0 for self)
    start: int
    stop: int

    @property
    def rows(self) -> int:
        return self.stop - self.start


def split_rows(n_envs: int, selfplay_weight: float, snapshot_weight: float, snapshot_slots: int,
               heuristic_weights: list[float]) -> list[Block]:
    """Rows per block in proportion to the weights (largest remainders); ValueError when a
    block with a positive weight would get no row."""
    parts = [("self", 0, selfplay_weight)]
    parts += [("snapshot", j, snapshot_weight / snapshot_slots) for j in range(snapshot_slots)]
    parts += [("heuristic", i, w) for i, w in enumerate(heuristic_weights)]
    parts = [p for p in parts if p[2] > 0]
    total = sum(w for _, _, w in parts)
    if not parts or total <= 0:
        raise ValueError("the league has no opponents: give league.selfplay_weight, league.snapshot_weight "
                         "or an `opponents` entry a positive weight")
    exact = [n_envs * w / total for _, _, w in parts]
    rows = [int(x) for x in exact]
    for i in sorted(range(len(parts)), key=lambda i: exact[i] - rows[i], reverse=True)[:n_envs - sum(rows)]:
        rows[i] += 1
    blocks, start = [], 0
    for (kind, index, _), n in zip(parts, rows):
        if n == 0:
            raise ValueError(f"n_envs={n_envs} is too small for the league's mixture: the {kind} block "
                             f"{index} gets no game (raise n_envs or merge opponents)")
        blocks.append(Block(kind, index, start, start + n))
        start += n
    return blocks
