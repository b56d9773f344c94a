"""`backend: rllib`: multi-agent PPO on Ray RLlib (current API stack).

Reads top to bottom: the session (`session`: Ray present? which runtime, reachable, enough
resources? -> Ray started) -> `PPOConfig` built from the experiment config (one place,
`build_algo_config`) -> `RllibTrainer`: one `algo.train()` per iteration, checkpoints with
RLlib's own `save_to_path`, and `policy.npz`, the learner exported as a ladder agent
(`rllib:path=RUN/policy.npz`). The run loop around it is `tacocat.train.loop`.

Both seats are played by RLlib: the policy mapping gives a share `rllib.selfplay_fraction` of
the episodes to the learner on both seats (self-play), the others to the learner on one seat
and a fixed opponent (one of `opponents`, by weight) on the other.
Every run logs `actions_sent` and `masked_actions_sent` (the env adapter checks each action
against the mask); the latter must stay 0.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tacocat.train.checkpoints import CheckpointMarker
from tacocat.train.policy import ExportedPolicy
from tacocat.train.rllib.config import RllibConfig, RllibExperiment
from tacocat.train.rllib.ray_runtime import (
    RllibSetupError,
    check_resources,
    require_ray,
    resolve_address,
    start_ray,
)

LEARNER = "learner"
POLICY_FILE = "policy.npz"
ALGORITHM_FOLDER = "algorithm"


def check_agents(config: RllibExperiment) -> None:
    """Every agent spec the run will build, built once here: a typo fails before Ray starts."""
    from tacocat.agents.registry import make_agent

    for spec in [o.agent for o in config.opponents] + list(config.eval.opponents):
        try:
            make_agent(spec)
        except ValueError as err:
            raise RllibSetupError(f"agent {spec!r} in the config: {err}") from None


# ---------------------------------------------------------------------------------------
# the algorithm config (one place)
# ---------------------------------------------------------------------------------------
def _unit(text: str, salt: str) -> float:
    """A number in [0, 1) from a string, the same in every process (unlike hash())."""
    return zlib.crc32(f"{salt}:{text}".encode()) / 2**32


def make_policy_mapping(settings: RllibConfig, opponents: list[tuple[str, float]]) -> Any:
    """Episode -> who plays which seat: both seats the learner (self-play) for a share
    `selfplay_fraction` of episodes, else the learner on one seat (either, evenly) and an
    opponent module, drawn by weight, on the other. Decided from the episode id alone, so both
    seats of an episode agree."""
    weights = np.array([w for _, w in opponents], dtype=float)
    cumulative = np.cumsum(weights / weights.sum()) if len(weights) else np.array([])
    fraction = settings.selfplay_fraction

    def mapping(agent_id: str, episode: Any, **kwargs: Any) -> str:
        episode_id = str(getattr(episode, "id_", episode))
        if not len(cumulative) or _unit(episode_id, "selfplay") < fraction:
            return LEARNER
        learner_seat = "player_0" if _unit(episode_id, "seat") < 0.5 else "player_1"
        if agent_id == learner_seat:
            return LEARNER
        index = int(np.searchsorted(cumulative, _unit(episode_id, "opponent"), side="right"))
        return f"opponent_{min(index, len(cumulative) - 1)}"

    return mapping


def build_algo_config(config: RllibExperiment) -> Any:
    """The PPOConfig of an experiment: env, modules, mapping, resources, hyperparameters."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from tacocat.train.rllib.env import MaskAudit, TacocatMultiAgentEnv
    from tacocat.train.rllib.module import FixedAgentModule, MaskedPPOModule

    settings, algo = config.rllib, config.algo
    opponents = [(o.agent, o.weight) for o in config.opponents] if settings.selfplay_fraction < 1 else []
    specs = {
        LEARNER: RLModuleSpec(
            module_class=MaskedPPOModule,
            model_config={
                "fcnet_hiddens": list(algo.net_arch),
                "fcnet_activation": algo.activation,
                "head_fcnet_hiddens": [],
                "vf_share_layers": False,
            },
        )
    }
    for column, (spec, _) in enumerate(opponents):
        specs[f"opponent_{column}"] = RLModuleSpec(
            module_class=FixedAgentModule, model_config={"column": column, "spec": spec}
        )
    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)  # RLModule, ConnectorV2
        .environment(
            TacocatMultiAgentEnv,
            env_config={"rules": dict(config.rules), "opponents": [spec for spec, _ in opponents]},
            disable_env_checking=True,
        )  # the checker samples unmasked actions
        .framework("torch", torch_compile_learner=False)
        .env_runners(
            num_env_runners=settings.env_runners,
            num_envs_per_env_runner=settings.envs_per_env_runner,
            # Ray's resources take fractions of a CPU, whatever RLlib's annotation (int | None) says
            num_cpus_per_env_runner=settings.cpus_per_env_runner,  # type: ignore[arg-type]  # a float
        )
        .learners(num_learners=settings.learners, num_gpus_per_learner=settings.gpus_per_learner)
        .multi_agent(
            policies=set(specs), policy_mapping_fn=make_policy_mapping(settings, opponents), policies_to_train=[LEARNER]
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .training(
            lr=algo.learning_rate,
            gamma=algo.gamma,
            lambda_=algo.gae_lambda,
            clip_param=algo.clip_range,
            entropy_coeff=algo.ent_coef,
            vf_loss_coeff=algo.vf_coef,
            grad_clip=algo.max_grad_norm,
            num_epochs=algo.n_epochs,
            minibatch_size=algo.batch_size,
            train_batch_size_per_learner=settings.train_batch_size,
        )
        .callbacks(MaskAudit)
        .debugging(seed=config.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=100)
    )


# ---------------------------------------------------------------------------------------
# export: the learner as a numpy policy file (no code is unpickled on load)
# ---------------------------------------------------------------------------------------
def export_policy(module: Any, path: Path, config: RllibExperiment, timesteps: int) -> Path:
    """The actor MLP of a MaskedPPOModule as a `tacocat-mlp-v1` file (`tacocat.agents.mlp_agent`
    plays it with numpy)."""
    import torch

    from tacocat.agents.mlp_agent import RLLIB_ALGORITHM
    from tacocat.agents.policy_file import save_policy

    linears = [
        m
        for part in (module.encoder.actor_encoder, module.pi)
        for m in part.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    layers = [(layer.weight.detach().cpu().numpy(), layer.bias.detach().cpu().numpy()) for layer in linears]
    return save_policy(
        path,
        layers,
        activation=config.algo.activation,
        rules_config=config.rules_config,
        algorithm=RLLIB_ALGORITHM,
        experiment=config.name,
        seed=config.seed,
        timesteps=timesteps,
    )


# ---------------------------------------------------------------------------------------
# run directory: progress rows, checkpoints, evaluation
# ---------------------------------------------------------------------------------------
def _get(result: dict[str, Any], *keys: str) -> Any:
    node: Any = result
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def progress_row(result: dict[str, Any]) -> dict[str, Any]:
    """An iteration's row of progress.csv, from RLlib's result."""
    learner = _get(result, "learners", LEARNER) or {}
    return {
        "episodes": _get(result, "env_runners", "num_episodes_lifetime"),
        # summed over the seats the learner played: 0 in a self-play episode
        "learner_return_mean": _get(result, "env_runners", "module_episode_returns_mean", LEARNER),
        "episode_len_mean": _get(result, "env_runners", "episode_len_mean"),
        "policy_loss": learner.get("policy_loss"),
        "vf_loss": learner.get("vf_loss"),
        "entropy": learner.get("entropy"),
        "actions_sent": _get(result, "env_runners", "actions_sent"),
        "masked_actions_sent": _get(result, "env_runners", "masked_actions_sent"),
    }


# ---------------------------------------------------------------------------------------
# the trainer
# ---------------------------------------------------------------------------------------
class RllibTrainer:
    progress_fields = (
        "episodes",
        "learner_return_mean",
        "episode_len_mean",
        "policy_loss",
        "vf_loss",
        "entropy",
        "actions_sent",
        "masked_actions_sent",
    )

    def __init__(self, config: RllibExperiment) -> None:
        import torch

        torch.set_num_threads(config.rllib.torch_threads)
        self.config = config
        self.algo = build_algo_config(config).build_algo()
        self._timesteps = 0

    @property
    def timesteps(self) -> int:
        return self._timesteps

    def iterate(self) -> dict[str, Any]:
        result = self.algo.train()
        self._timesteps += int(_get(result, "env_runners", "num_env_steps_sampled") or 0)
        return progress_row(result)

    def save(self, folder: Path) -> dict[str, Any]:
        self.algo.save_to_path(str((folder / ALGORITHM_FOLDER).resolve()))
        return {}

    def restore(self, folder: Path, marker: CheckpointMarker) -> None:
        from tacocat.train.run_dir import RunDirError

        if marker.trainer:
            raise RunDirError(
                f"{folder.with_suffix('.json')}: trainer: an RLlib checkpoint keeps its state in "
                f"{ALGORITHM_FOLDER}/, not in the marker"
            )
        self.algo.restore_from_path(str((folder / ALGORITHM_FOLDER).resolve()))
        self._timesteps = marker.timesteps

    def evaluation_agent(self, run_dir: Path) -> str:
        return self.export(run_dir).spec(run_dir)

    def export(self, run_dir: Path, best: bool = False) -> ExportedPolicy:
        name = "best_policy.npz" if best else POLICY_FILE
        export_policy(self.algo.get_module(LEARNER), run_dir / name, self.config, self.timesteps)
        return ExportedPolicy("rllib", name)

    def close(self) -> None:
        self.algo.stop()


@contextlib.contextmanager
def session(config: RllibExperiment, address: str | None) -> Iterator[dict[str, Any]]:
    """Ray up (a local runtime, or the cluster at --address, RAY_ADDRESS or rllib.address),
    checked for the resources the run needs, for the run's length; run.json adds Ray's address
    and resources."""
    require_ray()
    settings = config.rllib
    check_agents(config)
    target = resolve_address(address, settings)
    started = start_ray(settings, target)
    try:
        import ray

        resources = ray.cluster_resources()
        check_resources(
            settings,
            resources.get("CPU", 0.0),
            resources.get("GPU", 0.0),
            "the Ray cluster" if target else "the local Ray runtime",
        )
        yield {"ray": {"address": target or "local", "resources": resources}}
    finally:
        if started:
            ray.shutdown()


def make_trainer(config: RllibExperiment, run_dir: Path) -> RllibTrainer:
    return RllibTrainer(config)
