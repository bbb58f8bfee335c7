"""`reverie import`: transcripts -> events -> the running stack, with progress, then a summary."""

import os
import time

import redis

from ingest.dead_letters import write_dead_letter
from ingest.transcripts import BadLine, find_transcripts, read_transcript
from projections.event_log import EventLog
from projections.sql import connect as sql_connect
from projections.sql import query
from reverie.console import fail, out, print_rows, progress_bar
from schemas.settings import Settings
from workers.dispatcher import append_to_stream
from workers.redis_client import connect
from workers.status import stack_status

_BATCH = 500


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
        return fail(f"cannot reach Redis at {settings.redis_url}: start reverie with `reverie up --detach`")

    known = EventLog(settings.event_log_dir).archived_ids()
    live = _sessions_recorded_live(settings)
    sent = seen = bad = skipped = 0
    with progress_bar() as progress:
        task = progress.add_task("reading transcripts", total=len(files))
        for path in files:
            batch: list[bytes] = []
            for item in read_transcript(path):
                if isinstance(item, BadLine):
                    bad += 1
                    write_dead_letter(
                        settings.dead_letter_dir,
                        "import",
                        f"{item.path}:{item.line}: {item.reason}",
                        item.data,
                    )
                    continue
                seen += 1
                if item.session_id in live:
                    skipped += 1
                    continue
                if item.id in known:
                    continue
                known.add(item.id)
                batch.append(item.data)
                if len(batch) >= _BATCH:
                    append_to_stream(client, batch)
                    sent += len(batch)
                    batch = []
            append_to_stream(client, batch)
            sent += len(batch)
            progress.advance(task)
    out.print(
        f"{len(files)} transcripts: {seen} events, {sent} new, {seen - sent - skipped} already in the log"
        + (f", {skipped} from sessions the hooks recorded live" if skipped else "")
        + (f", {bad} unreadable lines kept as dead letters" if bad else "")
    )
    if wait and sent and not _wait_until_archived(settings, sent):
        return fail("the dispatcher has not archived everything yet; see `reverie status`")
    if wait:
        _summary(settings)
    return 0


def _sessions_recorded_live(settings: Settings) -> set[str]:
    db = sql_connect(settings)
    rows = query(db, "SELECT DISTINCT session_id FROM events WHERE source = 'claude-code'").rows
    return {row[0] for row in rows if row[0]}


def _wait_until_archived(settings: Settings, sent: int, timeout: float = 300) -> bool:
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
