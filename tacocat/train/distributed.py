"""Several processes, on one host or several, as one JAX computation (`jax.distributed`).

`tacocat train` joins them before anything else touches JAX (`join`), from, in this order:
its options (`--coordinator HOST:PORT --num-processes N --process-id I`), the environment
(`TACOCAT_COORDINATOR`, `TACOCAT_NUM_PROCESSES`, `TACOCAT_PROCESS_ID`), or a Slurm job step of
several tasks (`SLURM_NTASKS` > 1: JAX reads the coordinator, count and id from Slurm's
variables itself). Nothing given: one process, as before.

Every process runs the same command; the devices of all of them form the league's mesh
(tacocat/train/league/devices.py). Process 0 writes the run (checkpoints, logs, exports,
evaluations); the others train and write nothing (`tacocat.train.loop`). A process that
cannot reach the coordinator, or whose partners do not come, stops with one line within its
timeout (`TIMEOUT_S` seconds, `tacocat train --join-timeout`) instead of waiting; every
process checks that all were started with the same config (`check_same_config`: process 0's is
the reference).

XLA's client ends the whole process (a fatal error and a C++ stack trace, no Python exception)
when the coordinator or a partner does not come in time, so the processes meet before JAX does,
on the coordinator's port: process 0 listens there (`_gather`) until every other process has
said which one it is (`_greet`), then closes the port and answers each, and only then do all
call `jax.distributed.initialize`, whose service takes the port over.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass

#: how long a process waits for the coordinator and its partners
TIMEOUT_S = 20
ENVIRONMENT = {
    "coordinator": "TACOCAT_COORDINATOR",
    "num_processes": "TACOCAT_NUM_PROCESSES",
    "process_id": "TACOCAT_PROCESS_ID",
}


@dataclass(frozen=True)
class Cluster:
    """Where a process finds its partners: the coordinator's address, their count and its id
    (all None under Slurm, which JAX reads itself), and where that was read."""

    coordinator: str | None
    num_processes: int | None
    process_id: int | None
    source: str

    def describe(self) -> str:
        if self.coordinator is None:
            return "the Slurm job step's processes"
        return f"process {self.process_id} of {self.num_processes}, coordinator {self.coordinator}"


def _integer(value: str | int, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{what} must be an integer, not {value!r}") from None


def cluster_from(
    coordinator: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> Cluster | None:
    """The cluster the options, else the environment, else Slurm describe; None for one
    process. ValueError, one line, for an incomplete or impossible description."""
    environ = os.environ if environ is None else environ
    given = {"coordinator": coordinator, "num_processes": num_processes, "process_id": process_id}
    source, names = (
        "command line",
        {"coordinator": "--coordinator", "num_processes": "--num-processes", "process_id": "--process-id"},
    )
    if all(v is None for v in given.values()):
        given = {k: environ.get(v) or None for k, v in ENVIRONMENT.items()}
        source, names = "environment", ENVIRONMENT
    if all(v is None for v in given.values()):
        tasks = environ.get("SLURM_NTASKS") or environ.get("SLURM_NPROCS")
        if tasks and _integer(tasks, "SLURM_NTASKS") > 1 and "SLURM_PROCID" in environ:
            return Cluster(None, None, None, "Slurm")
        return None
    address_given, count_given, index_given = given["coordinator"], given["num_processes"], given["process_id"]
    if address_given is None or count_given is None or index_given is None:
        missing = [names[k] for k, v in given.items() if v is None]
        raise ValueError(
            f"several processes need the coordinator's address, the number of processes and this "
            f"process's id; the {source} lacks {', '.join(missing)}"
        )
    count = _integer(count_given, names["num_processes"])
    index = _integer(index_given, names["process_id"])
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"{names['process_id']} {index} is not one of the {count} processes (0 to {count - 1})")
    address = str(address_given)
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{names['coordinator']} {address!r} is not HOST:PORT")
    return Cluster(address, count, index, source)


_joined: Cluster | None = None
#: a process's greeting to process 0 (`_greet`: followed by the process count and its id) and
#: process 0's answer once every process came (`_gather`)
HELLO, GO = b"tacocat-join", b"tacocat-go\n"


def join(cluster: Cluster, timeout_s: int = TIMEOUT_S) -> None:
    """`jax.distributed.initialize` for `cluster`, before JAX starts a backend; ValueError, one
    line, if the coordinator or the partners are not there within `timeout_s` seconds."""
    global _joined
    import jax

    if cluster.coordinator is not None and cluster.process_id == 0:
        _gather(cluster, timeout_s)
    elif cluster.coordinator is not None:
        _greet(cluster, timeout_s)
    try:
        if cluster.coordinator is None:
            jax.distributed.initialize(initialization_timeout=timeout_s)
        else:
            jax.distributed.initialize(
                cluster.coordinator, cluster.num_processes, cluster.process_id, initialization_timeout=timeout_s
            )
    except Exception as err:  # XLA's runtime errors have no common public type
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(
            f"could not join the JAX processes ({cluster.describe()}, from the {cluster.source}) "
            f"within {timeout_s} s: is the coordinator reachable and every process started? "
            f"({first[:200]})"
        ) from None
    _joined = cluster


def _failed(cluster: Cluster, why: str) -> ValueError:
    return ValueError(f"could not join the JAX processes ({cluster.describe()}, from the {cluster.source}): {why}")


def _listen(cluster: Cluster) -> socket.socket:
    """Process 0's listening socket on the coordinator's port, every interface."""
    port = int(str(cluster.coordinator).rpartition(":")[2])
    try:
        if socket.has_dualstack_ipv6():
            return socket.create_server(("", port), family=socket.AF_INET6, dualstack_ipv6=True)
        return socket.create_server(("", port))
    except OSError as err:
        raise _failed(cluster, f"cannot listen on port {port} ({err.strerror or err})") from None


def _gather(cluster: Cluster, timeout_s: int) -> None:
    """Process 0: wait on the coordinator's port until every other process has greeted it, then
    free the port and tell them; ValueError, one line, after `timeout_s` s or on a greeting from
    a process of another cluster."""
    count = int(cluster.num_processes)  # type: ignore[arg-type]  # not Slurm: set
    print(
        f"process 0: waiting up to {timeout_s} s for the other {count - 1} process(es) at {cluster.coordinator}",
        file=sys.stderr,
        flush=True,
    )
    deadline = time.monotonic() + timeout_s
    partners: dict[int, socket.socket] = {}
    try:
        with _listen(cluster) as server:
            while len(partners) < count - 1:
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = sorted(set(range(1, count)) - set(partners))
                    raise _failed(
                        cluster,
                        f"process(es) {', '.join(map(str, missing))} did not come within "
                        f"{timeout_s} s; start every process with the same --coordinator and "
                        "--num-processes, or raise --join-timeout",
                    )
                server.settimeout(left)
                try:
                    conn, _ = server.accept()
                except TimeoutError:
                    continue
                try:
                    index = _greeting(conn, cluster, deadline, partners)
                except ValueError:
                    conn.close()
                    raise
                if index is None:
                    conn.close()
                else:
                    partners[index] = conn
        for conn in partners.values():  # the port is free now: JAX's service listens on it next
            conn.sendall(GO)
    finally:
        for conn in partners.values():
            conn.close()


def _greeting(conn: socket.socket, cluster: Cluster, deadline: float, partners: Mapping[int, object]) -> int | None:
    """The id of the process greeting on `conn` (None: not a greeting); ValueError, one line,
    for a process of another cluster or one already among `partners`."""
    conn.settimeout(max(0.1, min(5.0, deadline - time.monotonic())))
    try:
        words = conn.recv(64).split()
    except OSError:
        return None
    if len(words) != 3 or words[0] != HELLO or not all(w.isdigit() for w in words[1:]):
        return None
    count, index = int(words[1]), int(words[2])
    if count != cluster.num_processes or not 0 < index < count:
        raise _failed(
            cluster,
            f"a process joined as process {index} of {count}, not one of this run's "
            f"{cluster.num_processes} processes; start every process with the same "
            "--num-processes",
        )
    if index in partners:
        raise _failed(cluster, f"two processes joined as process {index}")
    return index


def _greet(cluster: Cluster, timeout_s: int) -> None:
    """A process other than 0: greet process 0 on the coordinator's port and wait for its
    answer, then for JAX's service there; ValueError, one line, after `timeout_s` s each."""
    with _connect(cluster, timeout_s) as conn:
        conn.sendall(b" ".join([HELLO, str(cluster.num_processes).encode(), str(cluster.process_id).encode()]))
        conn.settimeout(timeout_s + 5)  # process 0 waits up to its own timeout for the others
        try:
            answer = conn.recv(len(GO))
        except OSError:
            answer = b""
    if answer != GO:
        raise _failed(
            cluster, f"process 0 at {cluster.coordinator} stopped waiting before every process came (see its message)"
        )
    _connect(cluster, timeout_s).close()


def _connect(cluster: Cluster, timeout_s: int) -> socket.socket:
    """A connection to the coordinator's port, tried until it accepts; ValueError, one line,
    after `timeout_s` s."""
    host, _, port = str(cluster.coordinator).rpartition(":")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return socket.create_connection((host.strip("[]"), int(port)), timeout=2)
        except OSError as err:
            if time.monotonic() > deadline:
                raise _failed(
                    cluster,
                    f"no coordinator answered at {cluster.coordinator} within {timeout_s} s "
                    f"({err}); start process 0 there, or check the address",
                ) from None
            time.sleep(0.5)


def joined() -> Cluster | None:
    """The cluster this process joined (None: one process)."""
    return _joined


def check_same_config(text: str) -> None:
    """ValueError, one line, on every process, unless every process's config `text` (the resolved
    config) is process 0's: process 0 refuses a run whose processes were started differently. A
    collective: every process must call it."""
    import jax
    import numpy as np
    from jax.experimental import multihost_utils

    if jax.process_count() == 1:
        return
    digest = np.frombuffer(hashlib.sha256(text.encode()).digest(), np.uint8)
    every = np.asarray(multihost_utils.process_allgather(digest)).reshape(jax.process_count(), -1)
    differ = [i for i in range(len(every)) if not np.array_equal(every[i], every[0])]
    if differ:
        raise ValueError(
            f"process 0 refuses the run: the config of process(es) {', '.join(map(str, differ))} differs "
            f"from process 0's (sha256 {every[0].tobytes().hex()[:12]}...); start every process with the "
            "same --config, --seed and --set"
        )
