"""The web app in a real browser: headless Chromium (Debian's `chromium`, driven by Playwright
with the system browser) plays a whole game by keyboard only and one by clicking, reads how to
play, steps through the agent's replies, measures the table's smallest text on a desktop and a
400 x 800 screen, reads the table's text alternative (the accessibility snapshot), watches a
match, scrubs a replay, and cannot send an illegal move. One browser and one server for the
module; small games.

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


def _open(browser, url, viewport: dict[str, int]):
    context = browser.new_context(viewport=viewport, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready=true]")
    return context, page, errors


@pytest.fixture
def page(browser, url):
    context, page, errors = _open(browser, url, {"width": 1280, "height": 800})
    yield page
    context.close()
    assert not errors, errors  # no script error on the page


@pytest.fixture
def phone(browser, url):
    """The page on a narrow screen (400 x 800 CSS px)."""
    context, page, errors = _open(browser, url, {"width": 400, "height": 800})
    yield page
    context.close()
    assert not errors, errors


def _idle(page, tab: str) -> None:
    page.wait_for_selector(f"#{tab}[data-busy=false]")


def _start_play(page, opponent: str, preset: str, seed: int, seat: int = 0, step: bool = False) -> None:
    """A new game; `step`: the agent's replies are stepped through (off: shown at once)."""
    page.set_checked("#play-form [name=step]", step)
    page.fill("#play-form [name=opponent]", opponent)
    page.select_option("#play-form [name=preset]", preset)
    page.select_option("#play-form [name=seat]", str(seat))
    page.fill("#play-form [name=seed]", str(seed))
    page.click("#play-form button[type=submit]")
    page.wait_for_selector("#play .table svg >> visible=true")
    _idle(page, "play")


def _focus_in_moves(page) -> bool:
    return page.evaluate("document.activeElement.closest('#play .moves') !== null")


def test_a_whole_game_by_keyboard_only(page):
    """Digit keys play the move of that number; focus stays on the move list after every move."""
    _start_play(page, "random", "race", seed=3, seat=1)
    assert _focus_in_moves(page)
    moves = 0
    while page.get_attribute("#play", "data-over") != "true":
        assert page.get_attribute("#play", "data-version") == str(moves)
        assert _focus_in_moves(page), page.evaluate("document.activeElement.outerHTML")
        buttons = page.locator("#play button.move")
        count = buttons.count()
        assert count > 0 and [b.get_attribute("data-number") for b in buttons.all()] == [
            str(i) for i in range(1, count + 1)
        ]
        number = count if moves % 2 else 1  # the last move and the first, in turn
        page.keyboard.type(str(number))
        if number * 10 <= count:  # a number that a second digit could extend: Enter plays it
            page.keyboard.press("Enter")
        moves += 1
        page.wait_for_selector(f"#play[data-version='{moves}'][data-busy=false]")
    assert page.evaluate("document.activeElement.classList.contains('rematch')")  # focus on the next thing to do
    assert moves >= 2 and page.locator("#play button.move").count() == 0
    assert page.text_content("#play .note").startswith("Game over")
    history = page.text_content("#play .history")
    assert "player_0" not in history and "player_1" not in history  # "you" and the agent's name
    assert "random" in history and "You " in history


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
    assert "champion · 7 cards · goal right" in page.text_content("#play .table .wide")
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
    # while a move waits for its answer, neither a second click nor a key sends another: the
    # server's answer is held until both were tried (else it could arrive between two clicks)
    held: list = []
    page.route("**/move", lambda route: held.append(route))
    page.locator("#play button.move").nth(1).dblclick()
    page.wait_for_selector("#play[data-busy=true]")
    page.locator("#play button.move").nth(1).click(force=True)  # force: Playwright would wait for it enabled
    page.keyboard.press("1")
    page.keyboard.press("Enter")  # the typed number plays now
    page.wait_for_timeout(300)
    assert len(held) == 1 and len(sent) == 1
    held[0].continue_()
    page.unroute("**/move")
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
    assert page.text_content("#watch .note").startswith("last move: counter: ")
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
    assert page.text_content("#replay .note") == f"last move: {game['agents'][player]}: {name}"
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


def test_how_to_play_is_on_the_page_and_under_the_moves(page):
    assert not page.locator("#how-to-play .how-text").is_visible()
    page.keyboard.press("?")
    text = page.locator("#how-to-play .how-text")
    assert text.is_visible()
    words = text.inner_text()
    for phrase in (
        "Replace",
        "Duel",
        "Showdown",
        "The LOWER card wins the round",
        "set",
        "sequence",
        "sacrifice",
        "arrow",
        "void",
        "fails to defend",
        "covered",
    ):
        assert phrase in words, phrase
    assert "P0 GOAL" in page.locator("#how-to-play pre").first.inner_text()  # the drawn example table
    _start_play(page, "random", "default", seed=7)
    help_line = page.locator("#play .moves .group-help").first
    assert help_line.is_visible() and help_line.inner_text().startswith("Replace:")  # where the moves are offered


def _smallest_text(page, picture: str) -> float:
    """The smallest rendered font size (CSS px) of the visible text of a table picture."""
    return page.evaluate(
        """(picture) => {
          const svg = document.querySelector(picture);
          const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
          const sizes = Array.from(svg.querySelectorAll("text"))
            .filter((t) => t.getBoundingClientRect().width > 0)
            .map((t) => parseFloat(getComputedStyle(t).fontSize) * scale);
          return Math.min(...sizes);
        }""",
        picture,
    )


def _until_trick(page) -> None:
    for _ in range(60):
        if page.locator("#play .table .attack").count():
            return
        version = int(page.get_attribute("#play", "data-version"))
        page.locator("#play button.move").last.click()
        page.wait_for_selector(f"#play[data-version='{version + 1}'][data-busy=false]")
    raise AssertionError("no attack on the table")


def test_every_label_on_the_table_is_readable_on_a_narrow_screen(phone):
    _start_play(phone, "random", "default", seed=11)
    _until_trick(phone)
    assert not phone.locator("#play .table .wide svg").is_visible()
    assert phone.locator("#play .table .narrow svg").is_visible()
    assert _smallest_text(phone, "#play .table .narrow svg") >= 11
    assert phone.evaluate("document.documentElement.scrollWidth") <= 400  # nothing wider than the screen
    assert phone.locator("#play .table .narrow .score").count() == 2  # the score line is there too


def test_the_desktop_table_uses_its_width_and_is_readable(page):
    _start_play(page, "random", "default", seed=11)
    _until_trick(page)
    assert _smallest_text(page, "#play .table .wide svg") >= 11
    table = page.locator("#play .table .wide svg").bounding_box()
    score = page.locator("#play .table .wide .score").last.bounding_box()
    assert score["x"] > table["x"] + 0.75 * table["width"]  # the right of the table shows the score


def test_the_table_has_a_text_alternative_that_names_the_state(page):
    _start_play(page, "champion", "default", seed=5)
    snapshot = page.locator("#play .table").aria_snapshot()
    assert snapshot.count('img "') == 1  # the narrow picture is hidden from assistive technology too
    for words in ("Round 1", "to act: you (replace)", "The Tacocat is on space 4 (O)", "champion: 7 cards"):
        assert words in snapshot, (words, snapshot)
    hand = page.evaluate("views.play.data.text").split("Your hand: ")[1].split()[:7]
    assert "holding " + " ".join(hand) in snapshot  # the person's own cards, and only theirs
    assert page.locator("#play .moves").get_attribute("role") == "group"


def test_the_agents_replies_are_shown_one_by_one(page):
    """After a move the agent's replies are stepped through on the table, its cards outlined
    and each reply in words; Next goes on, Escape skips to the table as it is now."""
    _start_play(page, "random", "default", seed=5, step=True)
    for _ in range(40):
        version = int(page.get_attribute("#play", "data-version"))
        page.locator("#play button.move").first.click()
        page.wait_for_selector(f"#play[data-version='{version + 1}'][data-busy=false]")
        if len(page.evaluate("views.play.data.replies")) >= 2:
            break
    replies = page.evaluate("views.play.data.replies")
    assert len(replies) >= 2
    assert page.get_attribute("#play", "data-replying") == "true"
    actor = replies[0]["seat"]
    assert page.get_attribute("#play .table", "data-actor") == str(actor)
    banner = page.text_content("#play .reply-text")
    assert banner.startswith(f"random, 1 of {len(replies)}: ") and replies[0]["lines"][0] in banner
    assert page.inner_html("#play .table") != ""
    outline = page.evaluate(
        f"getComputedStyle(document.querySelector('#play .table .wide text.seat-label.seat-{actor}')).fill"
    )
    assert outline == "rgb(255, 216, 77)"  # the replying seat is lit
    page.click("#play .reply-next")
    assert page.text_content("#play .reply-text").startswith(f"random, 2 of {len(replies)}: ")
    page.keyboard.press("Escape")
    assert page.get_attribute("#play", "data-replying") == "false" and not page.locator("#play .reply").is_visible()
    assert page.get_attribute("#play .table", "data-actor") is None
    shown = page.get_attribute("#play .table .wide svg", "aria-label")
    assert f'aria-label="{shown}"' in page.evaluate("views.play.data.svg").replace("&quot;", '"')  # the table now
    assert page.locator("#play .history li.new").count() >= len(replies)  # what happened, marked in the history
