"""Bad-input sweep: `tacocat tune` (the tune file, the study name, the storage), issue 24.

Study names must be safe folder names (the default study folder is runs/tune/<study>); a
search space or trial override may not set what every trial sets (run_root, ...); a storage
must be a database that outlives one worker. Every case is refused before any trial trains.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .case import Case, CliRefused, run_cli

SMOKE = Path(__file__).resolve().parents[1] / "configs" / "smoke.yaml"
SPACE = {"algo.learning_rate": {"type": "float", "low": 1e-4, "high": 1e-3, "log": True}}


def _invoke(args: list[str]) -> None:
    run_cli(args)


def cases(tmp: Path) -> Iterator[Case]:
    from tacocat.train.tune.config import load_tune
    from tacocat.train.tune.study import open_study, run_study

    counter = iter(range(10**6))

    def tune_file(**fields: Any) -> Path:
        data = {
            "study": "sweep",
            "base_config": str(SMOKE),
            "study_dir": str(tmp / "study"),
            "trial": {"total_timesteps": 512},
            "search_space": SPACE,
        }
        data.update(fields)
        path = tmp / f"tune_{next(counter)}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        return path

    good = tune_file()

    # study names: the issue's, then more (NUL, unicode separators, too long, dots, ...)
    names = [
        "../../../x",
        "/tmp/tacocat_abs",
        "",
        "a\nb",
        "x\n",
        "a\x00b",
        "a\u2028b",
        "a\u2029b",
        "a\uff0fb",
        "a\\b",
        "x" * 101,
        ".",
        "..",
        "-x",
        "a b",
        "é",
    ]
    for name in names:
        yield Case("tune", f"load_tune(study={name!r:.30})", lambda n=name: load_tune(good, study=n))
    for name in ("../../../x", "a\nb"):
        yield Case(
            "tune", f"tune file with study: {name!r}", lambda n=name: load_tune(tune_file(study=n, study_dir=None))
        )
    yield Case("tune", "tune file with study: 5 (not a string)", lambda: load_tune(tune_file(study=5)))

    # fields every trial sets: the issue's run_root, then the others and their section
    categorical = {"type": "categorical", "choices": ["a", "b"]}
    for key in ("run_root", "name", "eval.final", "eval.workers", "eval"):
        yield Case(
            "tune", f"search_space over {key}", lambda k=key: load_tune(tune_file(search_space={k: categorical}))
        )
    yield Case("tune", "trial override of run_root", lambda: load_tune(tune_file(trial={"run_root": str(tmp)})))

    # search spaces
    spaces = {
        "empty search space": {},
        "empty choices": {"algo.net_arch": {"type": "categorical", "choices": []}},
        "low > high": {"algo.learning_rate": {"type": "float", "low": 1e-2, "high": 1e-4}},
        "low == high": {"algo.n_epochs": {"type": "int", "low": 3, "high": 3}},
        "log with low 0": {"algo.ent_coef": {"type": "float", "low": 0.0, "high": 0.1, "log": True}},
        "log with low < 0": {"algo.ent_coef": {"type": "float", "low": -1.0, "high": 0.1, "log": True}},
        "log with step": {
            "algo.learning_rate": {"type": "float", "low": 1e-4, "high": 1e-2, "log": True, "step": 1e-4}
        },
        "step 0": {"algo.n_epochs": {"type": "int", "low": 1, "high": 4, "step": 0}},
        "float bounds on an int field": {"algo.n_epochs": {"type": "float", "low": 1.5, "high": 3.0}},
        "NaN low": {"algo.gamma": {"type": "float", "low": float("nan"), "high": 0.99}},
        "infinite high": {"algo.clip_range": {"type": "float", "low": 0.1, "high": float("inf")}},
        "a bound past the field's range": {"algo.gamma": {"type": "float", "low": 0.9, "high": 1.5}},
        "a choice the field refuses": {"algo.activation": {"type": "categorical", "choices": ["tanh", "gelu"]}},
        "unknown type": {"algo.gamma": {"type": "uniform", "low": 0.9, "high": 0.99}},
        "spec not a mapping": {"algo.gamma": 0.9},
        "unknown field": {"algo.nope": {"type": "int", "low": 1, "high": 2}},
        "empty key": {"": {"type": "int", "low": 1, "high": 2}},
        "key through a value": {"seed.value": {"type": "int", "low": 0, "high": 3}},
    }
    for what, space in spaces.items():
        yield Case("tune", f"search space: {what}", lambda s=space: load_tune(tune_file(search_space=s)))

    # other tune-file keys: directions (Optuna's; the objective is always maximized), budgets
    others = {
        "direction: minimize": {"direction": "minimize"},
        "directions: [maximize]": {"directions": ["maximize"]},
        "trial total_timesteps: 0": {"trial": {"total_timesteps": 0}},
        "base_config missing": {"base_config": str(tmp / "missing.yaml")},
        "heartbeat grace_period <= interval": {"heartbeat": {"interval": 10, "grace_period": 10}},
        "pruner kind percentile": {"pruner": {"kind": "percentile"}},
        "sampler n_startup_trials: -1": {"sampler": {"n_startup_trials": -1}},
        "objective deal_pairs: 0": {"objective": {"deal_pairs": 0}},
        "study_dir: ''": {"study_dir": ""},
    }
    for what, fields in others.items():
        yield Case("tune", f"tune file: {what}", lambda f=fields: load_tune(tune_file(**f)))

    # the tune file itself
    texts: dict[str, bytes] = {
        "invalid YAML": b"study: [\n",
        "YAML list": b"- 1\n",
        "binary": b"\xff\xfe\x00garbage",
        "over 1 MiB": b"study: x\n" + b"#" * (2 << 20),
    }
    for what, data in texts.items():
        path = tmp / f"file_{next(counter)}.yaml"
        path.write_bytes(data)
        yield Case("tune", f"tune file: {what}", lambda p=path: load_tune(p))
    for what, path in (("missing", tmp / "missing_tune.yaml"), ("a folder", tmp), ("/dev/zero", Path("/dev/zero"))):
        yield Case("tune", f"tune file: {what}", lambda p=path: load_tune(p))

    # storages
    (tmp / "db_folder").mkdir(exist_ok=True)
    (tmp / "not_a_db.db").write_bytes(b"this is not an SQLite database" * 10)
    storages = [
        "",
        "nosuchdb://x",
        "not a url",
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///file:x?mode=memory&uri=true",
        f"sqlite:///{tmp}/missing_folder/study.db",
        f"sqlite:///{tmp}/db_folder",
        f"sqlite:///{tmp}/not_a_db.db",
        "postgresql://user:secret@127.0.0.1:1/db",
        "mysql://user:secret@127.0.0.1:1/db",
    ]
    for url in storages:
        yield Case(
            "tune", f"storage {url.replace(str(tmp), '$TMP')!r}", lambda u=url: open_study(load_tune(good, storage=u))
        )

    # trial and worker counts (the API; the CLI's options have min=1)
    counts = [(0, 1), (-1, 1), (True, 1), (1.5, 1), ("3", 1), (1, 0), (1, -2)]
    for trials, workers in counts:
        yield Case(
            "tune",
            f"run_study(trials={trials!r}, workers={workers!r})",
            lambda t=trials, w=workers: run_study(load_tune(good), trials=t, workers=w, progress=False),
        )

    # the command line
    t = str(good)
    commands = [
        ["tune", "--config", t, "--trials", "1", "--study", "../../../x"],
        ["tune", "--config", t, "--trials", "1", "--study", ""],
        ["tune", "--config", t, "--trials", "1", "--storage", "sqlite://"],
        ["tune", "--config", str(tune_file(search_space={"run_root": categorical})), "--trials", "1"],
        ["tune", "--config", t, "--trials", "0"],
        ["tune", "--config", t, "--trials", "1", "--workers", "0"],
    ]
    for args in commands:
        yield Case(
            "tune",
            "tacocat " + " ".join(repr(a) if not a or " " in a else a for a in args).replace(str(tmp), "$TMP"),
            lambda a=args: _invoke(a),
            (CliRefused,),
        )
