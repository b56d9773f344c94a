"""What a run logs as it trains: CSV tables (progress.csv, eval.csv) and TensorBoard scalars.

TensorBoard event files are written with the `tensorboard` package's own writer (no torch), so
every backend logs the same way and the league path needs neither torch nor SB3. Without
`tensorboard` installed, runs log CSV only.
"""

from __future__ import annotations

import csv
import time
from pathlib import Path
from typing import Any


def append_rows(path: Path, fields: list[str], rows: list[dict[str, Any]]) -> None:
    """Append `rows` to the CSV file `path` (its header first if the file is new)."""
    new = not path.exists()
    with path.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        if new:
            writer.writeheader()
        writer.writerows(rows)


def truncate_rows(path: Path, fields: list[str], up_to: int, key: str = "timesteps") -> None:
    """Drop the rows of `path` logged after `up_to` timesteps (work a resumed run redoes)."""
    if not path.exists():
        return
    with path.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if int(float(r[key])) <= up_to]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


class ScalarWriter:
    """TensorBoard scalars in `folder` (a no-op without the `tensorboard` package)."""

    def __init__(self, folder: Path) -> None:
        try:
            from tensorboard.compat.proto.event_pb2 import Event
            from tensorboard.compat.proto.summary_pb2 import Summary
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
        except ImportError:
            self._writer = None
            return
        folder.mkdir(parents=True, exist_ok=True)
        self._event, self._summary = Event, Summary
        self._writer = EventFileWriter(str(folder))

    def add(self, tag: str, value: float, step: int) -> None:
        if self._writer is None:
            return
        summary = self._summary(value=[self._summary.Value(tag=tag, simple_value=float(value))])
        self._writer.add_event(self._event(wall_time=time.time(), step=int(step), summary=summary))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
