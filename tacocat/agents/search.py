"""The top rung: determinized Monte Carlo search (PIMC) over the rules engine.

At each decision with more than one legal action the agent

1. samples `worlds` full game states that agree with its view (`tacocat.game.view.sample_state`:
   the opponent's hidden cards are drawn from the unseen cards, respecting what their failed
   answers revealed, see that module), never reading the true hidden state;
2. in every world, plays each legal action and finishes the *round* with a fast heuristic
   rollout policy for both players (`rollout_action`: the counter's replace and duel rules,
   `CardCounterAgent.DEFAULTS`, with the planner's attack and answer rules, applied to each
   player's own cards);
3. picks the action with the best mean round result (+1 won, 0 void, -1 lost).

The round is the unit of value: a decisive round moves the Tacocat one space for its winner,
so maximising round wins is what wins the race to the goal. `simulations` is the rollout
budget per decision (worlds = simulations // legal actions, at least 1). Replace decisions
follow the counter heuristic unless `search_replace=True`.

Failed-answer belief (`belief`, see `tacocat.game.view`): a failed answer is read as "the
defender had no card that defends", which bounds their remaining cards from above. Agents that
sacrifice by choice break that belief. `belief="on"` samples every world under it, `"off"`
(the default) never uses it (only the exact lower bound), `"soft"` samples each world under it
with probability `soft_weight` and without it otherwise (a mixture of the two beliefs). The
default is `off` because it won more: +0.032 [+0.019, +0.044] over `on` across 1,000 deal pairs
against `counter:sacrifice_rate=0.2`, an opponent that sacrifices by choice, and as much as
`soft` (docs/BENCHMARKS.md).

Seeded worlds (`seeded=True`): each decision draws its worlds (and the fallback counter's and
the soft belief's draws) from a generator seeded by the information state (`view_digest`)
instead of the game's generator, so the agent plays one fixed pure strategy: the same move
whenever it sees the same view, in any game, seat or process (at each view, one draw of the
default's move there, kept). Its moves are known to whoever knows its input, so variance
reduction can play its part in rollouts exactly (`tacocat.evaluation.variance`;
docs/EVALUATION.md). It remembers the moves it has chosen (a pure function of the view), up to
`MEMORY` views.
"""

from __future__ import annotations

import time

import numpy as np

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.heuristic import (
    CardCounterAgent,
    CounterRules,
    keeper_safe_answer,
    next_replacement,
    widest_attack,
)
from tacocat.game.engine import apply_action, legal_actions
from tacocat.game.state import GameState, Phase
from tacocat.game.view import sample_state, view_digest


def rollout_action(state: GameState, counter: CounterRules = CardCounterAgent.DEFAULTS) -> int:
    """The heuristic move of the player to act, from that player's own cards only: the counter's
    replace plan and duel card (`counter`, the counter's defaults unless given) and the planner's
    attack and answer (the counter's, without sampling the opponent's hand)."""
    rules = state.rules
    player = state.to_act
    hand = state.hands[player]
    phase = state.phase
    if phase is Phase.REPLACE:
        return next_replacement(rules, hand, state.set_aside[player], state.replace_cap[player], counter.replace_plan)
    if phase is Phase.DUEL:
        return rules.codec.duel_base + counter.duel_card(hand)
    if phase is Phase.ATTACK:
        return widest_attack(rules, hand, legal_actions(state))
    return keeper_safe_answer(rules, hand, state.attack[len(state.answers)])


def play_out_round(state: GameState, player: int, round_index: int) -> float:
    """Finish round number `round_index` (0-based) with `rollout_action`; +1/0/-1 for `player`."""
    while state.rounds_played == round_index and not state.is_over:
        apply_action(state, rollout_action(state))
    winner = state.last_round_winner
    return 0.0 if winner is None else (1.0 if winner == player else -1.0)


class SearchAgent(Agent):
    """Determinized Monte Carlo search (PIMC): samples hidden cards consistent with the public
    history and rolls each move out to the end of the round."""

    name = "search"

    BELIEFS = ("on", "off", "soft")
    #: views whose move a seeded agent remembers before it forgets them all
    MEMORY = 65_536

    def __init__(
        self,
        simulations: int = 96,
        search_replace: bool = False,
        belief: str = "off",
        soft_weight: float = 0.5,
        seeded: bool = False,
    ) -> None:
        super().__init__()
        if simulations < 1:
            raise ValueError(f"simulations must be >= 1, got {simulations}")
        if belief not in self.BELIEFS:
            raise ValueError(f"belief must be one of {', '.join(self.BELIEFS)}, got {belief!r}")
        if not 0.0 <= soft_weight <= 1.0:
            raise ValueError(f"soft_weight must be in [0, 1], got {soft_weight}")
        self.simulations = simulations
        self.search_replace = search_replace
        self.belief = belief
        self.soft_weight = soft_weight
        self.seeded = seeded
        self._moves: dict[int, int] = {}
        self._fallback = CardCounterAgent()
        self.decisions = 0
        self.search_seconds = 0.0

    def reset(self, player: int, rng: np.random.Generator) -> None:
        super().reset(player, rng)
        self._fallback.reset(player, rng)

    @property
    def decisions_per_second(self) -> float:
        """Searched decisions per second of search time so far."""
        return self.decisions / self.search_seconds if self.search_seconds else float("nan")

    def _use_belief(self, rng: np.random.Generator) -> bool:
        """Whether the next sampled world assumes failed answers were forced."""
        if self.belief == "soft":
            return bool(rng.random() < self.soft_weight)
        return self.belief == "on"

    def act(self, inp: AgentInput) -> int:
        view = inp.view
        if len(view.legal_actions) == 1:
            return view.legal_actions[0]
        if not self.seeded:
            return self._choose(inp, self.rng)
        key = view_digest(view)
        if key not in self._moves:
            if len(self._moves) >= self.MEMORY:
                self._moves.clear()
            self._moves[key] = self._choose(inp, np.random.default_rng(key))
        return self._moves[key]

    def _choose(self, inp: AgentInput, rng: np.random.Generator) -> int:
        """The move at a decision with more than one legal action, every draw from `rng`."""
        view = inp.view
        legal = view.legal_actions
        if view.phase is Phase.REPLACE and not self.search_replace:
            if rng is not self.rng:
                self._fallback.reset(self.player, rng)
            return self._fallback.act(inp)
        started = time.perf_counter()
        totals = np.zeros(len(legal))
        worlds = max(1, self.simulations // len(legal))
        for _ in range(worlds):
            world = sample_state(view, rng, self._use_belief(rng))
            for i, action in enumerate(legal):
                trial = world.clone(history=False, rng=rng)
                apply_action(trial, action)
                totals[i] += play_out_round(trial, view.player, view.rounds_played)
        self.decisions += 1
        self.search_seconds += time.perf_counter() - started
        return legal[int(np.argmax(totals))]
