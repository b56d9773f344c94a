"""JAX ports of the `highcard` and `planner` heuristics (agents/heuristic.py) as pure policies.

A policy is `policy(observation, legal_action_mask, key) -> action` for ONE position (vmap it
for a batch), built per ruleset by `make_heuristic`. It reads the observation vector of the
player to act and the mask only, so it cannot see hidden information (R7.3) by construction.
The Python agents read nothing the observation lacks: their hand (`own_hand`), their set-aside
cards (`own_set_aside`; in the replace phase it holds no duel card), the room left to set aside
(`replace_cap - sum(set_aside)`, which is `replace_allowance` whenever they are to act), the
phase, the attack card to answer (`current_attack_card`) and the legal actions (the mask).

Neither port uses randomness (the `key` is taken for a uniform signature): the ports are checked
against the Python agents for the same action, bit-exact, in tests/test_league_heuristics.py.
`planner`'s optional `sacrifice_rate` (a random choice) is not ported; only 0 is accepted.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from experiments.league.mixture import NotPortedError, check_ported
from tacocat_env.actions import MoveKind
from tacocat_env.config import RulesConfig
from tacocat_env.observation import ObservationLayout
from tacocat_env.ruleset import Ruleset, compile_rules

Policy = Callable[[jax.Array, jax.Array, jax.Array], jax.Array]

__all__ = ["NotPortedError", "Policy", "make_heuristic"]


def make_heuristic(spec: str, rules: Ruleset | RulesConfig) -> Policy:
    """The JAX port of the ladder agent `spec` ('highcard', 'planner', 'planner:keep_from=6')."""
    if isinstance(rules, RulesConfig):
        rules = compile_rules(rules)
    name, params = check_ported(spec)
    keep_from = int(params.get("keep_from", 7))
    return _build(rules, planner=name == "planner", keep_from=keep_from)


def _build(rules: Ruleset, planner: bool, keep_from: int) -> Policy:
    codec = rules.codec
    n_values, n_actions = rules.n_values, codec.size
    sl = ObservationLayout(rules).slices
    values = jnp.arange(n_values)
    # per action: how many cards of each value it plays, and whether it is an attack
    counts = np.zeros((n_actions, n_values), dtype=np.int32)
    is_attack = np.zeros(n_actions, dtype=bool)
    for a, move in enumerate(codec.moves):
        if move.kind.is_attack:
            is_attack[a] = True
            for v in move.cards:
                counts[a, v] += 1
    sizes = counts.sum(axis=1)
    lowest_card = np.where(is_attack, np.argmax(counts > 0, axis=1), 0)
    # widest_attack's order: most cards, then the highest lowest card (ties: lowest id, like max())
    attack_score = jnp.asarray(sizes * (n_values + 1) + lowest_card, dtype=jnp.int32)
    counts_j, is_attack_j = jnp.asarray(counts), jnp.asarray(is_attack)
    assert codec.moves[codec.sacrifice].kind is MoveKind.SACRIFICE

    def first(flags: jax.Array) -> jax.Array:
        """Index of the first true flag (0 if none: callers check `any` first)."""
        return jnp.argmax(flags)

    def policy(observation: jax.Array, legal_action_mask: jax.Array, key: jax.Array) -> jax.Array:
        del key  # deterministic heuristics
        hand = observation[sl["own_hand"]].astype(jnp.int32)
        aside = observation[sl["own_set_aside"]].astype(jnp.int32)
        phase = jnp.argmax(observation[sl["phase"]])
        highest = n_values - 1 - first(hand[::-1] > 0)
        keeper = first(hand > 0)

        # replace (R4.3): next_replacement with middle_cards_to_replace as the plan
        if planner:
            dealt = hand + aside
            dealt_keeper = first(dealt > 0)
            centre2 = dealt_keeper + keep_from  # twice the centre, to stay in integers
            middle = (values > dealt_keeper) & (values < keep_from) & (hand > 0)
            # sort key (|v - centre|, -v): minimise 2|2v - centre2| * n + (n - 1 - v)
            order = jnp.abs(2 * values - centre2) * n_values + (n_values - 1 - values)
            best = jnp.argmin(jnp.where(middle, order, jnp.iinfo(jnp.int32).max))
            room = observation[sl["replace_allowance"]][0] > 0
            replace = jnp.where(jnp.any(middle) & room, codec.replace_base + best, codec.stop)
        else:
            replace = jnp.int32(codec.stop)

        duel = codec.duel_base + highest

        # attack (R5.3)
        if planner:
            keeps = counts_j[:, keeper] < hand[keeper]
            legal_attack = legal_action_mask & is_attack_j
            safe = legal_attack & keeps
            candidates = jnp.where(jnp.any(safe), safe, legal_attack)
            attack = jnp.argmax(jnp.where(candidates, attack_score, -1))
        else:
            attack = codec.single_base + highest

        # answer (R5.5)
        target = jnp.argmax(observation[sl["current_attack_card"]])
        can = (values >= target) & (hand > 0)
        if planner:
            keeper_safe = can & ((values != keeper) | (hand > 1))
            answer = jnp.where(
                jnp.any(keeper_safe), codec.defend_base + first(keeper_safe),
                jnp.where(keeper >= target, codec.defend_base + keeper, codec.sacrifice))
        else:
            answer = jnp.where(jnp.any(can), codec.defend_base + first(can), codec.sacrifice)

        return jnp.select([phase == 0, phase == 1, phase == 2], [replace, duel, attack], answer).astype(jnp.int32)

    return policy
