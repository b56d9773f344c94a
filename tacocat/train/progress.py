"""The progress bar of a training run (`tacocat.train.loop.run_training`, every backend).

The first iteration of a run includes its start-up: the league compiles its jitted iteration
then (a minute or more on CPU). A line says so while it runs, and the bar starts after it, so
that its rate and time left measure training, not the compilation. The bar counts env steps out
of the config's `total_timesteps`, shows one rate (env steps/s) and never passes its total (a
run's last iteration may end past it).
"""

from __future__ import annotations

import sys
from typing import Any

#: the backends whose first iteration compiles (the loop's notice says so)
COMPILING_BACKENDS = ("league",)


class TrainingProgress:
    """The bar of one run: `starting` before the first iteration, `reached` after each."""

    def __init__(self, total_timesteps: int, enabled: bool) -> None:
        self.total, self.enabled = total_timesteps, enabled
        self.bar: Any = None

    def starting(self, backend: str, timesteps: int) -> None:
        """The notice printed while the first iteration runs (from `timesteps`, when resuming)."""
        if not self.enabled or timesteps >= self.total:
            return
        doing = "compiling and running" if backend in COMPILING_BACKENDS else "running"
        at = f" at {timesteps:,} of {self.total:,} env steps" if timesteps else ""
        print(f"{doing} the first iteration{at} …", file=sys.stderr, flush=True)

    def reached(self, timesteps: int) -> None:
        """The run has trained `timesteps` env steps: the bar starts (after the first iteration)
        or moves on, up to the total."""
        done = min(timesteps, self.total)
        if self.bar is None:
            from tqdm.auto import tqdm

            self.bar = tqdm(
                total=self.total,
                initial=done,
                unit="step",
                unit_scale=True,
                disable=not self.enabled,
                dynamic_ncols=True,
            )
        else:
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
