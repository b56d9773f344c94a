"""Packaging facts: one version, light engine imports, the public names resolve."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import tacocat_env


def test_the_installed_version_is_the_package_version():
    assert importlib.metadata.version("tacocat-env") == tacocat_env.__version__


def test_the_engine_imports_without_the_rl_libraries():
    code = ("import sys, tacocat_env, tacocat_env.engine, tacocat_env.observation, tacocat_env.view; "
            "heavy = [m for m in ('pettingzoo', 'gymnasium', 'torch', 'jax') if m in sys.modules]; "
            "print(','.join(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_every_public_name_resolves():
    for name in tacocat_env.__all__:
        assert getattr(tacocat_env, name) is not None
    assert set(tacocat_env.__all__) <= set(dir(tacocat_env))


def test_env_stays_the_function_after_its_module_is_imported():
    code = ("from tacocat_env.env import raw_env; import tacocat_env; "
            "e = tacocat_env.env(); e.reset(seed=0); print(type(e).__name__, callable(tacocat_env.raw_env))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["ForwardingOrderEnforcingWrapper", "True"]


def _project_imports() -> dict[str, set[str]]:
    """module -> project modules it imports anywhere in its source (function-level included)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    files = {}
    for package in ("tacocat_env", "agents", "tacocat_web", "experiments"):
        for path in (root / package).rglob("*.py"):
            name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            files[name] = path
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            # (a module's own parent packages are imported before it anyway: not an edge)
            graph[name] |= {t for t in targets if t in files and t != name and not name.startswith(t + ".")}
    return graph


def test_no_import_cycles_and_dependencies_point_one_way():
    graph = _project_imports()
    layer = {"tacocat_env": 0, "agents": 1, "tacocat_web": 2, "experiments": 3}
    for module, imported in graph.items():  # experiments -> tacocat_web -> agents -> tacocat_env, never back
        for target in imported:
            assert layer[target.split(".")[0]] <= layer[module.split(".")[0]], f"{module} imports {target}"
    state: dict[str, int] = {}  # depth-first search: 1 on the current path, 2 done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            assert state.get(target) != 1, "import cycle: " + " -> ".join(path + [module, target])
            if target not in state:
                visit(target, path + [module])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])
