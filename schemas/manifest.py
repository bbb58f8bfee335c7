"""The compaction manifest: where a session stood when it stopped or was about to be compacted.

Written by the recall service when the Stop and PreCompact hooks tell it (one JSON file per
session, `Settings.manifest_path`), and given back, fenced, by SessionStart after a compaction
or a resume: the project's key decisions (the last 5), the files the session touched (the last
20), what blocked it (its last errors) and the steps its agent said were left.
"""

import re
from datetime import datetime
from typing import Literal

import msgspec

WrittenAt = Literal["Stop", "PreCompact"]
AFTER = ("compact", "resume")  # the SessionStart sources that load a manifest


class CompactionManifest(msgspec.Struct, kw_only=True):
    session_id: str
    project: str
    written_at: datetime
    at: WrittenAt
    key_decisions: list[str] = []
    files_touched: list[str] = []
    blockers: list[str] = []
    next_steps: list[str] = []
    # when the message the next steps come from was said: of two manifests, the newer one's hold
    steps_said_at: datetime | None = None

    def is_empty(self) -> bool:
        """Whether it says nothing of the session itself (the key decisions are the project's)."""
        return not (self.files_touched or self.blockers or self.next_steps)

    def with_fresher_steps(self, other: "CompactionManifest | None") -> "CompactionManifest":
        """This manifest, with `other`'s next steps if they come from a newer message."""
        if other is None or other.steps_said_at is None:
            return self
        if self.steps_said_at is not None and self.steps_said_at >= other.steps_said_at:
            return self
        return msgspec.structs.replace(self, next_steps=other.next_steps, steps_said_at=other.steps_said_at)


# a line that announces what is left: "Next steps:", "## TODO", "**Remaining work**",
# "Prochaines étapes :", "Reste à faire"...
_ANNOUNCES = re.compile(
    r"^\W*(?:next steps?|next up|todo|to-do|remaining(?: work| steps| tasks| items)?|still to do|left to do|"
    r"follow[- ]ups?|what'?s left|what remains|open items|"
    r"prochaines? étapes?|étapes suivantes|reste à faire|à faire)\b",
    re.IGNORECASE,
)
# an item of a list: "- x", "* x", "1. x", "2) x", "- [ ] x" (a box ticked, "- [x] x", is done)
_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+(?:\[(?P<box>[ xX])\]\s+)?(?P<text>\S.*)")
_FENCE = "```"
_MOST_STEPS = 10


def next_steps(message: str | None) -> list[str]:
    """The steps an agent's message says are left: under a line that announces them ("Next
    steps:", "## TODO", "Remaining:", "Prochaines étapes"...), that line's own words after a
    colon, the items listed (an item's indented lines continue it; a ticked box is done), or,
    with no list, the sentence that follows. Code blocks say nothing. Linear in the message."""
    steps: list[str] = []
    listing, said, in_code = False, 0, False  # said: the steps taken since the announcement
    for line in (message or "").splitlines():
        if line.lstrip().startswith(_FENCE):
            in_code = not in_code
            continue
        if in_code:
            continue
        if _ANNOUNCES.match(line):
            listing, said = True, 0
            words = line.split(":", 1)[1].strip(" *_`") if ":" in line else ""
            if any(c.isalpha() for c in words):
                steps.append(words)
                said = 1
            continue
        if not listing or not line.strip():
            continue
        item = _ITEM.match(line)
        if item:
            if item.group("box") not in ("x", "X"):
                steps.append(item.group("text").strip())
                said += 1
        elif said and line[:1].isspace():  # an item's text going on, indented
            steps[-1] = f"{steps[-1]} {line.strip()}"
        elif not said:  # no list: the sentence after the announcement
            steps.append(line.strip())
            said = 1
        else:
            listing = False
    return steps[:_MOST_STEPS]
