"""Several processes, on one host or several, as one JAX computation (`jax.distributed`).

`tacocat train` joins them before anything else touches JAX (`join`), from, in this order:
its options (`--coordinator HOST:PORT --num-processes N --process-id I`), the environment
(`TACOCAT_COORDINATOR`, `TACOCAT_NUM_PROCESSES`, `TACOCAT_PROCESS_ID`), or a Slurm job step of
several tasks (`SLURM_NTASKS` > 1: JAX reads the coordinator, count and id from Slurm's
variables itself). Nothing given: one process, as before.

Every process runs the same command; the devices of all of them form the league's mesh
(experiments/league/devices.py). Process 0 writes the run (checkpoints, logs, exports,
evaluations); the others train and write nothing (`experiments.common.loop`). A process that
cannot reach the coordinator, or whose partners do not come, stops with one line within
`TIMEOUT_S` seconds instead of waiting; every process checks that all were started with the
same config (`check_same_config`: process 0's is the reference).
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass

#: how long a process waits for the coordinator and its partners
TIMEOUT_S = 20
ENVIRONMENT = {"coordinator": "TACOCAT_COORDINATOR", "num_processes": "TACOCAT_NUM_PROCESSES",
               "process_id": "TACOCAT_PROCESS_ID"}


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


def cluster_from(coordinator: str | None = None, num_processes: int | None = None, process_id: int | None = None,
                 environ: Mapping[str, str] | None = None) -> Cluster | None:
    """The cluster the options, else the environment, else Slurm describe; None for one
    process. ValueError, one line, for an incomplete or impossible description."""
    environ = os.environ if environ is None else environ
    given = {"coordinator": coordinator, "num_processes": num_processes, "process_id": process_id}
    source, names = "command line", {"coordinator": "--coordinator", "num_processes": "--num-processes",
                                     "process_id": "--process-id"}
    if all(v is None for v in given.values()):
        given = {k: environ.get(v) or None for k, v in ENVIRONMENT.items()}
        source, names = "environment", ENVIRONMENT
    if all(v is None for v in given.values()):
        tasks = environ.get("SLURM_NTASKS") or environ.get("SLURM_NPROCS")
        if tasks and _integer(tasks, "SLURM_NTASKS") > 1 and "SLURM_PROCID" in environ:
            return Cluster(None, None, None, "Slurm")
        return None
    missing = [names[k] for k, v in given.items() if v is None]
    if missing:
        raise ValueError(f"several processes need the coordinator's address, the number of processes and this "
                         f"process's id; the {source} lacks {', '.join(missing)}")
    count = _integer(given["num_processes"], names["num_processes"])
    index = _integer(given["process_id"], names["process_id"])
    if count < 1 or not 0 <= index < count:
        raise ValueError(f"{names['process_id']} {index} is not one of the {count} processes (0 to {count - 1})")
    address = str(given["coordinator"])
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{names['coordinator']} {address!r} is not HOST:PORT")
    return Cluster(address, count, index, source)


_joined: Cluster | None = None


def join(cluster: Cluster, timeout_s: int = TIMEOUT_S) -> None:
    """`jax.distributed.initialize` for `cluster`, before JAX starts a backend; ValueError, one
    line, if the coordinator or the partners are not there within `timeout_s` seconds."""
    global _joined
    import jax

    if cluster.coordinator is not None and cluster.process_id != 0:
        # XLA's client aborts the process (no Python error) when the coordinator does not answer
        _wait_for(cluster, timeout_s)
    elif cluster.coordinator is not None:  # process 0: if the others do not come, XLA's client aborts
        print(f"process 0: waiting up to {timeout_s} s for the other {cluster.num_processes - 1} process(es) "
              f"at {cluster.coordinator}", file=sys.stderr, flush=True)
    try:
        if cluster.coordinator is None:
            jax.distributed.initialize(initialization_timeout=timeout_s)
        else:
            jax.distributed.initialize(cluster.coordinator, cluster.num_processes, cluster.process_id,
                                       initialization_timeout=timeout_s)
    except Exception as err:  # XLA's runtime errors have no common public type
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ValueError(f"could not join the JAX processes ({cluster.describe()}, from the {cluster.source}) "
                         f"within {timeout_s} s: is the coordinator reachable and every process started? "
                         f"({first[:200]})") from None
    _joined = cluster


def _wait_for(cluster: Cluster, timeout_s: int) -> None:
    """Wait until the coordinator accepts connections; ValueError, one line, after `timeout_s` s."""
    import socket
    import time

    host, _, port = str(cluster.coordinator).rpartition(":")
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=2):
                return
        except OSError as err:
            if time.monotonic() > deadline:
                raise ValueError(f"could not join the JAX processes ({cluster.describe()}, from the {cluster.source}): "
                                 f"no coordinator answered at {cluster.coordinator} within {timeout_s} s ({err}); "
                                 "start process 0 there, or check the address") from None
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
        raise ValueError(f"process 0 refuses the run: the config of process(es) {', '.join(map(str, differ))} differs "
                         f"from process 0's (sha256 {every[0].tobytes().hex()[:12]}...); start every process with the "
                         "same --config, --seed and --set")
