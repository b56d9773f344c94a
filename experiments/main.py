"""The main job (README): train the default config, evaluate it against the whole ladder.

Prints the final table and leaves the run directory (config, logs, learning curve PNG,
checkpoints, best and final model, final_eval.{json,md}) under runs/.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from experiments.config import load_experiment, one_line
from experiments.final_eval import evaluate_run, print_table
from experiments.train import train

DEFAULT_CONFIG = Path(__file__).parent / "configs" / "ppo_vs_heuristics.yaml"


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", default=str(DEFAULT_CONFIG))
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        config = load_experiment(args.config, args.seed, args.overrides)
    except (ValueError, OSError) as err:  # a user error: one line, no traceback
        parser.exit(1, f"error: {one_line(err)}\n")
    started = time.perf_counter()
    run_dir = train(config)
    trained = time.perf_counter()
    rows = evaluate_run(run_dir, config)
    print_table(rows, f"{config.name} (seed {config.seed}) vs the ladder, duplicate format")
    print(f"training {trained - started:.0f} s, evaluation {time.perf_counter() - trained:.0f} s")
    print(f"run directory: {run_dir}  (learning curve: {run_dir / 'learning_curve.png'})")
    return run_dir


if __name__ == "__main__":
    main()
