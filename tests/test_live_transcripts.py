"""What the agent wrote mid-turn in a live session: at a turn's end the job `said_in` reads the
transcript the Stop hook named, and emits its words before the last ones under the ids the
import gives them (so importing the session later, or reading it again, doubles nothing)."""

import json
from pathlib import Path

import fakeredis
import msgspec
import pytest
from rq import Queue

from ingest.transcripts import ImportedEvent, read_transcript
from projections.event_log import EventLog
from reverie.testing import streamed
from schemas import kinds
from schemas.settings import Settings
from tests.support.events import observed
from workers.transcripts import said_in


def line(n: int, role: str, content: object) -> str:
    return json.dumps({
        "type": role, "uuid": f"u{n}", "timestamp": f"2026-02-11T10:00:0{n}Z", "sessionId": "s1",
        "cwd": "/home/u/shop", "message": {"role": role, "content": content},
    })  # fmt: skip


def test_a_turns_end_brings_what_was_said_before_its_last_words(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REVERIE_HOME", settings.home)
    transcript = tmp_path / "s1.jsonl"
    transcript.write_text("\n".join([
        line(1, "user", "Which test runner do we use?"),
        line(2, "assistant", "The frontend tests run with Vitest (`vitest run` in assets/package.json)."),
        line(3, "assistant", "Anything else?"),
    ]) + "\n")  # fmt: skip
    stop = observed(
        kinds.ASSISTANT_STOPPED, 4, transcript_path=str(transcript), last_assistant_message="Anything else?"
    )
    imported = observed(kinds.ASSISTANT_STOPPED, 5, transcript_path=str(transcript))
    imported = imported.__class__(
        **{**{f: getattr(imported, f) for f in imported.__struct_fields__}, "source": kinds.SOURCE_IMPORT}
    )
    segment = EventLog(settings.event_log_dir).append([stop, imported])
    client = fakeredis.FakeRedis()
    queue = Queue("test", connection=client, is_async=False)

    job = queue.enqueue(said_in, segment, [stop.id, imported.id])
    said = [e for e in streamed(client) if e.kind == kinds.ASSISTANT_SAID]
    expected = [
        i
        for i in read_transcript(str(transcript))
        if isinstance(i, ImportedEvent) and i.kind == kinds.ASSISTANT_SAID
    ]
    assert job.return_value() == 1 and [e.id for e in said] == [i.id for i in expected]  # the import's ids
    assert [msgspec.json.decode(e.payload)["text"] for e in said] == [
        "The frontend tests run with Vitest (`vitest run` in assets/package.json)."
    ]
    assert {e.source for e in said} == {kinds.SOURCE_CLAUDE_CODE}
