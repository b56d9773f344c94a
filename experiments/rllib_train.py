"""`tacocat train` with `backend: rllib`: multi-agent PPO on Ray RLlib (current API stack).

Reads top to bottom: Ray present? -> which Ray runtime (local, or a cluster from `--address`,
`RAY_ADDRESS` or `rllib.address`) and is it reachable? -> enough CPUs/GPUs for the env runners
and learners? -> `PPOConfig` built from the experiment config (one place) -> training
iterations with progress.csv + TensorBoard, checkpoints, duplicate-format evaluation ->
`policy.npz`, the learner exported as a ladder agent (`rllib:path=RUN/policy.npz`), and the
learning curve (`learning_curve.png`, from eval.csv as for SB3 runs).

Both seats are played by RLlib: the policy mapping gives a share `rllib.selfplay_fraction` of
the episodes to the learner on both seats (self-play), the others to the learner on one seat
and a fixed opponent (one of `opponents`, by weight) on the other.
Every run logs `actions_sent` and `masked_actions_sent` (the env adapter checks each action
against the mask); the latter must stay 0.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from experiments.config import ExperimentConfig, RllibConfig

CHECKPOINTS = "checkpoints"
LEARNER = "learner"
POLICY_FILE = "policy.npz"
PROGRESS_FIELDS = [
    "iteration", "timesteps", "episodes", "learner_return_mean", "episode_len_mean", "env_steps_per_s",
    "iteration_s", "policy_loss", "vf_loss", "entropy", "actions_sent", "masked_actions_sent",
]


class RllibSetupError(RuntimeError):
    """Ray missing, a cluster out of reach, or not enough resources: one line that says which."""


# ---------------------------------------------------------------------------------------
# Ray runtime
# ---------------------------------------------------------------------------------------
def require_ray() -> None:
    try:
        import ray  # noqa: F401
        from ray.rllib.algorithms.ppo import PPOConfig  # noqa: F401
    except ImportError as err:
        raise RllibSetupError(f"backend 'rllib' needs Ray RLlib ({err}); install it with: pip install -e '.[rllib]'") from None


def resolve_address(cli_address: str | None, settings: RllibConfig) -> str | None:
    """--address, then RAY_ADDRESS, then the config; None starts a local Ray runtime."""
    return cli_address or os.environ.get("RAY_ADDRESS") or settings.address


#: seconds the Ray handshake of `check_reachable` may take
HANDSHAKE_TIMEOUT_S = 5.0
#: a Ray address: [ray://]host:port, the host a name or an IPv4 address, or an IPv6 one in brackets
ADDRESS = re.compile(r"(?:(?P<scheme>ray)://)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?P<port>[0-9]{1,5})")


def check_reachable(address: str, timeout_s: float = HANDSHAKE_TIMEOUT_S) -> None:
    """A Ray handshake with the cluster at `address` within `timeout_s`, the first call that
    `ray.init` makes there: its GCS answers GetClusterId (host:port), or its Ray Client
    server answers a ping (ray://host:port). So a wrong address (nothing listening, another
    service, a port that accepts and says nothing) fails in seconds, where `ray.init` would
    retry for minutes. The channel is Ray's own (`init_grpc_channel`: TLS and token
    authentication as Ray has them configured)."""
    if address in ("auto", "local"):
        return
    parsed = ADDRESS.fullmatch(address)
    if parsed is None or not 0 < int(parsed["port"]) < 65536:
        raise RllibSetupError(f"Ray address {address!r} must look like host:port (a port of 1 to 65535), "
                              "ray://host:port or 'auto'")
    scheme, port = parsed["scheme"], parsed["port"]
    import grpc
    from ray._private.grpc_utils import init_grpc_channel
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc, ray_client_pb2, ray_client_pb2_grpc

    channel = init_grpc_channel(address.removeprefix("ray://"))
    try:
        if scheme == "ray":
            ping = ray_client_pb2.ClusterInfoRequest(type=ray_client_pb2.ClusterInfoType.PING)
            ray_client_pb2_grpc.RayletDriverStub(channel).ClusterInfo(ping, timeout=timeout_s)
        else:
            reply = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel).GetClusterId(
                gcs_service_pb2.GetClusterIdRequest(), timeout=timeout_s)
            if reply.status.code != 0 or not reply.cluster_id:
                raise RllibSetupError(f"the Ray cluster at {address} did not give its cluster id "
                                      f"(status {reply.status.code})")
    except grpc.RpcError as err:
        code = err.code()
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            why = f"no Ray handshake within {timeout_s:g} s: something there accepts connections but is not Ray"
        elif code == grpc.StatusCode.UNIMPLEMENTED:
            why = "a gRPC service that is not Ray's " + ("client server" if scheme else "GCS") + " answered"
        else:
            why = f"{code.name}: {' '.join(str(err.details()).split())[:200]}"
        port_hint = "the Ray Client port (10001 by default)" if scheme else "the GCS port (6379 by default)"
        raise RllibSetupError(f"cannot reach the Ray cluster at {address} ({why}); is `ray start --head` running "
                              f"there, and is {port} {port_hint}?") from None
    finally:
        channel.close()


def needed_resources(settings: RllibConfig) -> tuple[float, float]:
    """(CPUs, GPUs) the env runners and learner actors reserve (the driver reserves none)."""
    cpus = settings.env_runners * settings.cpus_per_env_runner + settings.learners * 1.0
    gpus = settings.gpus_per_learner * max(settings.learners, 1)
    return cpus, gpus


def check_resources(settings: RllibConfig, cpus: float, gpus: float, where: str) -> None:
    need_cpus, need_gpus = needed_resources(settings)
    if need_cpus > cpus:
        raise RllibSetupError(
            f"{settings.env_runners} env runner(s) x {settings.cpus_per_env_runner:g} CPU + {settings.learners} "
            f"learner(s) need {need_cpus:g} CPUs, but {where} has {cpus:g}; lower rllib.env_runners or "
            "rllib.cpus_per_env_runner, or join a bigger cluster with --address")
    if need_gpus > gpus:
        raise RllibSetupError(f"rllib.gpus_per_learner asks for {need_gpus:g} GPUs, but {where} has {gpus:g}")


def start_ray(settings: RllibConfig, address: str | None) -> bool:
    """Connect to (or start) Ray after the checks; True if this call started it."""
    import ray

    if ray.is_initialized():
        return False
    if address is None and settings.num_cpus is not None:  # checked before paying for a start
        check_resources(settings, settings.num_cpus, float("inf"), f"the local Ray runtime (num_cpus={settings.num_cpus})")
    if address is not None:
        check_reachable(address)
    ray.init(address=address, num_cpus=settings.num_cpus if address is None else None,
             include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    return True


def check_agents(config: ExperimentConfig) -> None:
    """Every agent spec the run will build, built once here: a typo fails before Ray starts."""
    from agents.registry import make_agent

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


def build_algo_config(config: ExperimentConfig) -> Any:
    """The PPOConfig of an experiment: env, modules, mapping, resources, hyperparameters."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec

    from experiments.rllib_env import MaskAudit, TacocatMultiAgentEnv
    from experiments.rllib_module import FixedAgentModule, MaskedPPOModule

    settings, algo = config.rllib, config.algo
    assert settings is not None
    opponents = [(o.agent, o.weight) for o in config.opponents] if settings.selfplay_fraction < 1 else []
    specs = {LEARNER: RLModuleSpec(module_class=MaskedPPOModule, model_config={
        "fcnet_hiddens": list(algo.net_arch), "fcnet_activation": algo.activation,
        "head_fcnet_hiddens": [], "vf_share_layers": False})}
    for column, (spec, _) in enumerate(opponents):
        specs[f"opponent_{column}"] = RLModuleSpec(module_class=FixedAgentModule,
                                                   model_config={"column": column, "spec": spec})
    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)  # RLModule, ConnectorV2
        .environment(TacocatMultiAgentEnv, env_config={"rules": dict(config.rules),
                                                       "opponents": [spec for spec, _ in opponents]},
                     disable_env_checking=True)  # the checker samples unmasked actions
        .framework("torch", torch_compile_learner=False)
        .env_runners(num_env_runners=settings.env_runners, num_envs_per_env_runner=settings.envs_per_env_runner,
                     num_cpus_per_env_runner=settings.cpus_per_env_runner)
        .learners(num_learners=settings.learners, num_gpus_per_learner=settings.gpus_per_learner)
        .multi_agent(policies=set(specs), policy_mapping_fn=make_policy_mapping(settings, opponents),
                     policies_to_train=[LEARNER])
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs=specs))
        .training(lr=algo.learning_rate, gamma=algo.gamma, lambda_=algo.gae_lambda, clip_param=algo.clip_range,
                  entropy_coeff=algo.ent_coef, vf_loss_coeff=algo.vf_coef, grad_clip=algo.max_grad_norm,
                  num_epochs=algo.n_epochs, minibatch_size=algo.batch_size,
                  train_batch_size_per_learner=settings.train_batch_size)
        .callbacks(MaskAudit)
        .debugging(seed=config.seed, log_level="ERROR")
        .reporting(metrics_num_episodes_for_smoothing=100)
    )


# ---------------------------------------------------------------------------------------
# export: the learner as a numpy policy file (no code is unpickled on load)
# ---------------------------------------------------------------------------------------
def export_policy(module: Any, path: Path, config: ExperimentConfig, timesteps: int) -> Path:
    """The actor MLP of a MaskedPPOModule as a `tacocat-mlp-v1` file (`agents.rllib_agent`)."""
    import torch

    from agents.policy_file import save_policy

    linears = [m for part in (module.encoder.actor_encoder, module.pi) for m in part.modules()
               if isinstance(m, torch.nn.Linear)]
    layers = [(layer.weight.detach().cpu().numpy(), layer.bias.detach().cpu().numpy()) for layer in linears]
    return save_policy(path, layers, activation=config.algo.activation, rules_config=config.rules_config,
                       algorithm="RLlib PPO", experiment=config.name, seed=config.seed, timesteps=timesteps)


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


def progress_row(result: dict[str, Any], iteration: int, timesteps: int, seconds: float, sampled: int) -> dict:
    learner = _get(result, "learners", LEARNER) or {}
    return {
        "iteration": iteration, "timesteps": timesteps,
        "episodes": _get(result, "env_runners", "num_episodes_lifetime"),
        # summed over the seats the learner played: 0 in a self-play episode
        "learner_return_mean": _get(result, "env_runners", "module_episode_returns_mean", LEARNER),
        "episode_len_mean": _get(result, "env_runners", "episode_len_mean"),
        "env_steps_per_s": sampled / seconds if seconds > 0 else None, "iteration_s": seconds,
        "policy_loss": learner.get("policy_loss"), "vf_loss": learner.get("vf_loss"),
        "entropy": learner.get("entropy"),
        "actions_sent": _get(result, "env_runners", "actions_sent"),
        "masked_actions_sent": _get(result, "env_runners", "masked_actions_sent"),
    }


def latest_checkpoint(run_dir: Path) -> tuple[Path, dict] | None:
    """The newest checkpoint whose marker (written last) says it is complete."""
    markers = sorted((run_dir / CHECKPOINTS).glob("step_*.json"), key=lambda p: int(p.stem.split("_")[1]))
    for marker in reversed(markers):
        folder = marker.with_suffix("")
        if folder.is_dir():
            return folder, json.loads(marker.read_text())
    return None


def save_checkpoint(algo: Any, run_dir: Path, state: dict[str, Any], keep: int = 2) -> Path:
    folder = run_dir / CHECKPOINTS / f"step_{state['timesteps']}"
    algo.save_to_path(str(folder.resolve()))
    marker = folder.with_suffix(".json")
    marker.with_suffix(".tmp").write_text(json.dumps(state))
    marker.with_suffix(".tmp").replace(marker)
    old = sorted((run_dir / CHECKPOINTS).glob("step_*.json"), key=lambda p: int(p.stem.split("_")[1]))[:-keep]
    for stale in old:
        stale.unlink()
        shutil.rmtree(stale.with_suffix(""), ignore_errors=True)
    return folder


def _truncate_csv(path: Path, fields: list[str], key: str, up_to: int) -> None:
    if not path.exists():
        return
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(float(r[key])) <= up_to]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def _append_csv(path: Path, fields: list[str], rows: list[dict]) -> None:
    new = not path.exists()
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerows(rows)


def evaluate_policy(policy: Path, config: ExperimentConfig, timesteps: int, agent: str = "rllib") -> list[dict[str, Any]]:
    """Duplicate matches of the exported policy (played by agent `agent`: rllib or league)
    against `eval.opponents` (callbacks.py's rows)."""
    from agents.evaluation import match

    rows = []
    for opponent in config.eval.opponents:
        result = match(f"{agent}:path={policy}", opponent, deal_pairs=config.eval.deal_pairs, seed=config.eval.seed,
                       workers=1, config=config.rules_config, progress=False)
        rows.append({"timesteps": timesteps, "opponent": opponent, "win_rate": result.win_rate_a,
                     "ci_low": result.ci_low, "ci_high": result.ci_high, "deal_pairs": config.eval.deal_pairs})
    return rows


# ---------------------------------------------------------------------------------------
# train
# ---------------------------------------------------------------------------------------
def train_rllib(config: ExperimentConfig | None = None, *, resume: Path | None = None, address: str | None = None,
                progress: bool = True) -> Path:
    """Train (or resume) an RLlib run and return its run directory."""
    from experiments.callbacks import EVAL_FIELDS
    from experiments.run_dir import load_run_config, new_run_dir, run_metadata

    require_ray()
    if resume is not None:
        run_dir = Path(resume)
        config = load_run_config(run_dir)
    if config is None or config.rllib is None:
        raise ValueError("train_rllib() needs a config with backend: rllib, or resume=RUN_DIR")
    settings = config.rllib
    check_agents(config)
    target = resolve_address(address, settings)
    started = start_ray(settings, target)
    try:
        import ray

        resources = ray.cluster_resources()
        check_resources(settings, resources.get("CPU", 0.0), resources.get("GPU", 0.0),
                        "the Ray cluster" if target else "the local Ray runtime")
        if resume is None:
            run_dir = new_run_dir(config)
            (run_dir / "config.yaml").write_text(config.to_yaml())
            meta = run_metadata(config)
            meta["versions"]["ray"] = ray.__version__
            meta["ray"] = {"address": target or "local", "resources": resources}
            (run_dir / "run.json").write_text(json.dumps(meta, indent=2))
        return _train_loop(config, run_dir, resume is not None, progress, EVAL_FIELDS)
    finally:
        if started:
            ray.shutdown()


def _train_loop(config: ExperimentConfig, run_dir: Path, resuming: bool, progress: bool, eval_fields: list[str]) -> Path:
    import torch
    from torch.utils.tensorboard import SummaryWriter
    from tqdm.auto import tqdm

    from experiments.curves import plot_learning_curve

    torch.set_num_threads(config.torch_threads)
    algo = build_algo_config(config).build_algo()
    timesteps, iteration = 0, 0
    found = latest_checkpoint(run_dir) if resuming else None
    if found is not None:
        folder, state = found
        algo.restore_from_path(str(folder.resolve()))
        timesteps, iteration = state["timesteps"], state["iteration"]
    for name, fields, key in (("progress.csv", PROGRESS_FIELDS, "timesteps"), ("eval.csv", eval_fields, "timesteps")):
        if resuming:
            _truncate_csv(run_dir / name, fields, key, timesteps)
    writer = SummaryWriter(str(run_dir / "tb"))
    next_checkpoint = (timesteps // config.checkpoint_every + 1) * config.checkpoint_every
    next_eval = (timesteps // config.eval.every + 1) * config.eval.every
    bar = tqdm(total=config.total_timesteps, initial=timesteps, unit="step", disable=not progress, dynamic_ncols=True)
    try:
        while timesteps < config.total_timesteps:
            t0 = time.perf_counter()
            result = algo.train()
            seconds = time.perf_counter() - t0
            sampled = int(_get(result, "env_runners", "num_env_steps_sampled") or 0)
            timesteps += sampled
            iteration += 1
            row = progress_row(result, iteration, timesteps, seconds, sampled)
            _append_csv(run_dir / "progress.csv", PROGRESS_FIELDS, [row])
            for key, value in row.items():
                if key not in ("iteration", "timesteps") and isinstance(value, (int, float)):
                    writer.add_scalar(f"rllib/{key}", value, timesteps)
            bar.update(sampled)
            bar.set_postfix_str(f"steps/s={row['env_steps_per_s']:.0f}")
            done = timesteps >= config.total_timesteps
            if timesteps >= next_eval or done:
                next_eval = (timesteps // config.eval.every + 1) * config.eval.every
                policy = export_policy(algo.get_module(LEARNER), run_dir / POLICY_FILE, config, timesteps)
                rows = evaluate_policy(policy, config, timesteps)
                _append_csv(run_dir / "eval.csv", eval_fields, rows)
                for r in rows:
                    writer.add_scalar(f"eval/win_rate_{r['opponent']}", r["win_rate"], timesteps)
            if timesteps >= next_checkpoint or done:
                next_checkpoint = (timesteps // config.checkpoint_every + 1) * config.checkpoint_every
                save_checkpoint(algo, run_dir, {"timesteps": timesteps, "iteration": iteration})
        export_policy(algo.get_module(LEARNER), run_dir / POLICY_FILE, config, timesteps)
        plot_learning_curve(run_dir)
        (run_dir / "final.json").write_text(json.dumps({"timesteps": timesteps, "iterations": iteration}, indent=2))
    finally:
        bar.close()
        writer.close()
        algo.stop()
    return run_dir
