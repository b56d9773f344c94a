"""JAX ports of the `highcard`, `planner` and `counter` heuristics (tacocat/agents/heuristic.py) as pure policies.

A policy is `policy(observation, legal_action_mask, key, opponent_floor) -> action` for ONE
position (vmap it for a batch), built per ruleset by `make_heuristic`. It reads the observation
vector of the player to act, the mask and `opponent_floor`, all public or the player's own, so
it cannot see hidden information (R7.3) by construction. The Python agents read nothing else:
their hand (`own_hand`), their set-aside cards (`own_set_aside`; in the replace phase it holds
no duel card), the room left to set aside (`replace_cap - sum(set_aside)`, which is
`replace_allowance` whenever they are to act), the phase, the attack card to answer
(`current_attack_card`), the legal actions (the mask) and, for `counter`, the unseen cards
(copies minus own hand, set-aside, discard, attack and answers), the opponent's hand size and
the opponent's failed answers of this round.

That last item is public history the observation vector does not hold: `opponent_floor` is
`tacocat.game.view.opponent_bounds(view)[0]`, the highest card the opponent failed to defend with this round
(0 if none): every card they still hold is at least that (a sacrifice gives up the lowest card,
R5.5). `failed_answer_floor` keeps it up to date from the moves of a game (both players'
floors, reset at each new round); `tests/test_league_heuristics.py` checks it against the
reference's event log.

`highcard` and `planner` use no randomness (the `key` is taken for a uniform signature) and are
checked bit-exact. `counter` draws `samples` opponent hands from the unseen cards (uniform
subsets of the right size, within the floor when enough cards are left, like
`sample_opponent_hands`) to choose among its widest attacks, so its port agrees with the Python
agent bit-exact wherever the choice is not sampled and in distribution where it is (tested).
A `sacrifice_rate` (a random choice) is not ported; only 0 is accepted.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from tacocat.agents.heuristic import CardCounterAgent, PlannerAgent
from tacocat.agents.jax_ports import PORTED, NotPortedError, check_ported
from tacocat.game.actions import MoveKind
from tacocat.game.batch import xla
from tacocat.game.config import RulesConfig
from tacocat.game.observation import ObservationLayout
from tacocat.game.ruleset import Ruleset, compile_rules

Policy = Callable[[jax.Array, jax.Array, jax.Array, jax.Array], jax.Array]

__all__ = [
    "NotPortedError",
    "Policy",
    "attack_sacrifices",
    "failed_answer_floor",
    "make_heuristic",
    "opponent_hand_sampler",
]


def make_heuristic(spec: str, rules: Ruleset | RulesConfig) -> Policy:
    """The JAX port of the ladder agent `spec` ('highcard', 'planner', 'planner:keep_from=6',
    'counter', 'counter:duel_from=0,replace_keeper_from=12', ...)."""
    if isinstance(rules, RulesConfig):
        rules = compile_rules(rules)
    name, agent = check_ported(spec)  # the Python agent: its parameters, defaults included
    if name not in PORTED:
        raise NotPortedError(
            f"{name!r} is not a ladder heuristic: tacocat.agents.jax_forms.make_opponent builds its JAX form"
        )
    if name == "highcard":
        return _build(rules, planner=False, keep_from=0)
    assert isinstance(agent, PlannerAgent)  # planner, or counter (a PlannerAgent too)
    return _build(
        rules, planner=True, keep_from=agent.keep_from, counter=agent if isinstance(agent, CardCounterAgent) else None
    )


def failed_answer_floor(rules: Ruleset | RulesConfig) -> Callable[..., jax.Array]:
    """`update(floor, observation, action, actor, new_round) -> floor` for ONE game: `floor`
    (2,) holds each player's `opponent_bounds` low (the highest card they failed to defend
    with this round); `observation` is the actor's, taken before its `action`; `new_round`
    says the step began a new round or game (the floors restart at 0)."""
    if isinstance(rules, RulesConfig):
        rules = compile_rules(rules)
    codec = rules.codec
    sl = ObservationLayout(rules).slices

    def update(
        floor: jax.Array, observation: jax.Array, action: jax.Array, actor: jax.Array, new_round: jax.Array
    ) -> jax.Array:
        answering = jnp.argmax(observation[sl["phase"]]) == 3
        target = jnp.argmax(observation[sl["current_attack_card"]])
        lowest = jnp.argmax(observation[sl["own_hand"]] > 0)
        card = jnp.where(action == codec.sacrifice, lowest, action - codec.defend_base)
        failed = answering & (card < target)  # R5.5: a sacrifice at or above the target defends
        raised = floor.at[actor].max(jnp.where(failed, card, 0))
        return jnp.where(new_round, jnp.zeros_like(floor), raised).astype(floor.dtype)

    return update


def _build(rules: Ruleset, planner: bool, keep_from: int, counter: CardCounterAgent | None = None) -> Policy:
    """The port; `counter` (the Python agent) supplies `samples`, `duel_from` and
    `replace_keeper_from` when porting the counter."""
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
    sizes_j, lowest_card_j = jnp.asarray(sizes, jnp.int32), jnp.asarray(lowest_card, jnp.int32)
    copies_j = jnp.asarray(rules.copies, jnp.int32)
    max_hand = max(rules.board)
    assert codec.moves[codec.sacrifice].kind is MoveKind.SACRIFICE

    def first(flags: jax.Array) -> jax.Array:
        """Index of the first true flag (0 if none: callers check `any` first)."""
        return jnp.argmax(flags)

    if counter is not None:
        forced_sacrifices = _where_needed(rules, counter.samples)

    def policy(
        observation: jax.Array, legal_action_mask: jax.Array, key: jax.Array, opponent_floor: jax.Array
    ) -> jax.Array:
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
            if counter is not None:  # replacement_with_weak_keeper: then the keeper, if weak and not aside yet
                weak = (dealt_keeper >= counter.replace_keeper_from) & (dealt_keeper < keep_from)
                redraw = weak & ~jnp.any(middle) & (aside[dealt_keeper] == 0) & room
                replace = jnp.where(redraw, codec.replace_base + dealt_keeper, replace)
        else:
            replace = jnp.int32(codec.stop)

        if counter is not None:  # cheapest_duel_card: the lowest spare card at or above duel_from
            spare = (hand - (values == keeper)) > 0
            above = spare & (values >= counter.duel_from)
            duel = codec.duel_base + jnp.where(
                jnp.any(above), first(above), jnp.where(jnp.any(spare), first(spare), keeper)
            )
        else:
            duel = codec.duel_base + highest

        # attack (R5.3)
        if planner:
            keeps = counts_j[:, keeper] < hand[keeper]
            legal_attack = legal_action_mask & is_attack_j
            safe = legal_attack & keeps
            candidates = jnp.where(jnp.any(safe), safe, legal_attack)
            if counter is None:
                attack = jnp.argmax(jnp.where(candidates, attack_score, -1))
            else:  # the widest candidates, by sacrifices forced on sampled hands, then the highest lowest card
                widest = candidates & (sizes_j == jnp.max(jnp.where(candidates, sizes_j, 0)))
                unseen = copies_j - (
                    hand + aside + observation[sl["discard"]] + observation[sl["attack"]] + observation[sl["answers"]]
                ).astype(jnp.int32)
                opponent_size = observation[sl["hand_sizes"]][1].astype(jnp.int32)
                # the widest attacks in id order (the Python agent's tie order; `nonzero`, not
                # `top_k`, which XLA:CPU runs several times slower); never more than the
                # cards in hand, so `max_hand` slots hold them all
                ids = jnp.nonzero(widest, size=max_hand, fill_value=0)[0]
                sampling = (phase == 2) & (widest.sum() > 1)  # the Python agent draws hands only then
                forced = forced_sacrifices(sampling, key, unseen, opponent_size, opponent_floor, ids)
                attack = ids[jnp.argmax(jnp.where(widest[ids], forced * n_values + lowest_card_j[ids], -1))]
        else:
            attack = codec.single_base + highest

        # answer (R5.5)
        target = jnp.argmax(observation[sl["current_attack_card"]])
        can = (values >= target) & (hand > 0)
        if planner:
            keeper_safe = can & ((values != keeper) | (hand > 1))
            answer = jnp.where(
                jnp.any(keeper_safe),
                codec.defend_base + first(keeper_safe),
                jnp.where(keeper >= target, codec.defend_base + keeper, codec.sacrifice),
            )
        else:
            answer = jnp.where(jnp.any(can), codec.defend_base + first(can), codec.sacrifice)

        return jnp.select([phase == 0, phase == 1, phase == 2], [replace, duel, attack], answer).astype(jnp.int32)

    return policy


def _where_needed(rules: Ruleset, samples: int) -> Callable[..., jax.Array]:
    """`forced(needed, key, unseen, size, floor, ids) -> (K,)`: the sacrifices each attack of
    `ids` forces, summed over `samples` sampled opponent hands. Under `vmap` only the rows that
    need it (`needed`: about one position in fourteen, half that in training, where the
    learner's rows ask for nothing) are computed while they fit an eighth of the batch, at least
    16 rows (`xla.packed_rows`; the others may get 0, which no caller reads). Each row depends
    on its own key only, so both ways agree."""
    sample_hands, sacrifices = opponent_hand_sampler(rules, samples), attack_sacrifices(rules)

    def one(key: jax.Array, unseen: jax.Array, size: jax.Array, floor: jax.Array, ids: jax.Array) -> jax.Array:
        return sacrifices(sample_hands(key, unseen, size, floor), ids).sum(axis=0)

    return xla.packed_rows(one, room=lambda size: max(16, size // 8))


def opponent_hand_sampler(rules: Ruleset, samples: int) -> Callable[..., jax.Array]:
    """`sample(key, unseen, size, floor) -> (samples, V)` hands (counts per value) of `size`
    cards drawn without replacement from the `unseen` cards, only cards >= `floor` when at
    least `size` are: `sample_opponent_hands` without the forced-sacrifice belief. Drawn card by
    card, each uniform among the cards left (a uniform `size`-subset of the cards)."""
    values = jnp.arange(rules.n_values)
    most = max(rules.board)

    def sample(key: jax.Array, unseen: jax.Array, size: jax.Array, floor: jax.Array) -> jax.Array:
        within = jnp.where(values >= floor, unseen, 0)
        left = jnp.broadcast_to(jnp.where(within.sum() >= size, within, unseen), (samples, rules.n_values))
        hand = jnp.zeros((samples, rules.n_values), jnp.int32)
        for i, u in enumerate(jax.random.uniform(key, (most, samples, 1))):
            draw = jnp.floor(u * left.sum(axis=1, keepdims=True)).astype(jnp.int32)  # the draw-th card left
            through = jnp.cumsum(left, axis=1)  # cards left up to and including each value
            card = (through > draw) & (through - left <= draw)
            card = card & (i < size)
            hand, left = hand + card, left - card
        return hand

    return sample


def attack_sacrifices(rules: Ruleset) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """`count(hands, actions) -> (H, K)`: for (H, V) hands and K attack action ids, how many
    answers must be sacrifices when the hand answers the attack card by card with
    `keeper_safe_answer` (`_forced_sacrifices`)."""
    codec, n_values = rules.codec, rules.n_values
    longest = max(len(move.cards) for move in codec.moves if move.kind.is_attack)
    cards = np.full((codec.size, longest), -1, np.int32)  # in the order they are answered (R5.5)
    for a, move in enumerate(codec.moves):
        if move.kind.is_attack:
            cards[a, : len(move.cards)] = move.cards
    cards_j = jnp.asarray(cards)

    def count(hands: jax.Array, actions: jax.Array) -> jax.Array:
        # one (H, K) array per value: the searches over values are `xla.first_where` (on
        # XLA:CPU chains of selects, fused into one loop; there an argmax over V is slow)
        targets = cards_j[actions]  # (K, longest)
        hand = [jnp.broadcast_to(hands[:, v, None], (hands.shape[0], actions.shape[0])) for v in range(n_values)]
        forced = jnp.zeros(hand[0].shape, jnp.int32)
        for i in range(longest):
            target = targets[None, :, i]  # (1, K)
            keeper = xla.first_where(lambda v: hand[v] > 0, n_values, jnp.full(hand[0].shape, n_values, jnp.int32))  # noqa: B023 (first_where calls it at once)
            # the smallest card >= target that is not the keeper, else the keeper
            card = xla.first_where(
                lambda v: (v >= target) & (hand[v] > 0) & ((keeper != v) | (hand[v] > 1)),  # noqa: B023 (called at once)
                n_values,
                keeper,
            )
            valid = target >= 0
            forced += (valid & (card == keeper) & (keeper < target)).astype(jnp.int32)
            hand = [h - (valid & (card == v)).astype(jnp.int32) for v, h in enumerate(hand)]
        return forced

    return count
