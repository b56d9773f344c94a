"""
# Tacocat Spelled Backwards — `tacocat_v0`

| Import             | `import tacocat; env = tacocat.env()`      |
|--------------------|----------------------------------------------------|
| Actions            | Discrete (121 under the default rules)             |
| Parallel API       | No                                                 |
| Manual control     | `tacocat play` (command line)                      |
| Render modes       | `human`, `ansi`, `rgb_array`                       |
| Agents             | `agents= ['player_0', 'player_1']`                 |
| Action shape       | (1,)                                               |
| Observation shape  | (136,) under the default rules                      |
| Observation values | [0, 38]                                            |

A two-player card game: win rounds to walk the Tacocat token into your own goal. Each round:
replace cards, duel for the attack, trade attacks (single / set / sequence) and answers
(defend / sacrifice) until one card each is left; the lower last card wins the round.
The rules, as implemented, are in docs/RULES.md (numbers R… cite RULES_REFERENCE.md).

## Agents and turns
Turn-based AEC. Simultaneous choices (replace on a two-arrow space, R4.1; the duel, R5.1) are
asked of player_0 then player_1; the second chooser's observation does not depend on the
first's choice until both are revealed. A player may act several times in a row (one card set
aside per action, several answers to one attack).

## Observation space
`Dict(observation=Box(0, high, (D,), float32), action_mask=Box(0, 1, (N,), int8))`, egocentric
(the board is seen from the observer's goal). The named slices are listed in
`tacocat.game.observation` and docs/ENVIRONMENT.md; `env.observation_views(agent)` returns them as
a dict and `env.observation_text(agent)` as text. The mask is all zeros for the agent that is
not acting. R7.3: an observation depends only on the observer's own cards and public information.

## Action space
`Discrete(N)`: every replace / stop, duel card, attack (single, set size, sequence) and answer
(defend with a value / sacrifice) of the ruleset; see `tacocat.game.actions` and
docs/ENVIRONMENT.md. `env.action_name(a)` gives the readable move, `env.action_id(name)` the id.
`infos[agent]["legal_moves"]` lists the readable legal moves of the acting agent.

## Rewards
+1 to the winner and -1 to the loser when the Tacocat enters a goal; 0 to both when the game
is truncated after `max_rounds` rounds (R1.5). Optional shaping: `round_reward=x` gives +x/-x
for every decisive round (off by default). Rewards always sum to zero.

## Illegal actions
By default (`illegal_action="raise"`) an illegal or out-of-range action raises
`tacocat.IllegalActionError` (a `ValueError`) naming the move and the legal moves, and the
game is left unchanged so play can continue. `illegal_action="penalize"` gives PettingZoo's
`TerminateIllegalWrapper` behaviour instead (the offender gets -1 and the game ends); an id
outside the action space still raises `tacocat.ActionOutOfRangeError` in that mode.

## Arguments
`tacocat.env(render_mode=None, config=None, illegal_action="raise", **rule_overrides)`:
`config` is a `RulesConfig`, a dict or a YAML path; keyword overrides are fields of
`RulesConfig` (e.g. `tie_policy="arrow_player_wins"`).

## Version history
* v0: initial release.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, cast

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger
from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable, AECOrderEnforcingIterator

from tacocat.game.config import RulesConfig, make_config
from tacocat.game.engine import apply_action, check_action_id, legal_actions, new_game, returns, round_shaping
from tacocat.game.errors import GameOverError
from tacocat.game.observation import ObservationLayout, describe, encode, legal_mask
from tacocat.game.render.raster import render_image
from tacocat.game.render.text import render_text
from tacocat.game.ruleset import compile_rules
from tacocat.game.state import GameState, Phase

AGENTS = ("player_0", "player_1")
_SEAT = {agent: seat for seat, agent in enumerate(AGENTS)}
# looked up once: reading a member off an enum class goes through a Python-level descriptor,
# which costs more than the test itself on every step
_OVER = Phase.OVER


def env(
    render_mode: str | None = None,
    config: RulesConfig | dict[str, Any] | str | None = None,
    illegal_action: Literal["raise", "penalize"] = "raise",
    **rule_overrides: Any,
) -> AECEnv:
    """The `tacocat_v0` environment with PettingZoo's safety wrappers."""
    wrapped: AECEnv = raw_env(render_mode=render_mode, config=config, **rule_overrides)
    if illegal_action == "penalize":
        wrapped = wrappers.TerminateIllegalWrapper(wrapped, illegal_reward=-1)
        wrapped = ActionRangeWrapper(wrapped)
    elif illegal_action != "raise":
        raise ValueError(f"illegal_action must be 'raise' or 'penalize', got {illegal_action!r}")
    return ForwardingOrderEnforcingWrapper(wrapped)


class ActionRangeWrapper(wrappers.BaseWrapper):
    """PettingZoo's `AssertOutOfBoundsWrapper` with the engine's error: an id outside the
    action space (or not an integer) raises `ActionOutOfRangeError`, as in "raise" mode,
    instead of a bare `AssertionError`; the game is unchanged. Only ids of the action space
    reach `TerminateIllegalWrapper`, which penalizes the illegal ones."""

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if not (action is None and (self.terminations[agent] or self.truncations[agent])):
            game = self.unwrapped.game
            if game is not None:
                check_action_id(game, action)
        super().step(action)


class ForwardingOrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's `OrderEnforcingWrapper` with the attributes every step reads forwarded
    directly. The base class reaches them through `__getattr__` after a failed look-up,
    which cost about a third of a step (docs/PERFORMANCE.md). Same checks, same errors."""

    def last(self, observe: bool = True) -> tuple:
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.last(observe)

    def step(self, action: Any) -> None:
        # the base class's checks, without its two extra calls (`super().step`, `self.agents`)
        if not self._has_reset:
            EnvLogger.error_step_before_reset()
        elif not self.env.agents:
            self._has_updated = True
            EnvLogger.warn_step_after_terminated_truncated()
        else:
            self._has_updated = True
            self.env.step(action)

    def agent_iter(self, max_iter: int = 2**63) -> _ForwardingAgentIterable:
        if not self._has_reset:
            EnvLogger.error_agent_iter_before_reset()
        return _ForwardingAgentIterable(self, max_iter)


class _ForwardingAgentIterable(AECOrderEnforcingIterable):
    def __iter__(self) -> _ForwardingAgentIterator:
        return _ForwardingAgentIterator(self.env, self.max_iter)


class _ForwardingAgentIterator(AECOrderEnforcingIterator):
    """PettingZoo's order-enforcing `agent_iter` iterator (same stop rule, same check that
    `step` was called in between), reading the wrapped env's `agents` and `agent_selection`
    directly instead of through the wrapper."""

    def __next__(self) -> str:
        wrapper = self.env
        inner = wrapper.env
        if not inner.agents or self.iters_til_term <= 0:
            raise StopIteration
        self.iters_til_term -= 1
        assert wrapper._has_updated, "need to call step() or reset() in a loop over `agent_iter`"
        wrapper._has_updated = False
        return inner.agent_selection


def _forwarded(name: str) -> property:
    def get(self: ForwardingOrderEnforcingWrapper) -> Any:
        if not self._has_reset:
            raise AttributeError(f"{name} cannot be accessed before reset")
        return getattr(self.env, name)

    return property(get, doc=f"`{name}` of the wrapped env (after reset).")


for _name in ("rewards", "terminations", "truncations", "infos", "agent_selection", "agents", "num_agents"):
    setattr(ForwardingOrderEnforcingWrapper, _name, _forwarded(_name))


class raw_env(AECEnv):
    """The `tacocat_v0` AEC environment without wrappers (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {
        "name": "tacocat_v0",
        "render_modes": ["human", "ansi", "rgb_array"],
        "is_parallelizable": False,
        "render_fps": 1,
    }

    def __init__(
        self,
        render_mode: str | None = None,
        config: RulesConfig | dict[str, Any] | str | None = None,
        **rule_overrides: Any,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.config = make_config(config, **rule_overrides)
        self.rules = compile_rules(self.config)
        self.codec = self.rules.codec
        self.layout = ObservationLayout(self.rules)
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        n_actions = self.codec.size
        self.action_spaces: dict[str, spaces.Space] = {a: spaces.Discrete(n_actions) for a in AGENTS}
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(
                        low=np.zeros(self.layout.size, np.float32), high=self.layout.high, dtype=np.float32
                    ),
                    "action_mask": spaces.Box(low=0, high=1, shape=(n_actions,), dtype=np.int8),
                }
            )
            for a in AGENTS
        }
        hidden = 2 * self.rules.n_values
        self.state_space = spaces.Box(
            low=0.0, high=float(self.config.deck_size), shape=(self.layout.size + hidden,), dtype=np.float32
        )
        self._zero_mask = np.zeros(n_actions, dtype=np.int8)
        self.game: GameState | None = None

    # -- PettingZoo API --------------------------------------------------------------------
    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        if seed is not None or self.game is None:
            self._rng = np.random.default_rng(seed)
        self.game = new_game(self.rules, self._rng)
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        self._rewards_pending = False  # True while `rewards` holds the last step's non-zero rewards
        self._select_current(self.game)
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        game = self._game()
        player = _SEAT[agent]
        if game.phase is not _OVER and game.to_act == player:
            mask = legal_mask(legal_actions(game), self.codec.size)
        else:
            mask = self._zero_mask.copy()
        return {"observation": encode(game, player), "action_mask": mask}

    def step(self, action: int | None) -> None:
        game = self._game()
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        rounds_before = game.rounds_played
        # raises, game unchanged, if illegal; the action goes on as given, None included: the engine
        # checks it itself (check_action_id, after its game-over and turn checks, in that order)
        apply_action(game, cast(int, action), _SEAT[agent])
        self._cumulative_rewards[agent] = 0.0
        over = game.phase is _OVER
        paid = round_shaping(game, rounds_before)
        if over:
            paid = [p + r for p, r in zip(paid, returns(game), strict=True)]
        rewarded = over or any(paid)
        if rewarded or self._rewards_pending:
            self.rewards = {a: paid[_SEAT[a]] for a in self.agents}
            self._rewards_pending = rewarded
        if over:
            flags = self.truncations if game.truncated else self.terminations
            for a in self.agents:
                flags[a] = True
        if rewarded:
            self._accumulate_rewards()  # (with all rewards 0 there is nothing to add)
        self._select_current(game)
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | np.ndarray | None:
        """ "human": print the table; "ansi": the table as text; "rgb_array": an RGB image of it."""
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn("You are calling render without specifying a render_mode.")
            return None
        if self.render_mode == "rgb_array":
            return render_image(self._game())
        text = render_text(self._game())
        if self.render_mode == "human":
            print(text + "\n")
            return None
        return text

    def state(self) -> np.ndarray:
        """PRIVILEGED full state for centralised critics: player_0's observation followed by
        player_1's hand and hidden set-aside/duel cards. Never give it to a decentralised policy."""
        game = self._game()
        aside = list(game.set_aside[1])
        if game.duel[1] is not None:
            aside[game.duel[1]] += 1
        hidden = np.asarray(game.hands[1] + aside, dtype=np.float32)
        return np.concatenate([encode(game, 0), hidden])

    def close(self) -> None:
        pass

    def last(self, observe: bool = True) -> tuple:
        """PettingZoo's `last()`, with a clear error before `reset()` and once every agent has
        stepped out of a finished game (PettingZoo's own version raises a bare KeyError)."""
        self._game()
        if not self.agents:
            raise GameOverError("the game is over and every agent has left it; call reset() to play again")
        agent = self.agent_selection  # (AECEnv.last, inlined: it runs on every step)
        return (
            self.observe(agent) if observe else None,
            self._cumulative_rewards[agent],
            self.terminations[agent],
            self.truncations[agent],
            self.infos[agent],
        )

    # -- conveniences ----------------------------------------------------------------------
    def action_name(self, action: int) -> str:
        """The readable move of an action id, e.g. 'attack: sequence 4-5-6'."""
        return self.codec.name(action)

    def action_id(self, name: str) -> int:
        """The action id of a readable move (inverse of `action_name`)."""
        return self.codec.parse(name)

    def legal_moves(self) -> list[str]:
        return [self.codec.names[a] for a in legal_actions(self._game())]

    def observation_views(self, agent: str) -> dict[str, np.ndarray]:
        """The agent's observation split into its named slices."""
        return self.layout.views(self.observe(agent)["observation"])

    def observation_text(self, agent: str) -> str:
        """What the agent knows, in words (the text twin of the observation)."""
        return describe(self._game(), AGENTS.index(agent))

    def public_history(self) -> list[tuple]:
        """The public events of the game so far (R7.2), safe to show to any agent."""
        return list(self._game().events)

    @property
    def ruleset_hash(self) -> str:
        return self.rules.hash

    # -- internals -------------------------------------------------------------------------
    def _game(self) -> GameState:
        if self.game is None:
            raise RuntimeError("call reset() before using the environment")
        return self.game

    def _select_current(self, game: GameState) -> None:
        if game.phase is _OVER:
            # every agent is done; PettingZoo then expects a None step from each
            for a in self.agents:
                self.infos[a] = {"legal_moves": []}
            self.agent_selection = self.agents[0]
            return
        current = AGENTS[game.to_act]
        self.agent_selection = current
        names = self.codec.names
        self.infos[current] = {"legal_moves": [names[i] for i in legal_actions(game)]}
        self.infos[AGENTS[1 - game.to_act]] = {"legal_moves": []}
