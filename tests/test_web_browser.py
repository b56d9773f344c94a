"""The web app in a real browser: headless Chromium (Debian's `chromium`, driven by Playwright
with the system browser) plays a whole game by clicking the move buttons, watches a match,
scrubs a replay, and cannot send an illegal move. One server for the module; small games.

Without /usr/bin/chromium the tests are skipped, except where the CI variable is set (CI
installs it: .ci/run), where they fail."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tacocat.agents.registry import make_agent
from tacocat.evaluation.arena import play_game
from tacocat.evaluation.game_files import game_to_dict, replay_game
from tacocat.game.config import RulesConfig
from tacocat.game.presets import preset_config

CHROMIUM = Path("/usr/bin/chromium")
TIMEOUT_MS = 20_000


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: CI must run the browser tests (.ci/run installs chromium)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    try:
        from tacocat.web.server import BackgroundServer
    except ImportError as err:
        _unavailable(f"the web extra is not installed ({err})")
    with BackgroundServer() as address:
        yield address


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is absent (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as err:
        _unavailable(f"playwright is not installed ({err})")
    with sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser, url):
    context = browser.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready=true]")
    yield page
    context.close()
    assert not errors, errors  # no script error on the page


def _idle(page, tab: str) -> None:
    page.wait_for_selector(f"#{tab}[data-busy=false]")


def _start_play(page, opponent: str, preset: str, seed: int, seat: int = 0) -> None:
    page.fill("#play-form [name=opponent]", opponent)
    page.select_option("#play-form [name=preset]", preset)
    page.select_option("#play-form [name=seat]", str(seat))
    page.fill("#play-form [name=seed]", str(seed))
    page.click("#play-form button[type=submit]")
    page.wait_for_selector("#play .table svg")
    _idle(page, "play")


def test_a_whole_game_by_clicking_the_move_buttons(page):
    _start_play(page, "random", "race", seed=3, seat=1)
    moves = 0
    while page.get_attribute("#play", "data-over") != "true":
        assert page.get_attribute("#play", "data-version") == str(moves)
        buttons = page.locator("#play button.move")
        assert buttons.count() > 0
        buttons.last.click()
        moves += 1
        page.wait_for_selector(f"#play[data-version='{moves}'][data-busy=false]")
    assert moves >= 2 and page.locator("#play button.move").count() == 0
    assert page.text_content("#play .note").startswith("Game over")
    assert page.locator("#play .after").is_visible()
    assert page.locator("#play .history li").count() > 3
    with page.expect_download() as download:
        page.click("#play .after .file")
    saved = json.loads(Path(download.value.path()).read_text())
    assert saved["agents"] == ["random", "human"]
    assert replay_game(saved).state.is_over
    page.click("#play .rematch:not(.swap)")
    page.wait_for_selector("#play[data-over=false][data-version='0']")
    assert page.locator("#play button.move").count() > 0


def test_a_whole_game_against_the_champion_under_the_default_rules(page):
    """What a new user does: the default opponent (champion), the default rules, to the end."""
    assert page.input_value("#play-form [name=opponent]") == "champion"
    _start_play(page, "champion", "default", seed=5)
    assert "champion (player_1)" in page.text_content("#play .table")
    moves = 0
    while page.get_attribute("#play", "data-over") != "true":
        before = page.inner_html("#play .table")
        page.locator("#play button.move").last.click()
        moves += 1
        page.wait_for_selector(f"#play[data-version='{moves}'][data-busy=false]")
        assert page.inner_html("#play .table") != before  # the table answers every move
    assert moves > 10
    assert page.text_content("#play .note") in (
        "Game over: You won!",
        "Game over: champion won.",
        "Game over: No winner: the game was truncated.",
    )


def test_an_illegal_move_cannot_be_sent(page):
    _start_play(page, "random", "default", seed=7)
    game = page.evaluate("views.play.data.game")
    legal = page.evaluate(f"fetch('/api/games/{game}').then(r => r.json()).then(d => d.moves.map(m => m.action))")
    shown = [int(b.get_attribute("data-action")) for b in page.locator("#play button.move").all()]
    assert shown == legal  # the buttons are exactly the legal moves
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url) if request.url.endswith("/move") else None)
    table = page.inner_html("#play .table")
    illegal = next(a for a in range(200) if a not in legal)
    page.evaluate(f"document.querySelector('#play button.move').dataset.action = '{illegal}'")  # a forged button
    page.locator("#play button.move").first.click()
    assert "not one of your legal moves" in page.text_content("#play .error")
    assert sent == [] and page.inner_html("#play .table") == table
    assert page.get_attribute("#play", "data-version") == "0"
    page.locator("#play button.move").nth(1).dblclick()  # two clicks, one move: the buttons wait for the answer
    page.wait_for_selector("#play[data-version='1'][data-busy=false]")
    page.wait_for_timeout(200)
    assert len(sent) == 1 and page.get_attribute("#play", "data-version") == "1"


def test_watch_a_match_step_by_step_then_animated(page):
    page.click("nav [data-tab=watch]")
    page.fill("#watch-form [name=agent0]", "counter")
    page.fill("#watch-form [name=agent1]", "planner")
    page.select_option("#watch-form [name=preset]", "skirmish")
    page.fill("#watch-form [name=seed]", "4")
    page.click("#watch-form button[type=submit]")
    page.wait_for_selector("#watch[data-version='0']")
    for version in (1, 2):
        page.click("#watch .step")
        page.wait_for_selector(f"#watch[data-version='{version}'][data-busy=false]")
    assert page.text_content("#watch .note").startswith("player_")
    page.focus("#watch .speed")
    page.keyboard.press("End")
    assert page.text_content("#watch .speed-label") == "20 moves/s"
    page.click("#watch .run")
    page.wait_for_selector("#watch[data-over=true]")
    assert page.text_content("#watch .note").startswith("Game over")
    assert page.locator("#watch .step").is_disabled()
    record = play_game([make_agent("counter"), make_agent("planner")], seed=4, config=preset_config("skirmish"))
    assert page.get_attribute("#watch", "data-version") == str(record.length)


def test_scrub_a_replay_back_and_forth(page, tmp_path):
    record = play_game([make_agent("random"), make_agent("highcard")], seed=2)
    game = game_to_dict(record, ["random", "highcard"], RulesConfig())
    path = tmp_path / "games.jsonl"
    path.write_text(json.dumps(game) + "\n")
    steps = len(game["actions"])
    page.click("nav [data-tab=replay]")
    page.set_input_files("#replay-form [name=file]", str(path))
    page.click("#replay-form button[type=submit]")
    page.wait_for_selector("#replay[data-step='0']")
    assert page.text_content("#replay .position") == f"step 0 / {steps}"
    start = page.inner_html("#replay .table")
    page.focus("#replay .timeline")
    page.keyboard.press("End")
    page.wait_for_selector(f"#replay[data-step='{steps}']")
    assert page.text_content("#replay .note").startswith("Game over")
    page.keyboard.press("Home")
    page.wait_for_selector("#replay[data-step='0']")
    assert page.inner_html("#replay .table") == start
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.wait_for_selector("#replay[data-step='3']")
    player, _, name = game["actions"][2]
    assert page.text_content("#replay .note") == f"player_{player} ({game['agents'][player]}): {name}"
    page.click("#replay .prev")
    page.wait_for_selector("#replay[data-step='2']")
    page.click("#replay .last")
    page.wait_for_selector(f"#replay[data-step='{steps}']")
    page.click("#replay .first")
    page.wait_for_selector("#replay[data-step='0']")


def test_two_tabs_on_one_game(page):
    """The address names the game: a second tab (or a reload) opens it; a move from a tab that
    has not seen the other's move is refused as stale and that tab catches up."""
    _start_play(page, "random", "default", seed=9)
    address = page.url
    assert "#play/" in address
    other = page.context.new_page()
    other.set_default_timeout(TIMEOUT_MS)
    other.goto(address)
    other.wait_for_selector("#play[data-version='0'] .table svg")
    page.locator("#play button.move").first.click()
    page.wait_for_selector("#play[data-version='1'][data-busy=false]")
    other.locator("#play button.move").first.click()  # made at move 0
    other.wait_for_selector("#play[data-version='1'][data-busy=false]")
    assert "stale move" in other.text_content("#play .error")
    assert other.inner_html("#play .table") == page.inner_html("#play .table")
    page.reload()
    page.wait_for_selector("#play[data-version='1'] .table svg")
    other.close()
