"""`reverie why ID`: where a fact, an entity, an episode or another memory comes from, down to
the transcript line (workers/why.py reads it).

The running stack's recall service answers it through the snapshot it holds open; with the stack
down, it is read here from the files, at the cost of importing DuckDB and Arrow (0.3 s).
"""

import contextlib
import sys
from datetime import datetime

import msgspec

from reverie.console import fail, out
from reverie.recalling import RecallFailed, asked
from schemas import kinds
from schemas.recall import RecallRequest
from schemas.settings import Settings
from schemas.why import Source, Why, cut

_WAIT_S = 5.0


class CannotExplain(Exception):
    """Why cannot be told: no memory has the id, the projector made no snapshot yet, or the
    files cannot be read. The message says which."""


def why(settings: Settings, wanted: str, project: str | None = None) -> Why:
    """Why memory holds `wanted` (see workers/why.py), as the running stack's recall service
    says, else read from the files; given a `project`, of what it may see."""
    try:
        answer = asked(settings, RecallRequest(why=wanted, project=project), _WAIT_S)
    except RecallFailed as e:  # the service's reason: the id unknown, say
        raise CannotExplain(str(e)) from None
    if answer is not None:
        return msgspec.json.decode(msgspec.json.encode(answer["why"]), type=Why)
    return _read(settings, wanted, project)


def _read(settings: Settings, wanted: str, project: str | None) -> Why:
    """`why` read here from the files: the stack is down (DuckDB and Arrow imported only now)."""
    import duckdb

    from projections.sql import DamagedSnapshot, NoSnapshot, connect
    from workers.why import Unknown
    from workers.why import why as read_why

    try:
        db = connect(settings, snapshot_required=True)
    except NoSnapshot as e:
        raise CannotExplain(f"{e}: start the stack (reverie up) and let it fold the log first") from None
    except (DamagedSnapshot, duckdb.Error) as e:
        raise CannotExplain(str(e)) from None
    try:
        return read_why(db, wanted, project)
    except (Unknown, duckdb.Error) as e:
        raise CannotExplain(str(e)) from None
    finally:
        db.close()


def explain(wanted: str, as_json: bool) -> int:
    """Print why memory holds `wanted`; 1 (with the reason) if it holds nothing by that id."""
    try:
        answer = why(Settings.from_env(), wanted)
    except CannotExplain as e:
        return fail(str(e))
    if as_json:
        sys.stdout.write(msgspec.json.encode(answer).decode() + "\n")
    else:
        _render(answer)
    return 0


def _render(answer: Why) -> None:
    out.print(f"[bold]{answer.what} {answer.id}[/bold]", highlight=False)
    out.print(f"  {answer.title}", markup=False, highlight=False)
    for name, value in answer.details.items():
        out.print(f"  [dim]{name}:[/dim] {cut(_shown(value))}", highlight=False)
    if answer.recorded:
        out.print("\n[bold]recorded as it is, not derived[/bold]", highlight=False)
        _render_sources([answer.recorded], "  ")
    elif not answer.derivations:
        out.print("  no derived event names it (made before provenance was kept?)")
    for derivation in answer.derivations:
        when = derivation.ts.isoformat(sep=" ", timespec="seconds")
        out.print(f"\n[bold]{derivation.kind}[/bold] {derivation.event_id} at {when}", highlight=False)
        if derivation.says and derivation.says != answer.title:
            out.print(f"  {cut(derivation.says)}", markup=False, highlight=False)
        _render_sources(derivation.caused_by, "  ")


def _shown(value: object) -> str:
    """A detail as a person reads it: an instant to the second, whether it came as a datetime
    (read here) or as its ISO text (the service's answer, through JSON)."""
    if isinstance(value, str) and len(value) >= 20 and value[10] == "T":
        with contextlib.suppress(ValueError):
            value = datetime.fromisoformat(value)
    return value.isoformat(sep=" ", timespec="seconds") if isinstance(value, datetime) else str(value)


_BY = {
    kinds.SOURCE_CLI: "the command line (reverie remember)",
    kinds.SOURCE_MCP: "the MCP server (memory_remember)",
    kinds.SOURCE_CLAUDE_CODE: "Claude Code's hooks",
    kinds.SOURCE_IMPORT: "reverie import",
}


def _render_sources(sources: list[Source], indent: str) -> None:
    for source in sources:
        when = source.ts.isoformat(sep=" ", timespec="seconds")
        session = f" session {source.session_id}" if source.session_id else ""
        by = f", recorded by {_BY.get(source.by, source.by)}" if source.by else ""
        out.print(f"{indent}from {source.kind} {source.event_id} at {when}{session}{by}", highlight=False)
        if source.excerpt:
            out.print(f"{indent}  “{source.excerpt}”", markup=False, highlight=False)
        if source.transcript:
            where = (
                f"{source.transcript}:{source.line}"
                if source.line
                else f"{source.transcript} (line not found)"
            )
            out.print(f"{indent}  {where}", markup=False, highlight=False)
        _render_sources(source.caused_by, indent + "  ")
