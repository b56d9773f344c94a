"""How fast the web app (`tacocat serve`) answers: page load and move answer times.

    python benchmarks/web_latency.py --requests 200            # HTTP only
    python benchmarks/web_latency.py --requests 200 --browser  # and in headless Chromium

Starts `tacocat serve --port 0` as its own process (uvicorn, as a user runs it) and times,
over `--requests` requests each (after a warm-up), with one keep-alive HTTP client:

* page load: the page and everything it fetches before it can be used (/, app.js and app.css,
  one after the other; the agents and presets its forms offer are written into the page);
* a new game against the champion (the agent's first replies included);
* a move against the champion / against random under the default rules: the person's move
  and every agent reply until it is the person's turn again, as the page sends it;
* a step of a watched match (counter against planner) and a replay frame.

With `--browser`, Chromium (Debian's /usr/bin/chromium, through Playwright) also times, as
the page measures it (performance marks in app.js), loading the page until it is ready (the
options loaded) and a click on a move button until the new table is drawn. The table gives
the median and 95th percentile in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2

from tacocat.agents.registry import make_agent
from tacocat.evaluation.arena import play_game
from tacocat.evaluation.game_files import game_to_dict
from tacocat.game.config import make_config
from tacocat.stamp import describe, stamp

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"


@contextmanager
def served() -> Iterator[str]:
    """`tacocat serve --port 0` in a child process; yields its address."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen(
        [sys.executable, "-m", "tacocat.cli.app", "serve", "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = child.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", line)
        if not found:
            raise RuntimeError(f"tacocat serve did not say where it listens: {line!r}")
        yield found.group(0)
    finally:
        child.terminate()
        child.wait(timeout=30)


def timed(count: int, call: Callable[[], object], warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        call()
    out = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


class Player:
    """Plays games through the API, one move per call (the first legal move); a new game when one ends."""

    def __init__(self, client: httpx2.Client, opponent: str, seed: int) -> None:
        self.client, self.opponent, self.seed = client, opponent, seed
        self.data = self._new()

    def _new(self) -> dict:
        self.seed += 1
        return checked(self.client.post("/api/play", json={"opponent": self.opponent, "seed": self.seed}))

    def move(self) -> None:
        if self.data["over"]:
            self.data = self._new()
            self.move()
            return
        body = {"action": self.data["moves"][0]["action"], "version": self.data["version"]}
        self.data = checked(self.client.post(f"/api/games/{self.data['game']}/move", json=body))


def checked(response: httpx2.Response) -> dict:
    if response.status_code != 200:
        raise RuntimeError(f"{response.request.url}: {response.status_code} {response.text}")
    return response.json()


def http_rows(url: str, count: int) -> list[tuple[str, list[float]]]:
    rows = []
    with httpx2.Client(base_url=url, timeout=60) as client:

        def page() -> None:
            for path in ("/", "/static/app.js", "/static/app.css"):
                client.get(path).raise_for_status()

        rows.append(("page load (/, app.js, app.css)", timed(count, page)))
        seeds = iter(range(10**6))
        rows.append(
            (
                "new game against champion",
                timed(
                    count, lambda: checked(client.post("/api/play", json={"opponent": "champion", "seed": next(seeds)}))
                ),
            )
        )
        for opponent in ("champion", "random"):
            player = Player(client, opponent, seed=1000)
            rows.append((f"move against {opponent} (with its replies)", timed(count, player.move)))
        watch = {"data": checked(client.post("/api/watch", json={"agents": ["counter", "planner"], "seed": 0}))}

        def step() -> None:
            data = watch["data"]
            if data["over"]:
                data = checked(client.post(f"/api/games/{data['game']}/rematch", json={}))
            watch["data"] = checked(client.post(f"/api/games/{data['game']}/step", json={"version": data["version"]}))

        rows.append(("watch: one step (counter vs planner)", timed(count, step)))
        record = play_game([make_agent("counter"), make_agent("planner")], seed=3)
        text = json.dumps(game_to_dict(record, ["counter", "planner"], make_config(None)))
        replay = checked(client.post("/api/replay", json={"text": text}))
        frames = iter(range(10**6))
        rows.append(
            (
                "replay: one frame",
                timed(
                    count,
                    lambda: checked(
                        client.get(f"/api/games/{replay['game']}/frames/{next(frames) % (replay['steps'] + 1)}")
                    ),
                ),
            )
        )
    return rows


def browser_rows(url: str, count: int) -> list[tuple[str, list[float]]]:
    """Times the page measures itself (app.js's performance marks), so the driver's own round
    trips are left out: navigation start to the page ready, a click to the new table drawn."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        loads = []
        for index in range(count + 3):
            page.goto(url + "/")
            page.wait_for_selector("body[data-ready=true]")
            if index >= 3:  # warm-up
                loads.append(page.evaluate("performance.getEntriesByName('ready')[0].startTime"))
        page.fill("#play-form [name=seed]", "1")
        page.click("#play-form button[type=submit]")
        page.wait_for_selector("#play[data-version='0'][data-busy=false]")
        clicks = []
        while len(clicks) < count:
            if page.get_attribute("#play", "data-over") == "true":
                page.click("#play .rematch:not(.swap)")
                page.wait_for_selector("#play[data-version='0'][data-busy=false]")
            version = int(page.get_attribute("#play", "data-version"))
            page.locator("#play button.move").first.click()
            page.wait_for_selector(f"#play[data-version='{version + 1}'][data-busy=false]")
            clicks.append(page.evaluate("performance.getEntriesByName('move').at(-1).duration"))
        browser.close()
    return [
        ("browser: navigation start until the page is ready", loads),
        ("browser: click on a move until the new table is drawn (against champion)", clicks),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200, help="timed requests per row")
    parser.add_argument("--browser", action="store_true", help="also time the page in headless Chromium")
    args = parser.parse_args()
    with served() as url:
        rows = http_rows(url, args.requests)
        if args.browser:
            rows += browser_rows(url, max(1, args.requests // 4))
    print("| what | n | median ms | p95 ms |\n|---|---|---|---|")
    for name, times in rows:
        p95 = statistics.quantiles(times, n=20)[-1] if len(times) > 1 else times[0]
        print(f"| {name} | {len(times)} | {statistics.median(times):.1f} | {p95:.1f} |")
    print(f"\n{describe(stamp(make_config(None), packages=('tacocat-env', 'starlette', 'uvicorn', 'playwright')))}")


if __name__ == "__main__":
    main()
