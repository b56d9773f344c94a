"""The web app (Starlette): the page, its static files and the JSON API.

    GET  /                                   the page (static/index.html, app.js, app.css)
    GET  /api/options                        agents, rule presets, how to play
    POST /api/play    {opponent, seat, preset, rules, seed}   a game against an agent
    POST /api/watch   {agents: [a, b], preset, rules, seed}   two agents
    POST /api/replay  {text, game}           a saved game (a game file's text, game index)
    GET  /api/games/ID                       the game as its viewer sees it now
    GET  /api/games/ID/frames/K              a replay after K actions
    POST /api/games/ID/move   {action, version}   the person's move (play)
    POST /api/games/ID/step   {version}           the next agent action (watch)
    POST /api/games/ID/rematch {swap}             the same settings, a new deal (swap: seats swapped)
    GET  /api/games/ID/file                  the game as a game file line (.jsonl), once over

Every refusal is a 4xx with `{"error": "one line"}` and leaves everything unchanged: malformed
or oversized bodies (64 KB; 1 MB for a game file), bodies that are not `application/json`
(a page of another site cannot post one without the browser asking first), unknown fields,
numbers out of range, text that is not valid Unicode, agent specs the server does not serve
(tacocat.web.specs), illegal moves (400), stale moves or a game another tab is changing (409),
unknown game ids or routes (404). A server at its limits answers 503 the same way: agents
that did not finish within the deadline, too many requests for slow agents waiting, a store
full of people's games in progress (tacocat.web.work, GameStore). Every answer carries the
page's Content-Security-Policy and `nosniff`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tacocat.game import how_to_play
from tacocat.game.errors import one_line
from tacocat.game.presets import PRESETS
from tacocat.web.errors import WebError, check_text
from tacocat.web.games import (
    MAX_FILE_GAMES,
    SEED_LIMIT,
    Game,
    GameStore,
    PlayGame,
    ReplayGame,
    Rules,
    WatchGame,
    read_game_file,
)
from tacocat.web.specs import ServedAgents
from tacocat.web.work import Budget, Limits, Thinking

STATIC = Path(__file__).resolve().parent / "static"
#: the largest request body, and the largest game file (as the text of a replay request)
MAX_BODY = 64 * 1024
MAX_FILE_BODY = 1024 * 1024
#: bounds of the numbers a request carries
MAX_VERSION = 10**9
MAX_ACTION = 10**6
#: how long a read waits for a move in progress (an agent thinking) before answering 409:
#: longer than a move may take (`Limits.deadline_s` and one last agent action)
READ_WAIT_S = 30.0

M = TypeVar("M", bound=BaseModel)


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlayRequest(_Body):
    opponent: StrictStr = Field("champion", min_length=1, max_length=1000)
    seat: StrictInt = Field(0, ge=0, le=1)
    preset: StrictStr | None = Field(None, max_length=100)
    rules: dict[str, Any] | None = None
    seed: StrictInt | None = Field(None, ge=0, lt=SEED_LIMIT)


class WatchRequest(_Body):
    agents: list[StrictStr] = Field(min_length=2, max_length=2)
    preset: StrictStr | None = Field(None, max_length=100)
    rules: dict[str, Any] | None = None
    seed: StrictInt | None = Field(None, ge=0, lt=SEED_LIMIT)


class ReplayRequest(_Body):
    text: StrictStr = Field(min_length=1)
    game: StrictInt = Field(0, ge=0, lt=MAX_FILE_GAMES)


class MoveRequest(_Body):
    action: StrictInt = Field(ge=0, le=MAX_ACTION)
    version: StrictInt = Field(ge=0, le=MAX_VERSION)


class StepRequest(_Body):
    version: StrictInt = Field(ge=0, le=MAX_VERSION)


class RematchRequest(_Body):
    swap: StrictBool = False


_NO_STORE = {"Cache-Control": "no-store"}
#: on every answer: the page runs its own script and style only, no other site may frame it,
#: and no answer is read as another type than it says
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; frame-ancestors 'none'",
}


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": one_line(message)}, status_code=status, headers=_NO_STORE)


async def read_json(request: Request, model: type[M], limit: int = MAX_BODY) -> M:
    """The request body as `model`: a JSON object of at most `limit` bytes; WebError otherwise."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise WebError(415, f"the request body must be JSON sent as application/json, got {kind or 'no type'!r}")
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise WebError(413, f"the request body is over {limit // 1024} KB")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise WebError(413, f"the request body is over {limit // 1024} KB")
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as err:  # (UnicodeDecodeError is a ValueError)
        raise WebError(400, f"the request body is not valid JSON: {one_line(err)}") from None
    if not isinstance(data, dict):
        raise WebError(400, f"the request body must be a JSON object, got {type(data).__name__}")
    check_text(data, "the request body")
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise WebError(400, one_line(err)) from None


class HostCheck:
    """Answers only requests whose Host header names one of `allowed` (any port): a page of
    another site that a DNS trick points at this machine gets a 400 JSON error."""

    def __init__(self, app: ASGIApp, allowed: list[str]) -> None:
        self.app, self.allowed = app, {name.lower() for name in allowed}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            host = Headers(scope=scope).get("host", "").lower()
            name = host[: host.find("]") + 1] if host.startswith("[") else host.split(":")[0]
            if name not in self.allowed:
                response = error(
                    400, f"this server answers requests for {', '.join(sorted(self.allowed))}, not {name[:100]!r}"
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class SecurityHeaders:
    """Adds `SECURITY_HEADERS` to every answer (the page, its static files, the API)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers if scope["type"] == "http" else send)


def create_app(
    store: GameStore | None = None,
    allowed_hosts: list[str] | None = None,
    agents: ServedAgents | None = None,
    limits: Limits | None = None,
) -> Starlette:
    """The app over `store` (a new one by default). `allowed_hosts`: the host names it
    answers (`HostCheck`), None for any; `agents`: the agents and policy folders it serves
    (the defaults of `ServedAgents`); `limits`: the bounds of agent thinking."""
    games = store if store is not None else GameStore()
    served = agents if agents is not None else ServedAgents()
    thinking = Thinking(limits or Limits())

    def answer(payload: dict[str, Any]) -> JSONResponse:
        return JSONResponse(payload, headers=_NO_STORE)

    def created(game: Game) -> JSONResponse:
        """The new game's answer, made before the game is kept (an answer that cannot be made
        keeps nothing)."""
        game_id = games.new_id()
        with game.locked():
            response = answer(game.payload(game_id))
        games.add(game_id, game)
        return response

    # what the page's forms offer, read once, and written into the page, which so needs no
    # second request before it can be used
    choices = {
        "agents": served.offered(),
        "presets": list(PRESETS),
        "default_opponent": "champion",
        "how_to_play": {"sections": how_to_play.SECTIONS, "groups": how_to_play.MOVE_GROUPS},
    }
    embedded = json.dumps(choices).replace("</", "<\\/")  # (JSON's own escape: no "</script>" inside)
    page = (
        (STATIC / "index.html")
        .read_text(encoding="utf-8")
        .replace(
            '<script id="options" type="application/json">{}</script>',
            f'<script id="options" type="application/json">{embedded}</script>',
        )
    )

    async def index(request: Request) -> Response:
        return HTMLResponse(page, headers=_NO_STORE)

    async def options(request: Request) -> JSONResponse:
        return JSONResponse(choices)

    async def play(request: Request) -> JSONResponse:
        body = await read_json(request, PlayRequest)
        rules = Rules.make(body.preset, body.rules)
        opponent = served.choose(body.opponent, "opponent")

        def start(budget: Budget) -> PlayGame:
            return PlayGame(rules, opponent, body.seat, body.seed, budget)

        return await run_in_threadpool(created, await thinking.run(request, start, opponent.slow))

    async def watch(request: Request) -> JSONResponse:
        body = await read_json(request, WatchRequest)
        rules = Rules.make(body.preset, body.rules)
        pair = (served.choose(body.agents[0], "agents[0]"), served.choose(body.agents[1], "agents[1]"))
        game = await run_in_threadpool(WatchGame, rules, pair, body.seed)
        return await run_in_threadpool(created, game)

    async def replay(request: Request) -> JSONResponse:
        body = await read_json(request, ReplayRequest, MAX_FILE_BODY)

        def load(budget: Budget) -> ReplayGame:
            return ReplayGame(read_game_file(body.text, body.game), budget)

        return await run_in_threadpool(created, await thinking.run(request, load, slow=True))

    async def show(request: Request) -> JSONResponse:
        game_id = request.path_params["game_id"]
        game = games.get(game_id)
        return answer(await game.read(lambda: game.payload(game_id), READ_WAIT_S))

    async def frame(request: Request) -> JSONResponse:
        game_id = request.path_params["game_id"]
        game = games.get(game_id)
        text = request.path_params["step"]
        if not isinstance(game, ReplayGame):
            raise WebError(400, f"frames are steps of a replay; this is a {game.kind} game")
        if not text.isdigit() or len(text) > 9:
            raise WebError(400, f"the step must be a whole number 0..{game.steps}, got {text[:20]!r}")
        return answer(await run_in_threadpool(game.payload, game_id, int(text)))

    async def move(request: Request) -> JSONResponse:
        game_id = request.path_params["game_id"]
        game = games.get(game_id)
        body = await read_json(request, MoveRequest)
        if not isinstance(game, PlayGame):
            raise WebError(400, f"moves are for a game against an agent; this is a {game.kind} game")

        def run(budget: Budget) -> dict[str, Any]:
            with game.locked():
                game.move(body.action, body.version, budget)
                return game.payload(game_id)

        return answer(await thinking.run(request, run, game.slow))

    async def step(request: Request) -> JSONResponse:
        game_id = request.path_params["game_id"]
        game = games.get(game_id)
        body = await read_json(request, StepRequest)
        if not isinstance(game, WatchGame):
            raise WebError(400, f"steps are for a game between agents; this is a {game.kind} game")

        def run(budget: Budget) -> dict[str, Any]:
            with game.locked():
                game.step(body.version, budget)
                return game.payload(game_id)

        return answer(await thinking.run(request, run, game.slow))

    async def rematch(request: Request) -> JSONResponse:
        game = games.get(request.path_params["game_id"])
        body = await read_json(request, RematchRequest)

        def start(budget: Budget) -> Game:
            return game.rematch(body.swap, budget)

        return await run_in_threadpool(created, await thinking.run(request, start, game.slow))

    async def game_file(request: Request) -> Response:
        game_id = request.path_params["game_id"]
        game = games.get(game_id)
        line = await game.read(game.game_file, READ_WAIT_S) + "\n"
        return Response(
            line,
            media_type="application/x-ndjson",
            headers={
                **_NO_STORE,
                "Content-Disposition": f'attachment; filename="tacocat-{game.kind}-{game_id[:8]}.jsonl"',
            },
        )

    async def web_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, WebError)
        return error(exc.status, exc.message)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, HTTPException)
        detail = {404: "no such page or API route", 405: "this route does not take that method"}
        return error(exc.status_code, detail.get(exc.status_code, str(exc.detail)))

    async def server_error(request: Request, exc: Exception) -> JSONResponse:
        # a failure of the server or of an agent's code, not of the request (uvicorn logs it)
        return error(500, f"the server failed: {type(exc).__name__}: {one_line(exc)}")

    routes = [
        Route("/", index),
        Route("/api/options", options),
        Route("/api/play", play, methods=["POST"]),
        Route("/api/watch", watch, methods=["POST"]),
        Route("/api/replay", replay, methods=["POST"]),
        Route("/api/games/{game_id}", show),
        Route("/api/games/{game_id}/frames/{step}", frame),
        Route("/api/games/{game_id}/move", move, methods=["POST"]),
        Route("/api/games/{game_id}/step", step, methods=["POST"]),
        Route("/api/games/{game_id}/rematch", rematch, methods=["POST"]),
        Route("/api/games/{game_id}/file", game_file),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders)]
    if allowed_hosts:
        middleware.append(Middleware(HostCheck, allowed=allowed_hosts))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={WebError: web_error, HTTPException: http_error, Exception: server_error},
    )
    app.state.games = games
    app.state.agents = served
    app.state.thinking = thinking
    return app
