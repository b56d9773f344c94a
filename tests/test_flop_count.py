"""The FLOP counter of benchmarks/league_speed.py (`benchmarks/flop_count.py`) against XLA's
cost analysis where XLA's is right (no loop), and against hand counts where loops repeat."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from benchmarks.flop_count import matmul_flops, matmul_products


def _xla_flops(fn, *args) -> float:
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    return float((cost[0] if isinstance(cost, list) else cost)["flops"])


def _two_layers(x, w1, w2):
    return (x @ w1) @ w2


SHAPES = (jnp.ones((64, 136)), jnp.ones((136, 128)), jnp.ones((128, 121)))


def test_a_loop_free_product_chain_counts_what_xla_counts():
    expected = 2 * 64 * 136 * 128 + 2 * 64 * 128 * 121
    assert matmul_flops(_two_layers, *SHAPES) == expected
    assert _xla_flops(_two_layers, *SHAPES) == pytest.approx(expected, rel=1e-6)


def test_a_scan_repeats_its_body_where_xla_counts_it_once():
    def looped(x, w1, w2):
        def body(carry, _):
            return carry, _two_layers(carry, w1, w2).sum()

        return jax.lax.scan(body, x, None, length=7)[1].sum()

    once = 2 * 64 * 136 * 128 + 2 * 64 * 128 * 121
    assert matmul_flops(looped, *SHAPES) == 7 * once
    assert _xla_flops(looped, *SHAPES) < 2 * once  # why the benchmark does not use XLA's figure


def test_a_gradient_adds_the_two_backward_products_of_each_layer():
    def loss(w1, x, w2):
        return _two_layers(x, w1, w2).sum()

    forward = 2 * 64 * 136 * 128 + 2 * 64 * 128 * 121
    # w1's gradient needs x^T (g w2^T): one product for g w2^T, one for x^T ...; w2 is held fixed
    backward = 2 * 64 * 121 * 128 + 2 * 136 * 64 * 128
    assert matmul_flops(jax.grad(loss), SHAPES[1], SHAPES[0], SHAPES[2]) == forward + backward


def test_a_cond_costs_its_dearest_branch_and_a_jitted_call_is_walked():
    def branchy(p, x, w1, w2):
        return jax.lax.cond(p, lambda: jax.jit(_two_layers)(x, w1, w2).sum(), lambda: (x @ w1).sum())

    assert matmul_flops(branchy, True, *SHAPES) == 2 * 64 * 136 * 128 + 2 * 64 * 128 * 121
    products = matmul_products(branchy, True, *SHAPES)
    assert sorted(p.lhs for p in products) == [(64, 128), (64, 136)]


def test_a_while_loop_is_refused():
    def counted(x):
        return jax.lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] @ c[1]), (0, x))[1]

    with pytest.raises(ValueError, match="while_loop"):
        matmul_flops(counted, jnp.ones((4, 4)))
