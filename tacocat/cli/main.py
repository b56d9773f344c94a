"""The main job (README, `make main`): `tacocat train --config tacocat/train/configs/main.yaml
--evaluate`, i.e. train the default config (league self-play on the batch engine), then
evaluate it against the whole ladder.

Prints the final table and leaves the run directory (config, logs, learning curve PNG,
checkpoints, the trained policy, final_eval.{json,md}) under runs/. Arguments are those of
`tacocat train` (`--seed 1`, `--set key=value`, `--config other.yaml`); the command line
parser is the CLI's, the only one.
"""

from __future__ import annotations

import sys
from pathlib import Path

DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "train" / "configs" / "main.yaml"


def main(argv: list[str] | None = None) -> None:
    # imported here, so that importing DEFAULT_CONFIG (benchmarks.regenerate) loads no CLI
    from tacocat.cli.app import app

    args = sys.argv[1:] if argv is None else argv
    if "--config" not in args:
        args = ["--config", str(DEFAULT_CONFIG), *args]
    app(["train", "--evaluate", *args], prog_name="tacocat")


if __name__ == "__main__":
    main()
