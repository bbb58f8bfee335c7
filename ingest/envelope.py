"""Building an event's wire form: the envelope around a redacted payload cut to size, as JSON.

The hook and the transcript import both build events here, so both redact and truncate the
same way. Standard library only (the hook path); the result decodes as `schemas.events.Event`.
"""

from __future__ import annotations

from ingest import cjson, patterns, truncate
from ingest.redact import pattern_sources, redact, redact_text
from ingest.truncate import EVENT_LIMIT, cut, encode_within_budget, truncate_strings
from schemas.kinds import SCHEMA_VERSION

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


ID_LIMIT = 256


def _cut_and_redact(text: str) -> str:
    return cut(text, clean=redact_text)


def compile_patterns() -> str | None:
    """Keep every pattern building an event may need compiled (ingest/patterns.py), and no other,
    so that no hook pays for `re`: where, or None if the cache cannot be written."""
    patterns.remove_old_caches()
    return patterns.store([*pattern_sources(), *truncate.pattern_sources()], complete=True)


class Rejected(ValueError):
    """The input cannot become an event; the message says why."""


def _json(envelope: dict[str, Any]) -> bytes:
    try:
        text = cjson.dumps(envelope)
    except ValueError as e:
        raise Rejected(f"cannot encode as JSON: {e}") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates are legal in JSON escapes (real Windows payloads carry them) but not in
        # UTF-8, nor for msgspec: each becomes U+FFFD.
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def encode_event(
    kind: str,
    payload: dict[str, Any],
    *,
    event_id: str,
    ts: str,
    recorded_at: str,
    project: str,
    source: str,
    caused_by: list[str] | None = None,
    session_id: str | None = None,
    agent: str | None = None,
    v: int = SCHEMA_VERSION,
) -> bytes:
    """The event as JSON bytes: secrets redacted, oversized strings, nesting and lists cut, at
    most EVENT_LIMIT. Costs the values kept, whatever the payload's size and shape.

    The session and the agent are the payload's (`session_id`, `agent_id`, as a hook sends
    them) unless given; `v` is this reverie's schema version unless the event was made by
    another (an export's, carried here whole)."""
    session_id = session_id or payload.get("session_id")
    agent = agent or payload.get("agent_id")
    envelope = {
        "id": event_id,
        "kind": kind,
        "ts": ts,
        "recorded_at": recorded_at,
        "project": project,
        # ids are short; a huge one is cut here (the payload keeps it, cut like any string)
        "session_id": session_id[:ID_LIMIT] if isinstance(session_id, str) else None,
        "agent": agent[:ID_LIMIT] if isinstance(agent, str) and agent else "main",
        "source": source,
        "v": v,
        # Shape first: nesting past MAX_DEPTH, and values past what an event can hold, are
        # cut, so redaction walks only what is kept, on a stack no deeper than MAX_DEPTH. It
        # cuts each string before redacting it (megabytes of tool output would cost the agent
        # seconds), with a margin, so a secret across a cut is still seen whole.
        "payload": redact(truncate_strings(payload, None, max_size=EVENT_LIMIT), text=_cut_and_redact),
        "caused_by": caused_by or [],
    }
    return encode_within_budget(envelope, _json)
