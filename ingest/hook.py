"""`reverie hook [EVENT]`: one Claude Code hook payload on stdin becomes one event in the stream.

The agent never waits and nothing is lost. Whatever arrives and whatever state Redis is in,
the hook exits 0 and prints nothing but, for UserPromptSubmit, SessionStart and SubagentStart,
the memories to inject (ingest/injection.py); Stop and PreCompact tell the recall service to keep
the session's compaction manifest, waiting for nothing: a payload it can read is redacted, cut to size and
appended to the stream (or, if Redis cannot take it within its deadline, to the spool); a
payload it cannot read becomes a dead letter with the reason. Run by a person (`--help`, any
option, a terminal on stdin), it prints its usage and records nothing: no event name starts with
"-", and Claude Code always pipes a payload. Standard library only.
"""

from __future__ import annotations

import gc
import os
import sys

from ingest.envelope import Rejected, encode_event
from ingest.injection import CONTEXT_HOOKS, MANIFEST_HOOKS, context_for, hook_output, tell
from ingest.project import (
    ROOT_FIELD,
    UNKNOWN_PROJECT,
    first_sight,
    keep_place,
    kept_place,
    launch_folder,
    mark,
    place_of,
)
from ingest.resp import Connection
from ingest.truncate import MAX_INPUT, loads, loads_head
from schemas.ids import new_event_id, utc_now_iso
from schemas.kinds import HOOK_KINDS, PROJECT_IDENTIFIED, SOURCE_CLAUDE_CODE
from schemas.settings import HOOKS_OFF, STREAM, Settings

DEADLINE_S = 5.0

TYPE_CHECKING = False
if TYPE_CHECKING:
    import signal as _signal
else:  # the C module under `signal`, whose import builds enums the hook never reads
    import _signal
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, BinaryIO

    Environ = Mapping[str, str]


def parse_payload(raw: bytes, hook_name: str | None, whole: bool = True) -> tuple[str, dict[str, Any]]:
    """The event kind and the payload, or Rejected with the reason. Nesting past MAX_DEPTH is
    cut; if `raw` is not `whole` but the first MAX_INPUT bytes of a larger payload, what they
    hold is kept, marked as cut."""
    if not raw.strip():
        raise Rejected("empty input: a hook expects one JSON object on stdin")
    if whole:
        try:
            payload = loads(raw)
        except ValueError as e:
            raise Rejected(f"not JSON: {e}") from None
    else:
        payload = loads_head(raw, f"the payload ran past {MAX_INPUT} bytes: the rest is cut")
    if not isinstance(payload, dict):
        larger = "" if whole else f"larger than {MAX_INPUT} bytes, "
        raise Rejected(f"{larger}expected a JSON object, got {type(payload).__name__}")
    name = hook_name or payload.get("hook_event_name")
    if not isinstance(name, str) or not name:
        raise Rejected("no hook event name: give it as `reverie hook EVENT` or in hook_event_name")
    kind = HOOK_KINDS.get(name)
    if kind is None:
        raise Rejected(f"unknown hook event {name!r}; known: {', '.join(sorted(HOOK_KINDS))}")
    for field in ("session_id", "agent_id"):
        if payload.get(field) is not None and not isinstance(payload[field], str):
            raise Rejected(f"{field} must be a string, got {type(payload[field]).__name__}")
    return kind, payload


def deliver(settings: Settings, event_id: str, data: bytes, *before: tuple[str, bytes]) -> str:
    """Append the event (after the events `before`, as (id, data)) to the stream, or to the
    spool if Redis cannot take it; where it went."""
    try:
        with Connection(settings.redis_url, own=settings.embedded) as redis:
            for _, earlier in before:
                redis.command("XADD", STREAM, "*", "e", earlier)
            redis.command("XADD", STREAM, "*", "e", data)
        return "stream"
    except Exception:  # unreachable, slow, refusing, misconfigured, out of time: the spool takes it
        _disarm()  # the spool write must not be cut short by the watchdog
        from ingest.spool import spool_event  # here, as the dead letter below: most hooks need neither

        for earlier_id, earlier in before:  # (one the stream took already is kept once: same id)
            spool_event(settings, earlier_id, earlier)
        spool_event(settings, event_id, data)
        return "spool"


def place(settings: Settings, payload: dict[str, Any], environ: Environ) -> tuple[str, str]:
    """(project, worktree root) of the event `payload` is (ingest/project.py): its session's
    project is where the session began, kept by its first hook. Whatever goes wrong finding
    it, the event is recorded: under the folder it names, as it is written."""
    try:
        return _place(settings, payload, environ)
    except Exception:
        return launch_folder(payload, environ) or UNKNOWN_PROJECT, ""


def _place(settings: Settings, payload: dict[str, Any], environ: Environ) -> tuple[str, str]:
    session = payload.get("session_id")
    began = kept_place(settings.sessions_dir, session) if session else None
    project, root = place_of(payload, environ, began)
    if session and began is None and project != UNKNOWN_PROJECT:
        kept = keep_place(settings.sessions_dir, session, (project, root))
        if kept != (project, root):  # another hook of the session came first
            project, root = place_of(payload, environ, kept)
    return project, root


def _read(stdin: BinaryIO | None) -> bytes:
    """The payload, or its first MAX_INPUT + 1 bytes if it is larger (what follows is not read)."""
    if stdin is None or stdin.isatty():
        raise Rejected("no payload: stdin is not a pipe (Claude Code sends the payload on stdin)")
    return stdin.read(MAX_INPUT + 1)


class OutOfTime(Exception):
    """The hook's whole deadline passed."""


def _out_of_time(signum: int, frame: object) -> None:
    raise OutOfTime(f"the hook ran out of its {DEADLINE_S:g} s")


def _disarm() -> None:
    _signal.setitimer(_signal.ITIMER_REAL, 0)


def handle_hook(argv: list[str], stdin: BinaryIO | None, environ: Environ) -> tuple[str, bytes]:
    """Record the event (where it went: stream, spool or dead-letter), and what to print:
    recalled memories for UserPromptSubmit and SessionStart, else nothing."""
    settings = Settings.from_env(environ)
    raw = b""
    try:
        raw = _read(stdin)
        whole = len(raw) <= MAX_INPUT
        raw = raw[:MAX_INPUT]
        kind, payload = parse_payload(raw, argv[0] if argv else None, whole)
        now = utc_now_iso()
        project, root = place(settings, payload, environ)
        if root:
            payload[ROOT_FIELD] = root
        # the first time this root (a folder here) is seen as another's project, say so first
        marker = first_sight(settings.identified_dir, root, project) if root else None
        if marker is not None and not os.path.isdir(root):
            marker = None
        identified: tuple[tuple[str, bytes], ...] = ()
        if marker is not None:
            found = {"root": root, "project": project}
            found_id = new_event_id()
            found_data = encode_event(
                PROJECT_IDENTIFIED,
                found,
                event_id=found_id,
                ts=now,
                recorded_at=now,
                project=project,
                source=SOURCE_CLAUDE_CODE,
            )
            identified = ((found_id, found_data),)
        event_id = new_event_id()
        data = encode_event(
            kind,
            payload,
            event_id=event_id,
            ts=now,
            recorded_at=now,
            project=project,
            source=SOURCE_CLAUDE_CODE,
        )
        where = deliver(settings, event_id, data, *identified)
        if marker is not None:
            mark(marker, project)
        if where == "stream" and not settings.embedded:  # the embedded stack's dispatcher drains the spool
            from ingest.spool import deliver_later

            deliver_later(settings, environ)
        hook = argv[0] if argv else payload.get("hook_event_name")
        if hook in CONTEXT_HOOKS:
            return where, hook_output(hook, context_for(settings, hook, payload, project))
        if hook in MANIFEST_HOOKS:
            tell(settings, hook, payload, project)
        return where, b""
    except (Rejected, OutOfTime) as e:
        reason = str(e)
    except Exception as e:  # a bug or a full disk: keep the input and the reason all the same
        reason = f"internal error: {e!r}"
    _disarm()
    from ingest.dead_letters import write_dead_letter

    write_dead_letter(settings.dead_letter_dir, "hook", reason, raw, argv)
    return "dead-letter", b""


def run_by_hand(argv: list[str], stdin: BinaryIO | None) -> bool:
    """Whether a person ran the hook rather than Claude Code: an option (no event name starts
    with "-"), or a terminal on stdin, where Claude Code always pipes a payload."""
    return any(arg[:1] == "-" for arg in argv) or (stdin is not None and stdin.isatty())


def usage() -> str:
    """What `reverie hook --help` says (only a person asks: `textwrap` costs no hook)."""
    import textwrap

    said = (
        "The hook Claude Code runs for each event of a session (`reverie install claude-code` writes "
        "it into Claude Code's settings). Claude Code sends one JSON payload on stdin; the hook records "
        "it as an event (in Redis, else the spool), prints the memories to inject for "
        "UserPromptSubmit, SessionStart and SubagentStart, and always exits 0. EVENT defaults to the "
        f"payload's hook_event_name; the events it knows: {', '.join(HOOK_KINDS)}.",
        "Run by hand (an option such as --help, or a terminal on stdin), it prints this and records nothing.",
    )
    return (
        "usage: reverie hook [EVENT] < PAYLOAD\n\n" + "\n\n".join(textwrap.fill(p, 92) for p in said) + "\n"
    )


def main(argv: list[str]) -> int:
    """The hook's entry point: always 0, never a word on stdout but the memories it injects (or,
    run by hand, its usage)."""
    try:
        stdin = getattr(sys.stdin, "buffer", None)
        if run_by_hand(argv, stdin):  # nothing to record: no dead letter a person's --help would leave
            sys.stdout.write(usage())
            sys.stdout.flush()
            return 0
        if os.environ.get(HOOKS_OFF):  # a Claude Code reverie runs itself: nothing to record
            return 0
        # A closed terminal hangs up on every process of the session, and Claude Code may end
        # the hooks it runs as it exits: the event is recorded all the same, within the
        # watchdog's deadline.
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        _signal.signal(_signal.SIGHUP, _signal.SIG_IGN)
        # A watchdog for what no socket timeout bounds (a DNS lookup, a stdin never closed): once
        # it fires, the event goes to the spool, or the input to a dead letter, and we return.
        _signal.signal(_signal.SIGALRM, _out_of_time)
        _signal.setitimer(_signal.ITIMER_REAL, DEADLINE_S)
        # A process this short has no cycles worth collecting, and collecting among the
        # millions of values a payload may hold would cost seconds.
        gc.disable()
        try:
            _, output = handle_hook(argv, stdin, os.environ)
        finally:
            _disarm()
        if output:
            sys.stdout.buffer.write(output)
            sys.stdout.flush()
    except BaseException:  # even if the dead letter failed (no disk?), the agent must go on
        pass
    return 0
