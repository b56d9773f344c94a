"""The web app's HTTP API (tacocat.web), through Starlette's TestClient: play, watch, replay,
hidden information by perturbation (R7.3: a player's responses are byte-identical when the
opponent's hidden cards change), and bad input (a 4xx with a one-line JSON error, the game
unchanged)."""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web extra is not installed (pip install -e '.[web]')")
from starlette.testclient import TestClient

from conftest import resample_hidden
from tacocat.agents.registry import make_agent
from tacocat.evaluation.arena import play_game
from tacocat.evaluation.game_files import game_to_dict, replay_game
from tacocat.game.presets import preset_config
from tacocat.game.state import Phase
from tacocat.game.view import player_view
from tacocat.web import server
from tacocat.web.app import MAX_BODY, MAX_FILE_BODY, create_app
from tacocat.web.games import GameStore, PlayGame

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def client() -> TestClient:
    return TestClient(create_app())


def _store(client: TestClient) -> GameStore:
    return client.app.state.games


def _ok(response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def _play(client: TestClient, **body) -> dict:
    return _ok(client.post("/api/play", json=body))


def _refused(response, status: int, *words: str) -> str:
    """The one-line JSON error of a refused request."""
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert list(body) == ["error"] and isinstance(body["error"], str) and body["error"], body
    assert "\n" not in body["error"] and "Traceback" not in body["error"]
    for word in words:
        assert word in body["error"], body["error"]
    return body["error"]


def _first_move(data: dict) -> int:
    return data["moves"][0]["action"]


# ---------------------------------------------------------------------------------------
# the page
# ---------------------------------------------------------------------------------------
def test_the_page_its_files_and_the_options_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/static/app.js"' in page.text and "/static/app.css" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]  # no script or style of another site
    script = client.get("/static/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert client.get("/static/app.css").headers["content-type"].startswith("text/css")
    options = _ok(client.get("/api/options"))
    embedded = page.text.split('<script id="options" type="application/json">')[1].split("</script>")[0]
    assert json.loads(embedded) == options  # written into the page: it needs no second request
    names = {agent["name"] for agent in options["agents"]}
    assert {"champion", "counter", "search", "random"} <= names
    assert {"default", "tiny", "skirmish", "race"} <= set(options["presets"])


# ---------------------------------------------------------------------------------------
# play
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("seat", [0, 1])
def test_a_whole_game_against_the_champion(client, seat):
    data = _play(client, opponent="champion", seat=seat, seed=11)
    game_id = data["game"]
    game = _store(client).get(game_id)
    assert data["names"][seat] == "you" and data["names"][1 - seat] == "champion"
    assert "seed" not in data  # the seed fixes every deal: never sent to a player
    moves = 0
    while not data["over"]:
        view = player_view(game.state, seat)
        assert view.to_act == seat
        assert [m["action"] for m in data["moves"]] == list(view.legal_actions)
        assert [m["name"] for m in data["moves"]] == [view.rules.codec.names[a] for a in view.legal_actions]
        assert data["version"] == moves
        data = _ok(client.post(f"/api/games/{game_id}/move", json={"action": _first_move(data), "version": moves}))
        moves += 1
    assert data["moves"] == [] and data["result"] and data["winner"] == game.state.winner
    assert _ok(client.get(f"/api/games/{game_id}")) == data
    line = client.get(f"/api/games/{game_id}/file")
    assert line.status_code == 200 and "attachment" in line.headers["content-disposition"]
    saved = json.loads(line.text)
    assert saved["agents"][seat] == "human" and saved["agents"][1 - seat] == "champion"
    assert replay_game(saved).state.winner == game.state.winner  # the file replays the same game
    rematch = _ok(client.post(f"/api/games/{game_id}/rematch", json={}))
    assert rematch["game"] != game_id and rematch["version"] == 0 and rematch["seat"] == seat and not rematch["over"]
    swapped = _ok(client.post(f"/api/games/{game_id}/rematch", json={"swap": True}))
    assert swapped["seat"] == 1 - seat


def test_a_preset_and_a_rule_variant(client):
    data = _play(client, opponent="counter", preset="race", rules={"tie_policy": "arrow_player_wins"}, seed=3)
    assert data["rules"]["preset"] == "race" and data["rules"]["overrides"] == {"tie_policy": "arrow_player_wins"}
    config = preset_config("race", tie_policy="arrow_player_wins")
    assert data["rules"]["hash"] == config.ruleset_hash()
    game = _store(client).get(data["game"])
    assert game.state.rules.config == config
    while not data["over"]:
        data = _ok(
            client.post(
                f"/api/games/{data['game']}/move",
                json={"action": data["moves"][-1]["action"], "version": data["version"]},
            )
        )
    assert game.state.is_over


def test_the_table_and_the_words_are_the_players_view(client):
    data = _play(client, opponent="random", seat=1, seed=5)
    game = _store(client).get(data["game"])
    view = player_view(game.state, 1)
    from tacocat.game.render.svg import render_svg
    from tacocat.game.render.text import describe_event, render_view

    names = ("random", "you")
    assert data["text"] == render_view(view, "random")
    assert data["svg"] == render_svg(view, names=names)
    assert data["svg_narrow"] == render_svg(view, names=names, narrow=True)
    assert data["history"] == [describe_event(e, view.rules, names) for e in view.events]
    # one vocabulary: the agent by its name and "you", never the seats
    words = " ".join([data["text"], *data["history"]])
    assert "player_0" not in " ".join(data["history"]) and "random" in words and "You " in words


def test_the_agents_replies_are_the_players_tables_after_each_public_step(client):
    """A move's answer carries the agent's replies, one per action of it that made public
    events: the person's table then (their view, R7.3) and those events in words."""
    data = _play(client, opponent="random", preset="race", seat=0, seed=3)
    seen = 0
    while not data["over"] and not data["replies"]:
        data = _ok(
            client.post(
                f"/api/games/{data['game']}/move", json={"action": _first_move(data), "version": data["version"]}
            )
        )
        seen += 1
        assert seen < 200
    from tacocat.game.render.svg import render_svg

    game = _store(client).get(data["game"])
    lines = [line for reply in data["replies"] for line in reply["lines"]]
    assert lines == data["history"][len(data["history"]) - len(lines) :]  # the newest events, in order
    assert all(reply["seat"] == 1 for reply in data["replies"])
    assert data["replies"][-1]["svg"] == render_svg(player_view(game.state, 0), names=("you", "random"))
    assert all(reply["svg"].count("<svg") == 1 and reply["svg_narrow"] for reply in data["replies"])


# ---------------------------------------------------------------------------------------
# hidden information (R7.3), by perturbation
# ---------------------------------------------------------------------------------------
def _twin_client(game_id: str, game: PlayGame, rng: np.random.Generator) -> tuple[TestClient, PlayGame]:
    """Another server holding, under the same id, the same game with everything the player
    cannot see dealt again (the opponent's hand, set-aside and duel cards, the draw pile)."""
    twin = copy.copy(game)
    twin._lock = threading.Lock()
    twin.state = resample_hidden(game.state, game.seat, rng)
    store = GameStore()
    store._games[game_id] = twin
    return TestClient(create_app(store)), twin


def _requests(game_id: str, data: dict) -> list[tuple[str, str, dict | None]]:
    """Requests whose answers must not depend on the opponent's hidden cards."""
    legal = {m["action"] for m in data["moves"]}
    illegal = next(a for a in range(200) if a not in legal)
    out: list[tuple[str, str, dict | None]] = [
        ("GET", f"/api/games/{game_id}", None),
        ("POST", f"/api/games/{game_id}/move", {"action": illegal, "version": data["version"]}),
        ("POST", f"/api/games/{game_id}/move", {"action": _first_move(data), "version": data["version"] + 1}),
        ("GET", f"/api/games/{game_id}/file", None),
        ("GET", f"/api/games/{game_id}/frames/0", None),
        ("POST", f"/api/games/{game_id}/step", {"version": 0}),
    ]
    discard = [m["action"] for m in data["moves"] if m["name"].startswith("replace: discard")]
    if discard:  # setting a card aside leaves the player to act: no agent move, no draw (R4.3)
        out.append(("POST", f"/api/games/{game_id}/move", {"action": discard[-1], "version": data["version"]}))
    return out


@pytest.mark.parametrize("seat, preset", [(0, "default"), (1, "default"), (1, "jumbo")])
def test_every_response_to_the_player_is_the_same_whatever_the_opponent_holds(client, seat, preset):
    rng = np.random.default_rng(seat)
    data = _play(client, opponent="random", seat=seat, preset=preset, seed=21 + seat)
    game_id = data["game"]
    game = _store(client).get(game_id)
    checked = changed = 0
    phases = set()
    while not data["over"]:
        twin_client, twin = _twin_client(game_id, game, rng)
        opp = 1 - seat
        changed += (twin.state.hands[opp], twin.state.draw_pile) != (game.state.hands[opp], game.state.draw_pile)
        for method, path, body in _requests(game_id, data):
            here = client.request(method, path, json=body)
            there = twin_client.request(method, path, json=body)
            assert (here.status_code, here.content) == (there.status_code, there.content), (path, body)
            checked += 1
            if here.status_code == 200 and method == "POST":  # a set-aside was made: carry on from there
                data = here.json()
        phases.add(game.state.phase)
        if not data["over"]:
            data = _ok(
                client.post(
                    f"/api/games/{game_id}/move",
                    json={"action": data["moves"][-1]["action"], "version": data["version"]},
                )
            )
    assert checked >= 20 and changed >= 3
    assert {Phase.REPLACE, Phase.DUEL} <= phases
    # and the finished game: the file and everything else shown afterwards may tell all
    assert client.get(f"/api/games/{game_id}/file").status_code == 200


def test_watching_shows_both_hands_and_the_seed(client):
    data = _ok(client.post("/api/watch", json={"agents": ["counter", "planner"], "preset": "skirmish", "seed": 2}))
    game = _store(client).get(data["game"])
    assert data["seed"] == 2 and data["names"] == ["counter", "planner"]
    assert data["svg"].count("card face hand seat-0") == sum(game.state.hands[0])
    assert data["svg"].count("card face hand seat-1") == sum(game.state.hands[1])


# ---------------------------------------------------------------------------------------
# watch and replay
# ---------------------------------------------------------------------------------------
def test_watching_two_agents_step_by_step(client):
    data = _ok(client.post("/api/watch", json={"agents": ["counter", "planner"], "preset": "skirmish", "seed": 4}))
    game_id = data["game"]
    game = _store(client).get(game_id)
    steps = 0
    while not data["over"]:
        assert data["version"] == steps == len(game.state.actions)
        data = _ok(client.post(f"/api/games/{game_id}/step", json={"version": steps}))
        steps += 1
        player, action = game.state.actions[-1]
        assert data["last"] == f"last move: {data['names'][player]}: {game.state.rules.codec.names[action]}"
    record = play_game([make_agent("counter"), make_agent("planner")], seed=4, config=preset_config("skirmish"))
    assert game.state.actions == record.actions  # the same game as the arena plays from the same seeds
    # one round numbering for the table, the text panel and the history
    over = f"Game over after {game.state.rounds_played} rounds"
    assert over in data["svg"] and over in data["svg_narrow"] and data["text"].splitlines()[1] == over
    last_round = [line for line in data["history"] if line.startswith("Round ")][-1]
    assert last_round.startswith(f"Round {game.state.rounds_played}: ")
    before = client.get(f"/api/games/{game_id}").content
    _refused(client.post(f"/api/games/{game_id}/step", json={"version": steps}), 409, "over")
    assert client.get(f"/api/games/{game_id}").content == before
    saved = json.loads(client.get(f"/api/games/{game_id}/file").text)
    assert saved["agents"] == ["counter", "planner"] and saved["seed"] == 4
    rematch = _ok(client.post(f"/api/games/{game_id}/rematch", json={"swap": True}))
    assert rematch["names"] == ["planner", "counter"] and rematch["version"] == 0


def _game_file(*seeds: int) -> str:
    lines = []
    for seed in seeds:
        record = play_game([make_agent("random"), make_agent("highcard")], seed=seed)
        lines.append(json.dumps(game_to_dict(record, ["random", "highcard"], preset_config("default"))))
    return "\n".join(lines) + "\n"


def test_a_replay_can_be_scrubbed_back_and_forth(client):
    text = _game_file(1, 2)
    game = json.loads(text.splitlines()[1])
    data = _ok(client.post("/api/replay", json={"text": text, "game": 1}))
    game_id, steps = data["game"], data["steps"]
    assert steps == len(game["actions"]) and data["step"] == 0 and data["last"] is None
    final = replay_game(game).state
    for step in (steps, 0, steps // 2, 1, steps // 2):  # back and forth
        frame = _ok(client.get(f"/api/games/{game_id}/frames/{step}"))
        assert frame["step"] == step
        if step:
            player, _, name = game["actions"][step - 1]
            assert frame["last"] == f"last move: {game['agents'][player]}: {name}"
    end = _ok(client.get(f"/api/games/{game_id}/frames/{steps}"))
    assert end["over"] and end["winner"] == final.winner == game["winner"]
    assert end["svg"].count("card face hand seat-0") == sum(final.hands[0])  # a post-mortem: both hands
    _refused(client.get(f"/api/games/{game_id}/frames/{steps + 1}"), 400, "out of range")
    _refused(client.get(f"/api/games/{game_id}/frames/-1"), 400, "whole number")
    _refused(client.get(f"/api/games/{game_id}/frames/x"), 400, "whole number")
    assert json.loads(client.get(f"/api/games/{game_id}/file").text) == game


# ---------------------------------------------------------------------------------------
# bad input: a 4xx with a one-line JSON error, the game unchanged
# ---------------------------------------------------------------------------------------
@pytest.fixture
def game(client) -> dict:
    return _play(client, opponent="random", seed=8)


def _raw(client: TestClient, path: str, content: bytes, kind: str = "application/json"):
    return client.post(path, content=content, headers={"content-type": kind})


@pytest.mark.parametrize(
    "content, kind, status, words",
    [
        (b"{", "application/json", 400, ["not valid JSON"]),
        (b"", "application/json", 400, ["not valid JSON"]),
        (b"\xff\xfe", "application/json", 400, ["not valid JSON"]),
        (b"[1, 2]", "application/json", 400, ["JSON object", "list"]),
        (b"[" * 30_000 + b"]" * 30_000, "application/json", 400, ["not valid JSON"]),
        (b'{"action": 1, "version": 0, "extra": 1}', "application/json", 400, ["extra"]),
        (b'{"action": "1", "version": 0}', "application/json", 400, ["action"]),
        (b'{"action": true, "version": 0}', "application/json", 400, ["action"]),
        (b'{"action": 1.0, "version": 0}', "application/json", 400, ["action"]),
        (b'{"action": NaN, "version": 0}', "application/json", 400, ["action"]),
        (b'{"action": -1, "version": 0}', "application/json", 400, ["action"]),
        (b'{"action": 10000000, "version": 0}', "application/json", 400, ["action"]),
        (b'{"action": 1' + b"0" * 5000 + b', "version": 0}', "application/json", 400, ["not valid JSON"]),
        (b'{"action": 1}', "application/json", 400, ["version"]),
        (b'{"action": 1, "version": 0}', "text/plain", 415, ["application/json"]),
        (b'{"action": 1, "version": 0}', "", 415, ["application/json"]),
        (b'{"action": 1, "version": 0, "pad": "' + b"x" * MAX_BODY + b'"}', "application/json", 413, ["64 KB"]),
    ],
)
def test_a_malformed_or_oversized_move_is_refused_and_changes_nothing(client, game, content, kind, status, words):
    path = f"/api/games/{game['game']}"
    before = client.get(path).content
    _refused(_raw(client, f"{path}/move", content, kind), status, *words)
    assert client.get(path).content == before


def test_a_body_with_many_problems_is_refused_in_one_bounded_line(client, game):
    """Every field wrong, and a thousand unknown ones: the first five problems named, the rest counted."""
    body = {"action": "x", "version": -1, **{f"extra_{i}": i for i in range(1000)}}
    message = _refused(
        client.post(f"/api/games/{game['game']}/move", json=body),
        400,
        "invalid MoveRequest: action: Input should be a valid integer; version:",
        "and 997 more",
    )
    assert message.count(";") == 5 and len(message) < 400


def test_illegal_and_stale_moves_are_refused_and_change_nothing(client, game):
    path = f"/api/games/{game['game']}"
    before = client.get(path).content
    legal = {m["action"] for m in game["moves"]}
    illegal = next(a for a in range(100) if a not in legal)
    _refused(client.post(f"{path}/move", json={"action": illegal, "version": 0}), 400, "illegal move", "legal moves")
    _refused(
        client.post(f"{path}/move", json={"action": 5000, "version": 0}),
        400,
        "not an action of these rules",
        "legal moves",
    )
    _refused(client.post(f"{path}/move", json={"action": _first_move(game), "version": 1}), 409, "stale")
    assert client.get(path).content == before
    moved = _ok(client.post(f"{path}/move", json={"action": _first_move(game), "version": 0}))
    after = client.get(path).content
    _refused(client.post(f"{path}/move", json={"action": _first_move(moved), "version": 0}), 409, "stale", "move 1")
    assert client.get(path).content == after


def test_a_finished_game_takes_no_move(client):
    data = _play(client, opponent="random", preset="tiny", seed=1)
    while not data["over"]:
        data = _ok(
            client.post(
                f"/api/games/{data['game']}/move", json={"action": _first_move(data), "version": data["version"]}
            )
        )
    before = client.get(f"/api/games/{data['game']}").content
    _refused(
        client.post(f"/api/games/{data['game']}/move", json={"action": 0, "version": data["version"]}), 409, "over"
    )
    assert client.get(f"/api/games/{data['game']}").content == before


@pytest.mark.parametrize(
    "path, body, status, words",
    [
        ("/api/play", {"opponent": "nobody"}, 400, ["opponent", "unknown agent 'nobody'"]),
        ("/api/play", {"opponent": "search:simulations=-3"}, 400, ["opponent", "simulations"]),
        ("/api/play", {"opponent": "search:depth=3"}, 400, ["no parameter 'depth'"]),
        ("/api/play", {"opponent": "league:path=/no/such/policy.npz"}, 400, ["opponent"]),
        ("/api/play", {"opponent": "champion", "preset": "skirmish"}, 400, ["opponent", "trained for another ruleset"]),
        ("/api/play", {"opponent": "human"}, 400, ["unknown agent"]),
        ("/api/play", {"opponent": ""}, 400, ["opponent"]),
        ("/api/play", {"opponent": "x" * 2000}, 400, ["opponent"]),
        ("/api/play", {"seat": 2}, 400, ["seat"]),
        ("/api/play", {"seat": True}, 400, ["seat"]),
        ("/api/play", {"seed": -1}, 400, ["seed"]),
        ("/api/play", {"seed": 2**40}, 400, ["seed"]),
        ("/api/play", {"preset": "huge"}, 400, ["unknown rules preset 'huge'"]),
        ("/api/play", {"opponent": "random", "rules": {"deck": {}}}, 400, ["rules", "deck"]),
        ("/api/play", {"opponent": "random", "rules": {"board": [4] * 300}}, 400, ["rules", "board"]),
        ("/api/play", {"opponent": "random", "rules": {"colour": "red"}}, 400, ["rules", "colour"]),
        ("/api/play", {"opponent": "random", "rules": [1]}, 400, ["rules"]),
        ("/api/watch", {"agents": ["random"]}, 400, ["agents"]),
        ("/api/watch", {"agents": ["random", "nobody"]}, 400, ["agents[1]", "unknown agent"]),
        ("/api/replay", {"text": "{seed: 1\n"}, 400, ["line 1", "not valid JSON"]),
        ("/api/replay", {"text": "\n\n"}, 400, ["no games"]),
        ("/api/replay", {"text": '{"a": 1}\n'}, 400, ["line 1", "not a game record"]),
        ("/api/replay", {"text": '{"seed": -1, "actions": []}\n'}, 400, ["line 1", "seed"]),
        (
            "/api/replay",
            {"text": '{"seed": 1, "rules": {}, "actions": [[0, 999]]}\n'},
            400,
            ["replayed", "out of range"],
        ),
        (
            "/api/replay",
            {"text": '{"seed": 1, "rules": {}, "actions": [], "ruleset_hash": "0"}\n'},
            400,
            ["hash mismatch"],
        ),
        ("/api/replay", {"text": '{"seed": 1, "actions": []}\n'}, 400, ["replayed", "no 'rules'"]),
        ("/api/replay", {"text": '{"seed": 1, "actions": []}\n', "game": 3}, 400, ["game 3", "holds 1 game"]),
    ],
)
def test_bad_game_requests_are_refused(client, path, body, status, words):
    games = len(_store(client))
    _refused(client.post(path, json=body), status, *words)
    assert len(_store(client)) == games  # no game was made


def test_an_illegal_action_in_a_game_file_is_refused(client):
    game = json.loads(_game_file(3))
    game["actions"][4][1], game["actions"][4][2] = 0, "replace: discard a 1"
    game["actions"] = [[p, a] for p, a, _ in game["actions"]]
    _refused(client.post("/api/replay", json={"text": json.dumps(game)}), 400, "cannot be replayed", "action 4")


def test_an_oversized_game_file_is_refused(client):
    text = "\n" * (MAX_FILE_BODY + 10)
    _refused(client.post("/api/replay", json={"text": text}), 413, "KB")


@pytest.mark.parametrize(
    "path",
    [
        "/api/games/nosuchgame",
        "/api/games/" + "a" * 65,
        "/api/games/..%2F..%2Fetc",
        "/api/games/nosuchgame/file",
        "/api/nothing",
        "/static/nothing.js",
    ],
)
def test_unknown_game_ids_and_routes_are_404(client, path):
    _refused(client.get(path), 404)


def test_moves_steps_and_frames_go_to_the_right_kind_of_game(client, game):
    watched = _ok(client.post("/api/watch", json={"agents": ["random", "random"], "preset": "tiny"}))
    path = f"/api/games/{game['game']}"
    before = client.get(path).content
    _refused(client.post(f"{path}/step", json={"version": 0}), 400, "between agents")
    _refused(client.get(f"{path}/frames/0"), 400, "replay")
    _refused(
        client.post(f"/api/games/{watched['game']}/move", json={"action": 0, "version": 0}), 400, "against an agent"
    )
    _refused(client.post(f"/api/games/{game['game']}/move", json={"action": 0}), 400, "version")
    _refused(client.get(f"/api/games/{game['game']}/move"), 405)
    replayed = _ok(client.post("/api/replay", json={"text": _game_file(4)}))
    _refused(client.post(f"/api/games/{replayed['game']}/rematch", json={}), 400, "no rematch")
    _refused(client.post(f"{path}/rematch", json={"swap": "yes"}), 400, "swap")
    assert client.get(path).content == before


def test_two_tabs_cannot_move_at_once(client):
    """One move at a time per game: a second tab's move while the first is being answered
    (the agent still thinking) is refused, then its stale counter is."""
    data = _play(client, opponent="random", seed=9)
    path = f"/api/games/{data['game']}"
    game = _store(client).get(data["game"])
    real_act = game.agent.act
    thinking, go_on = threading.Event(), threading.Event()

    def slow_act(inp):
        thinking.set()
        assert go_on.wait(timeout=30)
        return real_act(inp)

    game.agent.act = slow_act
    action = next(m["action"] for m in data["moves"] if m["name"] == "replace: stop")  # the agent replies next
    first: list = []

    def tab() -> None:
        with TestClient(client.app) as other:
            first.append(other.post(f"{path}/move", json={"action": action, "version": 0}))

    thread = threading.Thread(target=tab)
    thread.start()
    assert thinking.wait(timeout=30)  # the first tab's move is being answered
    try:
        _refused(client.post(f"{path}/move", json={"action": action, "version": 0}), 409, "another request")
    finally:
        go_on.set()
        thread.join()
    assert first[0].status_code == 200, first[0].text
    game.agent.act = real_act
    assert game.version == 1 and game.state.actions.count((0, action)) == 1
    _refused(client.post(f"{path}/move", json={"action": action, "version": 0}), 409, "stale")


def test_game_ids_are_unguessable_and_the_store_is_bounded():
    store = GameStore(limit=3)
    client = TestClient(create_app(store))
    body = {"agents": ["random", "random"], "preset": "tiny"}
    ids = [_ok(client.post("/api/watch", json=body))["game"] for _ in range(5)]
    assert len(set(ids)) == 5 and all(len(i) >= 24 and i.replace("-", "").replace("_", "").isalnum() for i in ids)
    assert len(store) == 3  # watched games are dropped, the least recently used first
    _refused(client.get(f"/api/games/{ids[0]}"), 404, "unknown game id")
    _ok(client.get(f"/api/games/{ids[-1]}"))


def test_a_local_server_answers_only_requests_for_this_machine():
    client = TestClient(
        create_app(allowed_hosts=server.answered_hosts("127.0.0.1", [])), base_url="http://127.0.0.1:8000"
    )
    _ok(client.get("/api/options"))
    assert client.get("/api/options", headers={"host": "localhost:8000"}).status_code == 200
    _refused(client.get("/api/options", headers={"host": "evil.example"}), 400, "evil.example")


# ---------------------------------------------------------------------------------------
# tacocat serve
# ---------------------------------------------------------------------------------------
def test_serve_says_where_and_who_can_reach_it(monkeypatch):
    ran = []

    class Dummy:
        def __init__(self, app) -> None:
            self.app = app

        def run(self, sockets):
            ran.append(sockets[0].getsockname())

    monkeypatch.setattr(server, "_server", Dummy)
    lines: list[str] = []
    server.serve("127.0.0.1", 0, echo=lines.append)
    assert ran and ran[0][0] == "127.0.0.1"
    assert f"http://127.0.0.1:{ran[0][1]}/" in lines[0] and "local only" in lines[0]
    lines.clear()
    server.serve("0.0.0.0", 0, allowed_hosts=["tacocat.lan"], echo=lines.append)
    assert "other machines can reach it by the names tacocat.lan" in lines[0]


def test_serve_refuses_a_port_in_use_and_a_bad_port_in_one_line():
    from typer.testing import CliRunner

    from tacocat.cli.app import app

    taken = server.bind("127.0.0.1", 0)
    try:
        result = CliRunner().invoke(app, ["serve", "--port", str(taken.getsockname()[1])])
    finally:
        taken.close()
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 1 and len(errors) == 1 and "cannot listen" in errors[0], result.output
    result = CliRunner().invoke(app, ["serve", "--port", "70000"])
    assert result.exit_code == 2 and "--port" in result.output and "Traceback" not in result.output


def test_an_agent_that_fails_is_a_json_500_and_the_server_goes_on():
    client = TestClient(create_app(), raise_server_exceptions=False)
    data = _play(client, opponent="random", seed=2)
    game = _store(client).get(data["game"])

    def broken(inp):
        raise RuntimeError("the agent broke")

    game.agent.act = broken
    stop = next(m["action"] for m in data["moves"] if m["name"] == "replace: stop")
    answer = client.post(f"/api/games/{data['game']}/move", json={"action": stop, "version": 0})
    assert answer.status_code == 500 and answer.json() == {"error": "the server failed: RuntimeError: the agent broke"}
    _ok(client.get(f"/api/games/{data['game']}"))  # the game's lock was released
    _ok(client.get("/api/options"))
