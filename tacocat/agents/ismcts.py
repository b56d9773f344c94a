"""An agent through the OpenSpiel adapter (`tacocat.game.openspiel`).

* `ISMCTSAgent` ("ismcts" in the registry): OpenSpiel's information-set MCTS
  (`open_spiel.python.algorithms.ismcts`), an outside search agent. It sees only its
  `PlayerView` (own cards + public information, R7): its root state is a determinization built
  from that view (`tacocat.game.view.sample_state`), and OpenSpiel's resampler is given a
  callback that builds every further determinization from the player's view of the state it is
  handed, never from the true hidden cards. Tree nodes are keyed by the observation string
  (`use_observation_string`), which is a function of the player's view, so every
  determinization of one decision has the root's key.
  Leaves are valued by OpenSpiel's random rollouts to the end of the game
  (``evaluator=random``) or, cheaper, to the end of the round, valued +1/0/-1 by the round's
  result (``evaluator=round``, the unit of value of the `search` agent).
"""

from __future__ import annotations

import numpy as np
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from tacocat.agents.base import Agent, AgentInput
from tacocat.game.openspiel import TacocatState, load_game
from tacocat.game.view import PlayerView, player_view, sample_state


class RoundRolloutEvaluator(mcts.RandomRolloutEvaluator):
    """Random rollouts to the end of the current round, valued by its result for each seat
    (+1 won, -1 lost, 0 void or a game that ended otherwise)."""

    def evaluate(self, state: TacocatState) -> np.ndarray:
        total = np.zeros(2)
        for _ in range(self.n_rollouts):
            working = state.clone()
            start = working.engine.rounds_played
            while not working.is_terminal() and not (
                working.engine.rounds_played > start and not working.is_chance_node()
            ):
                if working.is_chance_node():
                    actions, probs = zip(*working.chance_outcomes(), strict=True)
                    working.apply_action(int(self._random_state.choice(actions, p=probs)))
                else:
                    working.apply_action(int(self._random_state.choice(working.legal_actions())))
            winner = working.engine.last_round_winner
            if winner in (0, 1):
                total += (1.0, -1.0) if winner == 0 else (-1.0, 1.0)
        return total / self.n_rollouts


class ISMCTSAgent(Agent):
    """OpenSpiel's information-set MCTS (outside agent): searches determinizations it builds from its own view only."""

    name = "ismcts"

    def __init__(self, simulations: int = 100, uct_c: float = 2.0, rollouts: int = 1, evaluator: str = "round") -> None:
        super().__init__()
        if simulations < 1 or rollouts < 1:
            raise ValueError(f"simulations and rollouts must be >= 1, got {simulations}, {rollouts}")
        if evaluator not in ("round", "random"):
            raise ValueError(f"evaluator must be 'round' or 'random', got {evaluator!r}")
        self.simulations = simulations
        self.uct_c = uct_c
        self.rollouts = rollouts
        self.evaluator = evaluator
        self._games: dict[str, pyspiel.Game] = {}

    def _game(self, view: PlayerView) -> pyspiel.Game:
        key = view.rules.hash + str(view.rules.config.round_reward)
        if key not in self._games:
            self._games[key] = load_game(view.rules.config)
        return self._games[key]

    def determinize(self, view: PlayerView) -> TacocatState:
        """An OpenSpiel state that agrees with everything in `view` (and nothing more)."""
        return TacocatState(self._game(view), sample_state(view, self.rng))

    def act(self, inp: AgentInput) -> int:
        view = inp.view
        if len(view.legal_actions) == 1:
            return view.legal_actions[0]
        seed = int(self.rng.integers(2**31 - 1))
        evaluator_class = RoundRolloutEvaluator if self.evaluator == "round" else mcts.RandomRolloutEvaluator
        bot = ismcts.ISMCTSBot(
            game=self._game(view),
            evaluator=evaluator_class(self.rollouts, np.random.RandomState(seed)),
            uct_c=self.uct_c,
            max_simulations=self.simulations,
            random_state=np.random.RandomState(seed + 1),
            final_policy_type=ismcts.ISMCTSFinalPolicyType.MAX_VISIT_COUNT,
            use_observation_string=True,
        )
        bot.set_resampler(lambda state, player: self.determinize(player_view(state.engine, player)))
        return int(bot.step(self.determinize(view)))
