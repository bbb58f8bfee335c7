"""Backfill from Claude Code transcripts (~/.claude/projects/**/*.jsonl, subagents included).

A transcript line becomes the event the matching hook would have recorded: a user's words
become `prompt.submitted` (a subagent's turns written inline, `isSidechain`, are the
`sidechain` agent's, not the user's), a tool call with its result `tool.used` (or `tool.failed`), the
last words of an assistant turn `assistant.stopped` and its words before them `assistant.said`
(which no hook reports: workers/transcripts.py reads them for a live session), a compaction boundary
`compaction.finished`, and a subagent's transcript is framed by `subagent.started` and
`subagent.stopped`. Ids derive from the transcript's own line ids, so importing the same
file twice yields the same events, and the dispatcher keeps each once. (A session the hooks
recorded live has other ids: `reverie import` skips those sessions.)
"""

import os
from collections.abc import Iterator
from datetime import datetime
from typing import Any, BinaryIO

import msgspec

from ingest.envelope import Rejected
from ingest.project import ROOT_FIELD, identify, place_of
from ingest.truncate import MAX_INPUT, loads, loads_head
from schemas import kinds
from schemas.ids import derived_event_id


class ImportedEvent(msgspec.Struct, frozen=True):
    """An event a transcript records, as the import emits it (ingest/emit.py)."""

    id: str
    kind: str
    ts: str
    project: str
    session_id: str | None
    payload: dict[str, Any]
    line: int = 0  # the transcript's line it comes from, from 1 (a subagent's end: its last line)


class BadLine(msgspec.Struct, frozen=True):
    path: str
    line: int
    reason: str
    data: bytes


# the agent of a subagent's turns written inline in its session's transcript (`isSidechain`, as
# Claude Code 1.x wrote them): not the user's, not the main agent's
SIDECHAIN = "sidechain"


def find_transcripts(root: str) -> list[str]:
    """Every transcript under `root` (or `root` itself if it is a file), main sessions first."""
    if os.path.isfile(root):
        return [root]
    found = []
    for folder, _, files in os.walk(root):
        found += [os.path.join(folder, f) for f in files if f.endswith(".jsonl")]
    return sorted(found, key=lambda p: (os.sep + "subagents" + os.sep in p, p))


def _ms(timestamp: str) -> int:
    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str))


Places = dict[str, tuple[str, str]]  # where each session began: (project, worktree root)


class _Transcript:
    """Turns the lines of one transcript file into events, in order."""

    def __init__(self, path: str, places: Places) -> None:
        self.path = path
        self.places = places  # shared by a session's transcripts (its subagents')
        self.identified: dict[str, tuple[str, str]] = {}  # identify's answers, by folder
        self.session_id: str | None = None
        self.agent_id: str | None = None
        self.cwd: str | None = None
        self.began: tuple[str, str] | None = None  # a session belongs to one project: where it began
        self.tool_calls: dict[str, dict[str, Any]] = {}
        # the last words of the turn: (timestamp, line uuid, text, line, whether the sidechain's)
        self.last_words: tuple[str, str, str, int, bool] | None = None
        self.first: tuple[str, str] | None = None  # (timestamp, line uuid)
        self.last: tuple[str, str] | None = None
        self.number = 0  # of the line being read
        self.sidechain = False  # the line being read is a subagent's, inline (Claude Code 1.x)

    def event(
        self,
        kind: str,
        timestamp: str,
        seed: str,
        line: int | None = None,
        sidechain: bool | None = None,  # whose it is, if not the line being read's
        **fields: Any,
    ) -> ImportedEvent:
        sidechain = self.sidechain if sidechain is None else sidechain
        agent_id = self.agent_id or (SIDECHAIN if sidechain else None)
        payload = {
            "session_id": self.session_id,
            "transcript_path": self.path,
            "cwd": self.cwd,
            "hook_event_name": None,
            **({"agent_id": agent_id} if agent_id else {}),
            **fields,
        }
        event_id = derived_event_id(_ms(timestamp), "transcript", self.session_id or "", seed, kind)
        if self.began is None:
            self.began = self.places.get(self.session_id or "") or place_of(
                {"transcript_path": self.path, "cwd": self.cwd}, {}, None, self.identify
            )
            if self.session_id:
                self.places.setdefault(self.session_id, self.began)
        project, root = place_of(payload, {}, self.began, self.identify)
        if root:
            payload[ROOT_FIELD] = root
        return ImportedEvent(
            event_id, kind, timestamp, project, self.session_id, payload, line or self.number
        )

    def identify(self, folder: str) -> tuple[str, str]:
        if (found := self.identified.get(folder)) is None:
            found = self.identified[folder] = identify(folder)
        return found

    def line(self, d: dict[str, Any]) -> Iterator[ImportedEvent]:
        timestamp, uuid = d.get("timestamp"), d.get("uuid")
        if not isinstance(timestamp, str) or not isinstance(uuid, str):
            return  # snapshots, queue operations: no moment of the session
        self.session_id = self.session_id or d.get("sessionId")
        self.agent_id = self.agent_id or d.get("agentId")
        self.sidechain = d.get("isSidechain") is True
        self.cwd = d.get("cwd") or self.cwd
        if self.first is None:
            self.first = (timestamp, uuid)
            start = kinds.SUBAGENT_STARTED if self.agent_id else kinds.SESSION_STARTED
            yield self.event(start, timestamp, uuid)
        self.last = (timestamp, uuid)
        kind, message = d.get("type"), d.get("message")
        if kind == "system" and d.get("subtype") == "compact_boundary":
            meta = d.get("compactMetadata") or {}
            yield self.event(kinds.COMPACTION_FINISHED, timestamp, uuid, trigger=meta.get("trigger"))
        if not isinstance(message, dict):
            return
        blocks = _blocks(message)
        if kind == "assistant":
            yield from self.assistant(blocks, timestamp, uuid)
        elif kind == "user":
            yield from self.user(d, blocks, timestamp, uuid)

    def assistant(self, blocks: list[dict[str, Any]], timestamp: str, uuid: str) -> Iterator[ImportedEvent]:
        for block in blocks:
            if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                self.tool_calls[block["id"]] = block
        if text := _text(blocks):
            yield from self.said()
            self.last_words = (timestamp, uuid, text, self.number, self.sidechain)

    def said(self) -> Iterator[ImportedEvent]:
        """The words written so far in this turn, which newer words follow: said mid-turn."""
        if self.last_words is not None:
            timestamp, uuid, text, line, sidechain = self.last_words
            self.last_words = None
            yield self.event(kinds.ASSISTANT_SAID, timestamp, uuid, line, sidechain, text=text)

    def user(
        self, d: dict[str, Any], blocks: list[dict[str, Any]], timestamp: str, uuid: str
    ) -> Iterator[ImportedEvent]:
        for block in blocks:
            if block.get("type") != "tool_result":
                continue
            call = self.tool_calls.pop(block.get("tool_use_id", ""), None) or {}
            fields = {
                "tool_name": call.get("name", ""),
                "tool_input": call.get("input") if isinstance(call.get("input"), dict) else None,
                "tool_use_id": block.get("tool_use_id"),
            }
            response = d.get("toolUseResult", block.get("content"))
            if block.get("is_error"):
                yield self.event(
                    kinds.TOOL_FAILED,
                    timestamp,
                    uuid + block.get("tool_use_id", ""),
                    error=response,
                    **fields,
                )
            else:
                yield self.event(
                    kinds.TOOL_USED,
                    timestamp,
                    uuid + block.get("tool_use_id", ""),
                    tool_response=response,
                    **fields,
                )
        prompt = _text(blocks)
        if prompt and not d.get("isMeta") and not d.get("isCompactSummary"):
            yield from self.turn_ended()
            yield self.event(kinds.PROMPT_SUBMITTED, timestamp, uuid, prompt=prompt)

    def turn_ended(self) -> Iterator[ImportedEvent]:
        if self.last_words is not None:
            timestamp, uuid, text, line, sidechain = self.last_words
            self.last_words = None
            yield self.event(
                kinds.ASSISTANT_STOPPED, timestamp, uuid, line, sidechain, last_assistant_message=text
            )

    def finish(self) -> Iterator[ImportedEvent]:
        if self.agent_id and self.last is not None:
            text = self.last_words[2] if self.last_words else None
            yield self.event(
                kinds.SUBAGENT_STOPPED,
                self.last[0],
                self.last[1] + ":end",
                last_assistant_message=text,
                agent_transcript_path=self.path,
            )
            self.last_words = None
        yield from self.turn_ended()


def _lines(f: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """Each line, or its first MAX_INPUT bytes if it is longer (the rest is skipped), and
    whether it is whole. Memory holds one line of MAX_INPUT bytes at most."""
    while raw := f.readline(MAX_INPUT + 1):
        whole = len(raw) <= MAX_INPUT or raw.endswith(b"\n")
        if not whole:
            while (rest := f.readline(2**20)) and not rest.endswith(b"\n"):
                pass
        yield raw[:MAX_INPUT], whole


def _parse(raw: bytes, whole: bool) -> dict[str, Any]:
    line = loads(raw) if whole else loads_head(raw, f"the line ran past {MAX_INPUT} bytes: the rest is cut")
    if not isinstance(line, dict):
        raise Rejected(f"expected a JSON object, got {type(line).__name__}")
    if not whole and not (isinstance(line.get("timestamp"), str) and isinstance(line.get("uuid"), str)):
        raise Rejected(f"a line larger than {MAX_INPUT} bytes, whose head holds no timestamp and uuid")
    return line


def read_transcript(path: str, places: Places | None = None) -> Iterator[ImportedEvent | BadLine]:
    """The events one transcript file records, and the lines that could not be read. `places`
    keeps where each session began across the transcripts of one import (a subagent's events
    belong to its session's project, wherever its own transcript starts).

    A line longer than MAX_INPUT is read to what its head holds (the event is cut like a hook
    payload when it is emitted); one that is not JSON is a BadLine.
    """
    transcript = _Transcript(path, {} if places is None else places)
    with open(path, "rb") as f:
        for number, (raw, whole) in enumerate(_lines(f), 1):
            if not raw.strip():
                continue
            transcript.number = number
            try:
                yield from transcript.line(_parse(raw, whole))
            except (ValueError, TypeError, KeyError, AttributeError) as e:
                yield BadLine(path, number, f"{type(e).__name__}: {e}", raw)
    yield from transcript.finish()


# what tells the moment a hook recorded among a transcript's events, by kind
_SAME_MOMENT = {
    kinds.TOOL_USED: "tool_use_id",
    kinds.TOOL_FAILED: "tool_use_id",
    kinds.PROMPT_SUBMITTED: "prompt",
    kinds.ASSISTANT_STOPPED: "last_assistant_message",
    kinds.SUBAGENT_STOPPED: "last_assistant_message",
}


def locate(path: str, event_id: str, kind: str, payload: dict[str, Any]) -> int | None:
    """The line (from 1) of the transcript at `path` that an event comes from: the line the
    import reads the event from, or, for an event a hook recorded, the line of the same tool
    call, prompt or last words. None if the file holds no such line (or cannot be read)."""
    field = _SAME_MOMENT.get(kind)
    said = payload.get(field) if field else None
    try:
        for item in read_transcript(path):
            if not isinstance(item, ImportedEvent):
                continue
            if item.id == event_id or (
                item.kind == kind and said is not None and item.payload.get(field or "") == said
            ):
                return item.line
    except OSError:
        return None
    return None
