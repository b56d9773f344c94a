"""Tacocat as an RLlib `MultiAgentEnv`: a thin adapter of the PettingZoo AEC env `tacocat_v0`.

Turn-based: each step returns an observation only for the player to act next (RLlib asks the
module mapped to that player for its action), and the rewards PettingZoo accumulated for every
player since its last action. At the end of a game both players get their final observation
and reward, and `__all__` is done. Observations are
`{"observations": float32 vector, "action_mask": 0/1 vector}` (the action-masking RLModule reads
the mask) and, when fixed opponents are configured, `"opponent_actions"`: for each opponent spec,
the action that agent chooses from the acting player's `AgentInput` (its own cards and public
information only, R7.3). A fixed-opponent module (`tacocat.train.rllib.module.FixedAgentModule`)
plays that column; the learner's module never reads it.

Every action is checked against the mask before it reaches the game: `actions_sent` and
`masked_actions_sent` count them, and a masked action raises `MaskedActionError` (the game is left
unchanged).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.utils.typing import MultiAgentDict

from tacocat.agents.base import AgentInput
from tacocat.agents.registry import make_agent
from tacocat.game.env import env as make_env


class MaskedActionError(ValueError):
    """An action the mask forbids reached the adapter (one picklable message, for Ray)."""


class TacocatMultiAgentEnv(MultiAgentEnv):
    """`env_config`: `rules` (RulesConfig overrides) and `opponents` (agent specs whose actions
    are offered to fixed-opponent modules, in this order)."""

    def __init__(self, env_config: dict[str, Any] | None = None) -> None:
        super().__init__()
        env_config = dict(env_config or {})
        self.aec = make_env(config=dict(env_config.get("rules", {})))
        self.opponent_specs: list[str] = list(env_config.get("opponents", []))
        # one instance per seat and spec: an agent plays one seat per game (agent contract)
        self.opponents = [[make_agent(spec) for spec in self.opponent_specs] for _ in range(2)]
        self.possible_agents = list(self.aec.possible_agents)
        self.agents = list(self.possible_agents)
        inner = self.aec.observation_space(self.possible_agents[0])
        n_actions = int(self.aec.action_space(self.possible_agents[0]).n)
        spaces = {"observations": inner["observation"], "action_mask": inner["action_mask"]}
        if self.opponent_specs:
            spaces["opponent_actions"] = gym.spaces.Box(0, n_actions - 1, (len(self.opponent_specs),), np.int64)
        self.observation_spaces = {a: gym.spaces.Dict(spaces) for a in self.possible_agents}
        self.action_spaces = {a: gym.spaces.Discrete(n_actions) for a in self.possible_agents}
        self.actions_sent = 0
        self.masked_actions_sent = 0
        self._rng = np.random.default_rng()

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        if seed is not None:
            self._rng = np.random.default_rng(seed)
        self.aec.reset(seed=int(self._rng.integers(2**63)))
        for seat, agents in enumerate(self.opponents):  # fresh per game, own generators
            for agent in agents:
                agent.reset(seat, np.random.default_rng(self._rng.integers(2**63)))
        self.agents = list(self.possible_agents)
        agent = self.aec.agent_selection
        return {agent: self._observe(agent)}, {agent: {}}

    def step(  # type: ignore[override]  # RLlib's MultiAgentEnv.step differs from gymnasium.Env's
        self,
        action_dict: MultiAgentDict,
    ) -> tuple[MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict, MultiAgentDict]:
        agent = self.aec.agent_selection
        if agent not in action_dict:
            raise ValueError(f"{agent} is to act, but actions came for {sorted(map(str, action_dict))}")
        action = int(action_dict[agent])
        self.actions_sent += 1
        mask = self.aec.observe(agent)["action_mask"]
        if not 0 <= action < mask.size or not mask[action]:
            self.masked_actions_sent += 1
            raise MaskedActionError(f"masked action {action} sent for {agent} (legal: {np.flatnonzero(mask).tolist()})")
        self.aec.step(action)
        obs: MultiAgentDict = {}
        rewards: MultiAgentDict = {}
        terminateds: MultiAgentDict = {}
        truncateds: MultiAgentDict = {}
        infos: MultiAgentDict = {}
        while self.aec.agents:
            current = self.aec.agent_selection
            _, reward, terminated, truncated, _ = self.aec.last(observe=False)
            obs[current] = self._observe(current)
            rewards[current] = float(reward)
            infos[current] = {}
            if not (terminated or truncated):
                break
            terminateds[current], truncateds[current] = terminated, truncated
            self.aec.step(None)  # PettingZoo: a done agent leaves with a None step
        over = not self.aec.agents
        terminateds["__all__"] = over and all(terminateds.values())
        truncateds["__all__"] = over and not terminateds["__all__"]
        if over:
            self.agents = []
        return obs, rewards, terminateds, truncateds, infos

    def _observe(self, agent: str) -> dict[str, np.ndarray]:
        inner = self.aec.observe(agent)
        out = {"observations": inner["observation"], "action_mask": inner["action_mask"]}
        if self.opponent_specs:
            chosen = np.zeros(len(self.opponent_specs), np.int64)
            if inner["action_mask"].any():  # only the player to act has choices
                seat = self.possible_agents.index(agent)
                view = AgentInput.from_state(self.aec.unwrapped.game, seat)  # what this player may know
                for i, opponent in enumerate(self.opponents[seat]):
                    chosen[i] = opponent.act(view)
            out["opponent_actions"] = chosen
        return out


class MaskAudit(RLlibCallback):
    """Logs the adapters' counts of actions sent and of masked actions sent (must stay 0)."""

    def on_sample_end(self, *, env_runner: Any = None, metrics_logger: Any = None, **kwargs: Any) -> None:
        sent = masked = 0
        for env in getattr(env_runner.env.unwrapped, "envs", []):
            env = env.unwrapped
            sent, masked = sent + env.actions_sent, masked + env.masked_actions_sent
            env.actions_sent = env.masked_actions_sent = 0
        metrics_logger.log_value("actions_sent", sent, reduce="sum")
        metrics_logger.log_value("masked_actions_sent", masked, reduce="sum")
