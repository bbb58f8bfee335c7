"""The dashboard's pages, the JSON their scripts fetch, and the changes a user makes.

Pages are read from the projections (reads.py) and rendered here; every page and every JSON
answer is scoped to the project its URL names (`?project=`), every project without one. A
change (forget, remember, correct a fact, pin a preference, promote an observation) is recorded by
reverie/remembering.py, as `reverie forget` records a forgetting, with source `dashboard`; the
page then says which event and where it went (the stream, or the spool while Redis is away),
and the projector folds it like any other.
"""

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import msgspec
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from reverie import remembering
from reverie.dashboard import reads
from schemas.kinds import SOURCE_DASHBOARD
from schemas.recall import Preview
from schemas.settings import Settings
from schemas.text.fence import bidi_shown

HERE = Path(__file__).parent
PAGES = (
    ("overview", "/", "Overview"),
    ("graph", "/graph", "Knowledge graph"),
    ("prompts", "/prompts", "Prompts"),
    ("sessions", "/sessions", "Sessions"),
    ("memory", "/memory", "Memory"),
    ("learned", "/learned", "Learned"),
)

Handler = Callable[[Request], Awaitable[Response]]
# records the user's yes or no about an id (reverie/remembering.py: pin, promote, approve)
Chooser = Callable[..., remembering.Recorded]

_PREVIEW_WAIT_S = 10.0  # for the recall service's answer to the playground
_MOST_OFFSET = 1_000_000_000  # rows a list may skip: far past any data directory's
_SECTIONS = {"session": "sessions", "why": "graph"}  # a page under another's item in the menu


class BadQuery(Exception):
    """A query parameter out of its range, or not what it must be: 400, saying which and why."""


class Exact(str):
    """A value a page sends back as it is (an id or a project in a form's field or a data
    attribute), which its bidirectional controls, if any, must stay in: the one text `_shown`
    leaves alone. A template marks it so: `{{ value | exact }}`."""


class Json(JSONResponse):
    """JSON as msgspec writes it: datetimes as ISO 8601, Structs as objects."""

    def render(self, content: Any) -> bytes:
        return msgspec.json.encode(content)


def build(settings: Settings) -> Starlette:
    """The dashboard's app over `settings`' data directory (not yet guarded: see guard.py)."""
    db = reads.Projections(settings)
    templates = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        finalize=_shown,
    )
    templates.filters["exact"] = Exact
    templates.filters["when"] = _when
    templates.filters["short"] = _short

    async def page(request: Request, name: str, status: int = 200, **context: Any) -> Response:
        project = _project(request)
        known = await run_in_threadpool(reads.projects, db)
        section = _SECTIONS.get(name, name)
        html = templates.get_template(f"{name}.html").render(
            pages=PAGES,
            current=section,
            title=context.pop("title", None) or next((t for n, _, t in PAGES if n == section), "Not found"),
            project=project,
            projects=known,
            path=request.url.path,
            here=str(request.url.path) + (f"?{request.url.query}" if request.url.query else ""),
            said=request.query_params.get("said"),
            error=request.query_params.get("error"),
            scoped=lambda path, **more: _scoped(path, project, **more),
            **context,
        )
        return HTMLResponse(html, status_code=status)

    async def overview(request: Request) -> Response:
        project = _project(request)
        counts = await run_in_threadpool(reads.overview, db, project)
        last = await run_in_threadpool(reads.sessions, db, project, 0, 10)
        return await page(request, "overview", counts=counts, sessions=last)

    async def graph(request: Request) -> Response:
        span = await run_in_threadpool(reads.time_span, db, _project(request))
        return await page(request, "graph", span=span, nodes=_nodes(request))

    async def sessions(request: Request) -> Response:
        offset = _offset(request)
        rows = await run_in_threadpool(reads.sessions, db, _project(request), offset)
        return await page(
            request, "sessions", sessions=rows, offset=offset, page_size=reads.PAGE, rows_shown=len(rows)
        )

    async def session(request: Request) -> Response:
        found = await run_in_threadpool(reads.session, db, request.path_params["session_id"])
        if found is None:
            return await page(
                request, "missing", 404, what=f"no session {request.path_params['session_id']!r}"
            )
        return await page(request, "session", session=found, title=f"Session {found['session_id'][:8]}")

    async def prompts(request: Request) -> Response:
        offset = _offset(request)
        rows = await run_in_threadpool(reads.prompts, db, _project(request), offset)
        tried = request.query_params.get("try", "").strip()
        preview = await run_in_threadpool(_preview, settings, tried, _project(request)) if tried else None
        return await page(
            request,
            "prompts",
            prompts=rows,
            offset=offset,
            page_size=reads.PAGE,
            rows_shown=len(rows),
            tried=tried,
            preview=preview,
        )

    async def memory(request: Request) -> Response:
        project = _project(request)
        shown = request.query_params.get("memory", "").strip()
        tiers = await run_in_threadpool(reads.tiers, db, project)
        health = await run_in_threadpool(reads.health, db)
        flows = await run_in_threadpool(reads.promotions, db, project)
        gone = await run_in_threadpool(reads.forgotten, db, project)
        return await page(
            request, "memory", tiers=tiers, health=health, flows=flows, forgotten=gone, shown=shown
        )

    async def learned(request: Request) -> Response:
        return await page(request, "learned", **await run_in_threadpool(reads.learned, db, _project(request)))

    async def activity(request: Request) -> Response:
        return Json(await run_in_threadpool(reads.activity, db, _project(request)))

    async def graph_json(request: Request) -> Response:
        when = _moment(request)
        around = request.query_params.get("around") or None
        known_now = request.query_params.get("known") == "now"
        project = _project(request)
        nodes = _nodes(request)
        return Json(await run_in_threadpool(lambda: reads.graph(db, project, when, around, known_now, nodes)))

    async def entity_json(request: Request) -> Response:
        found = await run_in_threadpool(reads.entity, db, request.path_params["entity_id"], _project(request))
        if found is None:
            return Json({"error": "no such entity"}, status_code=404)
        return Json(found)

    async def entities_json(request: Request) -> Response:
        text = request.query_params.get("q", "").strip()
        return Json(await run_in_threadpool(reads.search_entities, db, text) if text else [])

    async def strength_json(request: Request) -> Response:
        memory_id = request.path_params["memory_id"]
        found = await run_in_threadpool(reads.strength, db, memory_id, datetime.now(UTC))
        if found is None:
            return Json({"error": f"no memory has the id {memory_id!r}"}, status_code=404)
        return Json(found)

    async def status_json(request: Request) -> Response:
        from reverie.stack import stack_state

        return Json(await run_in_threadpool(stack_state, settings))

    async def why_page(request: Request) -> Response:
        """Why memory holds an id (`reverie why`): a page, or with ?part=1 the part the graph's
        panel shows."""
        from reverie.explaining import CannotExplain, why

        try:
            found = await run_in_threadpool(
                why, settings, request.path_params["memory_id"], _project(request)
            )
        except CannotExplain as e:
            return await page(request, "missing", 404, title="Why", what=str(e))
        if request.query_params.get("part"):
            project = _project(request)
            html = templates.get_template("_why.html").render(
                why=found, scoped=lambda path, **more: _scoped(path, project, **more)
            )
            return HTMLResponse(html)
        return await page(request, "why", title=f"Why: {found.title[:40]}", why=found)

    async def forget(request: Request) -> Response:
        form = await request.form()
        memory_id = str(form.get("memory_id", "")).strip()
        reason = str(form.get("reason", "")).strip() or "forgotten from the dashboard"
        project = _project(request) or await run_in_threadpool(reads.origin, db, memory_id)
        try:
            done = await run_in_threadpool(
                lambda: remembering.forget(
                    settings, memory_id, reason, project=project or "", source=SOURCE_DASHBOARD
                )
            )
        except (ValueError, OSError) as e:
            return _back(request, error=str(e))
        return _back(
            request, said=f"forgotten: {memory_id} (event {done.event_id}, sent to the {done.went_to})"
        )

    async def correct(request: Request) -> Response:
        form = await request.form()
        wrong, text = str(form.get("fact_id", "")), str(form.get("text", ""))
        try:
            done = await run_in_threadpool(
                lambda: remembering.correct(settings, wrong, text, source=SOURCE_DASHBOARD)
            )
        except (ValueError, OSError) as e:
            return _back(request, error=str(e))
        return _back(
            request,
            said=f"corrected: {wrong} is superseded by {done.memory_id} (event {done.event_id}, "
            f"sent to the {done.went_to})",
        )

    def choosing(record: Chooser, field: str, flag: str, yes: str, no: str) -> Handler:
        """A form's handler that records the user's yes or no (`flag`) about the id in `field`."""

        async def choose(request: Request) -> Response:
            form = await request.form()
            chosen_id, chosen = str(form.get(field, "")), form.get(flag) == "yes"
            try:
                done = await run_in_threadpool(
                    lambda: record(settings, chosen_id, chosen, source=SOURCE_DASHBOARD)
                )
            except (ValueError, OSError) as e:
                return _back(request, error=str(e))
            said = f"{yes if chosen else no}: {chosen_id} (event {done.event_id}, sent to the {done.went_to})"
            return _back(request, said=said)

        return choose

    async def remember(request: Request) -> Response:
        form = await request.form()
        text = str(form.get("text", ""))
        project = _project(request)
        if project is None:
            return _back(request, error="pick a project first: a memory is remembered for one")
        try:
            done = await run_in_threadpool(
                lambda: remembering.remember(settings, text, project=project, source=SOURCE_DASHBOARD)
            )
        except (ValueError, OSError) as e:
            return _back(request, error=str(e))
        return _back(request, said=f"remembered (event {done.event_id}, sent to the {done.went_to})")

    async def bad_query(request: Request, error: Exception) -> Response:
        if request.url.path.startswith("/api/"):
            return Json({"error": str(error)}, status_code=400)
        return await page(
            request, "missing", 400, title="Bad request", heading="Bad request", what=str(error)
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        db.close()

    return Starlette(
        routes=[
            Route("/", overview),
            Route("/graph", graph),
            Route("/sessions", sessions),
            Route("/sessions/{session_id}", session),
            Route("/prompts", prompts),
            Route("/memory", memory),
            Route("/learned", learned),
            Route("/api/activity", activity),
            Route("/api/graph", graph_json),
            Route("/api/entities", entities_json),
            Route("/api/entities/{entity_id}", entity_json),
            Route("/api/status", status_json),
            Route("/api/memories/{memory_id}/strength", strength_json),
            Route("/why/{memory_id}", why_page),
            Route("/memories/forget", forget, methods=["POST"]),
            Route("/memories/remember", remember, methods=["POST"]),
            Route("/facts/correct", correct, methods=["POST"]),
            Route(
                "/preferences/pin",
                choosing(remembering.pin, "preference_id", "pinned", "pinned", "unpinned"),
                methods=["POST"],
            ),
            Route(
                "/memories/approve",
                choosing(
                    remembering.approve,
                    "memory_id",
                    "approved",
                    "approved for CLAUDE.md's memory section",
                    "kept out of CLAUDE.md's memory section",
                ),
                methods=["POST"],
            ),
            Route(
                "/observations/promote",
                choosing(
                    remembering.promote,
                    "observation_id",
                    "promoted",
                    "chosen for CLAUDE.md's memory section",
                    "taken out of CLAUDE.md's memory section",
                ),
                methods=["POST"],
            ),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ],
        lifespan=lifespan,
        exception_handlers={BadQuery: bad_query},
    )


def _preview(settings: Settings, prompt: str, project: str | None) -> dict[str, Any]:
    """What the UserPromptSubmit hook would inject for `prompt` now, as the warm recall service
    tells it (recording nothing), with each candidate's scores; or why it cannot be told."""
    from reverie.recalling import RecallFailed, asked
    from schemas.recall import RecallRequest

    request = RecallRequest(prompt=prompt, project=project, hook="UserPromptSubmit", preview=True)
    try:
        answer = asked(settings, request, _PREVIEW_WAIT_S)
    except RecallFailed as e:
        return {"error": str(e)}
    if answer is None:
        return {"error": "the recall service does not answer: start the stack (reverie up)"}
    if "preview" not in answer:  # a service of an earlier version, still running
        return {
            "error": "the recall service is older than this dashboard: restart the stack (reverie down, up)"
        }
    preview = msgspec.json.decode(msgspec.json.encode(answer["preview"]), type=Preview)
    return {**msgspec.structs.asdict(preview), "given_by": {g.memory_id: g for g in preview.given}}


def _project(request: Request) -> str | None:
    """The project the URL names; None (every project) when it names none."""
    return request.query_params.get("project") or None


def _offset(request: Request) -> int:
    return _number(request, "offset", 0, 0, _MOST_OFFSET)


def _nodes(request: Request) -> int:
    return _number(request, "nodes", reads.GRAPH_NODES, 1, reads.MOST_NODES)


def _number(request: Request, name: str, default: int, least: int, most: int) -> int:
    """The whole number the query gives as `name` (ASCII digits, once, from `least` to `most`),
    `default` when it gives none; else BadQuery."""
    given = request.query_params.getlist(name)
    if not given:
        return default
    text = given[0]
    # the length first: int() refuses, with its own error, a text of more than 4,300 digits
    whole = len(given) == 1 and text.isascii() and text.isdigit() and len(text) <= len(str(most))
    if whole and least <= int(text) <= most:
        return int(text)
    raise BadQuery(f"{name}: one whole number from {least:,} to {most:,}, not {_given(given)}")


def _moment(request: Request) -> datetime | None:
    """The moment the query gives as `at` (seconds since the epoch, ASCII digits with a point
    at most, once), None when it gives none; else BadQuery."""
    given = request.query_params.getlist("at")
    if not given:
        return None
    whole, _, part = given[0].removeprefix("-").partition(".")
    if (
        len(given) == 1
        and len(given[0]) <= 32
        and all(p.isascii() and p.isdigit() for p in (whole, part or "0"))
    ):
        try:
            return datetime.fromtimestamp(float(given[0]), UTC)
        except (OverflowError, OSError, ValueError):  # before year 1 or after 9999
            pass
    raise BadQuery(f"at: one moment in seconds since the epoch, not {_given(given)}")


def _given(values: list[str]) -> str:
    """What a query gave, as an error says it: each value quoted, a long one cut."""
    return ", ".join(repr(_short(v, 40)) for v in values) or "nothing"


def _scoped(path: str, project: str | None, **more: Any) -> str:
    """`path` (an id in it percent-encoded, as every other character not ASCII) with the page's
    project, and `more`, as its query."""
    query = {**({"project": project} if project else {}), **{k: v for k, v in more.items() if v is not None}}
    path = quote(path, safe="/:")
    return f"{path}?{urlencode(query)}" if query else path


def _shown(value: Any) -> Any:
    """What a page shows of a value: a text with its bidirectional controls written out
    (`[U+202E]`, schemas/text/fence.py), so that none reorders what follows it on the page;
    markup (a macro's, made of values shown so) and an Exact value as they are."""
    if isinstance(value, str) and not isinstance(value, Exact) and not hasattr(value, "__html__"):
        return bidi_shown(value)
    return value


def _back(request: Request, said: str | None = None, error: str | None = None) -> Response:
    """Back to the page the form was on (a path of this site's only), saying what happened."""
    back = request.query_params.get("back", "/")
    if not back.startswith("/") or back.startswith(("//", "/\\")):
        back = "/"
    path, _, query = back.partition("?")
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k not in ("said", "error")]
    told = [(k, v) for k, v in (("said", said), ("error", error)) if v]
    return RedirectResponse(f"{path}?{urlencode(kept + told)}", status_code=303)


def _when(value: datetime | None) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if value else ""


def _short(value: str | None, limit: int = 160) -> str:
    text = " ".join((value or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
