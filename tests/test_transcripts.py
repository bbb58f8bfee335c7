"""Transcript import: every real transcript reads cleanly, into the events its hooks would have made."""

import json
from collections import Counter

import pytest

from ingest.transcripts import BadLine, ImportedEvent, find_transcripts, read_transcript
from schemas import events, kinds
from tests.conftest import TRANSCRIPTS

FILES = find_transcripts(str(TRANSCRIPTS))


def imported(path: str) -> list[ImportedEvent]:
    items = list(read_transcript(path))
    assert not [i for i in items if isinstance(i, BadLine)]
    return [i for i in items if isinstance(i, ImportedEvent)]


def test_subagent_transcripts_are_found_after_their_sessions() -> None:
    assert len(FILES) == 10
    subagents = [f for f in FILES if "/subagents/" in f]
    assert len(subagents) == 5
    assert FILES[-5:] == subagents


@pytest.mark.parametrize("path", FILES, ids=[p.split("transcripts/")[1] for p in FILES])
def test_every_transcript_imports_into_valid_events(path: str) -> None:
    items = imported(path)
    assert items
    decoded = [events.decode_event(i.data) for i in items]
    assert all(e.id == i.id for e, i in zip(decoded, items, strict=True))
    assert all(e.source == kinds.SOURCE_IMPORT for e in decoded)
    assert len({e.id for e in decoded}) == len(decoded)
    first = decoded[0].kind
    if "/subagents/" in path:
        assert first == kinds.SUBAGENT_STARTED
        assert decoded[-1].kind == kinds.SUBAGENT_STOPPED
        assert all(e.agent != "main" for e in decoded)
    else:
        assert first == kinds.SESSION_STARTED


def test_importing_twice_gives_the_same_ids() -> None:
    path = str(TRANSCRIPTS / "tool_heavy.jsonl")
    assert [i.id for i in imported(path)] == [i.id for i in imported(path)]


def test_every_tool_result_becomes_a_tool_event_with_its_call() -> None:
    path = str(TRANSCRIPTS / "tool_heavy.jsonl")
    results = 0
    for line in open(path):
        message = json.loads(line).get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            results += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "tool_result")
    decoded = [events.decode_event(i.data) for i in imported(path)]
    tools = [events.payload_of(e) for e in decoded if e.kind in (kinds.TOOL_USED, kinds.TOOL_FAILED)]
    assert len(tools) == results > 0
    assert all(isinstance(t, events.ToolRequested) and t.tool_name for t in tools)


def test_prompts_are_what_the_user_typed() -> None:
    decoded = [events.decode_event(i.data) for f in FILES for i in imported(f)]
    counts = Counter(e.kind for e in decoded)
    assert counts[kinds.PROMPT_SUBMITTED] > 0 and counts[kinds.ASSISTANT_STOPPED] > 0
    prompts = [events.payload_of(e) for e in decoded if e.kind == kinds.PROMPT_SUBMITTED]
    assert all(isinstance(p, events.PromptSubmitted) and p.prompt and p.prompt.strip() for p in prompts)


def test_unreadable_lines_are_reported_not_fatal(tmp_path: object) -> None:
    import pathlib

    path = pathlib.Path(str(tmp_path)) / "broken.jsonl"
    good = (TRANSCRIPTS / "short.jsonl").read_text().splitlines()
    path.write_text("\n".join([good[0], "{broken", "[1]", *good[1:]]) + "\n")
    items = list(read_transcript(str(path)))
    bad = [i for i in items if isinstance(i, BadLine)]
    assert [b.line for b in bad] == [2, 3]
    assert len([i for i in items if isinstance(i, ImportedEvent)]) == len(
        imported(str(TRANSCRIPTS / "short.jsonl"))
    )
