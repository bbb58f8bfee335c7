"""What the agent said mid-turn in a live session, read from Claude Code's transcript.

No hook reports the words an agent writes between its tool calls: Stop gives a turn's last words
only. So when a batch holds a turn's end as a hook recorded it (Stop, SubagentStop), the job
`said_in`, which the dispatcher queues, reads the transcript the hook named (the session's, or
the subagent's) as `reverie import` reads it (ingest/transcripts.py), and emits its
`assistant.said` events under the ids the import gives them: read again at the next turn's end,
or imported later, each is kept once by the dispatcher.

Costs: a read of the transcript at each turn's end (a 3 MB transcript: about a second of one core).
"""

import os

import structlog

from ingest.emit import Emitter
from ingest.transcripts import ImportedEvent, read_transcript
from schemas import kinds
from schemas.events import payload_of
from schemas.settings import Settings

log = structlog.get_logger("reverie.transcripts")

# the turn ends whose transcripts hold what was said before them, and the field naming each
TURN_ENDS = {kinds.ASSISTANT_STOPPED: "transcript_path", kinds.SUBAGENT_STOPPED: "agent_transcript_path"}


def said_in(segment: str, ids: list[str]) -> int:
    """The RQ job: emit what was said mid-turn in the transcripts the turn ends `ids` (archived
    in `segment`) name; how many events it emitted (the dispatcher keeps each once)."""
    from rq import get_current_job

    from workers.thinking.runner import batch_events

    job = get_current_job()
    if job is None:
        raise RuntimeError("not in an RQ job")
    ends = [
        e
        for e in batch_events(segment, set(ids))
        if e.source == kinds.SOURCE_CLAUDE_CODE and e.kind in TURN_ENDS
    ]
    named = (getattr(payload_of(e), TURN_ENDS[e.kind]) for e in ends)
    paths = sorted({path for path in named if isinstance(path, str) and os.path.isfile(path)})
    with Emitter(job.connection, kinds.SOURCE_CLAUDE_CODE, spool=Settings.from_env()) as out:
        for path in paths:
            for item in read_transcript(path):
                if isinstance(item, ImportedEvent) and item.kind == kinds.ASSISTANT_SAID:
                    out.emit(item.kind, item.payload, project=item.project, ts=item.ts, event_id=item.id)
        out.flush()
        emitted = out.sent
    log.info("transcripts.said", transcripts=len(paths), emitted=emitted)
    return emitted
