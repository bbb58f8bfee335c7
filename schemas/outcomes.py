"""What a session's steps say of how its work went: the errors it met, which it solved and how,
which it left (its blockers), and its outcome. Deterministic (no model), and read one way by
the episode and the `blocked_by` facts (workers/extraction/, from the events) and by what a new
or resumed session is told (projections/recall/memories.py, from the tables).

A step is a command the session ran, a tool it used, a commit git took, or a prompt of the
user's. An error is a command or a tool that failed, save a look's (`grep` finding nothing, a
file read that is not there: an answer, not something that blocks the work). It is solved when
something after it in the session shows it:
- the same target tried again (the same program and subcommand, `pytest`; the same file
  edited; the same tool): it passed, or it failed without the error's line (the error is gone;
  what fails now is another error, told on its own). A next try that meets the error again is
  the one that tells it;
- when nothing tried it again: a commit, or the user's thanks or approval (schemas/text/verdicts.py)
  with no complaint after it.
What nothing shows solved is a blocker, told as its command and the line that names its error
("`pytest -x` failed: FAILED tests/test_calc.py::test_add - assert 1 == 2"), never the banner
around it; a solved error is told with what solved it ("..., then `pytest -x` passed after
editing calc.py"), never as a blocker.

The outcome is the last word on the work: a check (a test, build or lint) that fails says
failure, one that passes after failing says success, and so do the user's complaint and their
thanks, and a commit says success. Success with something left unresolved (a blocker, or what
the caller knows is, such as a compaction summary's unresolved errors) is partial, and so is a
failure after a commit; nothing telling leaves it unknown. Only what happened counts: a check
that passes without having failed, or the agent saying it is done, tells nothing.
"""

import os
from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from schemas.memory import Outcome
from schemas.text.commands import CHECKS, LOOKS, error_line, signature
from schemas.text.verdicts import Verdict, verdict

Doing = Literal["ran", "used", "committed", "said"]
EDITS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
# the tools that look, and whose failure blocks nothing: a file that is not there, a page that
# did not load, a search with no hit
_LOOKING = frozenset({
    "Read", "Glob", "Grep", "LS", "NotebookRead", "WebFetch", "WebSearch", "ToolSearch", "TodoWrite",
    "TodoRead", "AskUserQuestion", "ExitPlanMode", "EnterPlanMode", "BashOutput", "TaskOutput",
    "KillShell", "KillBash",
})  # fmt: skip
_QUOTED = 200  # characters of an error line told
_PROMPT_QUOTED = 100  # of the user's words
_EDITED = 3  # files an edit names in how an error was solved


class Step(msgspec.Struct, frozen=True):
    """One step of a session, in the session's order: a command it ran (`ran`: `target` its
    program and subcommand, `text` its output or error, `shown` the command as run), another
    tool it used (`used`: `target` what it acted on, `text` its error), a commit git took, or a
    prompt of the user's (`said`: `text` their words)."""

    doing: Doing
    event_id: str = ""
    target: str = ""
    failed: bool = False
    text: str = ""
    shown: str = ""


class Error(msgspec.Struct, frozen=True):
    """An error a session met, and what after it shows it solved ("" while nothing does)."""

    step: Step
    line: str  # the line of its output that names it, as it was
    solved_by: str = ""

    def told(self) -> str:
        """The error as a line: what failed and how, and, when solved, what solved it."""
        said = f"{named(self.step)} failed: {self.line}" if self.line else f"{named(self.step)} failed"
        return f"{said}, then {self.solved_by}" if self.solved_by else said


class Reading(msgspec.Struct, frozen=True):
    """What a session's steps say: its errors, each once (solved or not), and its outcome with
    what told it."""

    errors: list[Error]
    outcome: Outcome
    told_by: str  # the last word on the work, as a line; "" when nothing told
    told_at: str  # the event of that last word; "" when nothing told

    @property
    def blockers(self) -> list[Error]:
        return [e for e in self.errors if not e.solved_by]

    @property
    def solved(self) -> list[Error]:
        return [e for e in self.errors if e.solved_by]


def target(tool: str, given: str) -> str | None:
    """What a tool use acts on, for telling a later try of the same from another: a command's
    program and subcommand (`given` is its key), a file an edit changes (`given` its path), or
    the tool itself; None for a tool that only looks."""
    if tool == "Bash":
        return given or None
    if tool in EDITS:
        return f"edit {given}" if given else "edit"
    return None if tool in _LOOKING else tool


def shown(tool: str, given: str) -> str:
    """How a tool use other than a command is named when it is told: `Edit calc.py`."""
    return f"{tool} {os.path.basename(given.rstrip('/'))}".strip() if tool in EDITS else tool


def read(steps: Sequence[Step], unresolved: bool = False) -> Reading:
    """What `steps` (one session's, in order) say (see the module's docstring); `unresolved`:
    the caller knows of something left unresolved that the steps do not show."""
    said = [n for n, s in enumerate(steps) if s.doing == "said"]
    # a verdict answers the agent's work: the session's first prompt asks, it judges nothing
    verdicts = {n: v for n in said[1:] if (v := verdict(steps[n].text)) is not None}
    # an approval no complaint follows shows what came before it solved
    complained = max((n for n, v in verdicts.items() if v == "complained"), default=-1)
    approved = {n for n, v in verdicts.items() if v == "approved" and n > complained}
    tried_again, vouched = _tried_again(steps), _vouched(steps, approved)
    met = (_error(steps, n, tried_again.get(n), vouched[n]) for n in range(len(steps)))
    errors = [e for e in met if e is not None]
    last, told_by, told_at = _last_word(steps, verdicts)
    committed = any(s.doing == "committed" for s in steps)
    left = unresolved or any(not e.solved_by for e in errors)
    outcome: Outcome
    if last == "success":
        outcome = "partial" if left else "success"
    elif last == "failure":
        outcome = "partial" if committed else "failure"
    else:
        outcome = "unknown"
    return Reading(_once(errors), outcome, told_by, told_at)


def _error(steps: Sequence[Step], n: int, again: int | None, vouched: int | None) -> Error | None:
    """The error step `n` met, if it met one the steps after it do not tell instead, with what
    shows it solved; `again`: the next step that tries the same; `vouched`: the next commit, or
    approval no complaint follows."""
    step = steps[n]
    if not step.failed or step.doing not in ("ran", "used") or not step.target or step.target in LOOKS:
        return None
    line = error_line(step.text)
    if again is not None:
        then = steps[again]
        if then.failed and (signature(then.text) == signature(step.text) or (line and line in then.text)):
            return None  # met again: the later try tells it
        how = ("passed" if then.doing == "ran" else "succeeded") if not then.failed else "no longer showed it"
        return Error(step, _quoted(line), f"{named(then)} {how}{_edits(steps[n + 1 : again])}")
    if (m := vouched) is not None:
        if steps[m].doing == "committed":
            return Error(
                step, _quoted(line), f"a commit followed: {steps[m].text}" if steps[m].text else "a commit"
            )
        return Error(step, _quoted(line), f"the user approved: {_quoted(steps[m].text, _PROMPT_QUOTED)}")
    return Error(step, _quoted(line))


def named(step: Step) -> str:
    """A step as it is told: a command as it was run, in backquotes; a tool and what it acted on."""
    return f"`{step.shown}`" if step.doing == "ran" else step.shown


def _vouched(steps: Sequence[Step], approved: set[int]) -> list[int | None]:
    """For each step, the first after it that says the work was done: a commit, or an approval
    (`approved`); one pass, from the end."""
    found: list[int | None] = [None] * len(steps)
    following: int | None = None
    for n in range(len(steps) - 1, -1, -1):
        found[n] = following
        if steps[n].doing == "committed" or n in approved:
            following = n
    return found


def _tried_again(steps: Sequence[Step]) -> dict[int, int]:
    """For each step that tried something, the next step that tries the same (the same target),
    if one does: one pass, from the end."""
    found: dict[int, int] = {}
    latest: dict[tuple[str, str], int] = {}
    for n in range(len(steps) - 1, -1, -1):
        step = steps[n]
        if step.doing in ("ran", "used") and step.target:
            if (later := latest.get((step.doing, step.target))) is not None:
                found[n] = later
            latest[(step.doing, step.target)] = n
    return found


def _edits(between: Sequence[Step]) -> str:
    """The files edited in `between` (before the try that passed), as how an error was solved."""
    files = list(dict.fromkeys(s.shown.split(" ", 1)[-1] for s in between if _edited(s)))
    if not files:
        return ""
    more = f" and {len(files) - _EDITED} more" if len(files) > _EDITED else ""
    return f" after editing {', '.join(files[:_EDITED])}{more}"


def _edited(step: Step) -> bool:
    return step.doing == "used" and step.target.startswith("edit") and not step.failed


def _last_word(steps: Sequence[Step], verdicts: Mapping[int, Verdict]) -> tuple[str | None, str, str]:
    """The last step that tells how the work went: success or failure, as a line, and its event."""
    failed_before: set[str] = set()
    last: tuple[str | None, str, str] = (None, "", "")
    for n, step in enumerate(steps):
        if step.doing == "ran" and CHECKS.match(step.target):
            if step.failed:
                failed_before.add(step.target)
                last = ("failure", f"{named(step)} failed", step.event_id)
            elif step.target in failed_before:
                last = ("success", f"{named(step)} passed after failing", step.event_id)
        elif step.doing == "committed":
            last = ("success", f"a commit: {step.text}" if step.text else "a commit", step.event_id)
        elif (said := verdicts.get(n)) is not None:
            how = "approved" if said == "approved" else "said it does not work"
            worded = f"the user {how}: {_quoted(step.text, _PROMPT_QUOTED)}"
            last = ("success" if said == "approved" else "failure", worded, step.event_id)
    return last


def _once(errors: list[Error]) -> list[Error]:
    """Each error told once: its last meeting (the same command failing the same way twice is
    one error)."""
    kept: dict[tuple[str, str, bool], Error] = {}
    for error in errors:
        key = (error.step.target, error.line, bool(error.solved_by))
        kept.pop(key, None)
        kept[key] = error
    return list(kept.values())


def _quoted(line: str, most: int = _QUOTED) -> str:
    """A line as told: its words, cut to `most` characters."""
    line = " ".join(line.split())
    return line if len(line) <= most else line[: most - 1] + "…"
