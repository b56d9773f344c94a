"""The league over several processes (tacocat/train/distributed.py, `tacocat train
--coordinator ... --num-processes ... --process-id ...`): 2 processes of 1 CPU device each,
over localhost, train the parameters that 1 process with 2 devices trains, process 0 alone
writes the run; a process that cannot reach its coordinator, and process 0 without its
partners, stop with one line within their timeout;
processes started with different configs are refused by process 0 before anything is written;
and the cluster's description is read from the options, the environment or Slurm, or refused
with one line.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tacocat.train.distributed import ENVIRONMENT, Cluster, cluster_from

ROOT = Path(__file__).resolve().parents[1]
SMOKE = ROOT / "tests" / "support" / "configs" / "league_smoke.yaml"
#: league_smoke.yaml with highcard as the one fixed opponent, blocks that split over 2 devices
#: (8 + 4 + 4 + 8 games), evaluated once (at the end)
TINY = [
    "--set",
    "n_envs=24",
    "--set",
    "opponents=[{agent: highcard, weight: 1.0}]",
    "--set",
    "eval.every=100000",
    "--no-progress",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tacocat(args: list[str], runs: Path, devices: int = 1) -> subprocess.Popen:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    for name in ENVIRONMENT.values():
        env.pop(name, None)
    return subprocess.Popen(
        [sys.executable, "-m", "tacocat.cli.app", "train", "--config", str(SMOKE), "--set", f"run_root={runs}", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen, timeout: float = 400) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def policy_arrays(runs: Path) -> dict[str, np.ndarray]:
    (run,) = runs.iterdir()
    with np.load(run / "policy.npz", allow_pickle=False) as data:
        return {k: data[k] for k in data.files if k != "metadata"}


def cluster_args(port: int, index: int, count: int = 2) -> list[str]:
    return ["--coordinator", f"127.0.0.1:{port}", "--num-processes", str(count), "--process-id", str(index)]


@pytest.mark.slow  # three smoke trainings in subprocesses at once, about 40 s
def test_two_processes_train_what_two_devices_in_one_process_train(tmp_path: Path) -> None:
    port = free_port()
    apart = [tacocat([*TINY, "--devices", "2", *cluster_args(port, i)], tmp_path / "apart") for i in (0, 1)]
    together = tacocat([*TINY, "--devices", "2"], tmp_path / "together", devices=2)
    results = [finish(p) for p in (*apart, together)]
    for code, _, err in results:
        assert code == 0, err[-2000:]
    assert "process 0 writes the run" in results[1][1]
    (run,) = (tmp_path / "apart").iterdir()  # one run directory: process 0's
    assert (run / "checkpoints").is_dir() and (run / "progress.csv").is_file()
    apart_policy, together_policy = policy_arrays(tmp_path / "apart"), policy_arrays(tmp_path / "together")
    assert apart_policy.keys() == together_policy.keys()
    for name in together_policy:
        np.testing.assert_allclose(apart_policy[name], together_policy[name], rtol=0, atol=1e-6, err_msg=name)


def test_an_unreachable_coordinator_is_one_line_within_its_timeout() -> None:
    """The CLI's join with a 3 s timeout instead of its 20 s (`distributed.TIMEOUT_S`): a clear
    ValueError (the CLI prints it as one `error:` line) in time, not XLA's abort or a hang."""
    port = free_port()
    script = (
        "from tacocat.train.distributed import Cluster, join\n"
        f"join(Cluster('127.0.0.1:{port}', 2, 1, 'command line'), timeout_s=3)"
    )
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert elapsed < 20, elapsed
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: could not join the JAX processes (process 1 of 2, coordinator 127.0.0.1:"), last
    assert f"no coordinator answered at 127.0.0.1:{port} within 3 s" in last, last


def test_process_0_without_its_partners_is_one_line_within_its_timeout(tmp_path: Path) -> None:
    """Issue 36: process 0 alone used to end in XLA's fatal error and a C++ stack trace; with
    --join-timeout 2 it says which processes did not come, in one line, and writes nothing."""
    port = free_port()
    code, out, err = finish(
        tacocat([*TINY, *cluster_args(port, 0, count=3), "--join-timeout", "2"], tmp_path / "runs"), timeout=120
    )
    assert code == 1, (out, err)
    assert err.splitlines() == [
        f"process 0: waiting up to 2 s for the other 2 process(es) at 127.0.0.1:{port}",
        f"error: could not join the JAX processes (process 0 of 3, coordinator 127.0.0.1:{port}, from the command "
        "line): process(es) 1, 2 did not come within 2 s; start every process with the same --coordinator and "
        "--num-processes, or raise --join-timeout",
    ], err
    assert not (tmp_path / "runs").exists()


def test_a_process_of_another_cluster_is_refused_by_process_0() -> None:
    """A greeting from a process started with another --num-processes: one line, at once."""
    port = free_port()
    script = (
        "from tacocat.train.distributed import Cluster, join\n"
        f"join(Cluster('127.0.0.1:{port}', 2, 0, 'command line'), timeout_s=60)"
    )
    process_0 = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert _listening(port)
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(b"tacocat-join 4 3")
        assert conn.recv(64) == b""  # process 0 hangs up
    _, err = process_0.communicate(timeout=60)
    assert process_0.returncode == 1
    assert err.strip().splitlines()[-1] == (
        "ValueError: could not join the JAX processes (process 0 of 2, coordinator 127.0.0.1:"
        f"{port}, from the command line): a process joined as process 3 of 4, not one of this run's 2 processes; "
        "start every process with the same --num-processes"
    ), err


def _listening(port: int) -> bool:
    """Wait until something accepts connections on `port` (process 0's greeting socket)."""
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.1)
    return False


def test_processes_with_different_configs_are_refused_by_process_0(tmp_path: Path) -> None:
    port = free_port()
    pair = [
        tacocat([*TINY, "--devices", "2", "--seed", str(seed), *cluster_args(port, i)], tmp_path / "runs")
        for i, seed in ((0, 0), (1, 1))
    ]
    for code, out, err in (finish(p, timeout=120) for p in pair):
        assert code == 1, (out, err)
        assert "error: process 0 refuses the run: the config of process(es) 1 differs from process 0's" in err, err
        assert "Traceback" not in err
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------------------------------------------------
# where the cluster is described
# ---------------------------------------------------------------------------------------
def test_the_options_come_first_then_the_environment_then_slurm() -> None:
    env = {
        "TACOCAT_COORDINATOR": "head:1234",
        "TACOCAT_NUM_PROCESSES": "4",
        "TACOCAT_PROCESS_ID": "3",
        "SLURM_NTASKS": "8",
        "SLURM_PROCID": "5",
    }
    assert cluster_from("a:1", 2, 1, env) == Cluster("a:1", 2, 1, "command line")
    assert cluster_from(environ=env) == Cluster("head:1234", 4, 3, "environment")
    slurm = {k: v for k, v in env.items() if k.startswith("SLURM")}
    assert cluster_from(environ=slurm) == Cluster(None, None, None, "Slurm")
    assert cluster_from(environ={"SLURM_NTASKS": "1", "SLURM_PROCID": "0"}) is None
    assert cluster_from(environ={}) is None


@pytest.mark.parametrize(
    "args, env, fragment",
    [
        (("a:1", None, 0), {}, "the command line lacks --num-processes"),
        ((None, None, None), {"TACOCAT_COORDINATOR": "a:1"}, "lacks TACOCAT_NUM_PROCESSES, TACOCAT_PROCESS_ID"),
        (("a:1", 2, 2), {}, "--process-id 2 is not one of the 2 processes"),
        (("nohost", 2, 0), {}, "--coordinator 'nohost' is not HOST:PORT"),
        (("a:99999", 2, 0), {}, "is not HOST:PORT"),
        (
            (None, None, None),
            {"TACOCAT_COORDINATOR": "a:1", "TACOCAT_NUM_PROCESSES": "two", "TACOCAT_PROCESS_ID": "0"},
            "TACOCAT_NUM_PROCESSES must be an integer",
        ),
    ],
)
def test_an_incomplete_or_impossible_cluster_is_one_line(args: tuple, env: dict, fragment: str) -> None:
    with pytest.raises(ValueError) as err:
        cluster_from(*args, environ=env)
    assert fragment in str(err.value) and "\n" not in str(err.value), str(err.value)
