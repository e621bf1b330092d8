"""`cogwm serve`: the local app on the scripted fake, through Starlette's test client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from cogwm import tasks
from cogwm.arena.run_data import states_of
from cogwm.arena.scoring import conversation_metrics
from cogwm.report import load_run
from cogwm.store import RunStore
from cogwm.web.server import ServerConfig, create_app
from helpers_arena import FAKE_NAME
from helpers_web import make_run

BASE = "http://127.0.0.1:8765"


pytestmark = pytest.mark.usefixtures("fake_arena_models")


@pytest.fixture()
def app_config(tmp_path: Path) -> ServerConfig:
    run = make_run(tmp_path / "run.sqlite")
    play = tmp_path / "play.sqlite"
    return ServerConfig(stores=[run, play], models=[f"fake:{FAKE_NAME}"], play_store=play)


@pytest.fixture()
def client(app_config: ServerConfig) -> Iterator[TestClient]:
    with TestClient(create_app(app_config), base_url=BASE) as c:
        yield c


def token(client: TestClient) -> str:
    return client.app.state.cogwm.token  # type: ignore[attr-defined,no-any-return]


def post(client: TestClient, url: str, body: object) -> dict[str, object]:
    response = client.post(url, json=body, headers={"X-CSRF-Token": token(client)})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_pages_and_headers(client: TestClient) -> None:
    for url in ("/", "/play", "/runs/0", "/runs/0/live"):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "default-src 'none'" in response.headers["content-security-policy"]
        assert "https://" not in response.text and "http://" not in response.text.replace(
            "http://www.w3.org/2000/svg", ""
        )
    assert token(client) in client.get("/play").text


def test_foreign_host_and_missing_token_are_refused(
    client: TestClient, app_config: ServerConfig
) -> None:
    with TestClient(create_app(app_config), base_url="http://evil.example:8765") as other:
        assert other.get("/").status_code == 400
    body = {"task": "ESC", "scenario": "builtin:esc-01", "model": 0, "name": "x"}
    assert client.post("/api/play", json=body).status_code == 403
    wrong = client.post("/api/play", json=body, headers={"X-CSRF-Token": "guess"})
    assert wrong.status_code == 403
    cross = client.post(
        "/api/play",
        json=body,
        headers={"X-CSRF-Token": token(client), "Origin": "http://evil.example"},
    )
    assert cross.status_code == 403


def test_only_listed_models_stores_and_scenarios(client: TestClient) -> None:
    headers = {"X-CSRF-Token": token(client)}
    bad = [
        {"task": "ESC", "scenario": "builtin:esc-01", "model": 1, "name": "x"},
        {"task": "ESC", "scenario": "/etc/passwd", "model": 0, "name": "x"},
        {"task": "ESC", "scenario": "builtin:esc-01", "model": "http://evil/v1", "name": "x"},
        {"task": "DAILY", "scenario": "builtin:esc-01", "model": 0, "name": "x"},
        {"task": "ESC", "scenario": "builtin:esc-01", "model": 0, "name": "<b>"},
    ]
    for body in bad:
        response = client.post("/api/play", json=body, headers=headers)
        assert response.status_code == 400, body
        assert response.json()["error"]
    assert client.get("/runs/7").status_code == 400
    assert (
        client.post("/api/play/nope/turn", json={"text": "hi"}, headers=headers).status_code == 400
    )


def test_play_three_turns_saved_as_a_human_agent(
    client: TestClient, app_config: ServerConfig
) -> None:
    body = {"task": "ESC", "scenario": "builtin:esc-01", "model": 0, "name": "tester"}
    view = post(client, "/api/play", body)
    sid, opening = view["id"], view["turns"]
    assert isinstance(opening, list) and opening[-1][4] is not None  # the initial state
    series_lengths = []
    for n in range(3):
        view = post(client, f"/api/play/{sid}/turn", {"text": f"How are you holding up? {n}"})
        turns = view["turns"]
        assert isinstance(turns, list)
        agent, user = turns[-2], turns[-1]
        assert agent[0] == "agent" and agent[3] == f"How are you holding up? {n}"
        assert user[0] == "user" and user[4]["e"][0] and "s" in user[4]
        series_lengths.append(len(view["s"]))  # type: ignore[arg-type]
    assert series_lengths == [2, 3, 4]
    ended = post(client, f"/api/play/{sid}/end", {})
    assert ended["finished"] == "natural_end"
    refused = client.post(
        f"/api/play/{sid}/turn", json={"text": "more"}, headers={"X-CSRF-Token": token(client)}
    )
    assert refused.status_code == 400 and "ended" in refused.json()["error"]
    with RunStore(app_config.play_store, create=False) as store:
        (row,) = store.conversations()
        assert row.agent == "human:tester" and row.status == "finished"
        assert len(store.turns(row.id)) == len(opening) + 6
        data = load_run(store)
    assert [c.arm for c in data.conversations] == ["human:tester/no_cot"]
    assert data.conversations[0].metrics["n"] == 4


def test_a_played_dialogue_is_scored_when_it_ends(
    client: TestClient, app_config: ServerConfig
) -> None:
    body = {"task": "ESC", "scenario": "builtin:esc-01", "model": 0, "name": "tester"}
    sid = post(client, "/api/play", body)["id"]
    for n in range(2):
        post(client, f"/api/play/{sid}/turn", {"text": f"What would help? {n}"})
    post(client, f"/api/play/{sid}/end", {})
    with RunStore(app_config.play_store, create=False) as store:
        (row,) = store.conversations()
        expected = conversation_metrics(states_of(store.turns(row.id)), tasks.get("ESC"))
        assert store.metrics()[row.id] == expected and expected["n"] == 3


def test_live_progress(client: TestClient, app_config: ServerConfig) -> None:
    progress = client.get("/api/runs/0/progress").json()
    with RunStore(app_config.stores[0], create=False) as store:
        rows = store.conversations()
    assert progress["counts"] == {"finished": len(rows) - 1, "failed": 1}
    # Both kinds of failure, as the report counts them: the agent that broke its format too.
    assert sorted((f["kind"], f["error"]) for f in progress["failures"]) == [
        ("agent", "agent_failure"),
        ("infrastructure", "HTTP 500 (scripted)"),
    ]
    assert progress["agent_failures"] == 1
    assert {r["arm"] for r in progress["leaderboard"]} == {
        "warm/no_cot",
        "warm/cot",
        "cold/no_cot",
        "solver/no_cot",
    }
    # The leaderboard so far names its simulated user, which has no validity card.
    assert progress["simulator"].startswith("Simulated user: fake:")
    assert "not validated" in progress["simulator"]


def test_live_shows_a_run_in_progress(client: TestClient, app_config: ServerConfig) -> None:
    from cogwm.store import UnitRow

    with RunStore(app_config.stores[0], create=False) as store:
        run = store.run()
        assert run is not None
        unit = UnitRow("extra", "ESC", "late", "no_cot", "builtin:esc-02", "builtin", "m", "m", 1)
        conversation = store.start_conversation(run.id, unit)
        store.add_turn(conversation, idx=0, round=0, role="user", phase="cold_start", text="Hi.")
    first = client.get("/api/runs/0/progress").json()
    assert first["counts"]["running"] == 1
    (running,) = first["running"]
    assert running["arm"] == "late/no_cot" and running["turns"] == 1 and running["last"] == "Hi."
    # A turn committed by the running process shows at the next poll.
    with RunStore(app_config.stores[0], create=False) as store:
        store.add_turn(conversation, idx=1, round=1, role="agent", phase="cold_start", text="Hello")
    (running,) = client.get("/api/runs/0/progress").json()["running"]
    assert running["turns"] == 2 and running["last"] == "Hello"


def test_play_a_corpus_scenario(tmp_path: Path, real_data_dir: Path) -> None:
    from cogwm.arena.scenarios import corpus_scenarios
    from cogwm.tasks import get

    scenarios = corpus_scenarios(get("ESC"), real_data_dir)[:3]
    play = tmp_path / "play.sqlite"
    config = ServerConfig(
        stores=[play],
        models=[f"fake:{FAKE_NAME}"],
        play_store=play,
        scenarios={"ESC": scenarios},
    )
    with TestClient(create_app(config), base_url=BASE) as c:
        assert scenarios[0].id in c.get("/play").text
        body = {"task": "ESC", "scenario": scenarios[0].id, "model": 0, "name": "corpus"}
        view = post(c, "/api/play", body)
        opening = [t[3] for t in view["turns"]]  # type: ignore[union-attr]
        assert opening == [t.text for t in scenarios[0].opening]
        post(c, f"/api/play/{view['id']}/turn", {"text": "I hear you."})
    with RunStore(play, create=False) as store:
        (row,) = store.conversations()
    assert row.scenario == scenarios[0].id and row.scenario_source == scenarios[0].source


def test_report_is_made_again_when_the_store_changes(
    client: TestClient, app_config: ServerConfig
) -> None:
    first = client.get("/runs/0").text
    assert client.get("/runs/0").text == first
    with RunStore(app_config.stores[0], create=False) as store:
        store.db.execute("UPDATE runs SET name = 'renamed'")
    assert "renamed" in client.get("/runs/0").text


def test_serve_cli_refuses_a_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers_web import cogwm

    assert cogwm("serve", "--db", str(tmp_path / "missing.sqlite")) == 2
    assert "does not exist" in capsys.readouterr().err
