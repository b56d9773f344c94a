"""Heuristic agents: a ladder of hand-written strategies, weakest first.

All of them think in *value indices* (0 = lowest card value). The building blocks are plain
functions of a hand (counts per value index), so that the search agent can use them as a fast
rollout policy on sampled states.

Shared vocabulary: the **keeper** is one copy of the lowest card in hand. The lower last card
wins the showdown (R6.1), so a player who still holds their keeper at the end shows their
lowest card; losing it to a forced sacrifice (R5.5) is the main way to lose a round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tacocat.agents.base import Agent, AgentInput
from tacocat.game.ruleset import Ruleset
from tacocat.game.state import Phase
from tacocat.game.view import PlayerView, sample_opponent_hands


# ---------------------------------------------------------------------------------------
# building blocks (pure functions of a hand)
# ---------------------------------------------------------------------------------------
def lowest(hand: list[int] | tuple[int, ...]) -> int:
    return next(v for v, n in enumerate(hand) if n)


def highest(hand: list[int] | tuple[int, ...]) -> int:
    return max(v for v, n in enumerate(hand) if n)


def middle_cards_to_replace(hand: list[int], keep_from: int) -> list[int]:
    """Cards to discard: everything between the keeper and `keep_from` (high cards are kept
    to attack and defend with), the ones nearest the middle of that band first."""
    keeper = lowest(hand)
    cards = [v for v, n in enumerate(hand) for _ in range(n)]
    cards.remove(keeper)
    middle = [v for v in cards if keeper < v < keep_from]
    centre = (keeper + keep_from) / 2
    return sorted(middle, key=lambda v: (abs(v - centre), -v))


def next_replacement(
    rules: Ruleset, hand: Sequence[int], aside: Sequence[int], cap: int, plan: Callable[[list[int]], list[int]]
) -> int:
    """The next replace action (R4.3, one card per action): set aside the first card of
    `plan(hand as dealt)` that is not set aside yet while the cap allows, else stop."""
    todo = plan([h + a for h, a in zip(hand, aside, strict=True)])
    for v, n in enumerate(aside):  # cards already set aside
        for _ in range(n):
            if v in todo:
                todo.remove(v)
    room = cap - sum(aside)
    return todo[0] if todo and room > 0 else rules.codec.stop


def cheapest_duel_card(hand: list[int], duel_from: int = 0) -> int:
    """The lowest card other than (one copy of) the keeper, preferring cards at value index
    >= `duel_from`: high cards are worth more later (attacks and defences) than the attacker's
    seat is worth now, and the low cards below `duel_from` are kept as reserves (the next
    keeper after a forced sacrifice). `duel_from=0` takes the lowest such card outright.
    Measured in docs/BENCHMARKS.md."""
    keeper = lowest(hand)
    spare = [v for v, n in enumerate(hand) for _ in range(n - (v == keeper))]
    if not spare:  # a one-card hand never duels (R5.2); kept total for direct callers
        return keeper
    above = [v for v in spare if v >= duel_from]
    return (above or spare)[0]


def replacement_with_weak_keeper(hand: list[int], keep_from: int, keeper_from: int) -> list[int]:
    """The planner's middle cards, then the keeper itself when it is weak (value index in
    [`keeper_from`, `keep_from`)): a redraw often brings a lower card, and a high keeper
    rarely wins the showdown (R6.1)."""
    plan = middle_cards_to_replace(hand, keep_from)
    keeper = lowest(hand)
    if keeper_from <= keeper < keep_from:
        plan.append(keeper)
    return plan


def keeper_safe_answer(rules: Ruleset, hand: list[int], target: int) -> int:
    """Answer `target` with the smallest card >= target that is not the keeper; sacrifice
    (the lowest card, R5.5) only when no other card can answer."""
    codec = rules.codec
    keeper = lowest(hand)
    for v in range(target, rules.n_values):
        if hand[v] and (v != keeper or hand[v] > 1):
            return codec.defend_base + v
    if keeper >= target:  # only the keeper itself defends: still better than nothing
        return codec.defend_base + keeper
    return codec.sacrifice


def smallest_defence(rules: Ruleset, hand: list[int], target: int) -> int:
    """Answer with the smallest card that defends, whatever it is; else sacrifice."""
    for v in range(target, rules.n_values):
        if hand[v]:
            return rules.codec.defend_base + v
    return rules.codec.sacrifice


def attack_cards(rules: Ruleset, action: int) -> tuple[int, ...]:
    return rules.codec.moves[action].cards


def keeps_keeper(hand: list[int], cards: tuple[int, ...]) -> bool:
    keeper = lowest(hand)
    return cards.count(keeper) < hand[keeper]


def widest_attack(rules: Ruleset, hand: list[int], legal: tuple[int, ...] | list[int]) -> int:
    """The attack that unloads the most cards without the keeper, the highest one on ties."""
    attacks = [a for a in legal if keeps_keeper(hand, attack_cards(rules, a))] or list(legal)
    return max(attacks, key=lambda a: (len(attack_cards(rules, a)), min(attack_cards(rules, a))))


# ---------------------------------------------------------------------------------------
# the agents
# ---------------------------------------------------------------------------------------
class HeuristicAgent(Agent):
    """Dispatches on the phase; subclasses fill in the four decisions."""

    def act(self, inp: AgentInput) -> int:
        view = inp.view
        rules = view.rules
        hand = list(view.hand)
        if view.phase is Phase.REPLACE:
            return next_replacement(
                rules, hand, view.own_set_aside, view.replace_cap, lambda dealt: self.replace_plan(view, dealt)
            )
        if view.phase is Phase.DUEL:
            return rules.codec.duel_base + self.duel_card(view, hand)
        if view.phase is Phase.ATTACK:
            return self.attack(view, hand)
        return self.answer(view, hand)

    def replace_plan(self, view: PlayerView, hand: list[int]) -> list[int]:
        return []

    def duel_card(self, view: PlayerView, hand: list[int]) -> int:
        return highest(hand)

    def attack(self, view: PlayerView, hand: list[int]) -> int:
        return view.rules.codec.single_base + highest(hand)

    def answer(self, view: PlayerView, hand: list[int]) -> int:
        return smallest_defence(view.rules, hand, view.attack[len(view.answers)])


class HighCardAgent(HeuristicAgent):
    """Weak rung: never replaces, duels and attacks with its highest single card, defends with the
    smallest card that holds."""

    name = "highcard"


class PlannerAgent(HeuristicAgent):
    """Hand planner: keeps a low keeper and high cards, replaces the middle, unloads wide attacks,
    never wastes the keeper.

    `sacrifice_rate` (default 0): the probability of sacrificing by choice when a card could
    defend (R5.5 allows it whenever the lowest card is below the attack card). Such an opponent
    breaks the search agent's failed-answer belief; used to measure that belief.
    """

    name = "planner"

    def __init__(self, keep_from: int = 7, sacrifice_rate: float = 0.0) -> None:
        super().__init__()
        if keep_from < 0:
            raise ValueError(f"keep_from is a card value index and must be >= 0, got {keep_from}")
        if not 0.0 <= sacrifice_rate <= 1.0:
            raise ValueError(f"sacrifice_rate must be in [0, 1], got {sacrifice_rate}")
        self.keep_from = keep_from
        self.sacrifice_rate = sacrifice_rate

    def replace_plan(self, view: PlayerView, hand: list[int]) -> list[int]:
        return middle_cards_to_replace(hand, self.keep_from)

    def attack(self, view: PlayerView, hand: list[int]) -> int:
        return widest_attack(view.rules, hand, view.legal_actions)

    def answer(self, view: PlayerView, hand: list[int]) -> int:
        action = keeper_safe_answer(view.rules, hand, view.attack[len(view.answers)])
        sacrifice = view.rules.codec.sacrifice
        if (
            self.sacrifice_rate > 0.0
            and action != sacrifice
            and sacrifice in view.legal_actions
            and self.rng.random() < self.sacrifice_rate
        ):
            return sacrifice
        return action


#: the counter before its reserve-keeping duel and weak-keeper redraw, as a spec (for comparisons)
PREVIOUS_COUNTER = "counter:duel_from=0,replace_keeper_from=12"


@dataclass(frozen=True)
class CounterRules:
    """The counter's decisions that read nothing but the player's own cards: its hand plan for
    the replace phase (R4.3, `replacement_with_weak_keeper`) and its duel card (R5.1,
    `cheapest_duel_card`), with their parameters. `CardCounterAgent.DEFAULTS` holds the
    counter's defaults once, for the agent and for the search agent's rollout policy."""

    keep_from: int = 7
    duel_from: int = 3
    replace_keeper_from: int = 4

    def __post_init__(self) -> None:
        for name in ("keep_from", "duel_from", "replace_keeper_from"):
            value = getattr(self, name)
            if value < 0:
                raise ValueError(f"{name} is a card value index and must be >= 0, got {value}")

    def replace_plan(self, hand: list[int]) -> list[int]:
        """The cards to replace from the hand as dealt, in order."""
        return replacement_with_weak_keeper(hand, self.keep_from, self.replace_keeper_from)

    def duel_card(self, hand: list[int]) -> int:
        """The value index to duel with."""
        return cheapest_duel_card(hand, self.duel_from)


class CardCounterAgent(PlannerAgent):
    """Card counter: duels cheap but keeps low reserves, redraws a weak keeper, and weighs wide
    attacks by how often the opponent's possible hands (sampled from unseen cards) must sacrifice.

    `duel_from` (default 3): duel with the lowest spare card at or above this value index
    (`cheapest_duel_card`); `replace_keeper_from` (default 4): also replace the keeper when its
    value index is at least this (`replacement_with_weak_keeper`). `PREVIOUS_COUNTER` (both
    rules off) is the counter of releases before them; measured in docs/BENCHMARKS.md.
    """

    name = "counter"

    #: the defaults of the rules from the player's own cards (the search agent's rollout plays them)
    DEFAULTS = CounterRules()

    def __init__(
        self,
        keep_from: int = DEFAULTS.keep_from,
        samples: int = 16,
        sacrifice_rate: float = 0.0,
        duel_from: int = DEFAULTS.duel_from,
        replace_keeper_from: int = DEFAULTS.replace_keeper_from,
    ) -> None:
        super().__init__(keep_from, sacrifice_rate)
        if samples < 1:
            raise ValueError(f"samples must be >= 1, got {samples}")
        self.samples = samples
        self.own_cards = CounterRules(keep_from, duel_from, replace_keeper_from)

    @property
    def duel_from(self) -> int:
        return self.own_cards.duel_from

    @property
    def replace_keeper_from(self) -> int:
        return self.own_cards.replace_keeper_from

    def replace_plan(self, view: PlayerView, hand: list[int]) -> list[int]:
        return self.own_cards.replace_plan(hand)

    def duel_card(self, view: PlayerView, hand: list[int]) -> int:
        return self.own_cards.duel_card(hand)

    def attack(self, view: PlayerView, hand: list[int]) -> int:
        """Among the widest keeper-safe attacks, the one that forces the most sacrifices."""
        rules = view.rules
        legal = [a for a in view.legal_actions if keeps_keeper(hand, attack_cards(rules, a))] or list(
            view.legal_actions
        )
        width = max(len(attack_cards(rules, a)) for a in legal)
        widest = [a for a in legal if len(attack_cards(rules, a)) == width]
        if len(widest) == 1:
            return widest[0]
        hands = self._opponent_hands(view)

        def forced(action: int) -> tuple[float, int]:
            cards = attack_cards(rules, action)
            return sum(_forced_sacrifices(rules, opp, cards) for opp in hands), min(cards)

        return max(widest, key=forced)

    def _opponent_hands(self, view: PlayerView) -> list[list[int]]:
        """Opponent hands (counts per value) drawn from the unseen cards, within what their
        answers revealed (no belief about why they failed)."""
        hands = []
        for cards in sample_opponent_hands(view, self.rng, self.samples, assume_forced_sacrifice=False):
            opp = [0] * view.rules.n_values
            for v in cards:
                opp[v] += 1
            hands.append(opp)
        return hands


def _forced_sacrifices(rules: Ruleset, hand: list[int], attack: tuple[int, ...]) -> int:
    """How many answers must be sacrifices when `hand` answers `attack` with
    `keeper_safe_answer` (each one costs the defender their lowest card)."""
    hand = list(hand)
    sacrifices = 0
    for target in attack:
        action = keeper_safe_answer(rules, hand, target)
        if action == rules.codec.sacrifice:
            card = lowest(hand)
            sacrifices += 1
        else:
            card = action - rules.codec.defend_base
        hand[card] -= 1
    return sacrifices
