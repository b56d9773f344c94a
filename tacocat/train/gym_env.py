"""A single-agent Gymnasium view of Tacocat for Stable-Baselines3 (MaskablePPO).

The learner plays one seat; every opponent decision is made inside `step` by an opponent drawn
from an `OpponentPool` (ladder agents, frozen snapshots of the learner). Rewards are always the
learner's own (+1/-1 at the end of the game, optional round shaping), never the opponent's, and
`action_masks()` exposes the learner's legal actions for sb3-contrib's MaskablePPO.

Importing this module registers it with Gymnasium as `Tacocat-v0` (default opponent: `counter`),
so tools that build envs by id (RL Baselines3 Zoo's `--gym-packages tacocat.train.gym_env`) work::

    env = gymnasium.make("tacocat.train.gym_env:Tacocat-v0", opponents=[("planner", 1.0)])
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from tacocat.agents.base import Agent, AgentInput
from tacocat.agents.registry import make_agent, parse_spec
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.engine import apply_action, legal_actions, new_game, returns, round_shaping
from tacocat.game.errors import ActionOutOfRangeError, GameOverError, IllegalActionError, TacocatError
from tacocat.game.observation import ObservationLayout, encode, legal_mask
from tacocat.game.ruleset import compile_rules
from tacocat.game.state import GameState, make_rng

SeatPolicy = Literal["alternate", "random", 0, 1]


@dataclass
class PoolEntry:
    """One opponent of the pool: an agent spec (see `make_agent`) and its sampling weight, a
    finite number > 0 (checked here, so that sampling never meets a NaN probability)."""

    spec: str
    weight: float

    def __post_init__(self) -> None:
        parse_spec(self.spec)  # a non-empty string of the spec syntax (AgentSpecError otherwise)
        weight = self.weight
        if (
            isinstance(weight, (bool, np.bool_))
            or not isinstance(weight, (int, float, np.integer, np.floating))
            or not math.isfinite(weight)
            or weight <= 0
        ):
            raise ValueError(f"opponent {self.spec!r}: the weight must be a finite number > 0, got {weight!r}")


class OpponentPool:
    """Weighted opponents; agents are built lazily (once per process) from their specs."""

    def __init__(self, entries: list[PoolEntry]) -> None:
        if not entries:
            raise ValueError("the opponent pool is empty")
        if not all(isinstance(e, PoolEntry) for e in entries):
            raise TypeError("OpponentPool takes PoolEntry items; build the env from (spec, weight) pairs instead")
        self._check_total([e.weight for e in entries])
        self.entries = list(entries)
        self._agents: dict[str, Agent] = {}

    @classmethod
    def from_pairs(cls, opponents: Sequence[tuple[str, float]]) -> OpponentPool:
        """The pool of a list of (agent spec, weight) pairs, e.g. `[("counter", 1.0)]`."""
        example = "e.g. [('counter', 1.0)]"
        if not isinstance(opponents, (list, tuple)):
            raise TypeError(
                f"opponents must be an OpponentPool or a list of (agent spec, weight) pairs, {example}; "
                f"got {type(opponents).__name__} {opponents!r:.80}"
            )
        entries = []
        for index, pair in enumerate(opponents):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise ValueError(
                    f"opponents[{index}] must be an (agent spec, weight) pair, {example}; got {pair!r:.80}"
                )
            entries.append(PoolEntry(*pair))
        return cls(entries)

    def add(self, spec: str, weight: float) -> None:
        entry = PoolEntry(spec, weight)
        self._check_total([e.weight for e in self.entries] + [entry.weight])
        self.entries.append(entry)

    def remove(self, spec: str) -> None:
        kept = [e for e in self.entries if e.spec != spec]
        if len(kept) == len(self.entries):
            raise ValueError(f"no opponent {spec!r} in the pool")
        if not kept:
            raise ValueError(f"removing {spec!r} would leave the opponent pool empty")
        self.entries = kept
        self._agents.pop(spec, None)

    @staticmethod
    def _check_total(weights: list[float]) -> None:
        if not math.isfinite(sum(float(w) for w in weights)):
            raise ValueError("the opponent weights add up to more than a float holds; use smaller weights")

    def sample(self, rng: np.random.Generator) -> tuple[str, Agent]:
        weights = np.array([e.weight for e in self.entries], dtype=float)
        index = int(rng.choice(len(self.entries), p=weights / weights.sum()))
        spec = self.entries[index].spec
        return spec, self.agent(spec)

    def agent(self, spec: str) -> Agent:
        """The agent of `spec`, built on first use (once per process)."""
        if spec not in self._agents:
            self._agents[spec] = make_agent(spec)
        return self._agents[spec]


class TacocatSingleAgentEnv(gym.Env):
    """The learner's side of a game against pool opponents.

    Args:
        opponents: the pool, or a list of (agent spec, weight) pairs; weights are finite and > 0.
        rules: rules config (RulesConfig, dict or YAML path) for every game.
        learner_seat: "alternate" (player_0, player_1, ... by episode), "random", 0 or 1.
        illegal_action: "raise" (IllegalActionError, game unchanged) or "penalize" (the episode
            ends with reward -1, as PettingZoo's TerminateIllegalWrapper does); SB3's
            `check_env` samples unmasked actions, so it needs "penalize". An id outside the action
            space (or not an integer) raises `ActionOutOfRangeError` in both modes, as the AEC env
            does: only moves of the action space are penalized.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}  # noqa: RUF012 (gymnasium.Env's field)

    def __init__(
        self,
        opponents: OpponentPool | list[tuple[str, float]],
        rules: RulesConfig | dict[str, Any] | str | None = None,
        learner_seat: SeatPolicy = "alternate",
        illegal_action: Literal["raise", "penalize"] = "raise",
        render_mode: str | None = None,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        if not _is_seat_policy(learner_seat):
            raise ValueError(f"learner_seat must be 'alternate', 'random', 0 or 1, got {learner_seat!r}")
        if illegal_action not in ("raise", "penalize"):
            raise ValueError(f"illegal_action must be 'raise' or 'penalize', got {illegal_action!r}")
        self.pool = opponents if isinstance(opponents, OpponentPool) else OpponentPool.from_pairs(opponents)
        self.config = make_config(rules) if not isinstance(rules, RulesConfig) else rules
        self.rules = compile_rules(self.config)
        self.layout = ObservationLayout(self.rules)
        self.observation_space = gym.spaces.Box(
            low=np.zeros(self.layout.size, np.float32), high=self.layout.high, dtype=np.float32
        )
        self.action_space = gym.spaces.Discrete(self.rules.codec.size)
        self.learner_seat = learner_seat
        self.illegal_action = illegal_action
        self.render_mode = render_mode
        self.game: GameState | None = None
        self._penalized = False  # the episode was ended by an illegal move ("penalize")
        self.seat = 0
        self.opponent_spec = ""
        self.game_seed = 0
        self._episodes = 0
        self._rng = np.random.default_rng()

    # -- gymnasium API ---------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        if seed is not None:
            if isinstance(seed, np.random.Generator):
                raise TacocatError("seed: gymnasium's reset takes a non-negative integer or None, not a Generator")
            self._rng = make_rng(seed)  # the engine's check and message for a bad seed
            self._episodes = 0
            seed = int(seed)
        super().reset(seed=seed)
        if self.learner_seat == "alternate":
            self.seat = self._episodes % 2
        elif self.learner_seat == "random":
            self.seat = int(self._rng.integers(2))
        else:
            self.seat = int(self.learner_seat)
        self._episodes += 1
        self._penalized = False
        self.opponent_spec, self.opponent = self.pool.sample(self._rng)
        self.game_seed = int(self._rng.integers(2**63))
        self.game = new_game(self.config, self.game_seed)
        self.opponent.reset(1 - self.seat, np.random.default_rng(int(self._rng.integers(2**63))))
        reward = self._play_opponent()  # the opponent may act first
        assert reward == 0.0  # no round can end before the learner has acted
        return self._observe(), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        game = self._require_game()
        if game.is_over or self._penalized:
            raise GameOverError("the episode is over; call reset()")
        rounds_before = game.rounds_played
        try:
            apply_action(game, action, self.seat)
        except ActionOutOfRangeError:
            raise  # not a move at all: an error in both modes (the AEC env's AssertOutOfBoundsWrapper)
        except IllegalActionError:
            if self.illegal_action == "raise":
                raise
            self._penalized = True
            return self._observe(), -1.0, True, False, {**self._info(), "illegal_action": True}
        reward = self._round_shaping(rounds_before)
        reward += self._play_opponent()
        if game.is_over:
            reward += returns(game)[self.seat]
        terminated = game.is_over and not game.truncated
        return self._observe(), reward, terminated, game.truncated, self._info()

    def add_opponent(self, spec: str, weight: float) -> None:
        """Add an opponent to this env's pool (self-play snapshots arrive this way)."""
        self.pool.add(spec, weight)

    def remove_opponent(self, spec: str) -> None:
        self.pool.remove(spec)

    def resume_state(self) -> dict[str, Any]:
        """Everything this env needs to continue exactly where it is, as JSON-ready data: its
        generator, episode counter and seat, the opponent and its generator, and the game in
        progress as (deal seed, actions) -- replaying them rebuilds the game bit for bit."""
        game = self._require_game()
        return {
            "rng": self._rng.bit_generator.state,
            "episodes": self._episodes,
            "seat": self.seat,
            "opponent": self.opponent_spec,
            "opponent_rng": self.opponent.rng.bit_generator.state,
            "game_seed": self.game_seed,
            "actions": [[p, a] for p, a in game.actions],
        }

    def restore_state(self, saved: dict[str, Any]) -> None:
        """Continue from `resume_state()` output (a checkpoint of `tacocat train`)."""
        self._rng = _generator(saved["rng"])
        self._episodes, self.seat = int(saved["episodes"]), int(saved["seat"])
        self.opponent_spec = saved["opponent"]
        self.opponent = self.pool.agent(self.opponent_spec)
        self.opponent.reset(1 - self.seat, _generator(saved["opponent_rng"]))
        self.game_seed = int(saved["game_seed"])
        self.game = new_game(self.config, self.game_seed)
        for player, action in saved["actions"]:
            apply_action(self.game, action, player)

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as a bool mask (all False once the episode is over)."""
        game = self._require_game()
        if game.is_over or self._penalized:
            return np.zeros(self.rules.codec.size, dtype=bool)
        return legal_mask(legal_actions(game), self.rules.codec.size).astype(bool)

    def render(self) -> str | np.ndarray | None:  # type: ignore[override]  # Env's RenderFrame is unbound
        """The table as text ("ansi", the default) or as an RGB image ("rgb_array")."""
        from tacocat.game.render.raster import render_image
        from tacocat.game.render.text import render_text

        game = self._require_game()
        return render_image(game) if self.render_mode == "rgb_array" else render_text(game)

    # -- internals -------------------------------------------------------------------------
    def _require_game(self) -> GameState:
        if self.game is None:
            raise RuntimeError("call reset() before step()")
        return self.game

    def _play_opponent(self) -> float:
        """Let the opponent act until it is the learner's turn; shaping reward it causes."""
        game = self._require_game()
        reward = 0.0
        opp = 1 - self.seat
        while not game.is_over and game.to_act == opp:
            rounds_before = game.rounds_played
            apply_action(game, self.opponent.act(AgentInput.from_state(game, opp)), opp)
            reward += self._round_shaping(rounds_before)
        return reward

    def _round_shaping(self, rounds_before: int) -> float:
        return round_shaping(self._require_game(), rounds_before)[self.seat]

    def _observe(self) -> np.ndarray:
        return encode(self._require_game(), self.seat)

    def _info(self) -> dict[str, Any]:
        return {"seat": self.seat, "opponent": self.opponent_spec}


def _is_seat_policy(value: object) -> bool:
    """ "alternate", "random", 0 or 1 (an integer, not True/False or 1.0)."""
    if isinstance(value, str):
        return value in ("alternate", "random")
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and value in (0, 1)


def _generator(state: dict[str, Any]) -> np.random.Generator:
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    return rng


def make_env_fn(
    opponents: list[tuple[str, float]], rules: dict[str, Any], learner_seat: SeatPolicy
) -> Callable[[], gym.Env]:
    """A picklable factory for vectorised envs; seed them with `VecEnv.seed(seed)`."""

    def build() -> gym.Env:
        return TacocatSingleAgentEnv(opponents, rules=rules, learner_seat=learner_seat)

    return build


GYM_ID = "Tacocat-v0"
if GYM_ID not in gym.registry:  # (re-importing the module must not re-register)
    gym.register(id=GYM_ID, entry_point=f"{__name__}:TacocatSingleAgentEnv", kwargs={"opponents": [("counter", 1.0)]})
