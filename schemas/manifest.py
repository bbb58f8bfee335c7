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

    def is_empty(self) -> bool:
        """Whether it says nothing of the session itself (the key decisions are the project's)."""
        return not (self.files_touched or self.blockers or self.next_steps)


# a line that announces what is left: "Next steps:", "## TODO", "Remaining work", "Still to do"...
_ANNOUNCES = re.compile(
    r"^\W*(?:next steps?|todo|to do|remaining(?: work| steps)?|still to do|follow[- ]ups?|what'?s left|"
    r"prochaines? étapes?|reste à faire)\b",
    re.IGNORECASE,
)
_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+)")
_MOST_STEPS = 5


def next_steps(message: str | None) -> list[str]:
    """The steps an agent's message says are left: the items listed under a line that announces
    them ("Next steps:", "TODO", "Remaining"...), or that line's own words after a colon."""
    steps: list[str] = []
    listing = False
    for line in (message or "").splitlines():
        if _ANNOUNCES.match(line):
            listing = True
            said = line.split(":", 1)[1].strip() if ":" in line else ""
            if said:
                steps.append(said)
            continue
        item = _ITEM.match(line)
        if listing and item:
            steps.append(item.group(1).strip())
        elif listing and line.strip():
            listing = False
    return steps[:_MOST_STEPS]
