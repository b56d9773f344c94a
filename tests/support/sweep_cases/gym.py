"""Bad-input sweep: the Gymnasium view (tacocat.train.gym_env), issue 24.

Opponent pools (shapes, weights), the constructor's arguments, seeds, actions outside the
action space in both illegal-action modes, and play after a penalized ending.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from pathlib import Path

from .case import Case

SHAPE = (TypeError, ValueError)  # a wrong shape may be either; both name the problem


def cases(tmp: Path) -> Iterator[Case]:
    import gymnasium
    import numpy as np

    from tacocat import legal_actions
    from tacocat.train.gym_env import TacocatSingleAgentEnv

    def env(**kwargs) -> Callable[[], object]:
        return lambda: TacocatSingleAgentEnv(**{"opponents": [("random", 1.0)], **kwargs})

    def stepped(action: object, mode: str = "penalize") -> Callable[[], object]:
        def run() -> object:
            e = TacocatSingleAgentEnv([("random", 1.0)], illegal_action=mode)
            e.reset(seed=0)
            return e.step(action)

        return run

    def reset(seed: object) -> Callable[[], object]:
        return lambda: TacocatSingleAgentEnv([("random", 1.0)]).reset(seed=seed)

    def after_penalty() -> object:
        e = TacocatSingleAgentEnv([("random", 1.0)], illegal_action="penalize")
        e.reset(seed=0)
        e.step(int(np.flatnonzero(~e.action_masks())[0]))  # ends the episode with -1
        return e.step(legal_actions(e.game)[0])  # a move legal in the game, but the episode is over

    def pool_change(change: Callable[[TacocatSingleAgentEnv], object]) -> Callable[[], object]:
        def run() -> object:
            e = TacocatSingleAgentEnv([("random", 1.0)])
            return change(e)

        return run

    # the cases
    yield Case("gym", "opponent weight -1", env(opponents=[("random", -1)]))
    yield Case("gym", "opponent weight 0", env(opponents=[("random", 0)]))
    yield Case("gym", "opponent weight NaN", env(opponents=[("random", math.nan)]))
    yield Case("gym", "opponents='random'", env(opponents="random"), SHAPE)
    yield Case("gym", "penalize mode: action 10**6 (outside the action space)", stepped(10**6))
    # more of the same surface
    yield Case("gym", "opponent weight inf", env(opponents=[("random", math.inf)]))
    yield Case("gym", "opponent weight '1' (text)", env(opponents=[("random", "1")]))
    yield Case("gym", "opponent weight True", env(opponents=[("random", True)]))
    yield Case("gym", "opponents as a dict", env(opponents={"random": 1.0}), SHAPE)
    yield Case("gym", "opponents ['random'] (no weight)", env(opponents=["random"]), SHAPE)
    yield Case("gym", "opponents [(spec, weight, extra)]", env(opponents=[("random", 1.0, 2.0)]), SHAPE)
    yield Case("gym", "opponents []", env(opponents=[]))
    yield Case("gym", "opponent spec 3", env(opponents=[(3, 1.0)]))
    yield Case(
        "gym", "opponent weights overflow (2 x 1.7e308)", env(opponents=[("random", 1.7e308), ("highcard", 1.7e308)])
    )
    yield Case("gym", "learner_seat=True", env(learner_seat=True))
    yield Case("gym", "learner_seat=2", env(learner_seat=2))
    yield Case("gym", "render_mode='human'", env(render_mode="human"))
    yield Case("gym", "illegal_action='ignore'", env(illegal_action="ignore"))
    yield Case("gym", "reset(seed=-1)", reset(-1))
    yield Case("gym", "reset(seed='x')", reset("x"))
    yield Case("gym", "penalize mode: action -1", stepped(-1))
    yield Case("gym", "penalize mode: action None", stepped(None))
    yield Case("gym", "penalize mode: action 1.5", stepped(1.5))
    yield Case("gym", "raise mode: action 121", stepped(121, "raise"))
    yield Case("gym", "step after a penalized ending", after_penalty)
    yield Case("gym", "add_opponent weight NaN", pool_change(lambda e: e.add_opponent("highcard", math.nan)))
    yield Case("gym", "remove_opponent of the last opponent", pool_change(lambda e: e.remove_opponent("random")))
    yield Case("gym", "remove_opponent of an unknown spec", pool_change(lambda e: e.remove_opponent("planner")))
    yield Case(
        "gym",
        "gymnasium.make(Tacocat-v0, opponents=[('random', -1)])",
        lambda: gymnasium.make("tacocat.train.gym_env:Tacocat-v0", opponents=[("random", -1)]),
    )
