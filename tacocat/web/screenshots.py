"""Screenshots of the web app's three views, for docs/WEB.md.

    python -m tacocat.web.screenshots --out docs/img

Serves the app on a free local port, drives Debian's Chromium (/usr/bin/chromium) through
Playwright to a position worth showing in each view (fixed seeds, so the pictures are the same
every time), and writes web_play.png (1280 x 800), web_play_narrow.png (a 400 x 800 screen),
web_reply.png (an agent's reply being shown), web_how_to_play.png, web_watch.png and
web_replay.png, reduced to a palette of 64 colours to keep them small.
"""

from __future__ import annotations

import argparse
import io
import json
import tempfile
from pathlib import Path

from PIL import Image

from tacocat.agents.registry import make_agent
from tacocat.evaluation.arena import play_game
from tacocat.evaluation.game_files import game_to_dict
from tacocat.game.config import make_config
from tacocat.web.server import BackgroundServer

CHROMIUM = "/usr/bin/chromium"


def _save(png: bytes, path: Path) -> None:
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    print(f"wrote {path} ({image.width} x {image.height}, {path.stat().st_size // 1024} KB)")


def _play_to_trick(page) -> None:
    """A new game against the default opponent (seed 12, replies shown at once), played to a trick."""
    page.set_checked("#play-form [name=step]", False)
    page.fill("#play-form [name=seed]", "12")
    page.click("#play-form button[type=submit]")
    page.wait_for_selector("#play[data-version='0'][data-busy=false]")

    def move() -> None:
        shown = page.get_attribute("#play", "data-version")
        assert shown is not None, "the play tab carries data-version once a game is shown (waited for above)"
        page.locator("#play button.move").last.click()
        page.wait_for_selector(f"#play[data-version='{int(shown) + 1}'][data-busy=false]")

    _until_trick(page, "play", move)


def _until_trick(page, tab: str, advance, limit: int = 200) -> None:
    """Advance until the table shows an attack and at least one answer."""
    for _ in range(limit):
        if page.locator(f"#{tab} .table .answer").count() and page.locator(f"#{tab} .table .attack").count():
            return
        advance()
    raise RuntimeError(f"no trick on the table in {tab} after {limit} moves")


def take(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with BackgroundServer() as url, sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        phone = browser.new_page(viewport={"width": 400, "height": 800})
        phone.goto(url + "/")
        phone.wait_for_selector("body[data-ready=true]")
        _play_to_trick(phone)
        phone.locator("#play .table").scroll_into_view_if_needed()
        _save(phone.screenshot(), out / "web_play_narrow.png")

        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url + "/")
        page.wait_for_selector("body[data-ready=true]")
        page.keyboard.press("?")
        _save(page.locator("#how-to-play").screenshot(), out / "web_how_to_play.png")
        page.keyboard.press("?")

        _play_to_trick(page)
        _save(page.screenshot(full_page=True), out / "web_play.png")

        page.set_checked("#play-form [name=step]", True)  # a new game, the replies shown one by one
        page.fill("#play-form [name=opponent]", "random")
        page.fill("#play-form [name=seed]", "5")
        page.click("#play-form button[type=submit]")
        page.wait_for_selector("#play[data-version='0'][data-busy=false]")
        for _ in range(50):  # to a move the agent answers with two public steps or more
            version = int(page.get_attribute("#play", "data-version") or 0)
            page.locator("#play button.move").first.click()
            page.wait_for_selector(f"#play[data-version='{version + 1}'][data-busy=false]")
            if page.evaluate("views.play.data.replies.length") >= 2:
                break
        page.wait_for_selector("#play[data-replying=true]")
        page.evaluate("clearTimeout(replying.timer)")  # hold the first reply for the picture
        _save(page.screenshot(full_page=True), out / "web_reply.png")

        page.click("nav [data-tab=watch]")
        page.fill("#watch-form [name=seed]", "3")
        page.click("#watch-form button[type=submit]")
        page.wait_for_selector("#watch[data-version='0']")

        def step() -> None:
            shown = page.get_attribute("#watch", "data-version")
            assert shown is not None, "the watch tab carries data-version once a game is shown (waited for above)"
            version = int(shown)
            page.click("#watch .step")
            page.wait_for_selector(f"#watch[data-version='{version + 1}'][data-busy=false]")

        _until_trick(page, "watch", step)
        _save(page.screenshot(full_page=True), out / "web_watch.png")

        record = play_game([make_agent("counter"), make_agent("search")], seed=5)
        with tempfile.TemporaryDirectory() as folder:
            games = Path(folder) / "games.jsonl"
            games.write_text(json.dumps(game_to_dict(record, ["counter", "search"], make_config(None))) + "\n")
            page.click("nav [data-tab=replay]")
            page.set_input_files("#replay-form [name=file]", str(games))
            page.click("#replay-form button[type=submit]")
            page.wait_for_selector("#replay[data-step='0']")
        page.focus("#replay .timeline")
        for _ in range(record.length // 2):
            page.keyboard.press("ArrowRight")
        page.wait_for_selector(f"#replay[data-step='{record.length // 2}']")
        _save(page.screenshot(full_page=True), out / "web_replay.png")
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("docs/img"), help="folder for the PNG files")
    take(parser.parse_args().out)


if __name__ == "__main__":
    main()
