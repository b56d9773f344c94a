"""The backend-specific helpers of the batch engine and its JAX policies, each in two forms.

The rules code (`core`), the random rollout (`rollout`) and the JAX heuristic ports
(`tacocat/agents/heuristic_jax.py`) run as vmapped straight-line programs. XLA:CPU, where they
were made fast, vectorises elementwise operations across the batch well and runs short
reductions and per-row gathers as slow loops and a `cumsum` as a quadratic reduce-window,
fuses chains of selects into every element they feed, and drops `lax.optimization_barrier`.
Each helper here has:

* its **XLA:CPU form**: the trick that works around that (unrolled sums and selects, a
  conditional as a fusion barrier, a `custom_vmap` rule that packs the rows that need a
  computation into a buffer); its docstring says what it does and why;
* its **plain form**: the straightforward jnp code (`jnp.sum`, `jnp.argmax`, a gather,
  `jnp.argsort`, no barrier, no `custom_vmap`), for the backends whose compilers do not need the
  tricks (GPU, TPU).

Both forms give the same results (integers and booleans bit for bit; `tests/test_xla_helpers.py`
checks each pair, and that whole games agree). Which form runs is chosen at one seam,
`cpu_forms()`: the XLA:CPU forms on the CPU backend, the plain forms on every other, unless the
environment variable `TACOCAT_XLA_FORMS` says `cpu` or `plain`; `using_forms` overrides it while
a test traces. Each helper's forms are also reachable as `helper.cpu_form` / `helper.plain_form`.

The choice is made when a function is traced: a jitted function keeps the forms it was traced
with.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeGuard

import jax
import jax.numpy as jnp

#: the environment variable that picks the forms ("cpu" or "plain"; unset or empty: by backend)
FORMS_VARIABLE = "TACOCAT_XLA_FORMS"
FORMS = ("cpu", "plain")
_forms: str | None = None  # read once, at the first trace that asks


def cpu_forms() -> bool:
    """Whether the helpers trace their XLA:CPU forms: `TACOCAT_XLA_FORMS` if set, else whether
    JAX's default backend is the CPU. Read once per process (the first call)."""
    global _forms
    if _forms is None:
        chosen = os.environ.get(FORMS_VARIABLE, "")
        if chosen and chosen not in FORMS:
            raise ValueError(f"{FORMS_VARIABLE}={chosen!r}: expected one of {', '.join(FORMS)} (or unset)")
        _forms = chosen or ("cpu" if jax.default_backend() == "cpu" else "plain")
    return _forms == "cpu"


@contextlib.contextmanager
def using_forms(forms: str) -> Iterator[None]:
    """Trace with `forms` ("cpu" or "plain") inside the block, whatever the backend (for tests:
    both forms on one machine). JAX reuses a function's trace (even under a new `jax.jit` of
    the same function), so entering and leaving the block clear JAX's caches
    (`jax.clear_caches`): whatever runs inside is traced with `forms`, and after it with the
    forms of before (at the cost of compiling again)."""
    global _forms
    if forms not in FORMS:
        raise ValueError(f"forms {forms!r}: expected one of {', '.join(FORMS)}")
    cpu_forms()  # the default is read before it is overridden, so that it comes back after
    before, _forms = _forms, forms
    jax.clear_caches()
    try:
        yield
    finally:
        _forms = before
        jax.clear_caches()


class TwoForms:
    """A helper: calling it runs its XLA:CPU form or its plain form, as `cpu_forms()` says."""

    def __init__(self, cpu_form: Callable[..., Any], plain_form: Callable[..., Any]) -> None:
        self.cpu_form = cpu_form
        self.plain_form = plain_form
        functools.update_wrapper(self, cpu_form)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return (self.cpu_form if cpu_forms() else self.plain_form)(*args, **kwargs)


def _with_plain_form(plain_form: Callable[..., Any]) -> Callable[[Callable[..., Any]], TwoForms]:
    """Decorates a helper's XLA:CPU form, giving it `plain_form`."""
    return lambda cpu_form: TwoForms(cpu_form, plain_form)


Parts = jax.Array | Iterable[jax.Array]


def _is_array(x: Parts) -> TypeGuard[jax.Array]:
    """Whether `x` is one array (parts on its last axis) rather than an iterable of arrays."""
    return hasattr(x, "ndim")


def _each(x: Parts) -> Iterator[jax.Array]:
    """The parts of `x` one by one: the entries of the last axis of an array, or the arrays of
    an iterable. The XLA:CPU forms take each part where they use it, so that, given a
    generator (`total(x[i] * w[i] for i in ...)`), they trace the operations of a written-out
    loop in its order. That matters there: XLA:CPU's fusion follows the traced program, and a
    first version of these helpers that computed whole vectors and sliced them
    (`first_true(hand > 0)` for `hand[v] > 0` in a loop), or added in another order, ran the
    random rollout's largest fused kernel at twice the instructions (callgrind)."""
    return (x[..., i] for i in range(x.shape[-1])) if _is_array(x) else iter(x)


def _stacked(x: Parts) -> jax.Array:
    """`x` with its parts on the last axis."""
    return x if _is_array(x) else jnp.stack(list(x), axis=-1)


# ---------------------------------------------------------------------------------------
# short reductions, unrolled
# ---------------------------------------------------------------------------------------
def _total_plain(x: Parts) -> jax.Array:
    return jnp.sum(_stacked(x), axis=-1)


@_with_plain_form(_total_plain)
def total(x: Parts) -> jax.Array:
    """The sum over the last axis of a short array, or of an iterable of arrays.

    XLA:CPU: one add per entry, unrolled left to right; under `vmap` it vectorises those adds
    across the batch but runs a short reduction (`jnp.sum` over a few values) as a slow loop.
    Plain form: `jnp.sum`. Integer sums agree exactly; float sums agree to rounding only (the
    plain form's summation order is the compiler's)."""
    parts = _each(x)
    out = next(parts)
    for part in parts:
        out = out + part
    return out


def _all_true_plain(x: Parts) -> jax.Array:
    return jnp.all(_stacked(x), axis=-1)


@_with_plain_form(_all_true_plain)
def all_true(x: Parts) -> jax.Array:
    """Whether every boolean of the last axis of a short array, or of an iterable of arrays, is true.

    XLA:CPU: unrolled `&`s, for the reason of `total`. Plain form: `jnp.all`."""
    parts = _each(x)
    out = next(parts)
    for part in parts:
        out = out & part
    return out


def _first_where_plain(test: Callable[[int], jax.Array], n: int, default: jax.Array | int | None = None) -> jax.Array:
    flags = jnp.stack([test(i) for i in range(n)], axis=-1)
    fallback = n - 1 if default is None else default
    return jnp.where(jnp.any(flags, axis=-1), jnp.argmax(flags, axis=-1), fallback).astype(jnp.int32)


@_with_plain_form(_first_where_plain)
def first_where(test: Callable[[int], jax.Array], n: int, default: jax.Array | int | None = None) -> jax.Array:
    """(int32) The first index i in [0, n) where the boolean array `test(i)` is true
    (elementwise); `default` where none is, the last index (n - 1) when `default` is None.

    XLA:CPU: a chain of selects from the last index down, each on its own `test(i)` (an
    `argmax` over a few values is a slow reduction there, as in `total`); with no `default`,
    the select of index n - 1, which could only give n - 1, is left out. Each `test(i)` is
    traced where its select is (write it on slices of the inputs, `hand[i] > 0`; see `_each`).
    Plain form: `jnp.argmax` of the stacked tests, `default` where `jnp.any` is false."""
    if default is None:
        out, indices = jnp.int32(n - 1), range(n - 2, -1, -1)
    else:
        out, indices = default, range(n - 1, -1, -1)
    for i in indices:
        out = jnp.where(test(i), i, out)
    return jnp.asarray(out, jnp.int32)


def _last_where_plain(test: Callable[[int], jax.Array], n: int, default: jax.Array | int) -> jax.Array:
    flags = jnp.stack([test(i) for i in range(n)], axis=-1)
    last = n - 1 - jnp.argmax(flags[..., ::-1], axis=-1)
    return jnp.where(jnp.any(flags, axis=-1), last, default).astype(jnp.int32)


@_with_plain_form(_last_where_plain)
def last_where(test: Callable[[int], jax.Array], n: int, default: jax.Array | int) -> jax.Array:
    """(int32) The last index i in [0, n) where `test(i)` is true; `default` where none is.

    XLA:CPU: a chain of selects from index 0 up, as `first_where`. Plain form: `jnp.argmax`
    of the stacked tests, reversed."""
    out = default
    for i in range(n):
        out = jnp.where(test(i), i, out)
    return jnp.asarray(out, jnp.int32)


# ---------------------------------------------------------------------------------------
# look-ups without gathers
# ---------------------------------------------------------------------------------------
def _by_seat_plain(pair: jax.Array, player: jax.Array) -> jax.Array:
    return pair[player]


@_with_plain_form(_by_seat_plain)
def by_seat(pair: jax.Array, player: jax.Array) -> jax.Array:
    """`pair[player]` of a per-seat field (leading axis of size 2; `player` 0 or 1).

    XLA:CPU: a select between the two rows; a vmapped gather (each game reads its own row) is
    a slow loop there. Plain form: the gather."""
    return jnp.where(player == 0, pair[0], pair[1])


def _lookup_plain(table: jax.Array, index: jax.Array) -> jax.Array:
    table = jnp.asarray(table)
    return table[jnp.clip(index, 0, table.shape[0] - 1)]


@_with_plain_form(_lookup_plain)
def lookup(table: jax.Array, index: jax.Array) -> jax.Array:
    """`table[index]` of a short vector, `index` clipped to its range.

    XLA:CPU: one select per entry (`index >= i`), unrolled; a vmapped gather is a slow loop
    there. Plain form: the gather of the clipped index."""
    table = jnp.asarray(table)
    entry = table[0]
    for i in range(1, table.shape[0]):
        entry = jnp.where(index >= i, table[i], entry)
    return entry


# ---------------------------------------------------------------------------------------
# shuffles: sort keys (one form) and ranks
# ---------------------------------------------------------------------------------------
def sort_keys(words: jax.Array, n: int) -> jax.Array:
    """`n` distinct pseudo-random uint32 sort keys from a PRNG key's words (a counter-based
    generator: the slot index hashed with the words by murmur3's 32-bit finaliser, a
    bijection, so the keys of one shuffle never tie).

    Made for XLA:CPU, where `jax.random.bits` (threefry for every key) cost five times the rest
    of a step; the key's own words are threefry output already. It has ONE form on every
    backend, on purpose: the keys decide the deal, and a backend's own generator would deal
    other games from the same key (the engine's games are the same on every backend)."""
    h = jnp.arange(n, dtype=jnp.uint32) * jnp.uint32(0x9E3779B9)
    for i in range(words.shape[0]):
        h = _fmix32(h ^ words[i])
    return _fmix32(h)


def _fmix32(h: jax.Array) -> jax.Array:
    """murmur3's finaliser: a bijection of uint32 with full avalanche."""
    h = (h ^ (h >> 16)) * jnp.uint32(0x85EBCA6B)
    h = (h ^ (h >> 13)) * jnp.uint32(0xC2B2AE35)
    return h ^ (h >> 16)


def _ranks_plain(keys: jax.Array) -> jax.Array:
    return jnp.argsort(jnp.argsort(keys)).astype(jnp.int32)


@_with_plain_form(_ranks_plain)
def ranks(keys: jax.Array) -> jax.Array:
    """(int32) The rank of each of `n` distinct keys (the number of smaller keys): a
    permutation of [0, n).

    XLA:CPU: one elementwise comparison of every key with each key in turn, summed, unrolled
    (about 0.2 µs a game for 38 keys, against 1.6-4.5 µs for a sort or a pairwise
    compare-and-sum, which it runs as loops). Plain form: `argsort` of `argsort`. Ties (never
    from `sort_keys`) would rank differently in the two forms."""
    n = keys.shape[-1]
    rank = jnp.zeros(n, jnp.int32)
    for slot in range(n):
        rank = rank + (keys[slot] < keys)
    return rank


# ---------------------------------------------------------------------------------------
# the k-th true entry of a row (a random legal action)
# ---------------------------------------------------------------------------------------
def _count_and_find_plain(mask: jax.Array) -> tuple[jax.Array, Callable[[jax.Array], jax.Array]]:
    running = jnp.cumsum(mask, axis=-1, dtype=jnp.int32)

    def find(k: jax.Array) -> jax.Array:
        return jnp.argmax(running > k[..., None], axis=-1).astype(jnp.int32)

    return running[..., -1], find


@_with_plain_form(_count_and_find_plain)
def count_and_find(mask: jax.Array) -> tuple[jax.Array, Callable[[jax.Array], jax.Array]]:
    """`(count, find)` of a (..., N) boolean mask: the number of true entries of each row
    (int32), and `find(k)`, the index of each row's k-th true entry (from 0; `k < count`).

    XLA:CPU: two levels of unrolled running counts, the block of 16 entries that holds the
    k-th, then its place in the block (the blocks' counts are shared by `count` and `find`);
    there a `cumsum` is a quadratic reduce-window and an `argmax` a slow reduction. Plain
    form: `cumsum` and `argmax`."""
    width = 16
    n = mask.shape[-1]
    n_blocks = -(-n // width)
    padded = jnp.pad(mask.astype(jnp.int32), [(0, 0)] * (mask.ndim - 1) + [(0, n_blocks * width - n)])
    grid = padded.reshape(*mask.shape[:-1], n_blocks, width)
    per_block = _RunningCounts(grid.sum(axis=-1, dtype=jnp.int32))

    def find(k: jax.Array) -> jax.Array:
        block, before = per_block.find(k)
        inside = grid[..., 0, :]
        for j in range(1, n_blocks):
            inside = jnp.where((block == j)[..., None], grid[..., j, :], inside)
        place, _ = _RunningCounts(inside).find(k - before)
        return (block * width + place).astype(jnp.int32)

    return per_block.total, find


class _RunningCounts:
    """Running totals of the last axis of `counts`, to find the first entry where the
    running total exceeds a threshold (unrolled over that short axis)."""

    def __init__(self, counts: jax.Array) -> None:
        self.counts = counts
        self.total = total.cpu_form([counts[..., i] for i in range(counts.shape[-1])])

    def find(self, k: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(index of the first entry whose running total exceeds k, the running total before it)."""
        running = jnp.zeros_like(k)
        index = jnp.full_like(k, self.counts.shape[-1] - 1)
        before = jnp.zeros_like(k)
        found = jnp.zeros(k.shape, jnp.bool_)
        for i in range(self.counts.shape[-1]):
            after = running + self.counts[..., i]
            hit = ~found & (after > k)
            index = jnp.where(hit, i, index)
            before = jnp.where(hit, running, before)
            found = found | hit
            running = after
        return index, before


# ---------------------------------------------------------------------------------------
# values computed once: the conditional as a fusion barrier
# ---------------------------------------------------------------------------------------
def _compute_once_plain(values: Any, count: jax.Array) -> Any:
    return values


@_with_plain_form(_compute_once_plain)
def compute_once(values: Any, count: jax.Array) -> Any:
    """The values (a pytree) unchanged, computed once per game; `count` is any int array that
    is never negative (a count of the state).

    XLA:CPU: XLA fuses elementwise chains into their consumers and recomputes a chain for
    every element it feeds. The engine's step flags (does this step deal? does the round
    end?) feed hundreds of elements of the mask and the observation, so XLA:CPU recomputed
    them per element: three times the cost of a step. XLA:CPU drops
    `lax.optimization_barrier` but does not fuse across a conditional, so under `vmap` the
    values pass through one whose predicate (`count >= 0`) is always true but unknown to the
    compiler (a `custom_vmap` rule; one game, unbatched, passes through as it is). Plain
    form: the values as they are (no barrier)."""
    leaves, tree = jax.tree.flatten(values)
    return jax.tree.unflatten(tree, _pass_through(count, *leaves))


@jax.custom_batching.custom_vmap
def _pass_through(count: jax.Array, *leaves: jax.Array) -> tuple[jax.Array, ...]:
    return leaves


@_pass_through.def_vmap
def _pass_through_batched(
    size: int, batched: list[bool], count: jax.Array, *leaves: jax.Array
) -> tuple[tuple, tuple[bool, ...]]:
    leaves = tuple(
        x if b else jnp.broadcast_to(x, (size, *jnp.shape(x))) for x, b in zip(leaves, batched[1:], strict=True)
    )
    never = jax.tree.map(jnp.zeros_like, leaves)  # not taken: count is never negative
    return jax.lax.cond(jnp.all(count >= 0), lambda: leaves, lambda: never), (True,) * len(leaves)


# ---------------------------------------------------------------------------------------
# a computation for the rows that need it only: row packing
# ---------------------------------------------------------------------------------------
def packed_rows(fn: Callable[..., Any], room: Callable[[int], int]) -> TwoForms:
    """`run(needed, *args)`: `fn(*args)` for one row, whose result is used only where `needed`
    (a boolean). Under `vmap`, rows that do not need it may get zeros instead.

    XLA:CPU form: a vmapped function computes every row, and these computations (a shuffle in
    a step where about one game in ten deals, the counter's hand sampling) are needed by few.
    Under `vmap` (a `custom_vmap` rule) the needing rows are gathered into a buffer of
    `room(batch)` rows, computed there and scattered back, the others get zeros; a batch where
    more rows need it computes every row, and so does a batch no larger than the buffer. A
    row's result depends on its own arguments only, so both ways give the same results where
    needed. The buffer's positions come from a running count by `associative_scan` (XLA:CPU's
    `cumsum` is a reduce-window, quadratic in the batch). Plain form: `fn(*args)` for every
    row."""

    @jax.custom_batching.custom_vmap
    def packed(needed: jax.Array, *args: Any) -> Any:
        return fn(*args)

    @packed.def_vmap
    def packed_batch(size: int, batched: list[bool], needed: jax.Array, *args: Any) -> tuple[Any, Any]:
        needed, *rest = (
            x if b else jnp.broadcast_to(x, (size, *jnp.shape(x)))
            for x, b in zip((needed, *args), batched, strict=True)
        )
        args = tuple(rest)
        every = jax.vmap(fn)
        buffer = room(size)
        if buffer >= size:
            out = every(*args)
            return out, jax.tree.map(lambda _: True, out)
        # the i-th needing row goes to slot i of the buffer (positions by a running count)
        position = jax.lax.associative_scan(jnp.add, needed.astype(jnp.int32)) - 1
        rows = (
            jnp.full(buffer, size, jnp.int32)
            .at[jnp.where(needed, position, buffer)]
            .set(jnp.arange(size, dtype=jnp.int32), mode="drop")
        )

        def needed_only(*args: Any) -> Any:
            picked = jnp.minimum(rows, size - 1)
            zeros = jax.tree.map(lambda o: jnp.zeros(o.shape, o.dtype), jax.eval_shape(every, *args))
            out = every(*(x[picked] for x in args))
            return jax.tree.map(lambda z, o: z.at[rows].set(o, mode="drop"), zeros, out)

        out = jax.lax.cond(jnp.sum(needed) <= buffer, needed_only, every, *args)
        return out, jax.tree.map(lambda _: True, out)

    def unpacked(needed: jax.Array, *args: Any) -> Any:
        return fn(*args)

    return TwoForms(packed, unpacked)


# ---------------------------------------------------------------------------------------
# a draw by weight (a policy's sampled action)
# ---------------------------------------------------------------------------------------
def _weighted_pick_plain(weights: jax.Array, u: jax.Array) -> jax.Array:
    running = jnp.cumsum(weights, axis=-1)
    target = u * running[..., -1]
    index = jnp.sum(running <= target[..., None], axis=-1, dtype=jnp.int32)
    n = weights.shape[-1]
    last = n - 1 - jnp.argmax((weights > 0)[..., ::-1], axis=-1).astype(jnp.int32)
    return jnp.where(index < n, index, last).astype(jnp.int32)


def _first_over(parts: list[jax.Array], target: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(index of the first part whose running total exceeds `target`, the running total before
    it), unrolled; where none does (rounding), the last part of positive weight instead."""
    running = jnp.zeros_like(target)
    index = last = jnp.zeros(target.shape, jnp.int32)
    before = last_before = jnp.zeros_like(target)
    found = jnp.zeros(target.shape, jnp.bool_)
    for i, part in enumerate(parts):
        after = running + part
        hit = ~found & (after > target)
        index, before = jnp.where(hit, i, index), jnp.where(hit, running, before)
        positive = part > 0
        last, last_before = jnp.where(positive, i, last), jnp.where(positive, running, last_before)
        found, running = found | hit, after
    return jnp.where(found, index, last), jnp.where(found, before, last_before)


@_with_plain_form(_weighted_pick_plain)
def weighted_pick(weights: jax.Array, u: jax.Array) -> jax.Array:
    """(int32) For (..., N) weights (not negative, one positive per row at least) and uniform
    `u` in [0, 1) of shape (...): the index i whose interval [W_i-1, W_i) of the running sums W
    holds `u x W_N-1`, which is i with probability weights_i / sum(weights) (inverse CDF: one
    random number per row, where a Gumbel-max draw takes one per entry). An entry of weight 0
    has an empty interval and is never picked; where rounding puts the target past the last
    sum, the last entry of positive weight is picked.

    XLA:CPU: the running sums in two levels of 16, unrolled (the block whose sums pass the
    target, then the place in it), as `count_and_find`: a `cumsum` there is a quadratic
    reduce-window. Plain form: `cumsum` and a count of the sums not past the target. The two
    sum in different orders, so they agree bit for bit where the sums are exact (weights of a
    few bits, as the tests use) and otherwise in distribution (a target within rounding of a
    boundary may fall on either side)."""
    width = 16
    n = weights.shape[-1]
    n_blocks = -(-n // width)
    padded = jnp.pad(weights, [(0, 0)] * (weights.ndim - 1) + [(0, n_blocks * width - n)])
    grid = padded.reshape(*weights.shape[:-1], n_blocks, width)
    sums = [total.cpu_form([grid[..., b, i] for i in range(width)]) for b in range(n_blocks)]
    target = u * total.cpu_form(sums)
    block, before = _first_over(sums, target)
    inside = grid[..., 0, :]
    for j in range(1, n_blocks):
        inside = jnp.where((block == j)[..., None], grid[..., j, :], inside)
    place, _ = _first_over([inside[..., i] for i in range(width)], target - before)
    return (block * width + place).astype(jnp.int32)
