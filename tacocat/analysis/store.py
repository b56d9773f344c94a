"""Game trees on disk, and the size check that comes before enumerating one.

`check_enumerable(rules)` sizes a ruleset's tree without building it, in two steps. First a
sampled estimate (Knuth's: random root-to-leaf paths, each giving the product of the branching
factors along it; seeded, so the same every run): a tree its first 16 paths put at more than
a thousand times the limit is refused at once (the default rules: about 3e128 histories, in
half a second, where the 256 paths take ten), and a tree all 256 paths put at more than ten
times the limit is refused (on the presets the estimate is within a factor of 1.5 of the true
size). Then an exact count: a walk of the OpenSpiel adapter memoized on the state's future (two
histories that reach the same engine position with the same chance draws pending have subtrees
of the same size), stopped as soon as the count passes the limit. A ruleset over the limit is
refused with one line: its estimated histories, the memory its enumeration would take, and the
limit.

`load_tree(rules)` returns the ruleset's `GameTree`, read from a cache of enumerated trees or
enumerated (after the size check) and then cached. The cache is a directory (`$TACOCAT_CACHE`,
else ~/.cache/tacocat/trees) of one `.npz` per (ruleset hash, round_reward, tree format):
written atomically (a temporary file renamed into place), read with `allow_pickle=False`, and
every array's dtype and shape checked against the format, with sizes bounded, before any array
is read. Information-state keys are one UTF-8 byte array plus offsets. A file that fails a
check is refused with one line naming it; it is never unpickled and never overwritten.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tacocat.analysis.tree import TREE_FORMAT, GameTree, enumerate_tree
from tacocat.game.config import RulesConfig
from tacocat.game.state import GameState

#: the most histories `load_tree` enumerates: the 3.41 M histories of the `grand` preset took
#: about 12 minutes to enumerate and a few to solve to NashConv 1e-3 on the loaded 2-core machine
#: (docs/results/exact_solve.json), so 4 M stays within 30 minutes and about 1.2 GB
MAX_HISTORIES = 4_000_000
#: peak memory per history of enumerating and solving a tree (measured, the whole process:
#: 880 MB for grand's 3.41 M histories, 339 MB for trio's 1.36 M)
BYTES_PER_HISTORY = 300
#: random paths of the sampled size estimate (about 1 s on the presets, 10 s on the default rules)
PROBES = 256
#: the first paths of the estimate, and how far over the limit they must put a tree for it to be
#: refused without the rest: a few paths can miss the rare large subtrees but hardly make a tree
#: under the limit look a thousand times over it
FIRST_PROBES = 16
FAR_OVER = 1000
#: the most distinct positions the count memoizes (each entry is a key string of about 200
#: characters and a count: 500,000 are about 150 MB)
MAX_MEMO = 500_000
#: the largest information-state key file a cache may hold, per information state
MAX_KEY_BYTES = 1 << 16

# engine fields that do not change a position's future: the ruleset (the same for the whole
# tree), the generator (the adapter deals every card), the logs, and the draw pile, whose order
# the adapter sets before every draw (its counts are in the key)
_NOT_FUTURE = frozenset({"rules", "rng", "events", "actions", "_legal_cache", "draw_pile"})
_FUTURE_FIELDS = tuple(f.name for f in dataclasses.fields(GameState) if f.name not in _NOT_FUTURE)


class TooLargeError(ValueError):
    """A ruleset whose game tree is over the enumeration limit."""


def count_histories(rules: RulesConfig, limit: int | None = None) -> tuple[int, bool]:
    """(histories of `rules`' game tree, whether the count is exact). With a `limit`, counting
    stops as soon as the count passes it, and the count returned is a lower bound (False)."""
    from tacocat.game.openspiel import load_game

    memo: dict[str, int] = {}
    counted = 0  # histories accounted for so far: visited, or in a memoized subtree

    class _Over(Exception):
        pass

    def count(state) -> int:
        nonlocal counted
        if state.is_terminal():
            counted += 1
            return 1
        key = _future_key(state)
        known = memo.get(key)
        if known is not None:
            counted += known
            if limit is not None and counted > limit:
                raise _Over
            return known
        counted += 1
        if limit is not None and counted > limit:
            raise _Over
        moves = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
        total = 1 + sum(count(state.child(a)) for a in moves)
        if len(memo) < MAX_MEMO:
            memo[key] = total
        return total

    try:
        return count(load_game(rules).new_initial_state()), True
    except _Over:
        return counted, False


def _future_key(state) -> str:
    """What decides the subtree below an adapter state: the engine position (without its logs
    and with the draw pile as counts) and the chance draws still pending."""
    engine = state.engine
    position = None
    if engine is not None:
        pile = np.bincount(engine.draw_pile, minlength=state.rules.n_values).tolist() if engine.draw_pile else []
        position = ([getattr(engine, name) for name in _FUTURE_FIELDS], pile)
    draws = state._draws
    pending = (
        None if draws is None else (draws.move, draws.new_round, draws.slots, draws.pool, draws.chosen, draws.value)
    )
    return repr((position, pending))


def estimate_histories(rules: RulesConfig, probes: int = PROBES, seed: int = 0) -> float:
    """Knuth's unbiased estimate of the number of histories: the mean over `probes` uniformly
    random root-to-leaf paths of 1 + b1 + b1*b2 + ..., b_i the branching factors on the path."""
    total = 0.0
    for size in itertools.islice(_path_sizes(rules, seed), probes):
        total += size
    return total / probes


def _path_sizes(rules: RulesConfig, seed: int) -> Iterator[float]:
    """1 + b1 + b1*b2 + ... for one uniformly random root-to-leaf path after another."""
    from tacocat.game.openspiel import load_game

    rng = np.random.default_rng(seed)
    root = load_game(rules).new_initial_state()
    while True:
        state, width, size = root, 1.0, 1.0
        while not state.is_terminal():
            moves = [a for a, _ in state.chance_outcomes()] if state.is_chance_node() else state.legal_actions()
            width *= len(moves)
            size += width
            state = state.child(moves[int(rng.integers(len(moves)))])
        yield size


def check_enumerable(rules: RulesConfig, max_histories: int = MAX_HISTORIES) -> int:
    """The number of histories of `rules`' game tree if it is at most `max_histories`; else
    `TooLargeError` (a ValueError) in one line with the estimate, its memory and the limit.
    The estimate is `estimate_histories(rules)`, cut short after `FIRST_PROBES` paths that put
    the tree at over `FAR_OVER` times the limit (module docstring)."""
    estimate = probe_enumerable(rules, max_histories)
    histories, exact = count_histories(rules, limit=max_histories)
    if exact:
        return histories
    raise _too_large(rules, max(estimate, histories), f"more than {histories:,} counted", max_histories)


def probe_enumerable(rules: RulesConfig, max_histories: int = MAX_HISTORIES) -> float:
    """The sampled estimate of `rules`' histories, refused (`TooLargeError`) at over 10 times
    `max_histories`: the first, fast half of `check_enumerable` (about half a second for the
    default rules), where counting the histories could take long."""
    total, probes = 0.0, 0
    for size in _path_sizes(rules, seed=0):  # the paths of estimate_histories(rules), summed alike
        total += size
        probes += 1
        if probes == PROBES or (probes == FIRST_PROBES and total / probes > FAR_OVER * max_histories):
            break
    estimate = total / probes
    if estimate > 10 * max_histories:
        raise _too_large(rules, estimate, f"estimated from {probes} random paths", max_histories)
    return estimate


def _too_large(rules: RulesConfig, estimate: float, how: str, max_histories: int) -> TooLargeError:
    return TooLargeError(
        f"the game tree of ruleset {rules.ruleset_hash()} is too large to enumerate: about {estimate:.2g} "
        f"histories ({how}), about {_memory(estimate)} of memory; the limit is {max_histories:,} histories "
        f"(about {_memory(max_histories)})"
    )


def _memory(histories: float) -> str:
    """The memory an enumeration of `histories` takes, in MB or GB (over 1,000 GB in powers of
    ten: the default rules' estimate has over a hundred digits)."""
    size = histories * BYTES_PER_HISTORY
    if size >= 1e12:
        return f"{size / 1e9:.2g} GB"
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{size / 1e6:.0f} MB"


# ---------------------------------------------------------------------------------------
# the cache of enumerated trees
# ---------------------------------------------------------------------------------------
#: every array of a cached tree: (dtype, what its shape must be), checked before it is read
_NODE_ARRAYS = {
    "player": np.int8,
    "parent": np.int32,
    "action": np.int32,
    "column": np.int16,
    "chance_prob": np.float64,
    "infoset": np.int32,
    "utility": np.float64,
}
_INFOSET_ARRAYS = {"infoset_player": np.int8, "n_legal": np.int16, "infoset_node": np.int32}
#: the most legal actions an information state can have (far above any action table)
_MAX_ACTIONS = 1 << 12
_MAX_META_BYTES = 1 << 12


def cache_dir() -> Path:
    """Where enumerated trees are kept: `$TACOCAT_CACHE`, else ~/.cache/tacocat/trees."""
    return Path(os.environ.get("TACOCAT_CACHE") or Path.home() / ".cache" / "tacocat" / "trees")


def cache_path(rules: RulesConfig, directory: Path | None = None) -> Path:
    """The file of `rules`' tree: one per ruleset hash, round_reward and tree format."""
    name = f"tree-{rules.ruleset_hash()}-rr{float(rules.round_reward)!r}-v{TREE_FORMAT}.npz"
    return (directory if directory is not None else cache_dir()) / name


def load_tree(
    rules: RulesConfig, progress: bool = False, max_histories: int = MAX_HISTORIES, directory: Path | None = None
) -> GameTree:
    """`rules`' game tree: read from the cache, or enumerated (refused first by
    `check_enumerable` when over `max_histories`) and written to it."""
    path = cache_path(rules, directory)
    if path.exists():
        return read_tree(path, rules, max_histories)
    check_enumerable(rules, max_histories)
    tree = enumerate_tree(rules, progress=progress)
    write_tree(tree, path)
    return tree


def _meta(rules: RulesConfig) -> dict:
    return {"format": TREE_FORMAT, "ruleset_hash": rules.ruleset_hash(), "round_reward": float(rules.round_reward)}


def write_tree(tree: GameTree, path: Path) -> None:
    """Write `tree` to `path` atomically (a temporary file in the same directory, renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    encoded = [key.encode("utf-8") for key in tree.infoset_keys]
    arrays = {name: getattr(tree, name) for name in (*_NODE_ARRAYS, *_INFOSET_ARRAYS, "legal", "level_starts")}
    arrays["key_bytes"] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    arrays["key_offsets"] = np.concatenate([[0], np.cumsum([len(k) for k in encoded])]).astype(np.int64)
    arrays["meta"] = np.frombuffer(json.dumps(_meta(tree.rules)).encode(), dtype=np.uint8)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.stem + ".", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            np.savez_compressed(out, **arrays)
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class TreeFileError(ValueError):
    """A cached tree file that is not a tree of the expected rules and format."""


def read_tree(path: Path, rules: RulesConfig, max_histories: int = MAX_HISTORIES) -> GameTree:
    """The tree of `rules` stored at `path`; `TreeFileError` naming the file if it is not one
    (not a zip of .npy arrays, a missing or extra array, a wrong dtype or shape, sizes over the
    bounds, other rules or format, inconsistent indices). Nothing is unpickled."""
    try:
        headers = _headers(path)
        expected = _expected_shapes(headers, max_histories)
        for name, (dtype, shape) in expected.items():
            if name not in headers:
                raise TreeFileError(f"has no array {name!r}")
            if headers[name] != (np.dtype(dtype), shape):
                raise TreeFileError(
                    f"array {name!r} is {headers[name][0]} {headers[name][1]}, not {np.dtype(dtype)} {shape}"
                )
        if set(headers) != set(expected):
            raise TreeFileError(f"holds unexpected arrays {sorted(set(headers) - set(expected))}")
        with np.load(path, allow_pickle=False) as stored:
            arrays = {name: stored[name] for name in expected}
        return _tree_from_arrays(arrays, rules)
    except TreeFileError as error:
        raise TreeFileError(f"tree cache {path}: {error}; delete the file to enumerate the tree again") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise TreeFileError(
            f"tree cache {path}: not a readable tree file ({reason}); delete the file to enumerate the tree again"
        ) from None


def _headers(path: Path) -> dict[str, tuple[np.dtype, tuple[int, ...]]]:
    """{array name: (dtype, shape)} from the .npy headers of an .npz, without reading data."""
    headers = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                raise TreeFileError(f"holds {info.filename!r}, which is no .npy array")
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
                elif version == (2, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
                else:
                    raise TreeFileError(f"array {info.filename!r} has .npy version {version}")
            if fortran or dtype.hasobject:
                raise TreeFileError(f"array {info.filename!r} is Fortran-ordered or holds objects")
            headers[info.filename.removesuffix(".npy")] = (dtype, tuple(shape))
    return headers


def _expected_shapes(headers: dict, max_histories: int) -> dict[str, tuple[type, tuple[int, ...]]]:
    """Every array's dtype and shape, from the sizes the file declares, each size bounded."""

    def size(name: str, axis: int, bound: int) -> int:
        if name not in headers:
            raise TreeFileError(f"has no array {name!r}")
        shape = headers[name][1]
        if len(shape) <= axis or not 0 < shape[axis] <= bound:
            raise TreeFileError(f"array {name!r} has shape {shape}, not within the bounds (size 1 to {bound:,})")
        return int(shape[axis])

    nodes = size("player", 0, max_histories)
    infosets = size("infoset_player", 0, nodes)
    actions = size("legal", 1, _MAX_ACTIONS)
    shapes: dict[str, tuple[type, tuple[int, ...]]] = {name: (dtype, (nodes,)) for name, dtype in _NODE_ARRAYS.items()}
    shapes.update({name: (dtype, (infosets,)) for name, dtype in _INFOSET_ARRAYS.items()})
    shapes["legal"] = (np.int32, (infosets, actions))
    shapes["level_starts"] = (np.int64, (size("level_starts", 0, nodes + 1),))
    shapes["key_offsets"] = (np.int64, (infosets + 1,))
    shapes["key_bytes"] = (np.uint8, (size("key_bytes", 0, infosets * MAX_KEY_BYTES),))
    shapes["meta"] = (np.uint8, (size("meta", 0, _MAX_META_BYTES),))
    return shapes


def _tree_from_arrays(arrays: dict[str, np.ndarray], rules: RulesConfig) -> GameTree:
    meta = json.loads(arrays["meta"].tobytes().decode("utf-8"))
    if meta != _meta(rules):
        raise TreeFileError(f"holds the tree of {meta}, not of {_meta(rules)}")
    failed = next((what for what, check in _CONSISTENCY if not check(arrays)), None)
    if failed is not None:
        raise TreeFileError(f"inconsistent arrays (expected: {failed})")
    blob, offsets = arrays["key_bytes"].tobytes(), arrays["key_offsets"].tolist()
    keys = tuple(blob[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets))
    fields = {name: arrays[name] for name in (*_NODE_ARRAYS, *_INFOSET_ARRAYS, "legal", "level_starts")}
    return GameTree(rules=rules, infoset_keys=keys, **fields)


def _levels_ok(a: dict[str, np.ndarray]) -> bool:
    starts = a["level_starts"]
    return bool(starts[0] == 0 and starts[-1] == a["player"].size and (np.diff(starts) > 0).all())


def _parents_ok(a: dict[str, np.ndarray]) -> bool:
    parent, nodes = a["parent"].astype(np.int64), a["player"].size
    if parent[0] != -1 or not ((parent[1:] >= 0) & (parent[1:] < nodes)).all():
        return False
    depth = np.searchsorted(a["level_starts"], np.arange(nodes), side="right") - 1
    return bool(np.array_equal(depth[parent[1:]], depth[1:] - 1))


def _infosets_ok(a: dict[str, np.ndarray]) -> bool:
    player, infoset, node = a["player"], a["infoset"], a["infoset_node"]
    n = a["infoset_player"].size
    return bool(
        np.isin(player, (-2, -1, 0, 1)).all()
        and np.array_equal(infoset >= 0, player >= 0)
        and (infoset < n).all()
        and ((node >= 0) & (node < player.size)).all()
        and np.array_equal(infoset[node], np.arange(n))
        and np.array_equal(player[node], a["infoset_player"])
    )


def _legal_ok(a: dict[str, np.ndarray]) -> bool:
    n_legal, width = a["n_legal"], a["legal"].shape[1]
    return bool(((n_legal >= 1) & (n_legal <= width)).all() and np.array_equal((a["legal"] >= 0).sum(axis=1), n_legal))


def _columns_ok(a: dict[str, np.ndarray]) -> bool:
    parent = a["parent"][1:].astype(np.int64)
    below = np.flatnonzero(a["player"][parent] >= 0)
    column = a["column"][1:][below]
    return bool((column >= 0).all() and (column < a["n_legal"][a["infoset"][parent[below]]]).all())


def _keys_ok(a: dict[str, np.ndarray]) -> bool:
    offsets = a["key_offsets"]
    return bool(offsets[0] == 0 and offsets[-1] == a["key_bytes"].size and (np.diff(offsets) >= 0).all())


#: what a tree's arrays must satisfy, checked in order (each check may index as the ones
#: before it allow)
_CONSISTENCY = (
    ("level_starts runs from 0 to the number of nodes", _levels_ok),
    ("every node's parent is in the level above", _parents_ok),
    ("decision nodes, and only they, have information states, in range", _infosets_ok),
    ("legal counts match the legal rows", _legal_ok),
    ("a decision's children have columns among its legal actions", _columns_ok),
    ("key offsets run through the key bytes", _keys_ok),
)
