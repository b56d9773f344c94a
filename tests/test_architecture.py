"""The wings of `tacocat` and the one direction of imports between them (docs/ARCHITECTURE.md):
game <- agents <- evaluation, analysis <- train <- web <- cli. Every import in the package, at
module level or inside a function, is read from the source: a wing imports only from itself and
the wings below it, and no modules import each other in a cycle."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import tacocat

PACKAGE = Path(tacocat.__file__).resolve().parent
#: wing -> rank: a module imports only its own wing and wings of a lower rank (`stamp`, the
#: provenance of published numbers, sits just above the game whose ruleset hash it records, and
#: so does the package's own `__init__`, which re-exports names of the game and the version)
RANKS = {
    "game": 0.0,
    "stamp": 0.5,
    "tacocat": 0.5,
    "agents": 1.0,
    "evaluation": 2.0,
    "analysis": 2.0,
    "train": 3.0,
    "web": 4.0,
    "cli": 5.0,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def wing(module: str) -> str | None:
    """The wing of a module of the package (`tacocat` for the package itself); None outside it."""
    parts = module.split(".")
    if parts[0] != "tacocat":
        return None
    return parts[1] if len(parts) > 1 else "tacocat"


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(
    module: str, source: str, is_package: bool = False, top_level_only: bool = False
) -> Iterator[tuple[int, str]]:
    """(line, imported module) of every import in `source`, relative imports resolved."""
    tree = ast.parse(source)
    nodes = tree.body if top_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + is_package]
                target = ".".join(base + ([node.module] if node.module else []))
            yield node.lineno, target
            for alias in node.names:  # `from tacocat.game import engine` imports the module engine
                if _is_module(f"{target}.{alias.name}"):
                    yield node.lineno, f"{target}.{alias.name}"


def upward(module: str, source: str) -> list[str]:
    """The imports of `module` that point sideways or up the wings."""
    own = wing(module)
    if own in (None, "tacocat"):
        return []
    found = []
    for line, target in imports(module, source):
        other = wing(target)
        if other is None or other == own:
            continue
        if RANKS.get(other, float("inf")) >= RANKS[own]:
            found.append(f"line {line}: {target}")
    return found


def _sources() -> dict[str, tuple[Path, str]]:
    return {module_name(p): (p, p.read_text()) for p in sorted(PACKAGE.rglob("*.py"))}


SOURCES = _sources()


def test_every_module_lies_in_a_wing() -> None:
    assert {wing(m) for m in SOURCES} == set(RANKS)


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_imports_point_down_the_wings(module: str) -> None:
    assert upward(module, SOURCES[module][1]) == []


@pytest.mark.parametrize(
    "module, source",
    [
        ("tacocat.game.engine", "from tacocat.agents.base import Agent\n"),
        ("tacocat.agents.search", "def f():\n    from tacocat.evaluation import matches\n"),
        ("tacocat.evaluation.matches", "import tacocat.analysis.tree\n"),
        ("tacocat.train.loop", "from tacocat.web import app\n"),
        ("tacocat.game.batch.core", "from ...train import loop\n"),
        ("tacocat.game.engine", "import tacocat\n"),
    ],
)
def test_an_import_up_or_across_the_wings_is_found(module: str, source: str) -> None:
    assert len(upward(module, source)) >= 1


def test_imports_down_the_wings_are_not_flagged() -> None:
    assert upward("tacocat.cli.app", "from tacocat.train.loop import run\nimport numpy\n") == []
    assert upward("tacocat.game.batch.core", "from . import tables\nfrom ..engine import new_game\n") == []


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_modules_import_each_other_at_import_time() -> None:
    # a module's own parent packages are imported before it in any case: not an edge of a cycle
    graph = {
        m: {
            t
            for _, t in imports(m, src, path.name == "__init__.py", top_level_only=True)
            if t in SOURCES and t != m and not m.startswith(f"{t}.")
        }
        for m, (path, src) in SOURCES.items()
    }
    assert _cycle(graph) is None
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
