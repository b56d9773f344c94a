"""One bad input of the sweep (tools/bad_input_sweep.py) and the errors that count as clear."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Case:
    channel: str
    name: str
    run: Callable[[], object]
    #: exception types that count as a clear refusal (API cases)
    expect: tuple[type[BaseException], ...] = (ValueError,)
