"""Agents by name: `make_agent("search:simulations=200")`, `list_agents()`.

An agent spec is `name` or `name:key=value,key=value`. This module holds the one parser of
specs (`parse_spec`, `split_specs`), used everywhere a spec is read (CLI, training configs,
self-play snapshots). Values are read as YAML scalars (`true`, `16`, `0.5`, `null`) and checked
against the type hints of the agent's constructor; a value may be quoted ("..." or '...') to
hold a comma or an `=`. Parameters of type `str` take the text as written.
"""

from __future__ import annotations

import importlib
import inspect
import re
import typing
from collections.abc import Callable
from typing import Any, TypeVar

import yaml
from pydantic import TypeAdapter, ValidationError

from tacocat.agents.base import Agent

_REGISTRY: dict[str, type[Agent]] = {}
A = TypeVar("A", bound=type[Agent])
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


class AgentSpecError(ValueError):
    """An agent spec that names no agent, or gives it parameters it does not take."""


#: the built-in agents, name -> "module:Class", imported on first use: the agent modules do not
#: import this one, so registry and agents form no import cycle. An agent whose extra is not
#: installed (ppo: torch; ismcts: open_spiel) is left out.
BUILTIN_AGENTS = {
    "random": "tacocat.agents.random_agent:RandomAgent",
    "highcard": "tacocat.agents.heuristic:HighCardAgent",
    "planner": "tacocat.agents.heuristic:PlannerAgent",
    "counter": "tacocat.agents.heuristic:CardCounterAgent",
    "search": "tacocat.agents.search:SearchAgent",
    "ppo": "tacocat.agents.trained:PPOAgent",
    "rllib": "tacocat.agents.mlp_agent:RllibPolicyAgent",
    "league": "tacocat.agents.mlp_agent:LeaguePolicyAgent",
    "champion": "tacocat.agents.mlp_agent:ChampionAgent",
    "ismcts": "tacocat.agents.ismcts:ISMCTSAgent",
    "mix": "tacocat.agents.mix:MixAgent",
}


def register(name: str) -> Callable[[A], A]:
    """Class decorator: make an agent class of your own available to `make_agent` under `name`."""

    def wrap(cls: A) -> A:
        if name in _REGISTRY or name in BUILTIN_AGENTS:
            raise ValueError(f"agent name {name!r} is already registered")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return wrap


def _load_builtin() -> None:
    for name, target in BUILTIN_AGENTS.items():
        if name in _REGISTRY:
            continue
        module, _, attribute = target.partition(":")
        try:
            cls = getattr(importlib.import_module(module), attribute)
        except ImportError:  # an optional extra is not installed
            continue
        assert cls.name == name, f"{target}.name is {cls.name!r}, registered as {name!r}"
        _REGISTRY[name] = cls


def list_agents() -> list[tuple[str, str]]:
    """(name, one-line description) of every registered agent: the first paragraph of its
    docstring, on one line."""
    _load_builtin()
    return [(n, " ".join((inspect.getdoc(c) or "").split("\n\n")[0].split())) for n, c in sorted(_REGISTRY.items())]


# ---------------------------------------------------------------------------------------
# the spec parser
# ---------------------------------------------------------------------------------------
def _split_top(text: str, spec: str) -> list[str]:
    """Split at commas outside quotes."""
    pieces, current, quote = [], [], ""
    for char in text:
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
            current.append(char)
        elif char == ",":
            pieces.append("".join(current))
            current = []
        else:
            current.append(char)
    if quote:
        raise AgentSpecError(f"agent spec {spec!r}: unclosed quote {quote}")
    pieces.append("".join(current))
    return pieces


def _unquote(text: str) -> tuple[str, bool]:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1], True
    return text, False


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """`"name:key=value,..."` -> (name, {key: value text}); quotes around a value are removed
    later, by `_convert`, which also reads the text as YAML."""
    if not isinstance(spec, str) or not spec.strip():
        raise AgentSpecError(f"an agent spec must be a non-empty string like 'search:simulations=64', got {spec!r}")
    name, colon, rest = spec.strip().partition(":")
    name = name.strip()
    params: dict[str, str] = {}
    if colon:
        for item in _split_top(rest, spec):
            if not item.strip():
                raise AgentSpecError(f"agent spec {spec!r}: empty parameter (stray comma?)")
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or not key.isidentifier():
                raise AgentSpecError(f"agent spec {spec!r}: parameter {item.strip()!r} is not key=value")
            if key in params:
                raise AgentSpecError(f"agent spec {spec!r}: parameter {key!r} given twice")
            params[key] = value.strip()
    return name, params


def split_specs(values: list[str] | str) -> list[str]:
    """Split "a,b:x=1,y=2,c" (or several such strings) into agent specs: a comma piece that is
    `key=value` without a ':' continues the parameters of the previous spec. Quotes protect
    commas inside values."""
    specs: list[str] = []
    for value in [values] if isinstance(values, str) else values:
        for piece in (p.strip() for p in _split_top(value, value)):
            if not piece:
                continue
            head = piece.split("=", 1)[0]
            if "=" in piece and ":" not in head and specs and ":" in specs[-1]:
                specs[-1] += "," + piece
            else:
                specs.append(piece)
    return specs


def format_spec(name: str, **params: Any) -> str:
    """The spec of `name` with `params`; string values are quoted when they need it."""
    parts = []
    for key, value in params.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, str):
            text = value if re.fullmatch(r"[\w./+@-]+", value) else '"' + value.replace('"', "") + '"'
            if '"' in value:
                raise AgentSpecError(f"a spec value cannot hold a double quote: {value!r}")
        else:
            text = str(value)
        parts.append(f"{key}={text}")
    return name + (":" + ",".join(parts) if parts else "")


def _convert(text: str, hint: Any) -> Any:
    """A spec value's text as the parameter's type wants it (checked afterwards)."""
    raw, quoted = _unquote(text)
    if hint is str:
        return raw
    if quoted:
        value: Any = raw
    else:
        try:
            value = yaml.safe_load(raw) if raw else None
        except yaml.YAMLError:
            value = raw
        if isinstance(value, str) and _NUMBER.fullmatch(raw):  # YAML 1.1 reads 1e-3 as text
            value = float(raw)
    if hint is bool and type(value) is int and value in (0, 1):  # deterministic=0 reads naturally
        value = bool(value)
    return value


def _check_params(name: str, cls: type[Agent], params: dict[str, Any], texts: set[str]) -> dict[str, Any]:
    signature = inspect.signature(cls.__init__)
    hints = typing.get_type_hints(cls.__init__)
    accepted = [p for p in signature.parameters if p != "self" and p not in cls.internal_params]
    checked: dict[str, Any] = {}
    for key, value in params.items():
        if key not in accepted and (key in texts or key not in signature.parameters):
            raise AgentSpecError(
                f"agent {name!r} has no parameter {key!r}; it accepts: {', '.join(accepted) or 'no parameters'}"
            )
        hint = hints.get(key, Any)
        if key in texts:
            value = _convert(value, hint)
        try:
            checked[key] = TypeAdapter(hint).validate_python(value, strict=True) if hint is not Any else value
        except ValidationError:
            raise AgentSpecError(
                f"agent {name!r}: parameter {key}={value!r} must be of type {getattr(hint, '__name__', hint)}"
            ) from None
    return checked


def make_agent(spec: str, **params: Any) -> Agent:
    """An agent from its spec, with more parameters as keyword arguments (these win).

    Raises AgentSpecError (a ValueError) naming the agent and the parameter for an unknown
    agent, an unknown parameter, a value of the wrong type or out of range.
    """
    _load_builtin()
    name, texts = parse_spec(spec)
    if name not in _REGISTRY:
        raise AgentSpecError(f"unknown agent {name!r}; known agents: {', '.join(sorted(_REGISTRY))}")
    cls = _REGISTRY[name]
    merged: dict[str, Any] = {**texts, **params}
    checked = _check_params(name, cls, merged, set(texts) - set(params))
    try:
        agent = cls(**checked)
    except ValueError as err:
        if type(err) is not ValueError:  # already a specific error (a model file, ...)
            raise
        raise AgentSpecError(f"agent {name!r}: {err}") from None
    agent.spec = format_spec(name, **checked)  # what results record: the agent with its parameters
    return agent
