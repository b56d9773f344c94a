"""The Ray runtime of `backend: rllib`: is Ray installed, which cluster (`--address`,
`RAY_ADDRESS` or `rllib.address`, else a local runtime), is it reachable (a Ray handshake
within seconds, where `ray.init` would retry for minutes), and does it have the CPUs and GPUs
the env runners and learners need. Every failure is one RllibSetupError line."""

from __future__ import annotations

import logging
import os
import re

from tacocat.train.rllib.config import RllibConfig


class RllibSetupError(RuntimeError):
    """Ray missing, a cluster out of reach, or not enough resources: one line that says which."""


# ---------------------------------------------------------------------------------------
# Ray runtime
# ---------------------------------------------------------------------------------------
def require_ray() -> None:
    try:
        import ray  # noqa: F401 (imported to check that it is installed)
        from ray.rllib.algorithms.ppo import PPOConfig  # noqa: F401 (and that RLlib is)
    except ImportError as err:
        raise RllibSetupError(
            f"backend 'rllib' needs Ray RLlib ({err}); install it with: pip install -e '.[rllib]'"
        ) from None


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
        raise RllibSetupError(
            f"Ray address {address!r} must look like host:port (a port of 1 to 65535), ray://host:port or 'auto'"
        )
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
                gcs_service_pb2.GetClusterIdRequest(), timeout=timeout_s
            )
            if reply.status.code != 0 or not reply.cluster_id:
                raise RllibSetupError(
                    f"the Ray cluster at {address} did not give its cluster id (status {reply.status.code})"
                )
    except grpc.RpcError as err:
        code = err.code()
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            why = f"no Ray handshake within {timeout_s:g} s: something there accepts connections but is not Ray"
        elif code == grpc.StatusCode.UNIMPLEMENTED:
            why = "a gRPC service that is not Ray's " + ("client server" if scheme else "GCS") + " answered"
        else:
            why = f"{code.name}: {' '.join(str(err.details()).split())[:200]}"
        port_hint = "the Ray Client port (10001 by default)" if scheme else "the GCS port (6379 by default)"
        raise RllibSetupError(
            f"cannot reach the Ray cluster at {address} ({why}); is `ray start --head` running "
            f"there, and is {port} {port_hint}?"
        ) from None
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
            "rllib.cpus_per_env_runner, or join a bigger cluster with --address"
        )
    if need_gpus > gpus:
        raise RllibSetupError(f"rllib.gpus_per_learner asks for {need_gpus:g} GPUs, but {where} has {gpus:g}")


def start_ray(settings: RllibConfig, address: str | None) -> bool:
    """Connect to (or start) Ray after the checks; True if this call started it."""
    import ray

    if ray.is_initialized():
        return False
    if address is None and settings.num_cpus is not None:  # checked before paying for a start
        check_resources(
            settings, settings.num_cpus, float("inf"), f"the local Ray runtime (num_cpus={settings.num_cpus})"
        )
    if address is not None:
        check_reachable(address)
    ray.init(
        address=address,
        num_cpus=settings.num_cpus if address is None else None,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    return True
