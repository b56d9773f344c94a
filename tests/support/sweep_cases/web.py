"""Bad-input sweep: the web app's HTTP API (tacocat.web, `tacocat serve`), issue 29.

Every field of every request body is given values of each wrong kind (null, a boolean, text, a
fraction, a list, an object, numbers out of range), then come bodies that are not JSON objects,
wrong content types, oversized bodies, unknown ids and routes, and moves to a game of another
kind, agent specs the server does not serve (issue 36: `trust_pickle`, `torch_threads`, search
budgets over the caps, policy paths outside the served folders, through `..` or a symlink) and
text that is not valid Unicode. A case is clear when the answer is a 4xx whose body is exactly
`{"error": "one line"}`, no game was made, no game changed (its actions and move counter) and
no setting of the process did (torch's thread count); a 5xx, another body or a change is a
traceback; a 2xx is a silent acceptance.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .case import Case


class HttpRefused(ValueError):
    """A clear refusal: a 4xx with one JSON error line, the game unchanged."""


#: values of each wrong kind, tried for every field
WRONG = {
    "null": None,
    "true": True,
    "text": "x",
    "fraction": 0.5,
    "list": [1],
    "object": {"a": 1},
    "negative": -1,
    "huge": 10**30,
}


def cases(tmp: Path) -> Iterator[Case]:
    try:
        from starlette.testclient import TestClient
    except ImportError:  # the web extra is not installed: nothing to sweep here
        return

    from tacocat.agents.mlp_agent import CHAMPION
    from tacocat.agents.registry import make_agent
    from tacocat.evaluation.arena import play_game
    from tacocat.evaluation.game_files import game_to_dict
    from tacocat.game.config import make_config
    from tacocat.web.app import MAX_BODY, create_app
    from tacocat.web.specs import ServedAgents

    served, outside = tmp / "served", tmp / "outside"
    served.mkdir(exist_ok=True)
    outside.mkdir(exist_ok=True)
    shutil.copy(CHAMPION, outside / "policy.npz")
    (served / "escape.npz").unlink(missing_ok=True)
    (served / "escape.npz").symlink_to(outside / "policy.npz")
    (served / "model.zip").write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip: no model in it
    client = TestClient(create_app(agents=ServedAgents([served])))
    play = client.post("/api/play", json={"opponent": "random", "seed": 1}).json()
    watch = client.post("/api/watch", json={"agents": ["random", "random"], "preset": "tiny", "seed": 1}).json()
    record = play_game([make_agent("random"), make_agent("random")], seed=1)
    line = json.dumps(game_to_dict(record, ["random", "random"], make_config(None)))
    replay = client.post("/api/replay", json={"text": line}).json()
    ids = {"play": play["game"], "watch": watch["game"], "replay": replay["game"]}

    store = client.app.state.games
    games = {name: store.get(game) for name, game in ids.items()}

    def fingerprint() -> tuple:
        """The games held, every action of the games played and torch's thread count (what a
        request could change)."""
        torch = sys.modules.get("torch")
        return (
            len(store),
            tuple(list(game.state.actions) for game in (games["play"], games["watch"])),
            games["play"].version,
            torch.get_num_threads() if torch else None,
        )

    def request(
        method: str, path: str, body: Any = None, raw: bytes | None = None, kind: str = "application/json"
    ) -> Callable[[], object]:
        def run() -> object:
            before = fingerprint()
            if raw is not None:
                response = client.request(method, path, content=raw, headers={"content-type": kind})
            else:
                response = client.request(method, path, json=body)
            if fingerprint() != before:
                raise RuntimeError(f"a game changed or one was made: {response.status_code} {response.text[:200]}")
            if response.status_code < 400:
                return response.status_code
            try:
                error = response.json()
            except ValueError:
                raise RuntimeError(f"{response.status_code} without a JSON body: {response.text[:200]!r}") from None
            if response.status_code >= 500 or list(error) != ["error"] or "\n" in str(error["error"]):
                raise RuntimeError(f"{response.status_code} {response.text[:200]}")
            raise HttpRefused(f"{response.status_code} {error['error']}")

        return run

    play_path, watch_path = f"/api/games/{ids['play']}", f"/api/games/{ids['watch']}"
    good: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
        # route: (path, a good body, the fields whose every wrong kind must be refused)
        "play": (
            "/api/play",
            {"opponent": "random", "seat": 0, "preset": "tiny", "rules": {}, "seed": 1},
            ("opponent", "seat", "preset", "rules", "seed"),
        ),
        "watch": (
            "/api/watch",
            {"agents": ["random", "random"], "preset": "tiny", "rules": {}, "seed": 1},
            ("agents", "preset", "rules", "seed"),
        ),
        "replay": ("/api/replay", {"text": line, "game": 0}, ("text", "game")),
        "move": (f"{play_path}/move", {"action": play["moves"][0]["action"], "version": 1}, ("action", "version")),
        "step": (f"{watch_path}/step", {"version": 1}, ("version",)),
        "rematch": (f"/api/games/{ids['replay']}/rematch", {"swap": False}, ("swap",)),
    }
    accepted_kinds = {
        ("play", "preset"): {"null"},
        ("play", "rules"): {"null"},
        ("play", "seed"): {"null"},
        ("watch", "preset"): {"null"},
        ("watch", "rules"): {"null"},
        ("watch", "seed"): {"null"},
    }
    for route, (path, body, fields) in good.items():
        for field in fields:
            for kind, value in WRONG.items():
                if kind in accepted_kinds.get((route, field), set()):
                    continue  # (null is the default there: a valid value)
                yield Case("web", f"{route}: {field} = {kind}", request("POST", path, {**body, field: value}))
        yield Case("web", f"{route}: an unknown field", request("POST", path, {**body, "colour": "red"}))
        yield Case("web", f"{route}: not JSON", request("POST", path, raw=b"{oops"))
        yield Case("web", f"{route}: a JSON list", request("POST", path, raw=b"[]"))
        yield Case("web", f"{route}: a JSON string", request("POST", path, raw=b'"x"'))
        yield Case("web", f"{route}: latin-1 bytes", request("POST", path, raw=b'{"a": "\xe9"}'))
        yield Case("web", f"{route}: nested 20,000 deep", request("POST", path, raw=b"[" * 20_000 + b"]" * 20_000))
        yield Case(
            "web", f"{route}: form data", request("POST", path, raw=b"a=1", kind="application/x-www-form-urlencoded")
        )
        yield Case(
            "web", f"{route}: text/plain", request("POST", path, raw=json.dumps(body).encode(), kind="text/plain")
        )
        yield Case(
            "web",
            f"{route}: over the size limit",
            request("POST", path, raw=b'{"pad": "' + b"x" * (MAX_BODY * 20) + b'"}'),
        )
        yield Case("web", f"{route}: GET instead of POST", request("GET", path))
    moves = {m["action"] for m in play["moves"]}
    illegal = next(a for a in range(200) if a not in moves)
    yield Case(
        "web", "move: an illegal action", request("POST", f"{play_path}/move", {"action": illegal, "version": 0})
    )
    yield Case(
        "web",
        "move: a stale counter",
        request("POST", f"{play_path}/move", {"action": play["moves"][0]["action"], "version": 1}),
    )
    yield Case("web", "move: to a watched game", request("POST", f"{watch_path}/move", {"action": 0, "version": 0}))
    yield Case("web", "step: to a game against a person", request("POST", f"{play_path}/step", {"version": 0}))
    yield Case("web", "frame: of a game that is no replay", request("GET", f"{play_path}/frames/0"))
    yield Case("web", "frame: past the end", request("GET", f"/api/games/{ids['replay']}/frames/100000"))
    yield Case("web", "file: a game still on", request("GET", f"{play_path}/file"))
    for name, path in (
        ("an unknown id", "/api/games/AAAAAAAAAAAAAAAAAAAAAAAA"),
        ("an id of 500 letters", "/api/games/" + "a" * 500),
        ("a path in the id", "/api/games/..%2Fstatic"),
        ("an unknown route", "/api/nothing"),
        ("an unknown static file", "/static/../games.py"),
    ):
        yield Case("web", f"GET {name}", request("GET", path))
    for text, name in (
        ("", "an empty file"),
        ("\n\n", "blank lines"),
        ('{"seed": 1}', "no actions"),
        (line.replace('"seed":', '"seed":-', 1), "a negative seed"),
        (line[: len(line) // 2], "a line cut in half"),
    ):
        yield Case("web", f"replay: {name}", request("POST", "/api/replay", {"text": text}))
    model = served / "model.zip"
    for spec in (
        "nobody",
        "search:simulations=0",
        "league:path=/etc/passwd",
        "ppo:path=" + str(tmp / "none.zip"),
        "random:seed=1",
        "champion:deterministic=maybe",
        f"ppo:path={model},trust_pickle=true",
        f"ppo:path={model},torch_threads=7",
        f"ppo:path={model}",
        "search:simulations=1000000000",
        "search:simulations=1001",
        "ismcts:simulations=101",
        "ismcts:rollouts=50",
        "counter:samples=100000",
        "planner:sacrifice_rate=nan",
        f"league:path={outside / 'policy.npz'}",
        f"league:path={served}/../outside/policy.npz",
        f"league:path={served / 'escape.npz'}",
        f"league:path={served}",
        f"league:path={served / 'none.npz'}",
        "league:path=tacocat/agents/../../../etc/passwd",
        'league:path="a\x00b"',
    ):
        yield Case("web", f"play: opponent {spec!r}", request("POST", "/api/play", {"opponent": spec}))
        yield Case("web", f"watch: agent {spec!r}", request("POST", "/api/watch", {"agents": ["random", spec]}))
    yield Case(
        "web",
        "play: a lone surrogate in the opponent",
        request("POST", "/api/play", raw=b'{"opponent": "random\\ud800"}'),
    )
    yield Case(
        "web",
        "play: a lone surrogate in a rules field",
        request("POST", "/api/play", raw=b'{"opponent": "random", "rules": {"\\udc00": 1}}'),
    )
    surrogate = json.dumps({**json.loads(line), "agents": ["\ud800", "random"]})
    yield Case("web", "replay: a lone surrogate in agents", request("POST", "/api/replay", {"text": surrogate}))
    yield Case("web", "play: the champion on a preset", request("POST", "/api/play", {"preset": "skirmish"}))
    for rules, name in (
        ({"deck": {}}, "an empty deck"),
        ({"board": [4] * 400}, "a board of 400 spaces"),
        ({"max_rounds": 0}, "max_rounds 0"),
        ({"tie_policy": "coin"}, "an unknown tie policy"),
    ):
        yield Case(
            "web", f"play: rules with {name}", request("POST", "/api/play", {"opponent": "random", "rules": rules})
        )
