"""Matmul FLOPs of a JAX function, loops included, and the rate its matrix products reach alone.

XLA's cost analysis (`jax.jit(fn).lower(*args).compile().cost_analysis()`) counts the body of a
loop once, whatever its trip count: the league iteration's `lax.scan` over 128 env steps and its
minibatch updates are each counted as one pass (`benchmarks/league_speed.py` prints both
figures). `matmul_products` walks the function's jaxpr instead: every `dot_general` is one
product of 2 x (output elements) x (contracted length) FLOPs, a `scan` repeats its body `length`
times, a `cond` takes its dearest branch, and any other primitive that holds a jaxpr (jit,
custom_jvp, remat, shard_map) is walked once. A `while_loop` has no trip count to read: it is
refused. Element-wise work is not counted.

`product_seconds` times each distinct product alone (jitted, best of several runs), so a caller
can say what fraction of the matmul rate that these very shapes reach the whole function achieves.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.extend import core


@dataclass(frozen=True)
class Product:
    """One matrix product's shapes and contraction, as `lax.dot_general` takes them."""

    lhs: tuple[int, ...]
    rhs: tuple[int, ...]
    dimension_numbers: Any
    out_elements: int
    contracted: int

    @property
    def flops(self) -> int:
        return 2 * self.out_elements * self.contracted


def matmul_products(fn: Callable[..., Any], *args: Any) -> Counter[Product]:
    """Every matrix product `fn(*args)` executes, with how many times (loops unrolled)."""
    traced = fn.trace(*args) if hasattr(fn, "trace") else jax.jit(fn).trace(*args)
    return _products(traced.jaxpr.jaxpr)


def matmul_flops(fn: Callable[..., Any], *args: Any) -> int:
    """2 x M x N x K summed over every matrix product `fn(*args)` executes."""
    return sum(p.flops * n for p, n in matmul_products(fn, *args).items())


def product_seconds(product: Product, repeats: int = 5, calls: int = 20) -> float:
    """Seconds one `product` takes alone on the default device (float32, jitted, best of `repeats`
    timings of `calls` calls)."""
    lhs = jax.random.normal(jax.random.key(0), product.lhs, jnp.float32)
    rhs = jax.random.normal(jax.random.key(1), product.rhs, jnp.float32)
    dot = jax.jit(lambda a, b: jax.lax.dot_general(a, b, product.dimension_numbers))
    jax.block_until_ready(dot(lhs, rhs))
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            out = dot(lhs, rhs)
        jax.block_until_ready(out)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def _products(jaxpr: Any) -> Counter[Product]:
    found: Counter[Product] = Counter()
    for eqn in jaxpr.eqns:
        name = eqn.primitive.name
        if name == "dot_general":
            (lhs_contract, _), _ = eqn.params["dimension_numbers"]
            lhs_shape = tuple(eqn.invars[0].aval.shape)
            found[
                Product(
                    lhs=lhs_shape,
                    rhs=tuple(eqn.invars[1].aval.shape),
                    dimension_numbers=eqn.params["dimension_numbers"],
                    out_elements=math.prod(eqn.outvars[0].aval.shape),
                    contracted=math.prod(lhs_shape[d] for d in lhs_contract),
                )
            ] += 1
        elif name == "scan":
            for product, n in _products(_inner(eqn.params["jaxpr"])).items():
                found[product] += n * eqn.params["length"]
        elif name == "cond":
            branches = [_products(_inner(branch)) for branch in eqn.params["branches"]]
            found += max(branches, key=lambda b: sum(p.flops * n for p, n in b.items()))
        elif name == "while":
            raise ValueError("a while_loop has no static trip count: its FLOPs cannot be counted")
        else:
            for value in eqn.params.values():
                if isinstance(value, (core.Jaxpr, core.ClosedJaxpr)):
                    found += _products(_inner(value))
    return found


def _inner(value: Any) -> Any:
    return value.jaxpr if isinstance(value, core.ClosedJaxpr) else value
