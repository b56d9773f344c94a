"""RLModules for Tacocat on RLlib's current API stack.

* `MaskedPPOModule`: RLlib's default PPO torch module (separate actor and critic MLPs) built for
  the `observations` part of the observation dict; it sets the logits of every action that the
  `action_mask` forbids to a large negative number in every forward pass (exploration,
  inference and training), so a masked action has probability zero.
* `FixedAgentModule`: a module that is never trained. It plays the action that one of the
  project's agents (`make_agent(spec)`) chose from what its player may know; the env adapter
  (`tacocat.train.rllib.env`) asks the agent and passes the choice in `opponent_actions`.
"""

from __future__ import annotations

from typing import Any

from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModule
from ray.rllib.utils.torch_utils import FLOAT_MIN


def _split(batch: dict[str, Any]) -> tuple[dict[str, Any], Any]:
    """A shallow copy of `batch` whose OBS is the observation vector, and the action mask."""
    obs = batch[Columns.OBS]
    if not isinstance(obs, dict):  # already split (the learner keeps the mask beside OBS)
        return batch, batch["action_mask"]
    out = dict(batch)
    out[Columns.OBS] = obs["observations"]
    return out, obs["action_mask"]


class MaskedPPOModule(DefaultPPOTorchRLModule):
    """PPO actor-critic whose action distribution puts no mass on masked actions."""

    def __init__(self, *, observation_space: Any = None, **kwargs: Any) -> None:
        if observation_space is None or "action_mask" not in getattr(observation_space, "spaces", {}):
            raise ValueError("MaskedPPOModule needs a Dict observation space with 'observations' and 'action_mask'")
        self._space_with_mask = observation_space
        super().__init__(observation_space=observation_space["observations"], **kwargs)

    def setup(self) -> None:
        super().setup()  # networks are built for the observation vector alone
        self.observation_space = self._space_with_mask

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        inner, mask = _split(batch)
        return _masked(super()._forward(inner, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        inner, mask = _split(batch)
        return _masked(super()._forward_train(inner, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        inner, _ = _split(batch)
        return super().compute_values(inner, embeddings)


def _masked(out: dict[str, Any], mask: Any) -> dict[str, Any]:
    logits = out[Columns.ACTION_DIST_INPUTS]
    out[Columns.ACTION_DIST_INPUTS] = logits.masked_fill(mask == 0, FLOAT_MIN)
    return out


class FixedAgentModule(RLModule):
    """A non-trained opponent: column `model_config["column"]` of `opponent_actions`, which the
    env adapter filled with the choice of agent `model_config["spec"]`."""

    def setup(self) -> None:
        config = self.model_config
        assert isinstance(config, dict)  # the trainer gives a dict (rllib/trainer.py)
        self.column = int(config["column"])
        self.spec = str(config["spec"])

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return {Columns.ACTIONS: batch[Columns.OBS]["opponent_actions"][:, self.column]}

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError(f"the fixed agent {self.spec!r} is not trained (leave it out of policies_to_train)")
