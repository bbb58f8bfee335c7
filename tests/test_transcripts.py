"""Transcript import: every real transcript reads cleanly, into the events its hooks would have made."""

import json
from collections import Counter
from pathlib import Path

import pytest

from ingest import transcripts
from ingest.transcripts import BadLine, ImportedEvent, find_transcripts, read_transcript
from ingest.truncate import MAX_DEPTH
from reverie.testing import imported_event
from schemas import events, kinds, observed
from tests.support.captures import TRANSCRIPTS
from workers.extraction.derive import derive

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
    decoded = [imported_event(i) for i in items]
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
    decoded = [imported_event(i) for i in imported(path)]
    tools = [events.payload_of(e) for e in decoded if e.kind in (kinds.TOOL_USED, kinds.TOOL_FAILED)]
    assert len(tools) == results > 0
    assert all(isinstance(t, observed.ToolRequested) and t.tool_name for t in tools)


def test_prompts_are_what_the_user_typed() -> None:
    decoded = [imported_event(i) for f in FILES for i in imported(f)]
    counts = Counter(e.kind for e in decoded)
    assert counts[kinds.PROMPT_SUBMITTED] > 0 and counts[kinds.ASSISTANT_STOPPED] > 0
    prompts = [events.payload_of(e) for e in decoded if e.kind == kinds.PROMPT_SUBMITTED]
    assert all(isinstance(p, observed.PromptSubmitted) and p.prompt and p.prompt.strip() for p in prompts)


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


def with_lines(tmp_path: Path, replace: dict[int, str]) -> Path:
    """short.jsonl with some of its lines (numbered from 1) replaced."""
    lines = (TRANSCRIPTS / "short.jsonl").read_text().splitlines()
    path = tmp_path / "transcript.jsonl"
    path.write_text("\n".join(replace.get(n, line) for n, line in enumerate(lines, 1)) + "\n")
    return path


def tool_result_line(response: str) -> str:
    """Line 11 of short.jsonl, a tool result, with `response` (JSON text) as its toolUseResult."""
    line = json.loads((TRANSCRIPTS / "short.jsonl").read_text().splitlines()[10])
    line.pop("toolUseResult", None)
    return json.dumps(line)[:-1] + f', "toolUseResult": {response}}}'


def test_a_deeply_nested_line_is_cut_and_the_rest_imports(tmp_path: Path) -> None:
    path = with_lines(tmp_path, {11: tool_result_line("[" * 5000 + '"deep"' + "]" * 5000)})
    items = imported(str(path))
    assert [i.id for i in items] == [i.id for i in imported(str(TRANSCRIPTS / "short.jsonl"))]
    failed = next(e for e in map(imported_event, items) if e.kind == kinds.TOOL_FAILED)
    typed = events.payload_of(failed)
    assert isinstance(typed, observed.ToolFailed)
    error, levels = typed.error, 0
    while isinstance(error, list):
        error, levels = error[0], levels + 1
    assert levels == MAX_DEPTH - 1  # the line itself is the first level
    assert error.startswith(f"…[reverie: nesting deeper than {MAX_DEPTH} cut")


def test_a_line_over_max_input_is_cut_or_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "MAX_INPUT", 4096)
    lines = (TRANSCRIPTS / "short.jsonl").read_text().splitlines()
    prompt, interrupted = json.loads(lines[3]), json.loads(lines[12])
    # its uuid and timestamp come first, so its head is a moment of the session
    first = {"uuid": prompt["uuid"], "timestamp": prompt["timestamp"], **prompt}
    first["message"] = {"role": "user", "content": "fix it " * 2000}
    # its uuid and timestamp come after the message, so its head is no moment of the session
    interrupted["message"] = {"role": "user", "content": "y" * 10_000}
    path = with_lines(tmp_path, {4: json.dumps(first), 13: json.dumps(interrupted)})
    items = list(read_transcript(str(path)))
    [bad] = [i for i in items if isinstance(i, BadLine)]
    assert bad.line == 13 and "larger than 4096 bytes" in bad.reason
    decoded = [imported_event(i) for i in items if isinstance(i, ImportedEvent)]
    assert len(decoded) == len(imported(str(TRANSCRIPTS / "short.jsonl"))) - 1
    typed = events.payload_of(next(e for e in decoded if e.kind == kinds.PROMPT_SUBMITTED))
    assert isinstance(typed, observed.PromptSubmitted) and typed.prompt
    assert typed.prompt.startswith("fix it fix it")
    assert typed.prompt.endswith("…[reverie: the line ran past 4096 bytes: the rest is cut]")


def test_a_session_whose_cwd_changes_stays_in_the_project_it_began_in(tmp_path: Path) -> None:
    lines = (TRANSCRIPTS / "short.jsonl").read_text().splitlines()
    moved = []
    for n, line in enumerate(lines):
        d = json.loads(line)
        if "cwd" in d:
            d["cwd"] = str(tmp_path / "app") if n < len(lines) // 2 else str(tmp_path / "app" / "docs")
        moved.append(json.dumps(d))
    (tmp_path / "app" / "docs").mkdir(parents=True)
    path = tmp_path / "elsewhere" / "session.jsonl"  # not under ~/.claude/projects: no key to read
    path.parent.mkdir()
    path.write_text("\n".join(moved) + "\n")
    assert {i.project for i in imported(str(path))} == {str(tmp_path / "app")}


def test_a_subagents_turns_written_inline_are_the_sidechains_not_the_users(tmp_path: Path) -> None:
    def line(n: int, role: str, text: str, sidechain: bool) -> str:
        return json.dumps({
            "type": role, "uuid": f"u{n}", "timestamp": f"2025-09-01T10:00:0{n}Z", "sessionId": "s",
            "cwd": "/home/u/todo", "isSidechain": sidechain, "message": {"role": role, "content": text},
        })  # fmt: skip

    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([
        line(1, "user", "Build a TODO app", False),
        line(2, "assistant", "I will delegate this.", False),
        line(3, "user", "Always use useReducer for the state. Create types/todo.ts", True),
        line(4, "assistant", "Done: types/todo.ts", True),
        line(5, "user", "Thanks, now the page", False),
    ]) + "\n")  # fmt: skip
    said = [
        (e.payload.get("agent_id"), e.payload.get("prompt") or e.payload.get("last_assistant_message"))
        for e in imported(str(path))
        if e.kind in (kinds.PROMPT_SUBMITTED, kinds.ASSISTANT_STOPPED)
    ]
    assert said == [
        (None, "Build a TODO app"),
        (None, "I will delegate this."),
        ("sidechain", "Always use useReducer for the state. Create types/todo.ts"),
        ("sidechain", "Done: types/todo.ts"),
        (None, "Thanks, now the page"),
    ]
    assert [
        d for d in derive([imported_event(e) for e in imported(str(path))]) if d.kind == kinds.FACT_ASSERTED
    ] == []


def test_what_the_agent_writes_before_its_last_words_is_said_mid_turn(tmp_path: Path) -> None:
    def line(n: int, role: str, content: object) -> str:
        return json.dumps({
            "type": role, "uuid": f"u{n}", "timestamp": f"2025-09-01T10:00:0{n}Z", "sessionId": "s",
            "cwd": "/home/u/shop", "message": {"role": role, "content": content},
        })  # fmt: skip

    call = {
        "type": "tool_use",
        "id": "t1",
        "name": "Read",
        "input": {"file_path": "/home/u/shop/package.json"},
    }
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join([
        line(1, "user", "Which test runner do we use?"),
        line(2, "assistant", [{"type": "text", "text": "Let me look at package.json."}, call]),
        line(3, "user", [{"type": "tool_result", "tool_use_id": "t1", "content": '"test": "vitest run"'}]),
        line(4, "assistant", "The project uses Vitest (`vitest run`)."),
        line(5, "assistant", "Anything else?"),
        line(6, "user", "No, thanks"),
    ]) + "\n")  # fmt: skip
    said = [
        (e.kind, e.payload.get("text") or e.payload.get("last_assistant_message"))
        for e in imported(str(path))
    ]
    assert [s for s in said if s[0] in (kinds.ASSISTANT_SAID, kinds.ASSISTANT_STOPPED)] == [
        (kinds.ASSISTANT_SAID, "Let me look at package.json."),
        (kinds.ASSISTANT_SAID, "The project uses Vitest (`vitest run`)."),
        (kinds.ASSISTANT_STOPPED, "Anything else?"),
    ]
