"""Every real hook payload, from both CLI versions, becomes an event that decodes with its fields."""

import json
from datetime import datetime
from typing import Any

import msgspec
import pytest

from ingest.envelope import encode_event
from reverie.testing import make_event
from schemas import events, kinds, observed, registry
from schemas.ids import new_event_id, utc_now_iso
from tests.support.captures import fixture_payloads

PAYLOADS = fixture_payloads()


def wire(kind: str, payload: dict[str, Any], **envelope: Any) -> bytes:
    now = utc_now_iso()
    fields: dict[str, Any] = {
        "event_id": new_event_id(),
        "ts": now,
        "recorded_at": now,
        "project": "p",
        "source": kinds.SOURCE_CLAUDE_CODE,
    }
    return encode_event(kind, payload, **(fields | envelope))


def test_the_fixtures_cover_both_cli_versions_and_every_captured_kind() -> None:
    names = {p["hook_event_name"] for _, p in PAYLOADS}
    assert len(PAYLOADS) > 300
    assert names == {
        "SessionStart", "SessionEnd", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop",
        "SubagentStart", "SubagentStop", "PreCompact", "Notification", "PermissionRequest",
    }  # fmt: skip


@pytest.mark.parametrize(("name", "payload"), PAYLOADS, ids=[n for n, _ in PAYLOADS])
def test_every_fixture_payload_decodes_as_its_kind(name: str, payload: dict[str, Any]) -> None:
    kind = kinds.HOOK_KINDS[payload["hook_event_name"]]
    event = events.decode_event(wire(kind, payload))
    typed = events.payload_of(event)
    assert isinstance(typed, registry.KINDS[kind].payload)
    assert event.kind == kind
    assert event.session_id == payload["session_id"]
    assert event.agent == payload.get("agent_id", "main")
    for field in ("tool_name", "prompt", "source", "trigger", "reason", "message", "last_assistant_message"):
        if field in payload and len(json.dumps(payload[field])) < 10_000:
            assert getattr(typed, field) == payload[field], field
    # the log keeps the payload as observed: fields the Struct does not know are not dropped
    assert set(json.loads(bytes(event.payload))) == set(payload)


def test_missing_and_null_fields_take_defaults() -> None:
    event = events.decode_event(wire(kinds.COMPACTION_STARTED, {"custom_instructions": None}))
    typed = events.payload_of(event)
    assert isinstance(typed, observed.CompactionStarted)
    assert typed.custom_instructions is None
    assert typed.session_id is None


@pytest.mark.parametrize(
    ("kind", "payload", "complaint"),
    [
        (kinds.TOOL_USED, {"tool_name": 3}, "tool_name"),
        (kinds.PROMPT_SUBMITTED, {"prompt": ["not", "text"]}, "prompt"),
        (kinds.ASSISTANT_STOPPED, {"stop_hook_active": "yes"}, "stop_hook_active"),
    ],
)
def test_wrong_types_are_refused_with_the_field_named(
    kind: str, payload: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(events.InvalidEvent, match=complaint):
        events.decode_event(wire(kind, payload))


def test_unknown_kinds_and_broken_envelopes_are_refused() -> None:
    with pytest.raises(events.InvalidEvent, match="unknown event kind"):
        events.decode_event(wire("no.such.kind", {}))
    with pytest.raises(events.InvalidEvent, match="envelope"):
        events.decode_event(b'{"id": 1}')
    with pytest.raises(events.InvalidEvent, match="envelope"):
        events.decode_event(b"\xff\xfe")


def test_python_built_events_match_the_hook_wire_format() -> None:
    now = msgspec.json.decode(json.dumps(utc_now_iso()).encode(), type=datetime)
    built = make_event(
        kinds.MEMORY_REMEMBERED,
        observed.MemoryRemembered(text="use uv, not pip", tags=["tooling"]),
        id=new_event_id(),
        ts=now,
        recorded_at=now,
        project="p",
        source=kinds.SOURCE_CLI,
    )
    again = events.decode_event(msgspec.json.encode(built))
    assert again == built
    assert events.payload_of(again) == observed.MemoryRemembered(text="use uv, not pip", tags=["tooling"])


def test_lone_surrogates_from_real_windows_payloads_become_replacement_characters() -> None:
    raw = b'{"tool_name": "Bash", "tool_input": {"command": "\\u00e2\\u2022\\udc90 box"}}'
    payload = json.loads(raw)
    typed = events.payload_of(events.decode_event(wire(kinds.TOOL_REQUESTED, payload)))
    assert isinstance(typed, observed.ToolRequested)
    assert typed.tool_input == {"command": "\u00e2\u2022\ufffd box"}
