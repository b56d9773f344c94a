"""The league over several JAX devices (`league.devices`): where the batch's rows lie, the
device mesh, and moving the training state between the host and the devices.

Data parallel, as PureJaxRL and Stoix's Anakin, on `jax.shard_map` over a one-axis
`jax.sharding.Mesh`: every device plays `n_envs / devices` games, its share of every block of
the league's mixture (`mixture.split_rows`; each block's rows split evenly, so every device runs
the same program: each opponent on its own static slice of rows), and computes its share of
every minibatch's losses; the gradients are summed over the devices (`psum`, the means' shared
denominators are summed first), so the parameters, the optimizer state and the PRNG key are the
same on every device after every update.

The run is the one-device run, to float rounding: the rows stay the rows of the one-device
batch (a row's block, its opponent, its random numbers), only their place changes. Every
random draw of an iteration is made for the whole batch from the replicated key (a uniform
number or a key per row, `LAYOUT.mine`) and each device keeps its rows' draws; after the
rollout the trajectories are gathered (`all_gather`) into the one-device order, and every
device shuffles them with the same key and computes its part of each minibatch. What differs
is the order of the floating-point sums (the gradient's, the means'). A per-row draw costs one
threefry output per row, replicated on every device: the policy's sampler takes one uniform
number per row (`tacocat.game.batch.rollout.pick_by_logits`), not one per action.

Physical order: on the mesh, the per-row arrays (`env_state`, `seat`, `floor`) are held
device-major (device 0's rows, then device 1's; on each, its share of each block in block
order). `RowLayout.physical` maps them to the one-device (logical) order; checkpoints hold the
logical order, so a checkpoint is the same whatever `league.devices` wrote it.

Several processes (`jax.distributed`, tacocat/train/distributed.py): the mesh spans every
process's devices; the host arrays are the same on every process and become global arrays
(`place`), and the arrays read back (`fetch`) are gathered to every process.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from tacocat.agents.jax_ports import Block

#: the name of the mesh's one axis
AXIS = "devices"
#: the XLA flag that splits the host CPU into several devices
HOST_DEVICES_FLAG = "--xla_force_host_platform_device_count"


@dataclass(frozen=True)
class RowLayout:
    """The rows of the league's batch over `devices` devices: `blocks` (the one-device
    mixture, `mixture.split_rows`) each split into `devices` equal chunks, device d holding the
    d-th chunk of every block, in block order."""

    blocks: tuple[Block, ...]
    devices: int

    def __post_init__(self) -> None:
        uneven = [b for b in self.blocks if b.rows % self.devices]
        if uneven:
            raise ValueError(block_split_error(list(self.blocks), self.devices))

    @property
    def n_envs(self) -> int:
        return self.blocks[-1].stop

    @property
    def rows(self) -> int:
        """Rows on each device."""
        return self.n_envs // self.devices

    @property
    def local_blocks(self) -> tuple[Block, ...]:
        """The blocks as each device sees its rows (the same on every device)."""
        out, start = [], 0
        for b in self.blocks:
            chunk = b.rows // self.devices
            out.append(Block(b.kind, b.index, start, start + chunk))
            start += chunk
        return tuple(out)

    @property
    def physical(self) -> np.ndarray:
        """The logical (one-device) row of each physical row (device-major)."""
        return np.concatenate(
            [
                b.start + np.arange(d * b.rows // self.devices, (d + 1) * b.rows // self.devices)
                for d in range(self.devices)
                for b in self.blocks
            ]
        )

    @property
    def logical(self) -> np.ndarray:
        """The physical row of each logical row (the inverse of `physical`)."""
        return np.argsort(self.physical)

    def mine_of_block(self, x: jax.Array, block: Block) -> jax.Array:
        """This device's chunk of a draw `x` made for every row of `block` (inside `shard_map`)."""
        if self.devices == 1:
            return x
        chunk = block.rows // self.devices
        return jax.lax.dynamic_slice_in_dim(x, jax.lax.axis_index(AXIS) * chunk, chunk)

    def mine(self, x: jax.Array) -> jax.Array:
        """This device's rows of a per-row draw `x` made for the whole batch (logical order)."""
        if self.devices == 1:
            return x
        return jnp.concatenate([self.mine_of_block(x[b.start : b.stop], b) for b in self.blocks])

    def gathered(self, x: jax.Array, axis: int) -> jax.Array:
        """Every device's rows (on `axis`) of a per-row array, in logical order, on every device."""
        if self.devices == 1:
            return x
        every = jax.lax.all_gather(x, AXIS, axis=axis, tiled=True)
        return jnp.take(every, jnp.asarray(self.logical), axis=axis)

    def total(self, x: jax.Array) -> jax.Array:
        """The sum of `x` over the whole batch (each device holds a part of it)."""
        return x.sum() if self.devices == 1 else jax.lax.psum(x.sum(), AXIS)


def block_split_error(blocks: Sequence[Block], devices: int, suggestion: int | None = None) -> str:
    """The one line that refuses a mixture whose blocks do not split over `devices`; with
    `suggestion`, an `n_envs` whose blocks do."""
    names = ", ".join(f"{b.kind} {b.index} ({b.rows} games)" for b in blocks if b.rows % devices)
    hint = (
        f"n_envs {suggestion} does (with algo.batch_size a divisor of its rollout)"
        if suggestion
        else f"choose n_envs so that every block's games are a multiple of {devices}"
    )
    return (
        f"league.devices: {devices} devices must share every block of the league's mixture evenly; "
        f"{names} does not split into {devices}: {hint}"
    )


# ---------------------------------------------------------------------------------------
# devices, mesh, host <-> devices
# ---------------------------------------------------------------------------------------
def ask_host_devices(devices: int) -> None:
    """Split the host CPU into `devices` XLA devices, if JAX has not started a backend yet (the
    flag is read once, when JAX starts); on another backend it changes nothing that is used."""
    if devices <= 1 or HOST_DEVICES_FLAG in os.environ.get("XLA_FLAGS", ""):
        return
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {HOST_DEVICES_FLAG}={devices}".strip()


def check_devices(devices: int) -> None:
    """ValueError, one line, unless JAX has `devices` devices: at least that many in one
    process (the mesh takes the first), exactly that many over several (each takes part)."""
    have = jax.device_count()
    if devices > have or (jax.process_count() > 1 and devices != have):
        where = f"{jax.process_count()} processes" if jax.process_count() > 1 else "this process"
        hint = (
            f"; on CPU, start with XLA_FLAGS={HOST_DEVICES_FLAG}={devices} (tacocat train --devices {devices} sets it)"
            if jax.default_backend() == "cpu" and jax.process_count() == 1
            else ""
        )
        raise ValueError(
            f"league.devices is {devices}, but JAX has {have} {jax.default_backend()} device(s) in {where}{hint}"
        )


def make_mesh(devices: int) -> Mesh:
    """The one-axis mesh over JAX's first `devices` devices (every process's)."""
    return Mesh(np.array(jax.devices()[:devices]), (AXIS,))


@dataclass(frozen=True)
class Placement:
    """Moves the training state between host numpy (logical row order) and the mesh."""

    layout: RowLayout
    mesh: Mesh

    def _sharding(self, rows: bool) -> NamedSharding:
        return NamedSharding(self.mesh, PartitionSpec(AXIS) if rows else PartitionSpec())

    def place(self, tree: Any, rows: bool) -> Any:
        """`tree` (the same on every process) as global arrays: split over the devices by rows
        (logical order in, physical order held) or replicated. PRNG keys stay keys."""
        order = self.layout.physical

        def one(x: Any) -> jax.Array:
            is_key = hasattr(x, "dtype") and jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
            host = np.asarray(jax.random.key_data(x) if is_key else x)
            if rows:
                host = host[order]
            sharding = self._sharding(rows)
            out = jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])
            return jax.random.wrap_key_data(out) if is_key else out

        return jax.tree.map(one, tree)

    def fetch(self, tree: Any, rows: bool) -> Any:
        """`tree`'s global arrays as host numpy, on every process (rows back in logical order).
        A key comes back as a key (on the default device)."""
        from jax.experimental import multihost_utils

        order = self.layout.logical

        def one(x: jax.Array) -> Any:
            is_key = jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
            data = jax.random.key_data(x) if is_key else x
            if data.is_fully_addressable:
                host = np.asarray(jax.device_get(data))
            elif rows:
                host = np.asarray(multihost_utils.process_allgather(data, tiled=True))
            else:  # replicated: every process holds the whole value
                host = np.asarray(data.addressable_data(0))
            if rows:
                host = host[order]
            return jax.random.wrap_key_data(jnp.asarray(host)) if is_key else host

        return jax.tree.map(one, tree)
