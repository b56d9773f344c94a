"""Bounded work per request: a deadline for agent thinking, a small pool of its own for slow
agents, and a request stopped when its client goes away.

* `Budget`: a request's deadline (`Limits.deadline_s` from its arrival) and its cancel flag.
  The games check it before every agent action (`Budget.check`), and a game changes only when
  the whole request succeeded (a move is played on a copy, `PlayGame.move`), so a request
  stopped midway changes nothing.
* `Thinking`: requests whose agents think slowly (search, ISMCTS, PPO: `specs.Served.slow`)
  and replays of game files run in a pool of `Limits.slow_workers` threads, at most
  `Limits.slow_queue` of them waiting, apart from Starlette's thread pool where everything
  else runs: cheap requests never queue behind them. A waiting request whose deadline passed
  ends at its first check; one whose client went away is cancelled at the next check.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from tacocat.web.errors import WebError

T = TypeVar("T")
#: how often a slow request looks whether its client went away (s)
POLL_S = 0.1


@dataclass(frozen=True)
class Limits:
    """The bounds of agent thinking per request."""

    #: the longest a request may take (from its arrival), checked before every agent action
    deadline_s: float = 20.0
    #: threads for slow agents and replays, and how many such requests may wait at once
    slow_workers: int = 2
    slow_queue: int = 64


class Budget:
    """A request's deadline and cancel flag."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.cancelled = threading.Event()

    def check(self) -> None:
        """WebError 503 if the request was cancelled or ran out of time."""
        if self.cancelled.is_set():
            raise WebError(503, "the request was cancelled: its client went away")
        if time.monotonic() > self.deadline:
            raise WebError(
                503,
                f"the agents did not finish within {self.seconds:g} s (the server is busy or the "
                "agent slow); nothing was changed: try again, or choose a faster opponent",
            )


class Thinking:
    """Runs a request's work with a `Budget`: slow work in its own bounded pool."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._pool = ThreadPoolExecutor(limits.slow_workers, thread_name_prefix="tacocat-slow")
        self._lock = threading.Lock()
        self.pending = 0  # slow requests submitted and not yet finished

    async def run(self, request: Request, work: Callable[[Budget], T], slow: bool) -> T:
        """`work(budget)`, in Starlette's thread pool, or if `slow` in the slow pool, watching
        for the client to go away."""
        budget = Budget(self.limits.deadline_s)
        if not slow:
            return await run_in_threadpool(work, budget)
        waiter = asyncio.wrap_future(self._submit(work, budget))
        try:
            while not (await asyncio.wait({waiter}, timeout=POLL_S))[0]:
                if await request.is_disconnected():
                    budget.cancelled.set()
            return waiter.result()
        finally:
            budget.cancelled.set()  # (this coroutine itself may have been cancelled)

    def _submit(self, work: Callable[[Budget], T], budget: Budget) -> Future[T]:
        with self._lock:
            if self.pending >= self.limits.slow_queue:
                raise WebError(
                    503, f"the server is busy: {self.pending} requests for slow agents are waiting; try again shortly"
                )
            self.pending += 1
        future = self._pool.submit(work, budget)
        future.add_done_callback(self._finished)
        return future

    def _finished(self, _: Future[T]) -> None:
        with self._lock:
            self.pending -= 1
