"""Print (or write into the docs) the tables of docs/ENVIRONMENT.md, generated from the code.

The tables come from the objects the environment itself uses, so the documentation cannot
drift from the code:

* ``summary``     -- sizes of the spaces, ruleset hash, action ids per kind;
* ``actions``     -- ``ActionCodec.table()``: id, kind, readable name of every action;
* ``observation`` -- ``ObservationLayout.table()``: name, start, stop, size, upper bound, plus
  the meaning of each slice taken from the table in ``tacocat.game.observation``'s docstring;
* ``config``      -- the fields of ``RulesConfig``: name, default, description.

Usage::

    .venv/bin/python tools/gen_env_tables.py                    # all tables, default rules
    .venv/bin/python tools/gen_env_tables.py --section actions  # one table
    .venv/bin/python tools/gen_env_tables.py --config my_rules.yaml
    .venv/bin/python tools/gen_env_tables.py --write docs/ENVIRONMENT.md   # refresh the docs
    .venv/bin/python tools/gen_env_tables.py --check docs/ENVIRONMENT.md   # exit 1 if stale

``--write``/``--check`` work on the blocks between ``<!-- BEGIN GENERATED: <section> -->`` and
``<!-- END GENERATED: <section> -->`` in the file; everything else is left alone.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import OrderedDict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tacocat
from tacocat.game import config as config_module
from tacocat.game import observation
from tacocat.game.config import RulesConfig, make_config
from tacocat.game.observation import ObservationLayout
from tacocat.game.ruleset import compile_rules

SECTIONS = ("summary", "actions", "observation", "config")


def slice_meanings() -> dict[str, str]:
    """name -> meaning, parsed from the slice table in the observation module's docstring."""
    meanings: dict[str, str] = {}
    for line in (observation.__doc__ or "").splitlines():
        match = re.match(r"^([a-z_]+)\s{2,}(\S+)\s{2,}(.+)$", line)
        if match and match.group(1) != "name":
            meanings[match.group(1)] = match.group(3).strip()
    return meanings


def _md_table(headers: list[str], rows: list[list[str]], align: str) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def summary_section(config: RulesConfig) -> str:
    rules = compile_rules(config)
    codec = rules.codec
    layout = ObservationLayout(rules)
    env = tacocat.raw_env(config=config)
    ranges: OrderedDict[str, list[int]] = OrderedDict()
    for i, move in enumerate(codec.moves):
        ranges.setdefault(move.kind, []).append(i)
    rows = [
        [f"`{k}`", str(len(ids)), f"{ids[0]}-{ids[-1]}" if len(ids) > 1 else str(ids[0])] for k, ids in ranges.items()
    ]
    left_out = sorted(getattr(config_module, "_NOT_RULES", ()))
    hashed = ", ".join(f"`{f}`" for f in RulesConfig.model_fields if f not in left_out)
    head = (
        f"- Ruleset hash: `{config.ruleset_hash()}`; it covers {hashed}"
        + (f" (not {', '.join(f'`{f}`' for f in left_out)})" if left_out else "")
        + "\n"
        f"- Action space: `Discrete({codec.size})`\n"
        f"- Observation: `Box(0, high, ({layout.size},), float32)`, high up to {layout.high.max():g}; "
        f"action mask: `Box(0, 1, ({codec.size},), int8)`\n"
        f"- `state()` (privileged): `Box(0, {env.state_space.high.max():g}, {env.state_space.shape}, float32)`\n"
        f"- Card values: {list(rules.values)} (value index 0..{rules.n_values - 1}); "
        f"board deal sizes: {list(rules.board)}\n"
    )
    return head + "\n" + _md_table(["kind", "actions", "ids"], rows, "lrl")


def actions_section(config: RulesConfig) -> str:
    codec = compile_rules(config).codec
    rows = [[str(i), f"`{kind}`", f"`{name}`"] for i, kind, name in codec.table()]
    return _md_table(["id", "kind", "readable name"], rows, "rll")


def observation_section(config: RulesConfig) -> str:
    layout = ObservationLayout(compile_rules(config))
    meanings = slice_meanings()
    rows = []
    for name, start, stop in layout.table():
        high = layout.high[start:stop]
        bound = f"{high.min():g}" if high.min() == high.max() else f"{high.min():g}-{high.max():g}"
        rows.append(
            [
                f"`{name}`",
                str(start),
                str(stop),
                str(stop - start),
                bound,
                meanings.get(name, "(not documented in tacocat/game/observation.py)"),
            ]
        )
    return _md_table(["name", "start", "stop", "size", "max", "meaning"], rows, "lrrrrl")


def config_section(config: RulesConfig) -> str:
    rows = []
    for name, field in RulesConfig.model_fields.items():
        value = getattr(config, name)
        if isinstance(value, dict):
            shown = json.dumps({str(k): v for k, v in value.items()}, separators=(", ", ": "))
        elif isinstance(value, tuple):
            shown = json.dumps(list(value))
        else:
            shown = json.dumps(value)
        rows.append([f"`{name}`", f"`{shown}`", (field.description or "").replace("|", "/")])
    return _md_table(["field", "value", "meaning"], rows, "lll")


def render(section: str, config: RulesConfig) -> str:
    return {
        "summary": summary_section,
        "actions": actions_section,
        "observation": observation_section,
        "config": config_section,
    }[section](config)


def _block(section: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- BEGIN GENERATED: {section} -->\n)(.*?)(<!-- END GENERATED: {section} -->)", re.DOTALL)


def update_file(path: Path, config: RulesConfig) -> tuple[str, list[str]]:
    """The file's text with every generated block refreshed, and the names of stale blocks."""
    text = path.read_text()
    stale = []
    for section in SECTIONS:
        pattern = _block(section)
        match = pattern.search(text)
        if not match:
            continue
        fresh = render(section, config) + "\n"
        if match.group(2) != fresh:
            stale.append(section)
        text = text[: match.start(2)] + fresh + text[match.end(2) :]
    return text, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--section", choices=(*SECTIONS, "all"), default="all")
    parser.add_argument("--config", help="a RulesConfig YAML file (default: the default rules)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE", help="refresh the generated blocks of FILE in place")
    group.add_argument("--check", metavar="FILE", help="exit 1 if a generated block of FILE is stale")
    args = parser.parse_args(argv)
    config = make_config(args.config)

    if args.write or args.check:
        path = Path(args.write or args.check)
        text, stale = update_file(path, config)
        if args.check:
            if stale:
                print(
                    f"{path}: stale generated blocks: {', '.join(stale)} (run tools/gen_env_tables.py --write {path})"
                )
                return 1
            print(f"{path}: generated blocks are up to date")
            return 0
        path.write_text(text)
        print(f"{path}: refreshed" + (f" ({', '.join(stale)})" if stale else " (no change)"))
        return 0

    sections = SECTIONS if args.section == "all" else (args.section,)
    for section in sections:
        print(f"## {section}\n\n{render(section, config)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
