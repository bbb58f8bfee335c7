"""What a session's commands say of its errors: each failure, by a normalized signature, and
what fixed it: a later success of the same command (it passed: a run that failed otherwise is
no success), the fix being the edits and commands in between.

A command failed when Claude Code says so (`tool.failed`, "Exit code 1"), or when a test or
build run's output says so though its exit status was lost to a pipe (`pytest ... | tail`).
How a command and its output are read (the same command, a signature, the line that names an
error) is schemas/text/commands.py's, which the projections read the tables with too.
"""

import contextlib
from collections.abc import Iterable, Iterator

import msgspec

from schemas.events import Event
from schemas.text.commands import (
    CHECKS,
    LOOKS,
    command_key,
    error_line,
    failed_by_its_output,
    first_line,
    shown,
    signature,
)
from schemas.text.harness import cancelled, clean
from workers.evidence.tool_uses import tool_uses

# what the families read here, though schemas/text/commands.py says it (one way to read a command)
__all__ = [
    "CHECKS",
    "Fixed",
    "Run",
    "as_run",
    "command_key",
    "error_line",
    "fixes",
    "output_of",
    "runs",
    "signature",
]

_EDITS = {"Edit", "Write", "MultiEdit", "NotebookEdit"}


class Run(msgspec.Struct, frozen=True):
    """A command the session ran: its key, whether it failed, what it printed."""

    event_id: str
    key: str
    command: str
    failed: bool
    output: str


class Fixed(msgspec.Struct, frozen=True):
    """A failure, and what the session did before the same command passed (`then`: that run;
    None if it never passed again in the session)."""

    failure: Run
    signature: str
    then: Run | None
    edited: tuple[str, ...]
    ran: tuple[str, ...]  # the commands run in between, and the one that ran instead, if it changed
    between: tuple[str, ...]  # the events of the fix: its edits and commands, and the run after it


def runs(events: Iterable[Event]) -> Iterator[Run]:
    """Every shell command among `events`, in order."""
    for use in tool_uses(events):
        command = use.given.get("command")
        if use.name != "Bash" or not isinstance(command, str) or not (key := command_key(command)):
            continue
        output = output_of(use.payload.get("error") if use.failed else use.payload.get("tool_response"))
        if cancelled(output):
            continue  # Claude Code cancelled it, or the user said no: nothing ran
        hidden = failed_by_its_output(key, output)
        yield Run(use.event.id, key, command, use.failed or hidden, output)


def output_of(response: object) -> str:
    """What a command's response or error says, cleaned: its stdout and stderr when it has them.
    An error the projections hold as text (the `errors` table: a dict as JSON) reads alike; any
    other text stays as it is, JSON or not."""
    if isinstance(response, str) and response.startswith("{"):
        with contextlib.suppress(msgspec.DecodeError):
            decoded = msgspec.json.decode(response)
            if isinstance(decoded, dict) and ("stdout" in decoded or "stderr" in decoded):
                response = decoded
    if isinstance(response, dict):
        response = "\n".join(str(response.get(k) or "") for k in ("stdout", "stderr"))
    return clean(response) if isinstance(response, str) else ""


def fixes(events: list[Event]) -> Iterator[Fixed]:
    """Each failure of `events` (one session's, in order), and what fixed it if anything did: the
    next run of the same command that passed, the fix being what was done in between. A fix is
    only a fix once its check passed: a run that still failed, however otherwise, fixes nothing
    (`then` stays None until one passes). A failure the next run meets again is that run's to
    fix."""
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    at = {e.id: i for i, e in enumerate(ordered)}
    all_runs = list(runs(ordered))
    for n, run in enumerate(all_runs):
        if not run.failed or not (said := signature(run.output)):
            continue
        later = [r for r in all_runs[n + 1 :] if r.key == run.key]
        if later and later[0].failed and signature(later[0].output) == said:
            continue
        passed = next((r for r in later if not r.failed), None)
        if passed is None:
            yield Fixed(run, said, None, (), (), ())
            continue
        window = ordered[at[run.event_id] + 1 : at[passed.event_id]]
        edits = [u for u in tool_uses(window) if u.name in _EDITS]
        ran = [r for r in runs(window) if r.key != run.key and r.key not in LOOKS]
        edited = tuple(dict.fromkeys(p for u in edits if isinstance(p := u.given.get("file_path"), str)))
        commands = tuple(dict.fromkeys(first_line(r.command) for r in ran))
        if passed.command != run.command:
            commands += (first_line(passed.command),)
        between = tuple(
            dict.fromkeys([*(u.event.id for u in edits), *(r.event_id for r in ran), passed.event_id])
        )
        yield Fixed(run, said, passed, edited, commands, between)


def as_run(run: Run) -> str:
    """The command as a lesson names it: as it was run (its first line, without what filters its
    output), or its key when that line is long or a heredoc's."""
    return shown(run.command, run.key)
