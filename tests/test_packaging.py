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
