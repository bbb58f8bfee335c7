"""`reverie why ID`: a fact, an entity or an episode explained down to the transcript's line."""

import json
import subprocess
from pathlib import Path

import fakeredis
import pytest

from ingest.spool import spooled
from ingest.transcripts import ImportedEvent, locate, read_transcript
from reverie.testing import Folding, imported_event, streamed
from schemas import kinds
from schemas.events import decode_event
from schemas.settings import Settings
from tests.support.processes import BIN, REVERIE
from workers.thinking.runner import Segment, run

LINES = [
    {"type": "summary", "summary": "a session about deploys"},
    {
        "type": "user", "uuid": "u1", "timestamp": "2026-03-01T09:00:00.000Z", "sessionId": "s1",
        "cwd": "/home/u/app", "message": {"role": "user", "content": "Where do we deploy?"},
    },
    {
        "type": "assistant", "uuid": "a1", "timestamp": "2026-03-01T09:00:05.000Z", "sessionId": "s1",
        "cwd": "/home/u/app",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "Nowhere yet."}]},
    },
    {
        "type": "user", "uuid": "u2", "timestamp": "2026-03-01T09:01:00.000Z", "sessionId": "s1",
        "cwd": "/home/u/app",
        "message": {"role": "user", "content": "Remember that we deploy with fly.io from the main branch."},
    },
]  # fmt: skip


@pytest.fixture
def transcript(tmp_path: Path) -> str:
    path = tmp_path / "s1.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in LINES))
    return str(path)


def test_an_imported_event_knows_its_line_and_a_hooks_event_finds_it(transcript: str) -> None:
    events = [e for e in read_transcript(transcript) if isinstance(e, ImportedEvent)]
    lines = {(e.kind, e.line) for e in events}
    assert {(kinds.PROMPT_SUBMITTED, 2), (kinds.ASSISTANT_STOPPED, 3), (kinds.PROMPT_SUBMITTED, 4)} <= lines
    [remember] = [e for e in events if "fly.io" in str(e.payload.get("prompt"))]
    assert locate(transcript, remember.id, remember.kind, remember.payload) == 4
    hooked = {"prompt": remember.payload["prompt"], "session_id": "s1"}  # the hook's event: another id
    assert locate(transcript, "01OTHERID", kinds.PROMPT_SUBMITTED, hooked) == 4
    assert locate(transcript, "01OTHERID", kinds.PROMPT_SUBMITTED, {"prompt": "never said"}) is None
    assert locate(transcript + ".gone", remember.id, remember.kind, remember.payload) is None


def why(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), "why", *args], env=env, capture_output=True, text=True, timeout=60)


def test_why_explains_a_fact_down_to_the_transcript_line(
    transcript: str, settings: Settings, env: dict[str, str]
) -> None:
    folding = Folding(settings)
    try:
        observed = [imported_event(e) for e in read_transcript(transcript) if isinstance(e, ImportedEvent)]
        segment = folding.log.append(observed)
        client = fakeredis.FakeRedis()
        run("extract", Segment(segment, [e.id for e in observed]), client, settings)
        folding.fold(streamed(client))
        [(fact_id, description)] = folding.fold().execute("SELECT fact_id, description FROM facts").fetchall()
    finally:
        folding.close()

    shown = why(env, fact_id)
    assert shown.returncode == 0, shown.stderr
    assert description in shown.stdout and f"{transcript}:4" in shown.stdout

    answer = json.loads(why(env, fact_id[:12], "--json").stdout)  # a prefix only it has will do
    assert (answer["id"], answer["what"], answer["title"]) == (fact_id, "fact", description)
    [asserted] = [d for d in answer["derivations"] if d["kind"] == kinds.FACT_ASSERTED]
    [source] = asserted["caused_by"]
    assert (source["kind"], source["transcript"], source["line"]) == (kinds.PROMPT_SUBMITTED, transcript, 4)
    assert "fly.io" in source["excerpt"]


def test_why_names_what_it_cannot_find(settings: Settings, env: dict[str, str]) -> None:
    before = why(env, "fact:nothing")
    assert before.returncode == 1 and "reverie up" in before.stderr  # no snapshot yet
    folding = Folding(settings)
    try:
        folding.fold([])
    finally:
        folding.close()
    unknown = why(env, "fact:nothing")
    assert unknown.returncode == 1 and "no fact, entity, episode" in unknown.stderr
    assert "Traceback" not in unknown.stderr


def test_why_explains_a_memory_made_by_reverie_remember(
    settings: Settings, env: dict[str, str], tmp_path: Path
) -> None:
    env = {**env, "REDIS_URL": f"unix://{tmp_path}/nobody-listens.sock"}  # spooled, folded below
    said = [*REVERIE, "remember", "--category", "deployment", "kestrel is the staging cluster"]
    remembered = subprocess.run(said, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert remembered.returncode == 0, remembered.stderr
    [path] = spooled(settings.spool_dir, 0)
    event = decode_event(Path(path).read_bytes())
    assert event.id in remembered.stderr  # the id it prints is the memory's
    folding = Folding(settings)
    try:
        folding.fold([event])
    finally:
        folding.close()

    shown = why(env, event.id)
    assert shown.returncode == 0, shown.stderr
    assert "kestrel is the staging cluster" in shown.stdout and "category: deployment" in shown.stdout
    assert f"memory.remembered {event.id}" in shown.stdout and "reverie remember" in shown.stdout
    assert "no derived event names it" not in shown.stdout
    answer = json.loads(why(env, event.id[:20], "--json").stdout)
    assert (answer["what"], answer["title"], answer["details"]["category"]) == (
        "memory", "kestrel is the staging cluster", "deployment",
    )  # fmt: skip
    recorded = answer["recorded"]
    assert (recorded["kind"], recorded["by"], recorded["project"]) == (
        kinds.MEMORY_REMEMBERED, kinds.SOURCE_CLI, str(tmp_path),
    )  # fmt: skip
