"""The RLlib backend's `--address` check: a Ray handshake with a timeout, so that a port that
is not Ray's is refused in seconds (ray.init would retry for minutes). The servers here are
local stand-ins on 127.0.0.1: raw TCP servers that say nothing or send garbage, and gRPC
servers that answer as Ray's GCS or Ray Client server would, or as another service."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc, ray_client_pb2, ray_client_pb2_grpc
from typer.testing import CliRunner

from support.sweep_cases.fakes import tcp_server
from tacocat.cli.app import app
from tacocat.train.config import load_experiment
from tacocat.train.rllib.ray_runtime import (
    HANDSHAKE_TIMEOUT_S,
    RllibSetupError,
    check_reachable,
    require_ray,
    start_ray,
)

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "rllib_smoke.yaml"
LIMIT_S = 10  # the bound on refusing a port that is not Ray's


class FakeGcs(gcs_service_pb2_grpc.NodeInfoGcsServiceServicer):
    def __init__(self, cluster_id: bytes) -> None:
        self.cluster_id = cluster_id

    def GetClusterId(self, request, context):
        return gcs_service_pb2.GetClusterIdReply(cluster_id=self.cluster_id)


class FakeRayClientServer(ray_client_pb2_grpc.RayletDriverServicer):
    def ClusterInfo(self, request, context):
        assert request.type == ray_client_pb2.ClusterInfoType.PING
        return ray_client_pb2.ClusterInfoResponse(json="{}")


@contextmanager
def grpc_server(add=None) -> Iterator[str]:
    """A gRPC server on 127.0.0.1 with the services `add(server)` registers (none: every call
    is UNIMPLEMENTED); yields its host:port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    if add is not None:
        add(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        server.stop(grace=None)


def refused_within_limit(address: str, **kwargs) -> str:
    started = time.perf_counter()
    with pytest.raises(RllibSetupError) as err:
        check_reachable(address, **kwargs)
    assert time.perf_counter() - started < LIMIT_S
    message = str(err.value)
    assert message.startswith(f"cannot reach the Ray cluster at {address} (") and "\n" not in message
    return message


def test_the_default_handshake_timeout_is_within_the_limit():
    assert 0 < HANDSHAKE_TIMEOUT_S < LIMIT_S


def test_a_port_that_accepts_and_says_nothing_is_refused_within_10_s():
    with tcp_server(None) as address:
        message = refused_within_limit(address)
    assert f"no Ray handshake within {HANDSHAKE_TIMEOUT_S:g} s" in message and "GCS port" in message


@pytest.mark.parametrize("garbage", [b"HTTP/1.1 200 OK\r\n\r\nhello", b"\x00" * 64, bytes(range(256)) * 4])
def test_a_port_that_sends_garbage_is_refused_within_10_s(garbage):
    with tcp_server(garbage) as address:
        message = refused_within_limit(address)
    assert "UNAVAILABLE" in message


def test_a_closed_port_and_an_unknown_host_are_refused():
    refused_within_limit("127.0.0.1:9")
    assert "UNAVAILABLE" in refused_within_limit("[::1]:9")  # an IPv6 address is tried, not refused as malformed
    assert "UNAVAILABLE" in refused_within_limit("nohost.invalid:6379")


def test_a_grpc_service_that_is_not_ray_is_named():
    with grpc_server() as address:
        assert "a gRPC service that is not Ray's GCS answered" in refused_within_limit(address)
        assert "not Ray's client server" in refused_within_limit(f"ray://{address}")


def test_a_gcs_that_answers_its_cluster_id_passes_and_one_without_an_id_is_refused():
    def add(cluster_id):
        return lambda server: gcs_service_pb2_grpc.add_NodeInfoGcsServiceServicer_to_server(FakeGcs(cluster_id), server)

    with grpc_server(add(b"\x01" * 28)) as address:
        check_reachable(address)
    with grpc_server(add(b"")) as address, pytest.raises(RllibSetupError, match="did not give its cluster id"):
        check_reachable(address)


def test_a_ray_client_server_that_answers_the_ping_passes():
    def add(server):
        ray_client_pb2_grpc.add_RayletDriverServicer_to_server(FakeRayClientServer(), server)

    with grpc_server(add) as address:
        check_reachable(f"ray://{address}")
    with tcp_server(None) as address:  # a silent port behind ray:// too (a short timeout: the same path)
        assert "no Ray handshake within 1 s" in refused_within_limit(f"ray://{address}", timeout_s=1.0)


@pytest.mark.parametrize(
    "address",
    [
        "nohost",
        "127.0.0.1:",
        ":6379",
        "127.0.0.1:http",
        "http://127.0.0.1:6379",
        "gcs://127.0.0.1:6379",
        "ray://",
        "127.0.0.1:0",
        "127.0.0.1:99999",
        "127.0.0.1:\uff16\uff13\uff17\uff19",
        "127.0.0.1:²",
        "127.0.0.1:6379\n",
        "a\x00b:6379",
        "a b:6379",
    ],
)
def test_a_malformed_address_is_refused_at_once(address):
    with pytest.raises(RllibSetupError, match="must look like host:port"):
        check_reachable(address)


def test_start_ray_refuses_a_silent_port_before_ray_starts():
    import ray

    with tcp_server(None) as address, pytest.raises(RllibSetupError, match="no Ray handshake"):
        start_ray(load_experiment(SMOKE).rllib, address)
    assert not ray.is_initialized()


def test_cli_a_silent_port_is_one_error_line_within_10_s_and_writes_nothing(tmp_path):
    require_ray()  # RLlib's import (seconds on a busy machine) is not the check's time
    with tcp_server(None) as address:
        started = time.perf_counter()
        result = CliRunner().invoke(
            app, ["train", "--config", str(SMOKE), "--set", f"run_root={tmp_path}", "--address", address]
        )
        elapsed = time.perf_counter() - started
    assert result.exit_code == 2 and elapsed < LIMIT_S, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot reach the Ray cluster at {address}"), result.output
    assert not list(tmp_path.iterdir())
