"""The size check before enumerating a tree and the on-disk cache of trees
(`tacocat.analysis.store`).

The count equals the enumerated tree's size; a ruleset over the limit is refused in one line
with its estimated size and memory, before anything is enumerated or written (one a thousand
times over it, such as the default rules, from the estimate's first 16 paths); the cached tree
equals the enumerated one array for array; a corrupt, truncated, foreign or pickled file is
refused with one line naming it, never unpickled and never overwritten.
"""

from __future__ import annotations

import os
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
from preset_trees import preset_tree

from tacocat.analysis import store
from tacocat.analysis.best_response import nash_conv
from tacocat.analysis.store import (
    TooLargeError,
    TreeFileError,
    cache_path,
    check_enumerable,
    count_histories,
    estimate_histories,
    load_tree,
    write_tree,
)
from tacocat.analysis.tree import GameTree
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.presets import preset_config

ARRAYS = (
    "player",
    "parent",
    "action",
    "column",
    "chance_prob",
    "infoset",
    "utility",
    "level_starts",
    "infoset_player",
    "legal",
    "n_legal",
    "infoset_node",
)
#: three card values and a deal of 4: about 1.4e8 histories (presets.py)
HUGE = {"deck": {1: 6, 2: 5, 3: 5}, "board": (4, 4, 4), "max_rounds": 1, "round_reward": 1.0}


def assert_same_tree(a: GameTree, b: GameTree) -> None:
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.infoset_keys == b.infoset_keys and a.rules == b.rules


@pytest.fixture(scope="module")
def tiny() -> GameTree:
    return preset_tree("tiny")


# ---------------------------------------------------------------------------------------
# the size check
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, histories", [("tiny", 1643), ("skirmish", 41731)])
def test_the_count_is_the_size_of_the_enumerated_tree(name, histories):
    rules = preset_config(name)
    assert count_histories(rules) == (histories, True)
    assert check_enumerable(rules) == histories
    assert preset_tree(name).n_nodes == histories
    estimate = estimate_histories(rules)
    assert histories / 2 < estimate < histories * 2
    assert estimate_histories(rules) == estimate  # seeded


def test_a_count_over_the_limit_stops_there():
    histories, exact = count_histories(preset_config("skirmish"), limit=5000)
    assert not exact and 5000 < histories < 41731


@pytest.mark.parametrize("limit, how", [(20_000, "more than [0-9,]+ counted"), (2_000, "estimated from 256 random")])
def test_a_tree_over_the_limit_is_refused_in_one_line(limit, how):
    with pytest.raises(TooLargeError, match=how) as info:
        check_enumerable(preset_config("skirmish"), max_histories=limit)
    message = str(info.value)
    assert "\n" not in message and f"the limit is {limit:,} histories" in message
    assert re.search(r"about [34]\.\de\+04 histories .* MB of memory", message)  # 41,731 histories, estimated


def test_a_huge_tree_is_refused_from_its_estimate():
    """About 45 times over the limit: refused from all 256 paths (the first 16 do not cut it
    short: they must put the tree at over 1,000 times the limit)."""
    with pytest.raises(
        ValueError,
        match=r"about 1\.\de\+08 histories \(estimated from 256 random paths\), "
        r"about \d+\.\d GB of memory",
    ):
        check_enumerable(make_config(HUGE))


def test_a_far_too_large_tree_is_refused_from_its_first_paths(monkeypatch):
    """The default rules (R1): the first 16 paths put them at over 1e100 histories, so they are
    refused without the other 240 paths (ten seconds) or the count."""
    paths, sizes = [], store._path_sizes

    def recorded(*args, **kwargs):
        for size in sizes(*args, **kwargs):
            paths.append(size)
            yield size

    monkeypatch.setattr(store, "_path_sizes", recorded)
    monkeypatch.setattr(store, "count_histories", lambda *a, **k: pytest.fail("counted"))
    with pytest.raises(
        TooLargeError,
        match=r"about \d\.\de\+\d{3} histories \(estimated from 16 random paths\), "
        r"about \d\.\de\+\d{3} GB of memory",
    ) as info:
        check_enumerable(RulesConfig())
    assert len(paths) == 16 and "\n" not in str(info.value)


def test_load_tree_refuses_before_enumerating_or_writing(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "enumerate_tree", lambda *a, **k: pytest.fail("enumerated"))
    with pytest.raises(TooLargeError):
        load_tree(preset_config("skirmish"), max_histories=2_000, directory=tmp_path)
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------
# the cache
# ---------------------------------------------------------------------------------------
def test_the_cached_tree_equals_the_enumerated_one(tmp_path, tiny, monkeypatch):
    rules = preset_config("tiny")
    first = load_tree(rules, directory=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [cache_path(rules, tmp_path).name]  # no temporary left
    assert_same_tree(first, tiny)
    monkeypatch.setattr(store, "enumerate_tree", lambda *a, **k: pytest.fail("enumerated again"))
    again = load_tree(rules, directory=tmp_path)
    assert_same_tree(again, tiny)
    assert nash_conv(again, again.uniform_policy()) == nash_conv(tiny, tiny.uniform_policy())


def test_skirmish_round_trips(tmp_path):
    tree = preset_tree("skirmish")
    path = tmp_path / "t.npz"
    write_tree(tree, path)
    assert_same_tree(store.read_tree(path, tree.rules), tree)


def test_the_cache_directory_comes_from_the_environment(tmp_path, monkeypatch, tiny):
    monkeypatch.setenv("TACOCAT_CACHE", str(tmp_path / "here"))
    load_tree(tiny.rules)
    assert cache_path(tiny.rules).parent == tmp_path / "here" and cache_path(tiny.rules).is_file()
    monkeypatch.delenv("TACOCAT_CACHE")
    assert store.cache_dir() == Path.home() / ".cache" / "tacocat" / "trees"


def test_round_reward_and_format_name_the_file():
    names = {cache_path(preset_config("tiny", round_reward=r), Path()).name for r in (0.0, 1.0, 0.5)}
    assert len(names) == 3 and all(name.endswith(f"-v{store.TREE_FORMAT}.npz") for name in names)


def test_a_failed_write_leaves_nothing(tmp_path, tiny, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        write_tree(tiny, tmp_path / "t.npz")
    assert list(tmp_path.iterdir()) == []


class _Marker:
    """Unpickling this creates a file: the proof that a reader unpickled."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def _arrays(tree: GameTree, path: Path) -> dict[str, np.ndarray]:
    write_tree(tree, path)
    with np.load(path) as stored:
        return {name: stored[name] for name in stored.files}


def _edits(tmp_path: Path):
    marker = str(tmp_path / "unpickled")
    return {
        "random bytes": lambda a, p: p.write_bytes(os.urandom(5000)),
        "truncated": lambda a, p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
        "a pickled object array": lambda a, p: np.savez(
            p, **{**a, "player": np.array([_Marker(marker)] * 3, dtype=object)}
        ),
        "a wrong dtype": lambda a, p: np.savez(p, **{**a, "utility": a["utility"].astype(np.float32)}),
        "a missing array": lambda a, p: np.savez(p, **{k: v for k, v in a.items() if k != "legal"}),
        "an extra array": lambda a, p: np.savez(p, **a, extra=np.zeros(3)),
        "a shape over the bounds": lambda a, p: np.savez(p, **{**a, "legal": np.full((270, 5000), -1, np.int32)}),
        "inconsistent parents": lambda a, p: np.savez(p, **{**a, "parent": a["parent"][::-1].copy()}),
        "bad columns": lambda a, p: np.savez(p, **{**a, "column": a["column"] + 5}),
        "other rules": lambda a, p: np.savez(
            p,
            **{
                **a,
                "meta": np.frombuffer(
                    a["meta"].tobytes().replace(b'"round_reward": 1.0', b'"round_reward": 0.0'), np.uint8
                ),
            },
        ),
        "not a zip member .npy": lambda a, p: zipfile.ZipFile(p, "a").writestr("evil.pkl", b"\x80\x04."),
    }


@pytest.mark.parametrize("edit", list(_edits(Path())))
def test_a_bad_cache_file_is_refused_naming_it_and_left_alone(edit, tmp_path, tiny, monkeypatch):
    path = cache_path(tiny.rules, tmp_path)
    arrays = _arrays(tiny, path)  # the file as written, then edited
    _edits(tmp_path)[edit](arrays, path)
    before = path.read_bytes()
    monkeypatch.setattr(store, "enumerate_tree", lambda *a, **k: pytest.fail("rebuilt"))
    with pytest.raises(TreeFileError) as info:
        load_tree(tiny.rules, directory=tmp_path, max_histories=100_000)
    message = str(info.value)
    assert str(path) in message and "\n" not in message and "delete the file" in message
    assert not (tmp_path / "unpickled").exists()
    assert path.read_bytes() == before
