"""The work of every request to `tacocat serve` is bounded (issue 36): a replay's memory is
linear in the game's length, agent budgets are capped, a move stops at its deadline or when
its client goes away and then changes nothing, slow agents think in a pool of their own so
that cheap requests never wait for them, and a person's game in progress is never dropped
for another client's new games."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
import tracemalloc

import numpy as np
import pytest

pytest.importorskip("starlette", reason="the web extra is not installed (pip install -e '.[web]')")
from starlette.testclient import TestClient

from tacocat.evaluation.game_files import replay_game
from tacocat.game.config import RulesConfig
from tacocat.game.engine import apply_action, legal_actions, new_game
from tacocat.game.render.svg import render_svg
from tacocat.game.render.text import describe_event, distinct_names, render_text
from tacocat.web.app import create_app
from tacocat.web.games import CHECKPOINT_EVERY, IDLE_S, GameStore, PlayGame, Rules
from tacocat.web.server import BackgroundServer
from tacocat.web.specs import ServedAgents
from tacocat.web.work import Budget, Limits

#: the slowest search served: it searches its replace decisions too, the person's first move's replies
SLOW = "search:simulations=1000,search_replace=true"
#: every round a tie (one card value): a game of the longest kind, 10,000 void rounds
LONG_RULES = RulesConfig(deck={5: 100}, max_rounds=10_000)


def _ok(response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def _refused(response, status: int, *words: str) -> str:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert list(body) == ["error"] and "\n" not in body["error"], body
    for word in words:
        assert word in body["error"], body["error"]
    return body["error"]


def _long_game(actions: int, pad_to: int = 0) -> str:
    """A legal game file line of `actions` random actions of `LONG_RULES` ([player, id]
    entries, no names: the most actions a file can hold), padded to `pad_to` bytes."""
    rng = np.random.default_rng(0)
    state = new_game(LONG_RULES, 1)
    for _ in range(actions):
        legal = legal_actions(state)
        apply_action(state, legal[rng.integers(len(legal))])
    game = {
        "seed": 1,
        "rules": LONG_RULES.canonical_dict(),
        "agents": ["random", "random"],
        "actions": [list(entry) for entry in state.actions],
    }
    line = json.dumps(game, separators=(",", ":"))
    if pad_to:
        game["comment"] = "x" * (pad_to - len(line) - len(',"comment":""'))
    return json.dumps(game, separators=(",", ":")) + "\n"


def _first_move(data: dict, name: str = "replace: stop") -> int:
    return next(m["action"] for m in data["moves"] if m["name"] == name)


# ---------------------------------------------------------------------------------------
# defect 4: a replay's memory and time are linear in the game's length
# ---------------------------------------------------------------------------------------
def _replay_held_bytes(client: TestClient, text: str) -> tuple[int, int, str]:
    """The memory a replay request leaves held and its peak (tracemalloc), and the game id."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        game_id = _ok(client.post("/api/replay", json={"text": text}))["game"]
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return held - base, peak - base, game_id


def test_a_replay_holds_memory_linear_in_its_length():
    """6,000 actions held 254 MB when every step kept a whole copy with its history."""
    client = TestClient(create_app())
    client.post("/api/replay", json={"text": _long_game(100)})  # (imports and caches, outside the measure)
    held, peak, game_id = _replay_held_bytes(client, _long_game(6000))
    assert held < 6000 * 1024 and peak < 6000 * 2048, (held, peak)  # under 1 KB (2 KB at the peak) per action
    assert _ok(client.get(f"/api/games/{game_id}/frames/6000"))["step"] == 6000


def test_every_frame_of_a_replay_is_the_state_after_its_steps():
    """Frames are rebuilt from the checkpoint before them: each is the state a full replay
    reaches, its public history included, across checkpoint boundaries."""
    text = _long_game(3 * CHECKPOINT_EVERY + 5)
    game = json.loads(text)
    states = []
    replay_game(game, on_state=lambda state: states.append(state.clone()))
    client = TestClient(create_app())
    game_id = _ok(client.post("/api/replay", json={"text": text}))["game"]
    for step in sorted(
        {0, 1, CHECKPOINT_EVERY - 1, CHECKPOINT_EVERY, CHECKPOINT_EVERY + 1, 2 * CHECKPOINT_EVERY + 7, len(states) - 1}
    ):
        frame = _ok(client.get(f"/api/games/{game_id}/frames/{step}"))
        state = states[step]
        names = distinct_names(("random", "random"))
        assert frame["svg"] == render_svg(state, reveal=True, names=names)
        assert frame["text"] == render_text(state, names)
        assert frame["history"] == [describe_event(event, state.rules, names) for event in state.events]


@pytest.mark.slow  # about 25 s: the traced replay of 100,000 actions
def test_the_longest_replay_a_file_may_hold(capsys):
    """A 1 MB file of 100,000 actions (the most a replay takes): the figures of docs/WEB.md."""
    text = _long_game(100_000, pad_to=1_000_000)
    client = TestClient(create_app(limits=Limits(deadline_s=600)))  # (traced, the replay is some 5 times slower)
    client.post("/api/replay", json={"text": _long_game(100)})
    started = time.perf_counter()
    game_id = _ok(client.post("/api/replay", json={"text": text}))["game"]
    load = time.perf_counter() - started
    started = time.perf_counter()
    frame = client.get(f"/api/games/{game_id}/frames/100000")
    last = time.perf_counter() - started
    held, peak, _ = _replay_held_bytes(client, text)
    with capsys.disabled():
        print(
            f"\n{len(text):,} bytes, 100,000 actions: load {load:.2f} s, last frame {last * 1000:.0f} ms "
            f"({len(frame.content) / 1e6:.1f} MB), held {held / 1e6:.1f} MB, peak {peak / 1e6:.1f} MB (tracemalloc)"
        )
    assert held < 40e6 and peak < 100e6 and load < 20 and last < 2, (held, peak, load, last)


# ---------------------------------------------------------------------------------------
# defect 5: caps, a deadline, cancellation, and a pool of their own for slow agents
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, words",
    [
        ("search:simulations=1000000000", ["simulations", "from 1 to 1000"]),
        ("search:simulations=1001", ["from 1 to 1000"]),
        ("ismcts:simulations=101", ["from 1 to 100"]),
        ("ismcts:rollouts=100", ["no parameter 'rollouts'"]),
    ],
)
def test_search_budgets_are_capped(spec, words):
    client = TestClient(create_app())
    for route, body in (("watch", {"agents": ["random", spec]}), ("play", {"opponent": spec, "seat": 0})):
        _refused(client.post(f"/api/{route}", json=body), 400, *words)
    assert len(client.app.state.games) == 0


def _slowed(game: PlayGame, seconds: float) -> list[float]:
    """Makes the game's agent take `seconds` more per action; returns when each action began."""
    real_act = game.agent.act
    began: list[float] = []

    def slow_act(inp):
        began.append(time.monotonic())
        time.sleep(seconds)
        return real_act(inp)

    game.agent.act = slow_act
    return began


def test_a_move_past_its_deadline_changes_nothing_and_can_be_made_again():
    client = TestClient(create_app(limits=Limits(deadline_s=0.3)))
    data = _ok(client.post("/api/play", json={"opponent": "random", "seat": 0, "seed": 1}))
    game = client.app.state.games.get(data["game"])
    state, generator = list(game.state.actions), game.agent.rng.bit_generator.state
    began = _slowed(game, 0.2)
    _refused(
        client.post(f"/api/games/{data['game']}/move", json={"action": _first_move(data), "version": 0}),
        503,
        "did not finish within 0.3 s",
        "nothing was changed",
    )
    assert 2 <= len(began) <= 3  # of the 6 actions the move needs: stopped at the first check past the deadline
    assert game.state.actions == state and game.version == 0 and game.agent.rng.bit_generator.state == generator
    del game.agent.act  # (the agent's own again)
    moved = _ok(client.post(f"/api/games/{data['game']}/move", json={"action": _first_move(data), "version": 0}))
    twin = PlayGame(Rules.make(None, None), ServedAgents().choose("random", "opponent"), 0, 1, Budget(60))
    twin.move(_first_move(data), 0, Budget(60))
    assert moved["version"] == 1 and game.state.actions == twin.state.actions  # the same replies as uninterrupted


def test_a_move_whose_client_went_away_stops():
    app = create_app()
    with BackgroundServer(app=app) as url:
        host, port = url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        connection.request(
            "POST",
            "/api/play",
            json.dumps({"opponent": "search:simulations=1", "seed": 2}),
            {"content-type": "application/json"},
        )
        data = json.loads(connection.getresponse().read())
        game = app.state.games.get(data["game"])
        began = _slowed(game, 0.3)
        body = json.dumps({"action": _first_move(data), "version": 0}).encode()
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(
                b"POST /api/games/%s/move HTTP/1.1\r\nHost: %s:%s\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (data["game"].encode(), host.encode(), port.encode(), len(body), body)
            )
            waiting = time.monotonic() + 10
            while not began and time.monotonic() < waiting:
                time.sleep(0.01)
        # the client went away while the agent thinks
        deadline = time.monotonic() + 10
        while app.state.thinking.pending and time.monotonic() < deadline:
            time.sleep(0.05)
        assert app.state.thinking.pending == 0
    assert 1 <= len(began) <= 3  # of the 7 agent actions the move needs: stopped soon after the client left
    assert game.version == 0 and len(game.state.actions) == 0


def test_fifty_slow_moves_pending_do_not_hold_up_a_new_game(capsys):
    """Slow agents think in a pool of their own: with 50 capped searches waiting, a new game
    against random answers before the moves' deadline (queued behind them in a pool of two, it
    would wait for many deadlines), and every waiting move ends by its deadline."""
    limits = Limits(deadline_s=3.0)
    app = create_app(limits=limits)
    with BackgroundServer(app=app) as url:
        host, port = url.removeprefix("http://").split(":")

        def post(path: str, body: dict) -> tuple[int, dict]:
            connection = http.client.HTTPConnection(host, int(port), timeout=60)
            connection.request("POST", path, json.dumps(body), {"content-type": "application/json"})
            response = connection.getresponse()
            return response.status, json.loads(response.read())

        games = [post("/api/play", {"opponent": SLOW, "seed": seed})[1] for seed in range(50)]
        answers: list[tuple[int, dict]] = []
        threads = [
            threading.Thread(
                target=lambda d=d: answers.append(
                    post(f"/api/games/{d['game']}/move", {"action": _first_move(d), "version": 0})
                )
            )
            for d in games
        ]
        for thread in threads:
            thread.start()
        waiting = time.monotonic() + 30
        while app.state.thinking.pending < 45 and time.monotonic() < waiting:
            time.sleep(0.01)
        assert app.state.thinking.pending >= 45, app.state.thinking.pending
        latencies, statuses = [], set()
        for _ in range(5):
            started = time.monotonic()
            statuses.add(post("/api/play", {"opponent": "random", "seat": 1})[0])
            latencies.append(time.monotonic() - started)
        pending = app.state.thinking.pending
        for thread in threads:
            thread.join(timeout=30)
    with capsys.disabled():
        print(
            f"\nnew games against random with {pending}-50 slow moves waiting: "
            f"median {sorted(latencies)[2] * 1000:.0f} ms, at most {max(latencies) * 1000:.0f} ms"
        )
    assert statuses == {200} and max(latencies) < limits.deadline_s, latencies
    assert len(answers) == 50 and {s for s, _ in answers} <= {200, 503}
    for status, body in answers:
        if status == 503:
            assert "nothing was changed" in body["error"]
    assert all(app.state.games.get(d["game"]).version in (0, 1) for d in games)


# ---------------------------------------------------------------------------------------
# defect 7: a person's game in progress is never dropped for others
# ---------------------------------------------------------------------------------------
def test_a_game_in_progress_is_not_dropped_for_another_clients_games():
    store = GameStore(limit=3)
    client = TestClient(create_app(store))
    mine = [_ok(client.post("/api/play", json={"opponent": "random", "preset": "tiny"}))["game"] for _ in range(3)]
    _refused(client.post("/api/play", json={"opponent": "random"}), 503, "games in progress")
    _refused(client.post("/api/watch", json={"agents": ["random", "random"]}), 503)
    assert len(store) == 3 and all(client.get(f"/api/games/{i}").status_code == 200 for i in mine)
    data = client.get(f"/api/games/{mine[0]}").json()
    while not data["over"]:  # a finished game may go
        data = _ok(
            client.post(
                f"/api/games/{mine[0]}/move", json={"action": data["moves"][0]["action"], "version": data["version"]}
            )
        )
    new = _ok(client.post("/api/play", json={"opponent": "random"}))["game"]
    assert client.get(f"/api/games/{mine[0]}").status_code == 404
    store.get(mine[1]).used -= IDLE_S + 1  # and so may one left idle
    _ok(client.post("/api/watch", json={"agents": ["random", "random"]}))
    assert client.get(f"/api/games/{mine[1]}").status_code == 404
    assert all(client.get(f"/api/games/{i}").status_code == 200 for i in (mine[2], new))


def test_the_store_bounds_the_actions_it_holds():
    store = GameStore(max_actions=2 * 1000 + 10)
    client = TestClient(create_app(store))
    text = _long_game(1000)
    ids = [_ok(client.post("/api/replay", json={"text": text}))["game"] for _ in range(3)]
    assert len(store) == 2 and client.get(f"/api/games/{ids[0]}").status_code == 404
