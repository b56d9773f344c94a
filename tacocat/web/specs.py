"""Agent specs over HTTP are data, never code: the agents and parameters `tacocat serve` takes.

A spec a client sends (`opponent`, `agents`) is read with `tacocat.agents.registry.parse_spec` and
checked here before anything is built or loaded:

* the agent must be one of `SERVED`, and each parameter one it lists there, within its
  bounds. Search budgets are capped (`search:simulations` <= 1,000, `ismcts:simulations`
  <= 100: about 1.5 s for one action at most on the 2-core machine), and so is
  `counter:samples`. `trust_pickle` (SB3's loader, which runs code from the file) and
  `torch_threads` (a setting of the whole process) are not among them, so never accepted;
* a `path=` must lie, symlinks and `..` resolved, inside a folder the server serves
  (`tacocat serve --policies DIR`; by default the shipped champion's folder and `runs/`).
  Every refused path (outside those folders, missing, a folder, not a zip, not a policy
  file) gets the one message `PATH_REFUSED`, which neither repeats the path nor says which
  of these it was: the server is no oracle for the files of its machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, TypeAdapter, ValidationError

from tacocat.agents.base import Agent
from tacocat.agents.mlp_agent import CHAMPION
from tacocat.agents.registry import AgentSpecError, list_agents, make_agent, parse_spec
from tacocat.game.config import LIMITS, RulesConfig
from tacocat.game.errors import one_line
from tacocat.web.errors import WebError

#: the caps on the thinking budget of the agents served
MAX_SEARCH_SIMULATIONS = 1000
MAX_ISMCTS_SIMULATIONS = 100
MAX_COUNTER_SAMPLES = 256
PATH_REFUSED = (
    "path= must name a policy file in the folders this server serves (tacocat serve --policies "
    "DIR); this one cannot be used"
)


@dataclass(frozen=True)
class Param:
    """A parameter the server takes: its type and bounds, and how a refusal names them."""

    adapter: TypeAdapter[Any]
    what: str

    def read(self, text: str) -> Any:
        """The value of `text` (as written in a spec, quotes allowed); ValueError if out of bounds."""
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            text = text[1:-1]
        try:
            return self.adapter.validate_python(text)
        except ValidationError:
            raise ValueError(self.what) from None


def _whole(low: int, high: int) -> Param:
    return Param(TypeAdapter(Annotated[int, Field(ge=low, le=high)]), f"a whole number from {low} to {high}")


def _number(low: float, high: float) -> Param:
    return Param(
        TypeAdapter(Annotated[float, Field(ge=low, le=high, allow_inf_nan=False)]), f"a number from {low:g} to {high:g}"
    )


def _choice(*options: str) -> Param:
    # a Literal of the options (`Literal[("a", "b")]` is `Literal["a", "b"]`), built at run time,
    # which no static type can name: the adapter validates against it all the same
    choices: Any = Literal[options]
    return Param(TypeAdapter(choices), f"one of {', '.join(options)}")


FLAG = Param(TypeAdapter(bool), "true or false")
RATE = _number(0.0, 1.0)
VALUE_INDEX = _whole(0, int(LIMITS["distinct_values"]))
#: `path=`: checked against the served folders (`ServedAgents`), not by its `adapter`
PATH = Param(TypeAdapter(str), "a policy file")


@dataclass(frozen=True)
class Served:
    """An agent the server offers: its parameters, and whether its thinking is slow (it then
    runs in the small pool of `tacocat.web.work.Thinking`)."""

    params: dict[str, Param] = field(default_factory=dict)
    slow: bool = False


SERVED = {
    "random": Served(),
    "highcard": Served(),
    "planner": Served({"keep_from": VALUE_INDEX, "sacrifice_rate": RATE}),
    "counter": Served(
        {
            "keep_from": VALUE_INDEX,
            "samples": _whole(1, MAX_COUNTER_SAMPLES),
            "sacrifice_rate": RATE,
            "duel_from": VALUE_INDEX,
            "replace_keeper_from": VALUE_INDEX,
        }
    ),
    "search": Served(
        {
            "simulations": _whole(1, MAX_SEARCH_SIMULATIONS),
            "search_replace": FLAG,
            "belief": _choice("on", "off", "soft"),
            "soft_weight": RATE,
            "seeded": FLAG,
        },
        slow=True,
    ),
    "ismcts": Served(
        {
            "simulations": _whole(1, MAX_ISMCTS_SIMULATIONS),
            "uct_c": _number(0.0, 10.0),
            "evaluator": _choice("round", "random"),
        },
        slow=True,
    ),
    "champion": Served({"deterministic": FLAG}),
    "league": Served({"path": PATH, "deterministic": FLAG}),
    "rllib": Served({"path": PATH, "deterministic": FLAG}),
    "ppo": Served({"path": PATH, "deterministic": FLAG}, slow=True),
}


def default_policy_folders() -> list[Path]:
    """The folders served when `tacocat serve` is given no `--policies`: the shipped
    champion's and `runs/` under the current directory."""
    return [CHAMPION.parent, Path("runs")]


@dataclass(frozen=True)
class AgentChoice:
    """A spec the server accepted: its text as sent (shown, and saved in game files), the
    checked parameters (a path resolved) and whether its thinking is slow."""

    text: str
    name: str
    params: dict[str, Any]
    slow: bool

    def build(self, config: RulesConfig, where: str) -> Agent:
        """The agent, checked against the rules (a trained policy plays its own rules only)."""
        try:
            agent = make_agent(self.name, **self.params)
        except (ValueError, OSError) as err:
            raise WebError(400, f"{where}: {PATH_REFUSED if 'path' in self.params else one_line(err)}") from None
        if hasattr(agent, "check_ruleset"):
            try:
                agent.check_ruleset(config.ruleset_hash())
            except ValueError:
                raise WebError(
                    400,
                    f"{where}: {self.name} was trained for another ruleset than these rules "
                    f"({config.ruleset_hash()}); a trained policy plays its own rules only "
                    "(the champion: the default rules)",
                ) from None
        return agent


class ServedAgents:
    """The agents of `SERVED` that are installed, and the folders whose policy files they may load."""

    def __init__(self, folders: Iterable[Path | str] | None = None) -> None:
        chosen = default_policy_folders() if folders is None else [Path(f) for f in folders]
        self.folders = tuple(folder.resolve() for folder in chosen)
        installed = {name for name, _ in list_agents()}
        self.served = {name: served for name, served in SERVED.items() if name in installed}

    def choose(self, spec: str, where: str) -> AgentChoice:
        """The checked choice of `spec`; WebError 400 naming `where` otherwise."""
        try:
            name, texts = parse_spec(spec)
        except AgentSpecError as err:
            raise WebError(400, f"{where}: {one_line(err)}") from None
        served = self.served.get(name)
        if served is None:
            raise WebError(400, f"{where}: unknown agent {name[:100]!r}; this server offers: {', '.join(self.served)}")
        params = {key: self._value(name, served, key, text, where) for key, text in texts.items()}
        return AgentChoice(spec, name, params, served.slow)

    def _value(self, name: str, served: Served, key: str, text: str, where: str) -> Any:
        param = served.params.get(key)
        if param is None:
            takes = ", ".join(f"{k} ({p.what})" for k, p in served.params.items()) or "no parameters"
            raise WebError(400, f"{where}: agent {name!r} has no parameter {key!r} here; it takes {takes}")
        if param is PATH:
            return self._policy_path(param.read(text), where)
        try:
            return param.read(text)
        except ValueError:
            raise WebError(400, f"{where}: agent {name!r}: {key}={text[:40]!r} must be {param.what}") from None

    def _policy_path(self, text: str, where: str) -> str:
        """`text` resolved (symlinks, `..`), if it lies in a served folder."""
        try:
            resolved = Path(text).resolve()
        except (OSError, ValueError, RuntimeError):  # a null byte, a symlink loop
            raise WebError(400, f"{where}: {PATH_REFUSED}") from None
        if not any(resolved.is_relative_to(folder) for folder in self.folders):
            raise WebError(400, f"{where}: {PATH_REFUSED}")
        return str(resolved)

    def offered(self) -> list[dict[str, str]]:
        """What the page's forms offer: each agent's name and description."""
        docs = dict(list_agents())
        return [{"name": name, "doc": docs[name]} for name in sorted(self.served)]
