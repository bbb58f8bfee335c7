"""The dashboard's parts, without a browser: who it lets in (loopback Host and Origin, the token
then its cookie), the headers every answer carries, where it keeps its port and token, its pages
over an empty data directory, the numbers a query may give, stored text's bidirectional controls
written out while the ids a page sends back stay as they are, and the vendored scripts it
ships."""

import asyncio
import hashlib
import json
import os
import stat
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode

import msgspec
import pytest

from ingest.spool import spooled
from reverie.dashboard.app import build
from reverie.dashboard.guard import CSP, cookie_name, cookie_value, guarded
from reverie.dashboard.server import url, wanted
from reverie.loopback import Endpoint, keep, kept
from reverie.testing import Folding, event_at, make_event
from schemas import kinds
from schemas.events import decode_event
from schemas.memory import ObservationFormed, PreferenceCrystallized
from schemas.observed import PromptSubmitted, SessionStarted
from schemas.settings import Settings

VENDOR = Path(__file__).resolve().parents[1] / "reverie" / "dashboard" / "static" / "vendor"
TOKEN = "t0ken-of-the-test"
PORT = 8123
HOST = f"127.0.0.1:{PORT}"


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body


def ask(
    app: Any, path: str, method: str = "GET", headers: dict[str, str] | None = None, body: bytes = b""
) -> Answer:
    """What the ASGI `app` answers to one request, as uvicorn would hand it over."""
    sent = {"host": HOST, **(headers or {})}
    path, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in sent.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", PORT),
    }
    messages: list[dict[str, Any]] = []
    incoming = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in messages if m["type"] == "http.response.start")
    headers_out = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return Answer(start["status"], headers_out, b"".join(m.get("body", b"") for m in messages[1:]))


@pytest.fixture
def app(settings: Settings) -> Any:
    return guarded(build(settings), TOKEN, PORT)


COOKIE = {"cookie": f"{cookie_name(PORT)}={cookie_value(TOKEN)}"}


def test_the_token_in_the_url_is_traded_for_a_cookie_and_leaves_the_address(app: Any) -> None:
    first = ask(app, f"/graph?project=%2Fsrc%2Fapp&token={TOKEN}")
    assert first.status == 303
    assert first.headers["location"] == "/graph?project=%2Fsrc%2Fapp"  # the token gone, the rest kept
    held = cookie_value(TOKEN)
    assert TOKEN not in held  # every port of 127.0.0.1 is sent the cookie: it must not carry the token
    assert first.headers["set-cookie"] == f"{cookie_name(PORT)}={held}; Path=/; HttpOnly; SameSite=Strict"
    page = ask(app, "/graph?project=%2Fsrc%2Fapp", headers=COOKIE)
    assert page.status == 200 and b"Knowledge graph" in page.body


@pytest.mark.parametrize(
    "headers",
    [
        {},  # neither token nor cookie
        {"cookie": f"{cookie_name(PORT)}=wrong"},
        {"cookie": f"{cookie_name(PORT + 1)}={cookie_value(TOKEN)}"},  # another port's dashboard's
        {"cookie": f"{cookie_name(PORT)}={cookie_value(TOKEN)}; {cookie_name(PORT)}=other"},
        {"cookie": f"{cookie_name(PORT)}={TOKEN}"},  # the token itself is not the cookie's value
    ],
)
def test_without_the_token_nothing_is_shown(app: Any, headers: dict[str, str]) -> None:
    for path in ("/", "/api/graph", "/static/app.js", "/api/status"):
        answer = ask(app, path, headers=headers)
        assert answer.status == 401, path
        assert b"reverie dashboard" in answer.body  # where to find the URL
    assert ask(app, "/?token=wrong").status == 401
    assert ask(app, f"/?token=wrong&token={TOKEN}").status == 401


@pytest.mark.parametrize(
    "headers",
    [
        {"host": "evil.example"},  # a name rebound to 127.0.0.1
        {"host": "evil.example:8123"},
        {"origin": "http://evil.example"},  # a page of another site
        {"origin": "null"},
        {"sec-fetch-site": "cross-site"},
        # another server on loopback: the same site to a browser, which sends it the cookie
        {"origin": "http://127.0.0.1:3000"},
        {"origin": f"http://localhost:{PORT}"},  # another host name than the request's
        {"sec-fetch-site": "same-site"},
    ],
)
def test_other_hosts_and_origins_are_refused_even_with_the_token(app: Any, headers: dict[str, str]) -> None:
    assert ask(app, "/", headers={**COOKIE, **headers}).status == 403
    assert ask(app, f"/?token={TOKEN}", headers=headers).status == 403
    forget = ask(
        app,
        "/memories/forget",
        method="POST",
        headers={**COOKIE, **headers, "content-type": "application/x-www-form-urlencoded"},
        body=b"memory_id=fact%3Ax&reason=r",
    )
    assert forget.status == 403


def test_loopback_names_and_its_own_origin_are_let_in(app: Any) -> None:
    for headers in (
        {"host": f"localhost:{PORT}"},
        {"origin": f"http://127.0.0.1:{PORT}"},
        {"sec-fetch-site": "same-origin"},
    ):
        assert ask(app, "/", headers={**COOKIE, **headers}).status == 200, headers


def test_every_answer_carries_a_strict_policy_and_is_not_cached(app: Any) -> None:
    for path, headers in (("/", COOKIE), ("/api/activity", COOKIE), ("/static/app.js", COOKIE), ("/", {})):
        answer = ask(app, path, headers=headers)
        assert answer.headers["content-security-policy"] == CSP, path
        assert "script-src 'self'" in CSP and "unsafe" not in CSP and "default-src 'none'" in CSP
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["referrer-policy"] == "same-origin"  # no other site sees the URL
        assert answer.headers["cache-control"] == "no-store"


def test_an_empty_data_directory_shows_every_page_empty(app: Any) -> None:
    for path in ("/", "/graph", "/prompts", "/sessions", "/memory", "/memory?memory=x", "/learned"):
        answer = ask(app, path, headers=COOKIE)
        assert answer.status == 200, path
        assert answer.headers["content-type"].startswith("text/html")
        assert b"<script>" not in answer.body and b" style=" not in answer.body  # nothing inline
    assert json.loads(ask(app, "/api/graph", headers=COOKIE).body) == {"nodes": [], "edges": []}
    assert ask(app, "/sessions/nope", headers=COOKIE).status == 404
    assert ask(app, "/api/entities/nope", headers=COOKIE).status == 404
    assert ask(app, "/api/memories/nope/strength", headers=COOKIE).status == 404
    assert ask(app, "/why/nope", headers=COOKIE).status == 404
    assert json.loads(ask(app, "/api/activity", headers=COOKIE).body) == {
        "day": [],
        "prompts": [],
        "tools": [],
        "facts": [],
    }
    assert ask(app, "/api/graph?at=yesterday", headers=COOKIE).status == 400


@pytest.mark.parametrize("back", ["//evil.example/", "/\\evil.example/", "https://evil.example/"])
def test_a_form_cannot_send_the_user_elsewhere(app: Any, back: str) -> None:
    answer = ask(
        app,
        f"/memories/remember?project=%2Fsrc%2Fapp&{urlencode({'back': back})}",
        method="POST",
        headers={**COOKIE, "content-type": "application/x-www-form-urlencoded"},
        body=b"text=",
    )
    assert answer.status == 303 and answer.headers["location"].startswith("/?")
    assert "error=" in answer.headers["location"]  # nothing to remember: said, not recorded


def test_a_form_sends_the_user_back_saying_what_happened_once(app: Any) -> None:
    back = "/memory?project=%2Fsrc%2Fapp&said=earlier"
    answer = ask(
        app,
        f"/facts/correct?{urlencode({'back': back})}",
        method="POST",
        headers={**COOKIE, "content-type": "application/x-www-form-urlencoded"},
        body=b"fact_id=fact%3Anone&text=right",
    )
    assert answer.status == 303
    path, _, query = answer.headers["location"].partition("?")
    told = dict(parse_qsl(query))
    assert path == "/memory" and told["project"] == "/src/app" and "said" not in told
    assert "no fact holds now" in told["error"]


def test_the_port_and_token_are_kept_private_and_the_url_names_the_project(settings: Settings) -> None:
    first = wanted(settings, None, {})
    assert first.port == 0 and len(first.token) >= 40 and first.host == "127.0.0.1"
    keep(settings.dashboard_file, Endpoint(40999, first.token))
    assert stat.S_IMODE(os.stat(settings.dashboard_file).st_mode) == 0o600
    assert wanted(settings, None, {}) == Endpoint(40999, first.token)  # the same across restarts
    assert wanted(settings, 8080, {}).port == 8080
    assert kept(settings.dashboard_file) == Endpoint(40999, first.token)
    assert url(Endpoint(40999, "a b"), "/src/app") == "http://127.0.0.1:40999/?token=a+b&project=%2Fsrc%2Fapp"
    listen = {"REVERIE_DASHBOARD_LISTEN": "0.0.0.0:7379", "REVERIE_DASHBOARD_TOKEN": "given"}
    assert wanted(settings, None, listen) == Endpoint(7379, "given", "0.0.0.0")
    with pytest.raises(SystemExit, match="REVERIE_DASHBOARD_TOKEN"):
        wanted(settings, None, {"REVERIE_DASHBOARD_LISTEN": "0.0.0.0:7379"})


def test_the_vendored_scripts_are_the_registrys_with_their_licences() -> None:
    manifest = json.loads((VENDOR / "MANIFEST.json").read_text())
    listed = set()
    for entry in manifest["files"]:
        data = (VENDOR / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
        licence = (VENDOR / entry["licence_file"]).read_text()
        assert entry["licence"] == "MIT" and "Permission is hereby granted" in licence
        listed |= {entry["file"], entry["licence_file"]}
    assert {p.name for p in VENDOR.iterdir()} == listed | {"MANIFEST.json"}


RULE = "Use pnpm, never npm"


@pytest.mark.parametrize(
    ("kind", "made", "path", "form", "said", "chosen"),
    [
        (
            kinds.PREFERENCE_CRYSTALLIZED,
            PreferenceCrystallized(preference_id="p1", statement=RULE, strength=0.6, evidence=3),
            "/preferences/pin", b"preference_id=p1&pinned=yes", "pinned: p1",
            (kinds.PREFERENCE_PINNED, {"preference_id": "p1", "pinned": True}),
        ),
        (
            kinds.OBSERVATION_FORMED,
            ObservationFormed(observation_id="o1", statement=RULE, confidence=0.95),
            "/observations/promote", b"observation_id=o1&promoted=yes", "chosen for CLAUDE.md",
            (kinds.OBSERVATION_PROMOTED, {"observation_id": "o1", "promoted": True}),
        ),
    ],
)  # fmt: skip
def test_pinning_and_promoting_are_events_with_source_dashboard(
    app: Any,
    settings: Settings,
    folding: Folding,
    kind: str,
    made: msgspec.Struct,
    path: str,
    form: bytes,
    said: str,
    chosen: tuple[str, dict[str, Any]],
) -> None:
    at = datetime(2026, 11, 1, tzinfo=UTC)
    folding.fold(
        [
            make_event(
                kind, made, id=f"01M9{1:022d}", ts=at, recorded_at=at, project="/app", source="worker",
                caused_by=("01CAUSE",),
            )
        ]
    )  # fmt: skip
    learned = ask(app, "/learned?project=%2Fapp", headers=COOKIE)
    assert RULE.encode() in learned.body
    answer = ask(
        app,
        f"{path}?{urlencode({'project': '/app', 'back': '/learned?project=/app'})}",
        method="POST",
        headers={**COOKIE, "content-type": "application/x-www-form-urlencoded"},
        body=form,
    )
    assert answer.status == 303
    assert said in dict(parse_qsl(answer.headers["location"].partition("?")[2]))["said"]
    [spooled_at] = spooled(settings.spool_dir, 0)  # no stack runs: the event waits in the spool
    event = decode_event(Path(spooled_at).read_bytes())
    assert (event.kind, event.source, event.project) == (chosen[0], "dashboard", "/app")
    assert msgspec.json.decode(event.payload) == chosen[1]
    folding.fold([event])  # and the page shows it so
    assert b"pinned" in ask(app, "/learned?project=%2Fapp", headers=COOKIE).body


@pytest.mark.parametrize(
    "given",
    [
        "99999999999999999999999",  # past what the store's OFFSET takes
        "1000000001",
        "9" * 5000,  # more digits than int() reads
        "-1",
        "1.5",
        "1e3",
        "+5",
        " 5",
        "0x10",
        "1_000",
        "",
        "\u0661\u0662",  # Arabic-Indic digits, which int() reads
        "\uff11",  # a fullwidth digit
        "\u00b2",  # a superscript two
        "five",
    ],
)
def test_an_offset_out_of_range_or_not_a_number_is_refused_saying_so(app: Any, given: str) -> None:
    for path in ("/sessions", "/prompts"):
        answer = ask(app, f"{path}?{urlencode({'offset': given})}", headers=COOKIE)
        assert answer.status == 400, (path, given)
        assert b"offset: one whole number from 0 to 1,000,000,000" in answer.body
        assert b"Bad request" in answer.body and answer.headers["content-type"].startswith("text/html")
    twice = ask(app, "/sessions?offset=1&offset=2", headers=COOKIE)
    assert twice.status == 400 and b"&#39;1&#39;, &#39;2&#39;" in twice.body


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        ("nodes=0", "nodes"),
        ("nodes=5001", "nodes"),
        ("nodes=-3", "nodes"),
        ("nodes=1e2", "nodes"),
        ("nodes=%D9%A1", "nodes"),
        ("at=nan", "at"),
        ("at=inf", "at"),
        ("at=1e400", "at"),
        ("at=99999999999999999999", "at"),  # after the year 9999
        ("at=1_0", "at"),
        ("at=%D9%A1%D9%A2", "at"),
        ("at=", "at"),
        ("at=1&at=2", "at"),
    ],
)
def test_the_graphs_numbers_out_of_range_or_not_numbers_are_refused_saying_so(
    app: Any, query: str, refused: str
) -> None:
    answer = ask(app, f"/api/graph?{query}", headers=COOKIE)
    assert answer.status == 400 and json.loads(answer.body)["error"].startswith(f"{refused}: one "), query
    if refused == "nodes":
        assert ask(app, f"/graph?{query}", headers=COOKIE).status == 400


@pytest.mark.parametrize(
    "path",
    ["/sessions?offset=0", "/prompts?offset=1000000000", "/sessions?offset=007", "/graph?nodes=1",
     "/api/graph?nodes=5000", "/api/graph?at=0", "/api/graph?at=-86400", "/api/graph?at=1700000000.5"],
)  # fmt: skip
def test_a_number_in_range_is_taken(app: Any, path: str) -> None:
    assert ask(app, path, headers=COOKIE).status == 200


class Parsed(HTMLParser):
    """A page's text (what it shows) and its attributes' values, apart."""

    def __init__(self, page: bytes) -> None:
        super().__init__()
        self.text: list[str] = []
        self.values: dict[str, list[str]] = {}
        self.feed(page.decode())

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            self.values.setdefault(name, []).append(value or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def test_pages_write_bidirectional_controls_out_and_send_ids_back_as_they_are(
    app: Any, folding: Folding
) -> None:
    project, session = "/src/\u202eapp", "odd\u2067id"
    at = datetime(2026, 11, 1, tzinfo=UTC)
    asked = PromptSubmitted(prompt=f"deploy {BIDI_CONTROLS} now")
    folding.fold(
        [
            event_at(kinds.SESSION_STARTED, SessionStarted(), at, project=project, session_id=session),
            event_at(kinds.PROMPT_SUBMITTED, asked, at, project=project, session_id=session),
        ]
    )
    scoped = urlencode({"project": project})
    for path in (f"/sessions?{scoped}", f"/prompts?{scoped}", f"/sessions/{session}", "/"):
        answer = ask(app, path, headers=COOKIE)
        assert answer.status == 200, path
        page = Parsed(answer.body)
        shown = "".join(page.text)
        assert not any(c in shown for c in BIDI_CONTROLS), path  # written out, each
        assert "/src/[U+202E]app" in shown, path  # the project switch names it so
        assert project in page.values["value"], path  # and sends it back as it is
        assert page.values["data-project"] == [project if "project" in path else ""]
    listed = Parsed(ask(app, f"/sessions?{scoped}", headers=COOKIE).body)
    [link] = [href for href in listed.values["href"] if href.startswith("/sessions/")]
    assert link.startswith("/sessions/odd%E2%81%A7id?")  # the id percent-encoded, not written out
    opened = ask(app, unquote(link), headers=COOKIE)  # as uvicorn hands its path over
    assert opened.status == 200 and "odd[U+2067]id" in "".join(Parsed(opened.body).text)
    prompts = "".join(Parsed(ask(app, f"/prompts?{scoped}", headers=COOKIE).body).text)
    assert "deploy " + "".join(f"[U+{ord(c):04X}]" for c in BIDI_CONTROLS) + " now" in prompts


def test_what_waits_for_the_users_yes_is_listed_and_a_yes_is_an_event_that_lets_it_in(
    app: Any, settings: Settings, folding: Folding
) -> None:
    at = datetime(2026, 11, 1, tzinfo=UTC)
    recurring = PreferenceCrystallized(preference_id="p2", statement=RULE, strength=5 / 7, evidence=9)
    folding.fold(
        [
            make_event(
                kinds.PREFERENCE_CRYSTALLIZED, recurring, id=f"01M9{2:022d}", ts=at, recorded_at=at,
                project="/app", source="worker", caused_by=("01CAUSE",),
            )
        ]
    )  # fmt: skip
    learned = ask(app, "/learned?project=%2Fapp", headers=COOKIE).body.decode()
    waiting = learned.split('id="waiting"')[1].split("</table>")[0]
    assert RULE in waiting and "stated or recurring in prompts" in waiting
    answer = ask(
        app,
        f"/memories/approve?{urlencode({'project': '/app', 'back': '/learned?project=/app'})}",
        method="POST",
        headers={**COOKIE, "content-type": "application/x-www-form-urlencoded"},
        body=b"memory_id=p2&approved=yes",
    )
    assert answer.status == 303
    assert "approved for CLAUDE.md" in dict(parse_qsl(answer.headers["location"].partition("?")[2]))["said"]
    [spooled_at] = spooled(settings.spool_dir, 0)
    event = decode_event(Path(spooled_at).read_bytes())
    assert (event.kind, event.source, msgspec.json.decode(event.payload)) == (
        kinds.MEMORY_APPROVED, "dashboard", {"memory_id": "p2", "approved": True},
    )  # fmt: skip
    folding.fold([event])
    learned = ask(app, "/learned?project=%2Fapp", headers=COOKIE).body.decode()
    assert "none waits" in learned.split('id="waiting"')[1].split("</table>")[0]
    refused = ask(
        app,
        f"/memories/approve?{urlencode({'project': '/app', 'back': '/learned?project=/app'})}",
        method="POST",
        headers={**COOKIE, "content-type": "application/x-www-form-urlencoded"},
        body=b"memory_id=no-such&approved=yes",
    )
    assert "no memory has the id" in dict(parse_qsl(refused.headers["location"].partition("?")[2]))["error"]
