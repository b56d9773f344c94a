"""League opponents without JAX: which specs have a JAX form, and which rows of the batch play
which opponent (config validation uses this module).

An opponent of the league runs inside the jitted iteration, so it needs a JAX form: the ports
of the ladder heuristics (tacocat/agents/heuristic_jax.py), `random` (uniform over the legal
actions) and every agent that plays a `tacocat-mlp-v1` policy file (`league:path=`,
`rllib:path=`, `champion`: the file's MLP, tacocat/agents/jax_forms.py). The same list is what
`tacocat exploit` can train a best response to.

The league's mixture weights become fixed blocks of rows, so that each opponent's policy runs
on its own rows only (a static slice) instead of every policy on every row: `self` (the current
policy), `snapshot_j` (one block per snapshot slot; each slot plays one frozen snapshot, drawn
anew every iteration) and `opponent_i` (the JAX form of `opponents[i]`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tacocat.agents.base import Agent
from tacocat.agents.registry import make_agent, parse_spec

if TYPE_CHECKING:
    from tacocat.agents.mlp_agent import MLPPolicyAgent
    from tacocat.game.config import RulesConfig

#: the ladder agents that have a JAX port (tacocat/agents/heuristic_jax.py)
PORTED = ("highcard", "planner", "counter")
_PORTED_PARAMS = {
    "highcard": set(),
    "planner": {"keep_from", "sacrifice_rate"},
    "counter": {"keep_from", "sacrifice_rate", "samples", "duel_from", "replace_keeper_from"},
}
#: the agents that play a `tacocat-mlp-v1` policy file (tacocat/agents/mlp_agent.py): their JAX form is
#: the file's network (tacocat/agents/jax_forms.py)
POLICY_FILE_AGENTS = ("league", "rllib", "champion")
#: every agent with a JAX form: what the league can play and `tacocat exploit` can exploit
JAX_AGENTS = (*PORTED, "random", *POLICY_FILE_AGENTS, "mix")
_JAX_FORMS = "highcard, planner, counter, random, league:path=..., rllib:path=..., champion and a mix of these"


class NotPortedError(ValueError):
    """An opponent spec with no JAX form (or with parameters its form does not support)."""


def check_ported(spec: str, rules: RulesConfig | None = None) -> tuple[str, Agent]:
    """(name, the Python agent it builds) of a spec the league can play in JAX;
    NotPortedError else. The agent carries the parameters, defaults included. Given `rules`,
    a policy file must have been trained for them (`check_policy_rules`)."""
    name, params = parse_spec(spec)
    if name == "mix":  # its JAX form is its agents' (tacocat/agents/mix.py)
        try:
            mix = make_agent(spec)
        except ValueError as error:
            raise NotPortedError(str(error)) from None
        for component in mix.component_specs:  # type: ignore[attr-defined]  # MixAgent
            check_ported(component, rules)
        return name, mix
    if name not in JAX_AGENTS:
        raise NotPortedError(
            f"agent {name!r} has no JAX port; the league's opponents (and what tacocat exploit "
            f"can exploit) are {_JAX_FORMS}"
        )
    for key in params if name in PORTED else ():
        if key not in _PORTED_PARAMS[name]:
            raise NotPortedError(f"the JAX port of {name!r} takes no parameter {key!r}")
    if float(params.get("sacrifice_rate", 0) or 0) != 0.0:
        raise NotPortedError(f"the JAX port of {name!r} supports sacrifice_rate=0 only (the default)")
    try:  # the Python agent's own checks of the values, each naming the parameter
        agent = make_agent(spec)
    except ValueError as error:
        raise NotPortedError(str(error)) from None
    if rules is not None and name in POLICY_FILE_AGENTS:
        check_policy_rules(agent, rules)  # type: ignore[arg-type]  # MLPPolicyAgent
    return name, agent


def ruleset_label(ruleset_hash: str) -> str:
    """A ruleset hash with the preset it is, when it is one (`tacocat.game.presets`):
    "3f2a... (preset skirmish)", "... (the default rules)"."""
    from tacocat.game.presets import PRESETS, preset_config

    for name in PRESETS:
        if preset_config(name).ruleset_hash() == ruleset_hash:
            return f"{ruleset_hash} ({'the default rules' if name == 'default' else f'preset {name}'})"
    return ruleset_hash


def check_policy_rules(agent: MLPPolicyAgent, rules: RulesConfig) -> None:
    """NotPortedError, one line naming both rulesets, unless the policy file was trained for
    `rules` and reads their observation."""
    from tacocat.game.observation import ObservationLayout
    from tacocat.game.ruleset import compile_rules

    meta, ruleset = agent.meta, rules.ruleset_hash()
    if meta["ruleset_hash"] != ruleset:
        raise NotPortedError(
            f"{agent.path} was trained for ruleset {ruleset_label(meta['ruleset_hash'])}; these "
            f"rules are ruleset {ruleset_label(ruleset)}"
        )
    size = ObservationLayout(compile_rules(rules)).size
    if meta["observation_size"] != size:
        raise NotPortedError(
            f"{agent.path} takes observations of size {meta['observation_size']}; ruleset "
            f"{ruleset_label(ruleset)} gives {size}"
        )


@dataclass(frozen=True)
class Block:
    kind: str  # "self", "snapshot" or "heuristic" (a fixed opponent: the JAX form of `opponents[index]`)
    index: int  # snapshot slot or fixed opponent index (0 for self)
    start: int
    stop: int

    @property
    def rows(self) -> int:
        return self.stop - self.start


def split_rows(
    n_envs: int, selfplay_weight: float, snapshot_weight: float, snapshot_slots: int, heuristic_weights: list[float]
) -> list[Block]:
    """Rows per block in proportion to the weights (largest remainders); ValueError when a
    block with a positive weight would get no row."""
    parts = [("self", 0, selfplay_weight)]
    parts += [("snapshot", j, snapshot_weight / snapshot_slots) for j in range(snapshot_slots)]
    parts += [("heuristic", i, w) for i, w in enumerate(heuristic_weights)]
    parts = [p for p in parts if p[2] > 0]
    total = sum(w for _, _, w in parts)
    if not parts or total <= 0:
        raise ValueError(
            "the league has no opponents: give league.selfplay_weight, league.snapshot_weight "
            "or an `opponents` entry a positive weight"
        )
    exact = [n_envs * w / total for _, _, w in parts]
    rows = [int(x) for x in exact]
    for i in sorted(range(len(parts)), key=lambda i: exact[i] - rows[i], reverse=True)[: n_envs - sum(rows)]:
        rows[i] += 1
    blocks, start = [], 0
    for (kind, index, _), n in zip(parts, rows, strict=True):
        if n == 0:
            raise ValueError(
                f"n_envs={n_envs} is too small for the league's mixture: the {kind} block "
                f"{index} gets no game (raise n_envs or merge opponents)"
            )
        blocks.append(Block(kind, index, start, start + n))
        start += n
    return blocks
