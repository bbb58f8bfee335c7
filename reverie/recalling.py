"""`reverie recall`: ask memory a question, from the warm service if it runs, else in process."""

import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from ingest.project import identify
from reverie.console import err, fail, out, print_rows
from schemas.recall import Recall, RecallRequest
from schemas.settings import Settings
from schemas.text.gist import gist

if TYPE_CHECKING:
    from projections.recall.pipeline import Recaller

_SERVICE_DEADLINE_S = 10.0


def find(settings: Settings, request: RecallRequest, load_model: bool = True) -> Recall:
    """Recall as `request` asks: from the warm service if it runs, else here (the model loads
    once per process, in seconds), unless not `load_model` (a process that must stay small, the
    stack's MCP server). RecallFailed if the service says why it could not, or does not answer
    and the model may not load."""
    answer = asked(settings, request)
    found = answer.get("recall") if answer is not None else None
    if found is None and not load_model:
        raise RecallFailed(NOT_ANSWERING)
    return msgspec.convert(found or _in_process(settings, request), Recall)


def recall(request: RecallRequest, fmt: str, explain: bool) -> int:
    settings = Settings.from_env()
    try:
        found = find(settings, request)
    except RecallFailed as e:
        return fail(str(e))
    if fmt == "json":
        out.print_json(msgspec.json.encode(found).decode())
        return 0
    columns = ["#", "score", "kind", "when", "memory", "found by", "id"]
    if explain:
        columns[2:2] = ["relevance", "components", "activation", "retrievability", "recency", "confidence"]
    rows = []
    for rank, r in enumerate(found.results, start=1):
        row = [
            rank,
            f"{r.score:.3f}",
            r.kind,
            f"{r.ts:%Y-%m-%d %H:%M}" if r.ts else "",
            _short(r.text),
            ", ".join([*r.sources, *(["cross-validated"] if r.cross_validated else [])]),
            r.memory_id,
        ]
        if explain:
            row[2:2] = [
                f"{r.relevance:.3f}",
                " ".join(f"{name} {value:.2f}" for name, value in r.components.items()),
                f"{r.activation:.2f}",
                f"{r.retrievability:.3f}",
                f"{r.recency:.3f}",
                f"{r.confidence:.2f}",
            ]
        rows.append(row)
    if explain:
        err.print(
            f"task: {found.task}; queries: "
            + "; ".join(f"{q.text!r} ({q.category}, {q.weight})" for q in found.queries)
        )
        if found.window:
            err.print(f"time window: {found.window.start:%Y-%m-%d} to {found.window.end:%Y-%m-%d}")
    print_rows(columns, rows, fmt)
    return 0


class RecallFailed(Exception):
    pass


NOT_ANSWERING = "the recall service is not answering (is the stack up?): try again in a moment"


def asked(
    settings: Settings, request: RecallRequest, deadline_s: float = _SERVICE_DEADLINE_S
) -> dict[str, object] | None:
    """The warm service's answer to `request` (its prompt sent as its gist), within
    `deadline_s`; None when no service answers. RecallFailed if it says why it could not."""
    from ingest.injection import ask_service

    if not settings.recall_url and not os.path.exists(settings.recall_socket_path):
        return None
    try:
        sent = msgspec.structs.replace(request, prompt=gist(request.prompt), deadline_s=deadline_s)
        answer = ask_service(settings, msgspec.to_builtins(sent), deadline_s)
    except (OSError, ValueError):
        return None
    if "error" in answer:
        raise RecallFailed(str(answer["error"]))
    return answer


def no_memory_yet(settings: Settings) -> str | None:
    """Why there is nothing to read, when the data directory does not exist (None when it does):
    a command that reads memory never makes one."""
    if os.path.isdir(settings.home):
        return None
    return (
        f"no memory in {settings.home} yet: there is no such folder (is REVERIE_HOME the one you mean?). "
        "`reverie up --detach` starts a stack there; the hooks and `reverie import` fill it"
    )


def _in_process(settings: Settings, request: RecallRequest) -> object:
    from workers.recall_service import open_recaller

    if (missing := no_memory_yet(settings)) is not None:  # opening the vectors would make the folders
        raise RecallFailed(missing)
    recaller = _recallers.get(settings.home)
    if recaller is None:  # a process that asks again (the MCP server) loads the model once
        with err.status("the recall service is not running: loading the model here…"):
            recaller = _recallers[settings.home] = open_recaller(settings)
    return recaller.answer(request)


_recallers: dict[str, "Recaller"] = {}


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def project_named(value: str | None) -> str | None:
    """A --project value as recorded: a folder (`.`, `~/app`) as its project (ingest/project.py:
    its repository), anything else as given (a project's name as `reverie sql` shows it)."""
    return place_named(value)[0] if value is not None else None


def place_named(value: str) -> tuple[str, str | None]:
    """(project, worktree root) of a --project value; the root is None unless it is a folder."""
    folder = os.path.expanduser(value)
    if not os.path.isdir(folder):
        return value, None
    project, root = identify(os.path.abspath(folder))
    return project, root


def parse_time(value: str) -> datetime:
    """An --as-of value: an ISO date or time, UTC unless it says otherwise."""
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
