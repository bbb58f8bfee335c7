"""`reverie stash` and the MCP tool memory_stash: where the current session stands (its goal,
the decisions, the open threads, the next steps, the files it touched), kept in
`.claude/stash/NAME.md` at the project's root and as a `session.stashed` event, which CLAUDE.md's
memory section lists among its recent episodes (`reverie curate`).

Read from the session's own events (projections/stashing.py), deterministically; worded by the
LLM when one is configured (workers/stashes.py, within its daily budget; what it cost recorded as
`llm.used`; the stash read from the events stands when it cannot). The current
session is the project's one that went on last (the one a `/reverie:stash` is typed in), unless
one is named. The event goes to the stack, or to the spool while it is down: nothing is lost.
"""

import os
import re
from datetime import UTC, datetime

import msgspec

from ingest.emit import Worker
from reverie.project_files import write_all
from schemas import kinds
from schemas.observed import SessionStashed
from schemas.settings import Settings

STASH_DIR = os.path.join(".claude", "stash")
WORDING = Worker("stash", 1)  # who derives what wording a stash cost (`llm.used`)
FOLDED_WITHIN = 15.0  # seconds a stash waits for what was recorded before it to be folded
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


class Stashed(msgspec.Struct, frozen=True):
    stash: SessionStashed
    path: str
    event_id: str
    went_to: str


def stash(
    settings: Settings, project: str, root: str, name: str | None, session_id: str | None, source: str
) -> Stashed:
    """Stash where `session_id` (or `project`'s latest session) stands as `name` (or the day and
    the session's first characters), once the snapshot holds what was recorded before the call
    (the prompt asking for it may be the first of a resumed session: it makes that session the
    latest). ValueError for a name that is no file name, or when the project has no session yet;
    NoSnapshot before the projector's first snapshot."""
    from ingest.emit import Emitter
    from projections.sql import connect
    from projections.stashing import latest_session, standing, turns
    from reverie.folded import holds_what_was_recorded
    from workers.llm.config import configured
    from workers.redis_client import connect as redis_of
    from workers.stashes import with_llm
    from workers.thinking.reading import tokens_today

    if name is not None and not _NAME.fullmatch(name):
        raise ValueError(f"{name!r}: a stash's name is letters, digits, '.', '_' and '-' (80 at most)")
    llm = configured(settings)
    used, cause = None, None
    holds_what_was_recorded(settings, timeout=FOLDED_WITHIN)  # else it stashes what the snapshot has
    db = connect(settings, snapshot_required=True, files=False)
    try:
        session_id = session_id or latest_session(db, project)
        if session_id is None:
            raise ValueError(f"no session of {project} is recorded yet: nothing to stash")
        now = datetime.now(UTC)
        name = name or f"{now:%Y-%m-%d}-" + re.sub(r"[^A-Za-z0-9._-]", "-", session_id[:8])
        stand = standing(db, project, session_id, name)
        if llm is not None:
            said, cause = turns(db, session_id)
            if said:
                worded, used = with_llm(llm, stand, said, tokens_today(db))
                stand = worded or stand
    finally:
        db.close()
    path = os.path.join(root, STASH_DIR, f"{name}.md")
    write_all({path: markdown(stand, project, now)}, root)
    with Emitter(redis_of(settings, timeout=2.0), source, WORDING, spool=settings) as out:
        if used is not None and cause is not None:
            out.emit(kinds.LLM_USED, used, project=project, session_id=session_id, caused_by=(cause,))
        event_id = out.emit(kinds.SESSION_STASHED, stand, project=project, session_id=session_id)
    return Stashed(stand, path, event_id, out.went_to)


def markdown(stand: SessionStashed, project: str, at: datetime) -> str:
    """The stash as its file says it."""
    worded = f", worded by {stand.worded_by}" if stand.worded_by else ""
    lines = [
        f"# Stash: {stand.name}",
        "",
        f"_Session {stand.session_id} of {project}, stashed {at:%Y-%m-%d %H:%M} UTC{worded}._",
    ]
    parts = (
        ("Goal", [stand.goal] if stand.goal else []),
        ("Decisions", stand.decisions),
        ("Open threads", stand.open_threads),
        ("Next steps", stand.next_steps),
        ("Files", stand.files),
    )
    for heading, items in parts:
        lines += ["", f"## {heading}", *([f"- {' '.join(i.split())}" for i in items] or ["(none)"])]
    return "\n".join(lines) + "\n"


def stash_command(name: str | None, project_value: str | None, session_id: str | None) -> int:
    """`reverie stash`."""
    from projections.sql import NoSnapshot
    from reverie.console import err, fail, out
    from reverie.recalling import place_named
    from reverie.remembering import current_place

    project, root = place_named(project_value) if project_value else current_place()
    if root is None:
        return fail(f"--project {project_value}: no such folder; give the project's folder")
    try:
        done = stash(Settings.from_env(), project, root, name, session_id, kinds.SOURCE_CLI)
    except NoSnapshot:
        return fail(
            "nothing to stash yet: memory has no snapshot (start the stack with `reverie up --detach`)"
        )
    except (ValueError, OSError) as e:
        return fail(str(e))
    with open(done.path, encoding="utf-8") as written:
        out.print(written.read(), end="", highlight=False, markup=False)
    later = "; the stack is down: the event is spooled until `reverie up`" if done.went_to == "spool" else ""
    err.print(f"stashed as {done.path}: event {done.event_id}{later}", highlight=False, markup=False)
    return 0
