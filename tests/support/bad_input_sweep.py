"""Sweep of bad inputs through the API, the CLI and files: each must be a clear error.

Every case feeds one bad input (a rules config, a set-up position, an action, an agent spec, a
game file, an experiment config, a model file, a command line) and is classified:

* ``clear``      -- refused with the expected kind of error (a ``ValueError`` family error from
  the API, or at the CLI one ``error: ...`` line, a non-zero exit and no traceback);
* ``traceback``  -- another exception type (an ``IndexError`` from deep inside, ...), or a CLI
  run that printed a Python traceback;
* ``silent``     -- accepted without an error.

Usage::

    .venv/bin/python tests/support/bad_input_sweep.py            # table per channel; exit 1 unless 0 and 0
    .venv/bin/python tests/support/bad_input_sweep.py --verbose  # also every case and its message

tests/test_bad_input_sweep.py runs the whole sweep (its groups apart) and requires 0 and 0.
"""

from __future__ import annotations

import argparse
import base64
import importlib
import io
import json
import math
import pickle
import sys
import tempfile
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:  # run as a script: import `support` from tests/, as pytest does
    sys.path.insert(0, str(TESTS))

from support.sweep_cases.case import Case, CliRefused, run_cli  # noqa: E402 (after the sys.path entry)

SMOKE = TESTS / "support" / "configs" / "smoke.yaml"


@dataclass
class Outcome:
    case: Case
    verdict: str
    detail: str = ""


@dataclass
class Report:
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        return sum(o.verdict == verdict for o in self.outcomes)


# ---------------------------------------------------------------------------------------
# the cases
# ---------------------------------------------------------------------------------------
def rules_cases() -> Iterator[Case]:
    from tacocat import RulesConfig

    bad: dict[str, list[object]] = {
        "deck": [
            {},
            {0: 40},
            {-1: 40},
            {1: 0},
            {1: -3},
            {1: 10**9},
            {1: True, 2: 40},
            {True: 40},
            {1: 40.5},
            {1: "40"},
            {1: None},
            "1:40",
            [1, 2, 3],
            None,
            {5000: 40},
            dict.fromkeys(range(1, 60), 4),
            dict.fromkeys(range(1, 12), 100),
            {1: 3, 2: 3},
            {"x": 40},
            {1: math.inf},
        ],
        "board": [
            [],
            [4],
            [4, 6],
            [4, 6, 9, 7],
            [4, 1, 4],
            [4, 0, 4],
            [4, -2, 4],
            [4] * 301,
            [4, 600, 4],
            "4,6,9",
            [4, True, 4],
            [4, 6.5, 4],
            [4, "6", 4],
            None,
            7,
            {"a": 1},
            [4, None, 4],
        ],
        "arrow_policy": ["backwards", "", None, 1, True, ["trailing"]],
        "arrows": [("both",) * 7, ("player_2",) * 7, "both", 3],
        "tie_policy": ["coin_flip", "", None, 0, True],
        "max_rounds": [0, -1, True, False, "60", 60.5, 10**6, None, math.inf, [60], "yes"],
        "round_reward": [-0.5, math.inf, -math.inf, math.nan, True, "0.5", 1e9, None, [0.1], "x"],
        "no_such_field": [1, "x"],
    }
    for name, values in bad.items():
        for value in values:
            yield Case("rules", f"RulesConfig({name}={value!r:.40})", lambda n=name, v=value: RulesConfig(**{n: v}))
    yield Case(
        "rules", "RulesConfig(arrow_policy='explicit') without arrows", lambda: RulesConfig(arrow_policy="explicit")
    )
    yield Case(
        "rules",
        "RulesConfig explicit arrows of wrong length",
        lambda: RulesConfig(arrow_policy="explicit", arrows=("both",) * 6),
    )


def rules_file_cases(tmp: Path) -> Iterator[Case]:
    from tacocat import make_config

    texts = {
        "invalid YAML": "max_rounds: [\n",
        "YAML list": "- 1\n- 2\n",
        "YAML scalar": "42\n",
        "yes as a number": "max_rounds: yes\n",
        "unknown key": "decks: {1: 40}\n",
        "tab indentation": "deck:\n\t1: 40\n",
        "binary": None,
    }
    for name, text in texts.items():
        path = tmp / f"rules_{len(name)}_{abs(hash(name)) % 997}.yaml"
        if text is None:
            path.write_bytes(b"\xff\xfe\x00\x01garbage")
        else:
            path.write_text(text)
        yield Case("files", f"rules file: {name}", lambda p=path: make_config(p), (ValueError,))
    yield Case("files", "rules file: a folder", lambda: make_config(tmp), (ValueError, OSError))
    yield Case("files", "rules file: missing", lambda: make_config(tmp / "missing.yaml"), (ValueError, OSError))
    yield Case("api", "make_config(42)", lambda: make_config(42), (TypeError,))


def position_cases() -> Iterator[Case]:
    from tacocat import setup_position

    two = ([3, 4], [5, 6])
    bad: list[dict] = [
        {"hands": ([1, 2, 3, 4, 5, 6, 7, 8, 9, 10],) * 2},
        {"hands": ([3], [4])},
        {"hands": two, "rounds_played": -1},
        {"hands": two, "rounds_played": 60},
        {"hands": two, "rounds_played": 1.5},
        {"hands": two, "rounds_played": "1"},
        {"hands": two, "covered": [1, 2], "rounds_played": 1},
        {"hands": two, "space": 2, "to_act": 0, "replace_cap": 99},
        {"hands": "3 4"},
        {"hands": ([3, 4], "56")},
        {"hands": ([3, 4], [5, None])},
        {"hands": ([3, 4], [5, True])},
        {"hands": two, "covered": 2},
        {"hands": two, "space": "3"},
        {"hands": two, "space": 99},
        {"hands": two, "space": -1},
        {"hands": two, "to_act": 2},
        {"hands": two, "phase": 2},
        {"hands": two, "phase": "bidding"},
        {"hands": two, "seed": -1},
        {"hands": two, "seed": "x"},
        {"hands": ([3, 4], [5])},
        {"hands": ([3, 4], [5, 99])},
        {"hands": ([1, 1, 1], [1, 2, 3])},
        {"hands": two, "covered": [3]},
        {"hands": two, "covered": [99]},
        {"hands": two, "phase": "answer", "attacker": 0},
        {"hands": two, "phase": "attack", "attacker": 5},
        {"hands": two, "phase": "duel", "to_act": 1},
        {"hands": two, "draw_pile": [1]},
        {"hands": two, "set_aside": [7]},
        {"hands": two, "discard": "x"},
        {"hands": ([3, 4],)},
        {"hands": None},
        {"hands": two, "config": {"max_rounds": 0}},
    ]
    for kwargs in bad:
        shown = ", ".join(f"{k}={v!r:.30}" for k, v in kwargs.items())
        yield Case("api", f"setup_position({shown})", lambda k=kwargs: setup_position(**k))


def action_cases() -> Iterator[Case]:
    import numpy as np

    import tacocat
    from tacocat import apply_action, new_game

    def over_game():
        state = new_game({"max_rounds": 1}, 0)
        rng = np.random.default_rng(0)
        while not state.is_over:
            legal = tacocat.legal_actions(state)
            apply_action(state, legal[int(rng.integers(len(legal)))])
        return state

    for action in (-1, 10**6, 1.5, "3", None, True, [3], np.float64(3.0), 999, float("nan")):
        yield Case("api", f"apply_action({action!r})", lambda a=action: apply_action(new_game(None, 0), a))
    for seed in (-1, "7", 1.5, True):
        yield Case("api", f"new_game(seed={seed!r})", lambda s=seed: new_game(None, s))
    yield Case("api", "apply_action for the wrong player", lambda: apply_action(new_game(None, 0), 12, player=1))
    yield Case("api", "apply_action after the end", lambda: apply_action(over_game(), 12))
    yield Case(
        "api",
        "mutate legal_actions()",
        lambda: tacocat.legal_actions(new_game(None, 0)).append(1),
        (AttributeError, TypeError),
    )

    def last_after_end():
        e = tacocat.env(max_rounds=1)
        e.reset(seed=0)
        for _ in e.agent_iter():
            obs, _, term, trunc, _ = e.last()
            e.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[0]))
        e.last()

    yield Case("api", "env.last() after the end", last_after_end)
    yield Case("api", "raw_env.last() before reset", lambda: tacocat.raw_env().last(), (RuntimeError,))
    yield Case("api", "raw_env.step() before reset", lambda: tacocat.raw_env().step(0), (RuntimeError,))
    yield Case("api", "env(render_mode='3d')", lambda: tacocat.env(render_mode="3d"))
    yield Case("api", "env(illegal_action='ignore')", lambda: tacocat.env(illegal_action="ignore"))
    yield Case("api", "env(no_such_rule=1)", lambda: tacocat.env(no_such_rule=1))
    yield Case("api", "env(max_rounds=True)", lambda: tacocat.env(max_rounds=True))

    def step_illegal():
        e = tacocat.env()
        e.reset(seed=0)
        e.step(int(np.flatnonzero(e.last()[0]["action_mask"] == 0)[0]))

    yield Case("api", "env.step(illegal action)", step_illegal)


def spec_cases() -> Iterator[Case]:
    from tacocat.agents.registry import make_agent

    specs = [
        "",
        "nope",
        "search:",
        "search:simulations",
        "search:simulations=",
        "search:simulations=-1",
        "search:simulations=0",
        "search:simulations=1.5",
        "search:simulations=true",
        "search:simulations=lots",
        "search:search_replace=maybe",
        "search:search_replace=2",
        "search:search_replace=[1]",
        "search:assume_forced_sacrifice=null",
        "search:bogus=1",
        "search:simulations=8,",
        "search:,simulations=8",
        "search:simulations=8,simulations=9",
        "counter:samples=-1",
        "counter:samples=0",
        "counter:samples=x",
        "counter:keep_from=-3",
        "planner:keep_from=-1",
        "planner:keep_from=2.5",
        "planner:depth=3",
        "highcard:x=1",
        "random:seed=1",
        'ppo:path="a,b',
        "ppo",
        "ppo:path=",
        "ppo:path=/no/such/model.zip",
        "ppo:model=1",
        "ppo:path=x.zip,trust_pickle=yes please",
        "ppo:deterministic=2",
        "ppo:torch_threads=-1",
        "search:simulations={a: 1}",
        ":simulations=8",
        "Search",
        "search simulations=8",
        "search:1=2",
    ]
    for spec in specs:
        yield Case("specs", f"make_agent({spec!r})", lambda s=spec: make_agent(s))
    yield Case("specs", "make_agent(None)", lambda: make_agent(None))  # type: ignore[arg-type]  # bad on purpose
    yield Case("specs", "make_agent('search', simulations='8')", lambda: make_agent("search", simulations="8"))


def game_file_cases(tmp: Path) -> Iterator[Case]:
    from tacocat import RulesConfig
    from tacocat.agents.registry import make_agent
    from tacocat.evaluation.arena import play_game
    from tacocat.evaluation.game_files import game_to_dict, load_games, replay_game

    record = play_game([make_agent("random"), make_agent("highcard")], seed=5)
    good = game_to_dict(record, ["random", "highcard"], RulesConfig())
    first = good["actions"][0]
    changes: list[tuple[str, dict]] = [
        ("seed text", {"seed": "five"}),
        ("seed null", {"seed": None}),
        ("seed -1", {"seed": -1}),
        ("seed true", {"seed": True}),
        ("seed float", {"seed": 5.5}),
        ("seed other", {"seed": 6}),
        ("actions string", {"actions": "0,12"}),
        ("actions null", {"actions": None}),
        ("actions object", {"actions": {}}),
        ("entry without id", {"actions": [[0]]}),
        ("empty entry", {"actions": [[]]}),
        ("entry as number", {"actions": [12]}),
        ("id out of range", {"actions": [[0, 10**6]]}),
        ("negative id", {"actions": [[0, -1]]}),
        ("player text", {"actions": [["x", 12]]}),
        ("player 2", {"actions": [[2, 12]]}),
        ("player true", {"actions": [[True, 12]]}),
        ("float id", {"actions": [[0, 1.5]]}),
        ("name not a string", {"actions": [[0, 12, 7]]}),
        ("wrong name", {"actions": [[first[0], first[1], "attack: single 99"], *good["actions"][1:]]}),
        ("too many fields", {"actions": [[0, 12, "replace: stop", 1]]}),
        ("illegal move", {"actions": [[1, first[1]]]}),
        ("rules string", {"rules": "default"}),
        ("rules invalid", {"rules": {"max_rounds": True}}),
        ("rules list", {"rules": [1]}),
        ("rules other hash", {"rules": {**good["rules"], "max_rounds": 59}}),
        ("hash mismatch", {"ruleset_hash": "0" * 16}),
        ("hash number", {"ruleset_hash": 5}),
        ("winner 2", {"winner": 2}),
        ("winner wrong", {"winner": 1 - good["winner"] if good["winner"] is not None else 0}),
        ("agents one", {"agents": ["only one"]}),
        ("agents string", {"agents": "ab"}),
        ("format other", {"format": "tacocat-game/9"}),
        ("truncated text", {"truncated": "no"}),
        ("rounds -1", {"rounds": -1}),
    ]
    for name, change in changes:
        yield Case("files", f"game: {name}", lambda c=change: replay_game({**good, **c}))
    for name in ("seed", "actions"):
        yield Case("files", f"game: no {name}", lambda n=name: replay_game({k: v for k, v in good.items() if k != n}))
    yield Case("files", "game: a list", lambda: replay_game([1, 2]))  # type: ignore[arg-type]  # bad on purpose
    yield Case(
        "files",
        "game: no rules and no config",
        lambda: replay_game({k: v for k, v in good.items() if k not in ("rules", "ruleset_hash")}),
    )
    lines = {
        "not JSON": "{seed: 1",
        "a JSON list": "[1, 2]",
        "a JSON number": "3",
        "no actions": '{"seed": 1}',
        "good then bad": json.dumps(good) + "\n" + json.dumps({**good, "seed": "x"}),
    }
    for name, text in lines.items():
        path = tmp / f"games_{abs(hash(name)) % 9973}.jsonl"
        path.write_text(text + "\n")
        yield Case("files", f"game file: {name}", lambda p=path: load_games(p))
    binary = tmp / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage\n")
    yield Case("files", "game file: binary", lambda: load_games(binary))
    yield Case("files", "game file: a folder", lambda: load_games(tmp))
    yield Case("files", "game file: missing", lambda: load_games(tmp / "missing.jsonl"), (ValueError, OSError))


def experiment_cases() -> Iterator[Case]:
    from tacocat.train.config import load_experiment

    overrides = [
        "name=../x",
        "name=/abs",
        "name=a/b",
        "name=a,b",
        "name=.hidden",
        "name=''",
        "name=null",
        "name=[1]",
        "seed=-1",
        "seed=true",
        "seed=x",
        "seed=1.5",
        "total_timesteps=0",
        "total_timesteps=-5",
        "total_timesteps=yes",
        "n_envs=0",
        "n_envs=true",
        "vec_env=threads",
        "torch_threads=0",
        "learner_seat=2",
        "rules.max_rounds=yes",
        "rules.board=[4]",
        "rules.nope=1",
        "rules=[1]",
        "opponents=[]",
        "opponents=[{agent: nope}]",
        "opponents=[{agent: 'search:simulations=-1'}]",
        "opponents=[{agent: random, weight: 0}]",
        "opponents=[{agent: random, weight: .inf}]",
        "opponents=[random]",
        "algo.batch_size=1",
        "algo.batch_size=0",
        "algo.batch_size=true",
        "algo.learning_rate=0",
        "algo.learning_rate=.inf",
        "algo.learning_rate=.nan",
        "algo.gamma=1.5",
        "algo.n_steps=0",
        "algo.net_arch=[]",
        "algo.net_arch=64",
        "algo.activation=gelu",
        "algo.bogus=1",
        "eval.opponents=[random, bogus]",
        "eval.final=[{agent: nope}]",
        "eval.seed=-1",
        "eval.every=0",
        "eval.deal_pairs=0",
        "selfplay.snapshot_every=0",
        "selfplay=3",
        "checkpoint_every=0",
        "no_such_key=1",
        "=3",
        "noequals",
        "algo.batch_size=511",
        "algo.net_arch=[0]",
        "algo.net_arch=[-8]",
        "eval.nash_conv=sampling",
        "eval.nash_conv=softmax",
        "eval.nash_conv=true",
    ]
    for item in overrides:
        yield Case("config", f"--set {item}", lambda i=item: load_experiment(SMOKE, overrides=[i]))
    yield Case(
        "config",
        "load_experiment(missing)",
        lambda: load_experiment(SMOKE.parent / "missing.yaml"),
        (ValueError, OSError),
    )


def model_file_cases(tmp: Path) -> Iterator[Case]:
    import torch

    from tacocat import RulesConfig
    from tacocat.agents.trained import load_model_file
    from tacocat.game.observation import ObservationLayout
    from tacocat.game.ruleset import compile_rules

    rules = compile_rules(RulesConfig())
    meta = {
        "ruleset_hash": rules.hash,
        "observation_size": ObservationLayout(rules).size,
        "n_actions": rules.codec.size,
        "policy": {"net_arch": [8], "activation": "tanh"},
    }

    class RunsCode:
        def __reduce__(self):
            return (exec, ("raise SystemExit('code from a model file ran')",))

    def write(name: str, members: dict[str, bytes | str]) -> Path:
        path = tmp / name
        with zipfile.ZipFile(path, "w") as archive:
            for member, blob in members.items():
                archive.writestr(member, blob)
        return path

    def tensor_file(obj: object) -> bytes:
        buffer = io.BytesIO()
        torch.save(obj, buffer)
        return buffer.getvalue()

    evil_data = json.dumps({"policy_class": {":serialized:": base64.b64encode(pickle.dumps(RunsCode())).decode()}})
    files = {
        "not a zip": None,
        "no metadata": {"data": "{}"},
        "metadata not JSON": {"tacocat.json": "{oops"},
        "metadata a list": {"tacocat.json": "[1]"},
        "metadata without sizes": {"tacocat.json": json.dumps({"ruleset_hash": "x"})},
        "metadata sizes as text": {"tacocat.json": json.dumps({**meta, "observation_size": "136"})},
        "no architecture": {"tacocat.json": json.dumps({**meta, "policy": None}), "data": evil_data},
        "unknown activation": {"tacocat.json": json.dumps({**meta, "policy": {"net_arch": [8], "activation": "gelu"}})},
        "no weights": {"tacocat.json": json.dumps(meta), "data": evil_data},
        "pickled code in weights": {"tacocat.json": json.dumps(meta), "policy.pth": tensor_file({"x": RunsCode()})},
        "weights of another shape": {
            "tacocat.json": json.dumps(meta),
            "policy.pth": tensor_file({"w": torch.zeros(2)}),
        },
        "weights not a dict": {"tacocat.json": json.dumps(meta), "policy.pth": tensor_file([torch.zeros(2)])},
        "weights garbage": {"tacocat.json": json.dumps(meta), "policy.pth": b"garbage"},
    }
    for name, members in files.items():
        if members is None:
            path = tmp / "not_a_zip.zip"
            path.write_bytes(b"PK not really")
        else:
            path = write(f"model_{abs(hash(name)) % 99991}.zip", members)
        yield Case("files", f"model file: {name}", lambda p=path: load_model_file(p))
    yield Case("files", "model file: a folder", lambda: load_model_file(tmp))
    yield Case(
        "files",
        "model file: wrong rules",
        lambda: load_model_file(write("other_rules.zip", {"tacocat.json": json.dumps(meta)}), expected_hash="0" * 16),
    )


def cli_cases(tmp: Path) -> Iterator[Case]:
    (tmp / "bad.yaml").write_text("max_rounds: [\n")
    (tmp / "yes.yaml").write_text("max_rounds: yes\n")
    (tmp / "afile").write_text("x")
    (tmp / "folder").mkdir(exist_ok=True)
    (tmp / "exp_bad_agent.yaml").write_text(SMOKE.read_text().replace("agent: highcard", "agent: nope"))
    (tmp / "game.jsonl").write_text('{"seed": "x", "actions": []}\n')
    (tmp / "empty.jsonl").write_text("")
    other_rules = _model_for_other_rules(tmp / "other_rules_model.zip")
    t = str(tmp)
    commands = [
        ["nosuchcommand"],
        ["match"],
        ["match", "random"],
        ["match", "random", "nope"],
        ["match", "nope", "random"],
        ["match", "random", "random", "--deal-pairs", "0"],
        ["match", "random", "random", "--deal-pairs", "x"],
        ["match", "random", "random", "--workers", "0"],
        ["match", "random", "random", "--seed", "x"],
        ["match", "random", "random", "--seed", "-1"],
        ["tournament", "--agents", "random,highcard", "--seed", "-1"],
        ["tournament", "--agents", "random,highcard", "--boot-seed", "-1"],
        ["play", "--seed", "-1"],
        ["match", "random", "random", "--rules", f"{t}/bad.yaml"],
        ["match", "random", "random", "--rules", f"{t}/yes.yaml"],
        ["match", "random", "random", "--rules", f"{t}/folder"],
        ["match", "random", "random", "--rules", f"{t}/missing"],
        ["match", "random", "search:simulations=-1"],
        ["match", "random", "search:search_replace=maybe"],
        ["match", "random", f"ppo:path={t}/folder"],
        ["match", "random", f"ppo:path={t}/afile"],
        ["match", "random", "random", "--json", f"{t}/folder"],
        ["match", "random", "random", "--save-games", f"{t}/afile/g"],
        ["match", "random", "random", "--json", f"{t}/afile/x.json"],
        ["match", "random", "random", "--bogus"],
        ["match", f"ppo:path={other_rules}", "random"],
        ["play", "--opponent", f"ppo:path={other_rules}"],
        ["tournament", "--agents", f"random,ppo:path={other_rules}"],
        ["train", "--config", str(SMOKE), "--set", f"opponents=[{{agent: 'ppo:path={other_rules}'}}]"],
        ["tournament", "--agents", "random"],
        ["tournament", "--agents", "random,random"],
        ["tournament", "--agents", "random,nope"],
        ["tournament", "--agents", "random,highcard", "--out", f"{t}/afile"],
        ["tournament", "--agents", "random,highcard", "--anchor", "search"],
        ["tournament", "--agents", "random,highcard", "--boot", "-1"],
        ["play", "--seat", "2"],
        ["play", "--opponent", "nope"],
        ["play", "--save-game", f"{t}/folder"],
        ["replay", f"{t}/afile"],
        ["replay", f"{t}/folder"],
        ["replay", f"{t}/missing"],
        ["replay", f"{t}/game.jsonl"],
        ["replay", f"{t}/empty.jsonl"],
        ["replay", f"{t}/afile", "--game", "-1"],
        ["replay", f"{t}/game.jsonl", "--rules", f"{t}/bad.yaml"],
        ["train"],
        ["train", "--config", f"{t}/bad.yaml"],
        ["train", "--config", f"{t}/folder"],
        ["train", "--config", f"{t}/missing.yaml"],
        ["train", "--config", str(SMOKE), "--seed", "-1"],
        ["train", "--config", str(SMOKE), "--set", "name=../escape"],
        ["train", "--config", str(SMOKE), "--set", "algo.batch_size=1"],
        ["train", "--config", str(SMOKE), "--set", "noequals"],
        ["train", "--config", str(SMOKE), "--set", "x=[1"],
        ["train", "--config", f"{t}/exp_bad_agent.yaml"],
        ["train", "--resume", f"{t}/missing_run"],
        ["train", "--resume", f"{t}/afile"],
        ["train", "--resume", f"{t}/folder"],
        ["train", "--resume", f"{t}/folder", "--set", "seed=3"],
        ["train", "--config", str(SMOKE), "--set", "run_root=" + f"{t}/afile"],
        ["train", "--config", str(SMOKE), "--address", "127.0.0.1:9"],
        ["train", "--config", str(SMOKE), "--set", "vec_env=dummy"],
        ["evaluate"],
        ["evaluate", f"{t}/missing_run"],
        ["evaluate", f"{t}/afile"],
        ["evaluate", f"{t}/folder"],
        ["evaluate", f"{t}/fake_run"],
        ["evaluate", f"{t}/fake_run", "--workers", "0"],
        ["compare", f"{t}/fake_run"],
        ["compare", f"{t}/fake_run", f"{t}/folder"],
        ["compare", f"{t}/fake_run", f"{t}/fake_run", "--opponent", "nope"],
        ["compare", f"{t}/fake_run", f"{t}/fake_run", "--deal-pairs", "0"],
        ["compare", f"{t}/fake_run", f"{t}/fake_run", "--out", f"{t}/afile"],
    ]
    fake = tmp / "fake_run"  # a run directory whose final.json names a policy file outside it
    fake.mkdir(exist_ok=True)
    (fake / "config.yaml").write_text(SMOKE.read_text())
    (fake / "final.json").write_text('{"policy": {"agent": "ppo", "file": "../afile", "options": {}}}')

    for args in commands:
        yield Case(
            "cli", "tacocat " + " ".join(a.replace(t, "$TMP") for a in args), lambda a=args: run_cli(a), (CliRefused,)
        )


def _model_for_other_rules(path: Path) -> Path:
    """A valid model file whose metadata names another ruleset."""
    import torch

    from tacocat import RulesConfig
    from tacocat.agents.trained import PolicyArchitecture, build_policy
    from tacocat.game.observation import ObservationLayout
    from tacocat.game.ruleset import compile_rules

    rules = compile_rules(RulesConfig())
    size = ObservationLayout(rules).size
    policy = build_policy(size, rules.codec.size, PolicyArchitecture(net_arch=[8], activation="tanh"))
    buffer = io.BytesIO()
    torch.save(policy.state_dict(), buffer)
    meta = {
        "ruleset_hash": "0" * 16,
        "observation_size": size,
        "n_actions": rules.codec.size,
        "policy": {"net_arch": [8], "activation": "tanh"},
    }
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("policy.pth", buffer.getvalue())
        archive.writestr("tacocat.json", json.dumps(meta))
    return path


#: the modules of sweep_cases/, one per surface added after the first sweep
SURFACE_MODULES: tuple[str, ...] = (
    "openspiel",
    "policy",
    "league",
    "tune",
    "rllib",
    "gym",
    "batch",
    "replay",
    "exploit",
    "web",
    "league_devices",
)


#: the sweep in parts that can run apart (the tests run them on separate workers): this file's
#: own cases, then each surface module
GROUPS: tuple[str, ...] = ("core", *SURFACE_MODULES)


def group_cases(group: str, tmp: Path) -> list[Case]:
    """The cases of one of `GROUPS`, their files under `tmp`."""
    if group == "core":
        return [
            *rules_cases(),
            *rules_file_cases(tmp),
            *position_cases(),
            *action_cases(),
            *spec_cases(),
            *game_file_cases(tmp),
            *experiment_cases(),
            *model_file_cases(tmp),
            *cli_cases(tmp),
        ]
    folder = tmp / group
    folder.mkdir(parents=True, exist_ok=True)
    return list(importlib.import_module(f"support.sweep_cases.{group}").cases(folder))


def all_cases(tmp: Path) -> list[Case]:
    return [case for group in GROUPS for case in group_cases(group, tmp)]


# ---------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------
def classify(case: Case) -> Outcome:
    try:
        case.run()
    except case.expect as err:
        return Outcome(case, "clear", " ".join(str(err).split())[:200])
    except SystemExit as err:  # also what the crafted model files raise if their code ran
        return Outcome(case, "traceback", f"SystemExit: {err}")
    except Exception as err:
        return Outcome(case, "traceback", f"{type(err).__name__}: {' '.join(str(err).split())[:200]}")
    return Outcome(case, "silent", "accepted")


def run_sweep(tmp: Path | None = None, groups: tuple[str, ...] = GROUPS) -> Report:
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(tmp or scratch)
        return Report([classify(case) for group in groups for case in group_cases(group, base)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--verbose", action="store_true", help="print every case with its message")
    args = parser.parse_args(argv)
    report = run_sweep()
    per_channel: dict[str, Counter] = {}
    for outcome in report.outcomes:
        per_channel.setdefault(outcome.case.channel, Counter())[outcome.verdict] += 1
    print(f"{'channel':<10}{'cases':>7}{'clear':>7}{'traceback':>11}{'silent':>8}")
    for channel, counts in per_channel.items():
        print(
            f"{channel:<10}{sum(counts.values()):>7}{counts['clear']:>7}{counts['traceback']:>11}{counts['silent']:>8}"
        )
    total = len(report.outcomes)
    print(
        f"{'total':<10}{total:>7}{report.count('clear'):>7}{report.count('traceback'):>11}{report.count('silent'):>8}"
    )
    for outcome in report.outcomes:
        if args.verbose or outcome.verdict != "clear":
            print(f"[{outcome.verdict}] {outcome.case.channel}: {outcome.case.name}\n    {outcome.detail}")
    return 0 if report.count("traceback") == 0 and report.count("silent") == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
