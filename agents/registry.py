"""Agents by name: `make_agent("search", simulations=200)`, `list_agents()`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from agents.base import Agent

_REGISTRY: dict[str, type[Agent]] = {}
A = TypeVar("A", bound=type[Agent])


def register(name: str) -> Callable[[A], A]:
    """Class decorator: make an agent class available to `make_agent` under `name`."""

    def wrap(cls: A) -> A:
        if name in _REGISTRY:
            raise ValueError(f"agent name {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return wrap


def _load_builtin() -> None:
    # importing the modules registers their agents
    import agents.heuristic  # noqa: F401
    import agents.random_agent  # noqa: F401
    import agents.search  # noqa: F401
    try:
        import agents.trained  # noqa: F401
    except ImportError:  # training extras (torch, sb3) not installed
        pass
    try:
        import agents.openspiel_agents  # noqa: F401
    except ImportError:  # open_spiel not installed
        pass


def list_agents() -> list[tuple[str, str]]:
    """(name, one-line description) of every registered agent."""
    _load_builtin()
    return [(n, (inspect.getdoc(c) or "").splitlines()[0]) for n, c in sorted(_REGISTRY.items())]


def make_agent(spec: str, **params: Any) -> Agent:
    """An agent from its name, with parameters as keyword arguments.

    `spec` may carry parameters too: "search:simulations=200,rollout=planner" (values are
    parsed as int, float or string); keyword arguments take precedence.
    """
    _load_builtin()
    name, _, rest = spec.partition(":")
    merged: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"agent spec {spec!r}: parameter {item!r} is not key=value")
        merged[key.strip()] = _parse_value(value.strip())
    merged.update(params)
    if name not in _REGISTRY:
        raise ValueError(f"unknown agent {name!r}; known agents: {', '.join(sorted(_REGISTRY))}")
    cls = _REGISTRY[name]
    try:
        return cls(**merged)
    except TypeError as err:
        signature = inspect.signature(cls.__init__)
        raise ValueError(f"agent {name!r}: bad parameters {merged}; accepted: {signature}") from err


def _parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text
