"""When something remembered updates what was remembered before: the same words about the same
subject, with a changed value. "Install dependencies with `npm ci` before running the tests",
then "Install dependencies with `pnpm install --frozen-lockfile` before running the tests": the
agent must be handed one command, the newer. The older is superseded (`memory.superseded`,
folded with what was forgotten: it leaves recall and CLAUDE.md, and stays in the log and in
`reverie sql "select * from remembered"`).

Remembered memories are not facts (the table `remembered`, each the user's or the agent's own
words, never reworded): extraction's settling, which reads a fact's subject and relation, has
none to read. What makes two of them one statement is read from their words, deterministically
and precisely, so that two memories about different subjects stay two however many words they
share:

1. **The same frame.** Their words aligned (difflib, case aside, backticks and the punctuation
   around a word aside), what both say, the frame, holds `FRAME` content words at least (as
   recall reads words: projections/recall/words.py): the subject.
2. **Only values differ.** Every span where they differ is a value on both sides, at most
   `VALUE_WORDS` words: one holding a word shaped like code (a digit, a path, a flag, a dotted,
   snake_case or camelCase name, an `@`, a `$`), a whole span between backticks, or whatever
   follows a word that introduces a value (`with`, `using`, `via`, `use`, `is`, `=`...; `run`
   too, where one side is shaped like code: "run npm ci" for "run pnpm install
   --frozen-lockfile", but not "run unit tests" for "run integration tests"). A span
   of stop words alone ("the") is wording, not a change; a span holding a negation ("not",
   "never") is no value: it turns the statement, and both stay.

So "run unit tests with pytest -q" and "run the linter with ruff check" stay two (they share
one content word, "run", and "unit tests" is no value), as do "The API runs on port 8080" and
"The admin API runs on port 9090" ("admin" is no value); "Use Node 18 for the build" is
updated by "Use Node 20 for the build".

Only memories of one project, scope, agent and outcome are compared (a subagent's own memory,
or an anti-pattern, is not the same statement as a rule for everyone). Of two that match, the
later (by time, then id) supersedes the earlier, whichever arrived first: a memory imported
late is superseded by the newer one already standing. The derived event's id follows from the
two memories (its causes), so two runs, or two machines, emit it once. What the job compares
against is the snapshot's standing memories and the batch's own, as settling does for facts.
"""

import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime

import duckdb
import msgspec

from projections.recall.words import NEGATIONS, word_set
from schemas import kinds, memory, observed
from schemas.events import Event
from workers.thinking.follower import Derived

FRAME = 2  # content words both say, at least: what the memory is about
VALUE_WORDS = 8  # words a changed value spans, at most, on either side
# words after which what follows is a value: "install with X", "the cluster is X", "port = X"
_INTRODUCING = frozenset([
    "with", "using", "via", "use", "uses", "is", "are", "was", "were", "be", "becomes", "=", "at", "in",
    "into",
])  # fmt: skip
# words after which what follows is a command, or what a command does: "run npm ci", but also "run
# unit tests": a value there only where one side of the change is shaped like code
_RUNNING = frozenset(["run", "runs", "running", "execute", "executes", "call", "invoke"])
# shaped like code: a digit, a path or a dotted name, a flag, snake_case, camelCase, @, $, ~
_CODE = re.compile(r"\d|[/\\._=@$~]|^-{1,2}\w|[a-z][A-Z]")
_BACKTICKED = re.compile(r"`([^`]*)`")
_EDGES_BEFORE = "\"'([{<\u201c\u2018\u00ab"  # and typographic quotes
_EDGES_AFTER = "\"')]}>,;:.!?\u201d\u2019\u00bb"


class Remembered(msgspec.Struct, frozen=True):
    """A remembered memory, as updates compare them."""

    event_id: str
    project: str
    ts: datetime
    text: str
    scope: str = "project"
    agent: str | None = None
    outcome: str | None = None

    @property
    def alike(self) -> tuple[str, str, str | None, str | None]:
        """What two memories must share to be compared at all."""
        return (self.project, self.scope, self.agent, self.outcome)

    @property
    def order(self) -> tuple[datetime, str]:
        return (self.ts, self.event_id)


class Word(msgspec.Struct, frozen=True):
    """A word as updates compare them: lower case, the punctuation around it left out."""

    text: str
    code: bool  # shaped like code: a digit, a path, a flag, a dotted or snake_case name...
    quoted: int | None = None  # which span between backticks holds it, if one does


def words(text: str) -> list[Word]:
    """`text`'s words as updates compare them: split at spaces, the punctuation around each left
    out, lower case; those between backticks numbered by their span."""
    found: list[Word] = []
    at = 0
    for n, quoted in enumerate(_BACKTICKED.finditer(text)):
        found += _split(text[at : quoted.start()], None)
        found += _split(quoted.group(1), n)
        at = quoted.end()
    return found + _split(text[at:], None)


def _split(text: str, quoted: int | None) -> list[Word]:
    stripped = (raw.lstrip(_EDGES_BEFORE).rstrip(_EDGES_AFTER) for raw in text.split())
    return [Word(word.lower(), bool(_CODE.search(word)), quoted) for word in stripped if word]


def updates(older: str, newer: str) -> bool:
    """Whether `newer` says what `older` says about the same subject, but for a changed value
    (see the module's docstring)."""
    before, after = words(older), words(newer)
    matcher = difflib.SequenceMatcher(None, [w.text for w in before], [w.text for w in after], autojunk=False)
    frame: list[str] = []
    changed = False
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            frame += [w.text for w in before[i1:i2]]
            continue
        said = word_set(" ".join(w.text for w in before[i1:i2] + after[j1:j2]))
        if said & NEGATIONS:
            return False  # not a value: it turns the statement
        if not said:
            continue  # stop words alone: wording
        after_word = before[i1 - 1].text if i1 > 0 else ""
        coded = any(w.code for w in before[i1:i2] + after[j1:j2])
        introduced = after_word in _INTRODUCING or (after_word in _RUNNING and coded)
        if not (_value(before, i1, i2, introduced) and _value(after, j1, j2, introduced)):
            return False
        changed = True
    return changed and len(word_set(" ".join(frame)) - NEGATIONS) >= FRAME


def _value(said: Sequence[Word], start: int, end: int, introduced: bool) -> bool:
    """Whether the words `start` to `end` of `said`, one side of a changed span, are a value:
    none (a value added or dropped), or at most VALUE_WORDS words introduced as a value, shaped
    like code, or a whole span between backticks (`npm ci` for `pnpm install`; not `make test`
    for `make lint`, a command whose words only in part changed, which may be another command)."""
    span = said[start:end]
    if not span:
        return True
    if len(span) > VALUE_WORDS:
        return False
    quoted = {w.quoted for w in span} - {None}
    whole = bool(quoted) and all(
        start <= i < end for i, w in enumerate(said) if w.quoted is not None and w.quoted in quoted
    )
    return introduced or whole or any(w.code for w in span)


def superseded(events: Iterable[Event], known: Callable[[str], Sequence[Remembered]]) -> Iterator[Derived]:
    """The remembered memories the batch's `events` update, or that update them: for each pair
    of one project, scope, agent and outcome, the later updating the earlier (`updates`), a
    `memory.superseded` of the earlier. `known`: the standing memories of a project."""
    batch = sorted(
        (_remembered(e) for e in events if e.kind == kinds.MEMORY_REMEMBERED), key=lambda r: r.order
    )
    standing: dict[str, dict[str, Remembered]] = {}
    for new in batch:
        if new.project not in standing:
            standing[new.project] = {r.event_id: r for r in known(new.project)}
        others = standing[new.project]
        stands = True
        for other in sorted(others.values(), key=lambda r: r.order):
            if other.event_id == new.event_id or other.alike != new.alike:
                continue
            if len(word_set(other.text) & word_set(new.text)) < FRAME:
                continue  # too little in common to share a frame: most memories end here
            earlier, later = (other, new) if other.order < new.order else (new, other)
            if updates(earlier.text, later.text):
                yield _superseding(earlier, later)
                others.pop(earlier.event_id, None)  # it stands no more for the memories after it
                stands = stands and earlier is not new
        if stands:
            others[new.event_id] = new


def _superseding(earlier: Remembered, later: Remembered) -> Derived:
    said = memory.MemorySuperseded(
        memory_id=earlier.event_id, by_memory_id=later.event_id, reason=f"updated: {later.text}"
    )
    causes = tuple(sorted((earlier.event_id, later.event_id)))
    key = f"{earlier.event_id}>{later.event_id}"
    return Derived(kinds.MEMORY_SUPERSEDED, said, later.project, causes, None, key)


def _remembered(event: Event) -> Remembered:
    said = msgspec.json.decode(event.payload, type=observed.MemoryRemembered)
    return Remembered(
        event_id=event.id,
        project=event.project,
        ts=event.ts,
        text=said.text,
        scope=said.scope,
        agent=said.agent or None,
        outcome=said.outcome,
    )


# what a project's memory holds as remembered now: neither forgotten nor superseded where it holds
_STANDING = """
SELECT event_id, project, ts, text, scope, agent, outcome FROM remembered r
WHERE project = ? AND NOT EXISTS (
    SELECT 1 FROM forgotten f WHERE f.memory_id = r.event_id AND (r.scope = 'global' OR f.project = r.project)
)
ORDER BY ts, event_id
"""


def standing_remembered(db: duckdb.DuckDBPyConnection, project: str) -> list[Remembered]:
    """The remembered memories of `project` that stand in the snapshot `db`."""
    rows = db.execute(_STANDING, [project]).fetchall()
    return [
        Remembered(
            event_id=e, project=p, ts=ts, text=text or "", scope=scope or "project", agent=agent or None,
            outcome=outcome,
        )
        for e, p, ts, text, scope, agent, outcome in rows
    ]  # fmt: skip
