"""The backend-specific helpers (tacocat/game/batch/xla.py): each helper's XLA:CPU form and its
plain form give the same results, on seeded random inputs, unbatched, under `jax.jit` and under
`jax.vmap`; and whole games (the batch engine with auto-reset and without, the random policy,
the `counter` port) are the same with every helper in either form.

Integers and booleans are compared bit for bit; `compute_once` passes floats through and is
compared bit for bit too; `total` of floats is compared within the rounding of a different
summation order (the plain form's order is the compiler's; see `test_total_of_floats`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("pgx")
import jax.numpy as jnp  # noqa: E402 (after importorskip)

from support.lockstep import FAST_COMPILE  # noqa: E402 (after importorskip)
from tacocat import RulesConfig  # noqa: E402 (after importorskip)
from tacocat.agents.heuristic_jax import make_heuristic  # noqa: E402 (after importorskip)
from tacocat.game.batch import TacocatBatch, xla  # noqa: E402 (after importorskip)
from tacocat.game.batch.rollout import random_legal_actions  # noqa: E402 (after importorskip)
from tacocat.game.observation import ObservationLayout  # noqa: E402 (after importorskip)
from tacocat.game.ruleset import compile_rules  # noqa: E402 (after importorskip)


def both_forms(helper: xla.TwoForms, *args, in_axes=None):
    """(XLA:CPU form's result, plain form's result) of `helper(*args)`, jitted, vmapped over
    `in_axes` when given, as numpy pytrees."""
    results = []
    for form in (helper.cpu_form, helper.plain_form):
        fn = form if in_axes is None else jax.vmap(form, in_axes=in_axes)
        results.append(jax.device_get(jax.jit(fn)(*args)))
    return results


def assert_same(cpu, plain) -> None:
    """Same structure, dtypes and values, bit for bit."""
    cpu_leaves, cpu_tree = jax.tree.flatten(cpu)
    plain_leaves, plain_tree = jax.tree.flatten(plain)
    assert cpu_tree == plain_tree
    for a, b in zip(cpu_leaves, plain_leaves, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
        assert a.tobytes() == b.tobytes(), (a, b)


def assert_forms_agree(helper: xla.TwoForms, *args, in_axes=0) -> None:
    """The forms agree under `jit(vmap)` over the batch, and on its first row under `jit`."""
    assert_same(*both_forms(helper, *args, in_axes=in_axes))
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    row = [a if ax is None else jax.tree.map(lambda x: x[0], a) for a, ax in zip(args, axes, strict=True)]
    assert_same(*both_forms(helper, *row))


def searched(helper: xla.TwoForms, n: int, test_of: Callable[..., Callable[[int], jax.Array]]) -> xla.TwoForms:
    """The forms of `first_where`/`last_where` as functions of arrays:
    `(*inputs, default) -> form(test_of(*inputs), n, default)`."""

    def bind(form: Callable) -> Callable:
        return lambda *args: form(test_of(*args[:-1]), n, args[-1])

    return xla.TwoForms(bind(helper.cpu_form), bind(helper.plain_form))


def on_flags(flags: jax.Array) -> Callable[[int], jax.Array]:
    """The test of a flag array: its entry i on the last axis."""
    return lambda i: flags[..., i]


def mixed_flags(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Boolean rows of every density, none and all included (density per leading row)."""
    density = rng.choice([0.0, 0.05, 0.3, 0.9, 1.0], (shape[0],) + (1,) * (len(shape) - 1))
    return rng.random(shape) < density


# ---------------------------------------------------------------------------------------
# the seam
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("value, cpu", [("", jax.default_backend() == "cpu"), ("cpu", True), ("plain", False)])
def test_the_forms_follow_the_backend_and_the_environment_variable(monkeypatch, value: str, cpu: bool):
    monkeypatch.setattr(xla, "_forms", None)  # as in a new process (restored after the test)
    monkeypatch.setenv(xla.FORMS_VARIABLE, value)
    assert xla.cpu_forms() is cpu
    monkeypatch.setenv(xla.FORMS_VARIABLE, "cpu" if value == "plain" else "plain")
    assert xla.cpu_forms() is cpu  # read once


def test_a_wrong_forms_variable_is_refused(monkeypatch):
    monkeypatch.setattr(xla, "_forms", None)
    monkeypatch.setenv(xla.FORMS_VARIABLE, "gpu")
    with pytest.raises(ValueError, match="TACOCAT_XLA_FORMS='gpu'"):
        xla.cpu_forms()


def test_using_forms_retraces_and_restores():
    x = jnp.arange(12, dtype=jnp.int32).reshape(3, 4)
    fn = jax.jit(lambda x: xla.total(x))
    default = xla.cpu_forms()
    texts = {}
    for forms in ("cpu", "plain"):
        with xla.using_forms(forms):
            assert xla.cpu_forms() == (forms == "cpu")
            texts[forms] = fn.lower(x).as_text()  # the same jitted function, traced again
            np.testing.assert_array_equal(fn(x), [6, 22, 38])
    assert texts["cpu"] != texts["plain"] and "reduce" in texts["plain"]
    assert xla.cpu_forms() == default
    with pytest.raises(ValueError, match="expected one of"), xla.using_forms("gpu"):
        pass


def test_the_comparison_catches_a_wrong_plain_form():
    # a plain form that differs in one case (no true flag) is caught
    def argmax_only(flags: jax.Array, default: None) -> jax.Array:
        return jnp.argmax(flags, axis=-1).astype(jnp.int32)

    wrong = xla.TwoForms(searched(xla.first_where, 6, on_flags).cpu_form, argmax_only)
    flags = np.random.default_rng(0).random((64, 6)) < 0.2
    assert_forms_agree(wrong, flags[flags.any(axis=1)], None, in_axes=(0, None))  # agrees where a flag is set
    with pytest.raises(AssertionError):
        assert_forms_agree(wrong, flags, None, in_axes=(0, None))


# ---------------------------------------------------------------------------------------
# each helper: XLA:CPU form == plain form
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("length", [1, 2, 5, 12, 38])
def test_total(length: int):
    rng = np.random.default_rng(length)
    x = rng.integers(-(2**31), 2**31, (64, length), dtype=np.int64).astype(np.int32)  # sums wrap alike
    assert_forms_agree(xla.total, x)
    small = rng.integers(0, 5, (64, 3, length)).astype(np.int32)
    assert_forms_agree(xla.total, small)  # the last axis of a 2-D row
    parts = [rng.integers(0, 9, (64, 7)).astype(np.int32) for _ in range(length)]
    assert_forms_agree(xla.total, parts)  # a list of arrays
    weighted = xla.TwoForms(
        *(
            lambda x, form=form: form(x[..., i] * (i + 1) for i in range(length))
            for form in (xla.total.cpu_form, xla.total.plain_form)
        )
    )
    assert_forms_agree(weighted, small)  # a generator of parts


def test_total_of_floats():
    # the XLA:CPU form adds left to right; the plain form's order is the compiler's, so float
    # sums agree to the rounding of n - 1 additions: |error| <= (n - 1) * eps * sum(|x|)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((256, 12)).astype(np.float32) * 10.0 ** rng.integers(-3, 4, (256, 12))
    cpu, plain = both_forms(xla.total, x, in_axes=0)
    bound = 11 * np.finfo(np.float32).eps * np.abs(x).sum(axis=1)
    assert (np.abs(cpu - plain) <= bound).all()
    np.testing.assert_allclose(cpu, np.cumsum(x, axis=1, dtype=np.float32)[:, -1], rtol=0, atol=0)


def test_all_true():
    rng = np.random.default_rng(4)
    flags = mixed_flags(rng, (128, 9, 12))
    assert_forms_agree(xla.all_true, flags)
    assert_forms_agree(xla.all_true, [flags[..., v] for v in range(12)])
    chained = xla.TwoForms(
        *(
            lambda f, form=form: form(f[..., v] | (v == 3) for v in range(12))
            for form in (xla.all_true.cpu_form, xla.all_true.plain_form)
        )
    )
    assert_forms_agree(chained, flags)  # a generator of parts


@pytest.mark.parametrize("length", [1, 2, 12])
def test_first_where_and_last_where(length: int):
    rng = np.random.default_rng(length)
    flags = mixed_flags(rng, (256, length))
    default = rng.integers(-3, length + 3, 256).astype(np.int32)
    for helper in (xla.first_where, xla.last_where):
        assert_forms_agree(searched(helper, length, on_flags), flags, default)  # a default per row
        assert_forms_agree(searched(helper, length, on_flags), flags, jnp.int32(-1), in_axes=(0, None))
    # no default: the last index
    assert_forms_agree(searched(xla.first_where, length, on_flags), flags, None, in_axes=(0, None))
    # (H, K) tests computed from slices of the inputs, with an array default (as the counter's
    # sacrifice search writes them)
    counts = rng.integers(0, 3, (32, length, 5, 9)).astype(np.int32) * mixed_flags(rng, (32, length, 1, 1))
    target = rng.integers(0, length, (32, 1, 9)).astype(np.int32)
    part_default = rng.integers(0, 13, (32, 5, 9)).astype(np.int32)
    for helper in (xla.first_where, xla.last_where):
        assert_forms_agree(
            searched(helper, length, lambda c, t: lambda v: (v >= t) & (c[v] > 1)), counts, target, part_default
        )


def test_by_seat_and_lookup():
    rng = np.random.default_rng(2)
    player = rng.integers(0, 2, 128).astype(np.int32)
    pairs = [
        rng.integers(-9, 9, (128, 2)).astype(np.int32),
        rng.integers(-9, 9, (128, 2, 12)).astype(np.int32),
        rng.random((128, 2, 3)) < 0.5,
    ]
    for pair in pairs:
        assert_forms_agree(xla.by_seat, pair, player)
    for length in (1, 2, 7):
        table = rng.integers(-50, 50, length).astype(np.int32)
        index = rng.integers(-3, length + 3, 128).astype(np.int32)  # clipped to the table
        assert_forms_agree(xla.lookup, table, index, in_axes=(None, 0))
        assert_forms_agree(xla.lookup, rng.integers(-50, 50, (128, length)).astype(np.int32), index)


@pytest.mark.parametrize("n", [1, 2, 38, 100])
def test_ranks(n: int):
    rng = np.random.default_rng(n)
    distinct = np.stack([rng.choice(2**32, n, replace=False) for _ in range(64)]).astype(np.uint32)
    assert_forms_agree(xla.ranks, distinct)
    words = jax.random.key_data(jax.random.split(jax.random.key(n), 64))
    keys = jax.vmap(lambda w: xla.sort_keys(w, n))(words)  # the engine's keys
    assert_forms_agree(xla.ranks, keys)
    cpu, _ = both_forms(xla.ranks, keys, in_axes=0)
    assert (np.sort(cpu, axis=1) == np.arange(n)).all()


def test_sort_keys_are_the_same_everywhere():
    # one form on every backend: the keys decide the deal. A numpy murmur3 of the same words
    def fmix(h):
        h = (h ^ (h >> np.uint32(16))) * np.uint32(0x85EBCA6B)
        h = (h ^ (h >> np.uint32(13))) * np.uint32(0xC2B2AE35)
        return h ^ (h >> np.uint32(16))

    words = np.asarray([0xDEADBEEF, 12345], np.uint32)
    with np.errstate(over="ignore"):
        h = np.arange(38, dtype=np.uint32) * np.uint32(0x9E3779B9)
        for w in words:
            h = fmix(h ^ w)
        expected = fmix(h)
    assert np.array_equal(np.asarray(jax.jit(lambda w: xla.sort_keys(w, 38))(words)), expected)
    assert len(set(expected.tolist())) == 38


@pytest.mark.parametrize("n", [1, 15, 16, 17, 121])
def test_count_and_find(n: int):
    rng = np.random.default_rng(n)
    mask = rng.random((256, n)) < rng.choice([0.02, 0.3, 0.9], (256, 1))
    mask[np.arange(256), rng.integers(0, n, 256)] = True  # every row has a true entry
    k = (rng.integers(0, 2**31, 256) % mask.sum(axis=1)).astype(np.int32)

    def count_and_kth(mask, k, helper):
        count, find = helper(mask)
        return count, find(k)

    for batched in (True, False):  # (batch, N) in one call, and one row at a time under vmap
        results = []
        for form in (xla.count_and_find.cpu_form, xla.count_and_find.plain_form):
            fn = lambda m, k, form=form: count_and_kth(m, k, form)  # noqa: E731 (binds form per case)
            results.append(jax.device_get(jax.jit(fn if batched else jax.vmap(fn))(mask, k)))
        assert_same(*results)
    count, index = results[0]
    assert np.array_equal(count, mask.sum(axis=1)) and mask[np.arange(256), index].all()
    expected = [np.flatnonzero(row)[j] for row, j in zip(mask, k, strict=True)]
    assert np.array_equal(index, expected)


def test_compute_once():
    rng = np.random.default_rng(3)
    values = {
        "flags": rng.random((64, 5)) < 0.5,
        "ints": rng.integers(-9, 9, (64,)).astype(np.int32),
        "floats": rng.standard_normal((64, 3)).astype(np.float32),
        "nested": (np.full(64, np.nan, np.float32),),
    }
    count = rng.integers(0, 100, 64).astype(np.int32)
    assert_forms_agree(xla.compute_once, values, count)
    assert_forms_agree(xla.compute_once, values, jnp.int32(7), in_axes=(0, None))
    # leaves that are not batched come out broadcast over the batch in both forms
    shared = {"table": np.arange(4, dtype=np.int32)}
    assert_same(*both_forms(xla.compute_once, shared, count, in_axes=(None, 0)))


def _row_work(words: jax.Array, x: jax.Array) -> jax.Array:
    """A row's computation for `packed_rows`: depends on its own words and input only."""
    return xla.sort_keys(words, 6) ^ x.sum().astype(jnp.uint32)


@pytest.mark.parametrize(
    "room_of",
    [lambda size: size // 4 if size >= 64 else size, lambda size: max(16, size // 8)],
    ids=["shuffler", "counter"],
)
@pytest.mark.parametrize("size, share", [(16, 0.5), (40, 0.2), (64, 0.1), (256, 0.2), (256, 0.9)])
def test_packed_rows(room_of, size: int, share: float):
    # the buffer path (few rows need it), the every-row fallback (many), and batches no larger
    # than the buffer: on the rows that need it, the same results as every row computed
    rng = np.random.default_rng(size)
    helper = xla.packed_rows(_row_work, room_of)
    needed = rng.random(size) < share
    needed[rng.integers(size)] = True
    words = rng.integers(0, 2**32, (size, 2), dtype=np.uint64).astype(np.uint32)
    x = rng.integers(0, 50, (size, 3)).astype(np.int32)
    cpu, plain = both_forms(helper, needed, words, x, in_axes=0)
    assert_same(cpu[needed], plain[needed])
    assert_same(plain, np.asarray(jax.jit(jax.vmap(_row_work))(words, x)))
    # the unbatched call computes its row, needed or not; and an unbatched input broadcasts
    assert_same(*both_forms(helper, False, words[0], x[0]))
    cpu, plain = both_forms(helper, needed, words, x[0], in_axes=(0, 0, None))
    assert_same(cpu[needed], plain[needed])


# ---------------------------------------------------------------------------------------
# whole games: every helper in its XLA:CPU form, then in its plain form
# ---------------------------------------------------------------------------------------
def play(forms: str, config: RulesConfig, batch: int, steps: int, autoreset: bool, seed: int):
    """Every state of `steps` steps of random legal play (stacked on a leading axis), traced
    with `forms`."""
    env = TacocatBatch(config)
    step = env.step_autoreset if autoreset else env.step

    def run(key: jax.Array):
        key, init_key = jax.random.split(key)
        state = jax.vmap(env.init)(jax.random.split(init_key, batch))

        def body(carry, _):
            state, key = carry
            key, act_key, step_key = jax.random.split(key, 3)
            action = random_legal_actions(act_key, state.legal_action_mask)
            state = jax.vmap(step)(state, action, jax.random.split(step_key, batch))
            return (state, key), state

        _, states = jax.lax.scan(body, (state, key), None, length=steps)
        return states

    with xla.using_forms(forms):
        return jax.device_get(jax.jit(run, compiler_options=FAST_COMPILE)(jax.random.key(seed)))


@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
@pytest.mark.parametrize(
    "config, autoreset, steps",
    [
        (RulesConfig(), True, 300),
        (RulesConfig(arrow_policy="leading", tie_policy="arrow_player_wins", round_reward=0.25), False, 150),
    ],
    ids=["default_autoreset", "variant_step"],
)
def test_whole_games_are_the_same_with_either_forms(config: RulesConfig, autoreset: bool, steps: int):
    # batch 64: the shuffle packs the dealing games (a quarter-size buffer) in most steps and
    # falls back to every game where more deal (the first deal of all games, every step of `init`)
    cpu = play("cpu", config, 64, steps, autoreset, seed=7)
    plain = play("plain", config, 64, steps, autoreset, seed=7)
    for name in cpu.__dataclass_fields__:
        a, b = np.asarray(getattr(cpu, name)), np.asarray(getattr(plain, name))
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    finished = (cpu.terminated | cpu.truncated).sum()
    assert finished > (20 if autoreset else 5), finished  # games ended (and, with auto-reset, restarted)


@pytest.mark.slow  # over 15 s on the 2-core machine; `-m 'not slow'` skips it
def test_counter_port_is_the_same_with_either_forms():
    # the counter's hand sampling (packed rows) and forced-sacrifice search (first_where), on
    # the positions of random games, 512 rows at a time (a buffer of 64 rows)
    states = play("cpu", RulesConfig(), 64, 48, True, seed=3)
    obs = states.observation.reshape(-1, states.observation.shape[-1])
    mask = states.legal_action_mask.reshape(-1, states.legal_action_mask.shape[-1])
    floor = np.random.default_rng(0).integers(0, 4, len(obs)).astype(np.int32)
    keys = jax.random.split(jax.random.key(9), len(obs))
    actions = {}
    for forms in ("cpu", "plain"):
        with xla.using_forms(forms):
            policy = jax.jit(jax.vmap(make_heuristic("counter", RulesConfig())), compiler_options=FAST_COMPILE)
            actions[forms] = np.concatenate(
                [
                    np.asarray(policy(obs[i : i + 512], mask[i : i + 512], keys[i : i + 512], floor[i : i + 512]))
                    for i in range(0, len(obs), 512)
                ]
            )
    assert np.array_equal(actions["cpu"], actions["plain"])
    phase = np.argmax(obs[:, ObservationLayout(compile_rules(RulesConfig())).slices["phase"]], axis=1)
    assert (phase == 2).sum() > 100  # attacks: where the counter samples hands
