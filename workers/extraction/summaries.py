"""Claude Code's compaction summaries, mined: the richest account of a session, with headings
("Primary Request and Intent", "Key Technical Concepts", "Errors and Fixes", ...), which recall
would otherwise have to inject whole (10,000 characters) or cut.

A summary reaches the log as the compaction subagent's last message (an imported transcript)
or as PostCompact's `compact_summary`. Each top-level bullet of "Errors and Fixes" becomes an
error and what fixed it (or that nothing did), and each of "Key Technical Concepts" something
the project works with. A later summary repeats the earlier ones: the same bullet is the same
fact.
"""

import re
from collections.abc import Iterable, Iterator

import msgspec

from schemas import kinds
from schemas.events import Event
from schemas.text.harness import summary_of, unmarked

_TEXT_FIELDS = {
    kinds.SUBAGENT_STOPPED: "last_assistant_message",
    kinds.ASSISTANT_STOPPED: "last_assistant_message",
    kinds.COMPACTION_FINISHED: "compact_summary",
}
_SECTION = re.compile(r"^\s*\d+\.\s+(?P<title>[A-Z][A-Za-z &]+):\s*$", re.M)
_BULLET = re.compile(r"^(?P<indent>[ \t]*)[-*]\s+(?P<text>.+)$")
_MINED = re.compile(r"Errors and Fixes:|Key Technical Concepts:")
_MAX = 500  # characters of a bullet kept, its sub-bullets included
# what a summary says of an error it has not seen fixed: "UNRESOLVED", "CURRENT:", "still failing"
_UNSOLVED = re.compile(
    r"\bunresolved\b|\bnot (?:yet )?(?:fixed|resolved)\b|(?-i:\bCURRENT\b)|\bstill fail\w*|\bin progress\b"
    r"|\bnon résolu\w*|\btoujours en échec\b",
    re.IGNORECASE,
)


class Bullet(msgspec.Struct, frozen=True):
    section: str  # "errors", "concepts"
    text: str
    solved: bool = True  # for an error: whether the summary says what fixed it
    event_id: str = ""


def _sections(summary: str) -> dict[str, str]:
    """Each numbered section's body, by its title in lower case."""
    found = list(_SECTION.finditer(summary))
    ends = [m.start() for m in found[1:]] + [len(summary)]
    return {
        m.group("title").strip().lower(): summary[m.end() : end] for m, end in zip(found, ends, strict=True)
    }


def _bullets(section: str) -> Iterator[str]:
    """Each top-level bullet of `section`, its sub-bullets joined to it, markup dropped."""
    current: list[str] = []
    top: int | None = None
    for line in section.splitlines():
        bullet = _BULLET.match(line)
        if bullet and (top is None or len(bullet.group("indent")) <= top):
            if current:
                yield _joined(current)
            top, current = len(bullet.group("indent")), [bullet.group("text")]
        elif current and line.strip() and not line.strip().startswith("```"):
            current.append(bullet.group("text") if bullet else line.strip())
    if current:
        yield _joined(current)


def _joined(parts: list[str]) -> str:
    text = unmarked("; ".join(p.strip() for p in parts)).strip()
    return text if len(text) <= _MAX else text[: _MAX - 1].rsplit(" ", 1)[0] + "…"


def bullets(events: Iterable[Event]) -> Iterator[Bullet]:
    """The errors and the key concepts of every compaction summary among `events`."""
    for event in events:
        field = _TEXT_FIELDS.get(event.kind)
        text = msgspec.json.decode(event.payload).get(field) if field else None
        if not isinstance(text, str) or not _MINED.search(text):
            continue
        sections = _sections(summary_of(text) or text)
        for line in _bullets(sections.get("errors and fixes", "")):
            yield Bullet("errors", line, not _UNSOLVED.search(line), event.id)
        for line in _bullets(sections.get("key technical concepts", "")):
            yield Bullet("concepts", line, True, event.id)
