"""`reverie import`: transcripts -> events -> the running stack, with progress, then a summary."""

import os
import time

import redis
from rq import Queue

from ingest.claude_memory import Place
from ingest.dead_letters import write_dead_letter
from ingest.emit import Emitter, Rejected
from ingest.project import ROOT_FIELD, first_sight, mark
from ingest.transcripts import BadLine, Places, find_transcripts, read_transcript
from projections.event_log import EventLog
from projections.sql import connect as sql_connect
from projections.sql import query
from reverie.background_import import Tracker
from reverie.console import fail, out, print_rows, progress_bar, warn_quarantined
from schemas.kinds import PROJECT_IDENTIFIED, SOURCE_IMPORT
from schemas.settings import QUEUE, Settings
from workers.claude_memory import import_places
from workers.redis_client import connect
from workers.status import stack_status
from workers.thinking import runner
from workers.thinking.registry import named


def import_transcripts(paths: list[str], wait: bool = True) -> int:
    settings = Settings.from_env()
    roots = [os.path.expanduser(p) for p in paths]
    if missing := [r for r in roots if not os.path.exists(r)]:
        return fail(
            f"no such file or folder: {', '.join(missing)}. Claude Code keeps its transcripts in "
            "~/.claude/projects; give the transcripts to import as PATH."
        )
    files = [f for root in roots for f in find_transcripts(root)]
    if not files:
        return fail(f"no transcripts (*.jsonl) under {', '.join(roots)}")
    client = connect(settings, timeout=2.0)
    try:
        client.ping()
    except (redis.RedisError, OSError):
        return fail(f"cannot reach Redis at {settings.redis_shown}: start reverie with `reverie up --detach`")

    known = EventLog(settings.event_log_dir, warn_quarantined).archived_ids()
    live = _sessions_recorded_live(settings)
    seen = bad = skipped = 0
    imported: set[str] = set()  # the sessions this import brought events of
    places: Places = {}  # where each session began, across its transcripts
    worktrees: dict[str, str] = {}  # each worktree root the events name, and its project
    tracker = Tracker(settings, len(files))  # for `reverie status`
    with progress_bar() as progress, Emitter(client, SOURCE_IMPORT) as emitter:
        task = progress.add_task("reading transcripts", total=len(files))
        for path in files:
            for item in read_transcript(path, places):
                if isinstance(item, BadLine):
                    bad += 1
                    reason = f"{item.path}:{item.line}: {item.reason}"
                    write_dead_letter(settings.dead_letter_dir, "import", reason, item.data)
                    continue
                seen += 1
                if isinstance(root := item.payload.get(ROOT_FIELD), str) and root not in worktrees:
                    worktrees[root] = item.project
                if item.session_id in live:
                    skipped += 1
                    continue
                if item.id in known:
                    continue
                known.add(item.id)
                try:
                    emitter.emit(item.kind, item.payload, project=item.project, ts=item.ts, event_id=item.id)
                    imported.add(item.session_id or "")
                except Rejected as e:
                    bad += 1
                    reason = f"{path}: {item.kind} at {item.ts}: {e}"
                    write_dead_letter(settings.dead_letter_dir, "import", reason, repr(item.payload).encode())
            emitter.flush()
            progress.advance(task)
            tracker.advance(seen, emitter.sent)
        identified = _identify(settings, emitter, worktrees)
    sent = emitter.sent - identified
    tracker.finish(seen, sent)
    out.print(
        f"{len(files)} transcripts: {seen} events, {sent} new, {seen - sent - skipped} already in the log"
        + (f", {skipped} from sessions the hooks recorded live" if skipped else "")
        + (f", {bad} unreadable lines kept as dead letters" if bad else "")
    )
    # Claude Code's own memory files (CLAUDE.md, rules, auto memory) of the worktrees on this disk
    here = [Place(project, root) for root, project in sorted(worktrees.items()) if os.path.isdir(root)]
    if read := import_places(settings, here, client):
        out.print(f"{read} sections of Claude Code's memory files read anew")
    if wait and emitter.sent + read and not wait_until_archived(settings, emitter.sent + read):
        return fail("the dispatcher has not archived everything yet; see `reverie status`")
    think_over(client, imported)
    if wait:
        _summary(settings)
    return 0


def think_over(client: "redis.Redis", sessions: set[str]) -> None:
    """Have the workers draw each imported session's episode: an imported session is a finished
    one, whether or not it said it ended."""
    queue = Queue(QUEUE, connection=client)
    for session_id in sorted(sessions - {""}):
        runner.enqueue(queue, named("episodes"), runner.Session(session_id))


def _identify(settings: Settings, emitter: Emitter, roots: dict[str, str]) -> int:
    """Say which project each root on this disk belongs to, the first time it is seen in
    another's (as the hook does): what was recorded under the path folds under the project.
    How many."""
    said = 0
    for root, project in sorted(roots.items()):
        if os.path.isdir(root) and (marker := first_sight(settings.identified_dir, root, project)):
            emitter.emit(PROJECT_IDENTIFIED, {"root": root, "project": project}, project=project)
            emitter.flush()
            mark(marker, project)
            said += 1
    return said


def _sessions_recorded_live(settings: Settings) -> set[str]:
    db = sql_connect(settings)
    rows = query(db, "SELECT DISTINCT session_id FROM events WHERE source = 'claude-code'").rows
    return {row[0] for row in rows if row[0]}


def wait_until_archived(settings: Settings, sent: int, timeout: float = 300) -> bool:
    deadline = time.monotonic() + timeout
    with progress_bar() as progress:
        task = progress.add_task("archiving", total=sent)
        while time.monotonic() < deadline:
            state = stack_status(settings)
            waiting = (state.lag or 0) + (state.pending or 0)
            progress.update(task, completed=max(0, sent - waiting))
            if state.reachable and waiting == 0:
                progress.update(task, completed=sent)
                return True
            time.sleep(0.2)
    return False


def _summary(settings: Settings) -> None:
    db = sql_connect(settings)
    result = query(
        db,
        "SELECT kind, count(*) AS events, count(DISTINCT session_id) AS sessions, "
        "count(DISTINCT project) AS projects, strftime(min(ts), '%Y-%m-%d') AS first, "
        "strftime(max(ts), '%Y-%m-%d') AS last "
        "FROM events GROUP BY kind ORDER BY events DESC",
    )
    out.print("[bold]The event log now holds:[/]")
    print_rows(result.columns, result.rows)
