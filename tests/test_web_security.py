"""`tacocat serve` runs no code it is sent (issue 36): agent specs over HTTP are checked against
the server's allow-list (tacocat.web.specs), policy paths must lie in the folders it serves and
are refused with one message, a server open to the network answers only the host names it was
given, every answer carries the page's security headers, text that is not valid Unicode is
refused, and the page says what a seed reveals."""

from __future__ import annotations

import io
import json
import logging
import shutil
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the web extra is not installed (pip install -e '.[web]')")
from starlette.testclient import TestClient

from tacocat.agents.mlp_agent import CHAMPION
from tacocat.agents.registry import make_agent
from tacocat.evaluation.arena import play_game
from tacocat.evaluation.game_files import game_to_dict
from tacocat.game.presets import preset_config
from tacocat.web import server
from tacocat.web.app import SECURITY_HEADERS, create_app
from tacocat.web.specs import PATH_REFUSED, ServedAgents


def _refused(response, status: int, *words: str) -> str:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert list(body) == ["error"] and "\n" not in body["error"], body
    for word in words:
        assert word in body["error"], body["error"]
    return body["error"]


@pytest.fixture
def served(tmp_path) -> Path:
    folder = tmp_path / "served"
    folder.mkdir()
    shutil.copy(CHAMPION, folder / "good.npz")
    return folder


def _client(*folders: Path) -> TestClient:
    return TestClient(create_app(agents=ServedAgents(folders)))


# ---------------------------------------------------------------------------------------
# defect 1: no pickle, no process-wide setting, over HTTP
# ---------------------------------------------------------------------------------------
@pytest.fixture
def crafted(served, tmp_path) -> tuple[Path, Path]:
    """A model zip in a served folder whose `data` member runs code when unpickled, and the
    marker file that code would write."""
    pytest.importorskip("sb3_contrib", reason="ppo needs the sb3 extra")
    from test_model_security import crafted_zip

    marker = tmp_path / "marker"
    return crafted_zip(served / "model.zip", marker), marker


def test_serving_leaves_the_process_logging_alone(monkeypatch):
    """Starting and stopping a server closes none of the process's log handlers, nor the
    streams they write to: uvicorn's default logging config closes every handler of the
    process, and absl's handler then closes its stream (once pytest's captured stderr, which
    failed every later test of that worker)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    closed: list[bool] = []
    monkeypatch.setattr(handler, "close", lambda: closed.append(True))
    logger = logging.getLogger("tacocat.tests.a_user_logger")
    logger.addHandler(handler)
    try:
        with server.BackgroundServer():
            pass
    finally:
        logger.removeHandler(handler)
    assert closed == [] and not stream.closed


@pytest.mark.parametrize("route", ["play", "watch"])
def test_trust_pickle_is_never_accepted_over_http(crafted, served, route):
    model, marker = crafted
    client = _client(served)
    spec = f"ppo:path={model},trust_pickle=true"
    body = {"opponent": spec} if route == "play" else {"agents": [spec, "random"]}
    _refused(client.post(f"/api/{route}", json=body), 400, "no parameter 'trust_pickle'", "path", "deterministic")
    assert not marker.exists()  # SB3's pickle loader never ran
    assert len(client.app.state.games) == 0
    assert client.post("/api/play", json={"opponent": f"ppo:path={model}", "preset": "default"}).status_code == 200
    assert not marker.exists()  # the safe loader reads weights and JSON only


def test_torch_threads_is_never_accepted_over_http(crafted, served):
    import torch

    model, _ = crafted
    before = torch.get_num_threads()
    client = _client(served)
    _refused(
        client.post("/api/play", json={"opponent": f"ppo:path={model},torch_threads={before + 1}"}),
        400,
        "no parameter 'torch_threads'",
    )
    assert torch.get_num_threads() == before


def test_a_ppo_model_that_does_not_load_changes_no_thread_count(tmp_path):
    pytest.importorskip("sb3_contrib", reason="ppo needs the sb3 extra")
    import torch

    from tacocat.agents.trained import ModelFileError

    before = torch.get_num_threads()
    with pytest.raises(ModelFileError):
        make_agent(f"ppo:path={tmp_path / 'missing.zip'},torch_threads={before + 1}")
    assert torch.get_num_threads() == before  # set only once a model loaded


# ---------------------------------------------------------------------------------------
# defect 2: paths under the served folders only, one message for every refused path
# ---------------------------------------------------------------------------------------
def test_policy_paths_must_lie_in_a_served_folder_and_are_refused_alike(served, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(CHAMPION, outside / "secret.npz")
    (served / "sub").mkdir()
    (served / "notzip.npz").write_text("hello")
    (served / "link.npz").symlink_to(outside / "secret.npz")
    client = _client(served)
    assert client.post("/api/play", json={"opponent": f"league:path={served / 'good.npz'}"}).status_code == 200
    refused = [
        outside / "secret.npz",
        served / "link.npz",
        served / ".." / "outside" / "secret.npz",
        served / "missing.npz",
        served / "sub",
        served / "notzip.npz",
        Path("/etc/passwd"),
        Path("/nonexistent/x.npz"),
        Path("/etc"),
        tmp_path,
        Path(f"{served}/a\x00b"),
    ]
    messages = set()
    for path in refused:
        for route, body in (
            ("play", {"opponent": f'league:path="{path}"'}),
            ("watch", {"agents": ["random", f"rllib:path={path}"]}),
        ):
            message = _refused(client.post(f"/api/{route}", json=body), 400)
            assert str(path) not in message and path.name not in message
            messages.add(message.split(": ", 1)[1])
    assert messages == {PATH_REFUSED}  # nothing tells missing, folder, not a zip or outside apart
    assert len(client.app.state.games) == 1


def test_the_default_folders_are_the_champions_and_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    shutil.copy(CHAMPION, tmp_path / "runs" / "mine.npz")
    shutil.copy(CHAMPION, tmp_path / "elsewhere.npz")
    client = TestClient(create_app())
    for path in (CHAMPION, "runs/mine.npz"):
        assert client.post("/api/play", json={"opponent": f"league:path={path}"}).status_code == 200
    _refused(client.post("/api/play", json={"opponent": "league:path=elsewhere.npz"}), 400, PATH_REFUSED)


def test_serve_takes_only_folders_for_policies(tmp_path):
    with pytest.raises(ValueError, match=r"--policies .*: not a folder"):
        server.served_agents([tmp_path / "missing"])
    assert server.served_agents([tmp_path]).folders == (tmp_path.resolve(),)


@pytest.mark.parametrize(
    "spec, words",
    [
        ("search:simulations=1001", ["simulations", "from 1 to 1000"]),
        ("search:belief=maybe", ["belief", "one of on, off, soft"]),
        ("counter:samples=100000", ["samples", "from 1 to 256"]),
        ("planner:sacrifice_rate=nan", ["sacrifice_rate"]),
        ("champion:deterministic=maybe", ["deterministic", "true or false"]),
        ("random:seed=1", ["no parameter 'seed'"]),
        ("human", ["unknown agent 'human'"]),
    ],
)
def test_parameters_are_checked_against_the_allow_list(spec, words):
    client = TestClient(create_app())
    _refused(client.post("/api/watch", json={"agents": [spec, "random"]}), 400, "agents[0]", *words)
    assert len(client.app.state.games) == 0


# ---------------------------------------------------------------------------------------
# defect 3: a server open to the network answers only the names it was given
# ---------------------------------------------------------------------------------------
class _Dummy:
    """Stands for uvicorn's server: records the app instead of serving it."""

    def __init__(self, app) -> None:
        SERVED_APPS.append(app)

    def run(self, sockets) -> None:
        pass


SERVED_APPS: list = []


def test_a_network_address_needs_allowed_hosts_and_answers_only_them(monkeypatch):
    monkeypatch.setattr(server, "_server", _Dummy)
    SERVED_APPS.clear()
    with pytest.raises(ValueError, match="--allowed-host"):
        server.serve("0.0.0.0", 0, echo=lambda line: None)
    assert not SERVED_APPS  # refused before serving
    server.serve("0.0.0.0", 0, allowed_hosts=["Tacocat.LAN"], echo=lambda line: None)
    client = TestClient(SERVED_APPS[0])
    _refused(client.get("/api/options", headers={"host": "evil.example"}), 400, "evil.example")
    _refused(client.get("/", headers={"host": "evil.example:8000"}), 400)
    assert client.get("/api/options", headers={"host": "tacocat.lan:8000"}).status_code == 200
    assert client.get("/api/options", headers={"host": "localhost:8000"}).status_code == 200


def test_tacocat_serve_on_the_network_without_allowed_hosts_is_one_error_line(monkeypatch):
    from typer.testing import CliRunner

    from tacocat.cli.app import app

    monkeypatch.setattr(server, "_server", _Dummy)
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "0"])
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 1 and len(errors) == 1 and "--allowed-host" in errors[0], result.output
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "0", "--allowed-host", "*.lan"])
    assert result.exit_code == 1 and "not a host name" in result.output, result.output
    result = CliRunner().invoke(app, ["serve", "--host", "0.0.0.0", "--port", "0", "--allowed-host", "tacocat.lan"])
    assert result.exit_code == 0 and "tacocat.lan" in result.output, result.output


@pytest.mark.parametrize("text", ["*.lan", "http://x.lan", "x.lan:80", "", "a b", "x" * 300])
def test_allowed_hosts_are_host_names_or_addresses(text):
    with pytest.raises(ValueError, match="not a host name"):
        server.host_name(text)


def test_allowed_host_addresses_are_written_as_host_headers_write_them():
    assert [server.host_name(t) for t in ("192.168.1.5", "::1", "[fe80::1]", "Tacocat.Lan")] == [
        "192.168.1.5",
        "[::1]",
        "[fe80::1]",
        "tacocat.lan",
    ]


# ---------------------------------------------------------------------------------------
# defect 6: text that is not valid Unicode is refused, and nothing is kept
# ---------------------------------------------------------------------------------------
def _line(**changes) -> str:
    record = play_game([make_agent("random"), make_agent("random")], seed=1, config=preset_config("tiny"))
    return json.dumps({**game_to_dict(record, ["random", "random"], preset_config("tiny")), **changes})


@pytest.mark.parametrize("text", [_line(agents=["\ud800", "random"]), _line(note="\udfff"), _line(rules={"\ud800": 1})])
def test_a_game_file_with_a_lone_surrogate_is_refused_and_not_kept(text):
    client = TestClient(create_app(), raise_server_exceptions=False)
    _refused(client.post("/api/replay", json={"text": text}), 400, "not valid Unicode")
    assert len(client.app.state.games) == 0


@pytest.mark.parametrize("body", [b'{"opponent": "random\\ud800"}', b'{"opponent": "random", "rules": {"\\udc00": 1}}'])
def test_a_request_with_a_lone_surrogate_is_refused(body):
    client = TestClient(create_app(), raise_server_exceptions=False)
    response = client.post("/api/play", content=body, headers={"content-type": "application/json"})
    _refused(response, 400, "not valid Unicode")
    assert len(client.app.state.games) == 0


# ---------------------------------------------------------------------------------------
# defects 8 and 9: every answer's headers; what the page says of the seed
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path", ["/", "/static/index.html", "/static/app.js", "/static/app.css", "/api/options", "/api/nothing"]
)
def test_every_answer_carries_the_security_headers(path):
    response = TestClient(create_app()).get(path)
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value, (path, name)


def test_the_page_says_that_a_seed_fixes_the_deal():
    page = TestClient(create_app()).get("/").text
    form = page.split('<form id="play-form"')[1].split("</form>")[0]
    assert 'aria-describedby="seed-note"' in form and 'id="seed-note"' in form
    note = form.split('id="seed-note">')[1].split("</p>")[0]
    assert "fixes the deal" in note and "every card" in note and "file holds it" in note
