"""Dead letters: input that could not become an event, kept on disk with the reason.

The records match `schemas.events.DeadLetter`; they are written with the standard
library because the hook writes them too.
"""

import json
import os

from ingest.redact import redact_argv, redact_text
from schemas.disk.files import write_durably
from schemas.ids import new_event_id, utc_now_iso

HEAD_CHARS = 512
HEAD_WINDOW = 8192  # bytes redacted to make the head


def write_dead_letter(
    directory: str,
    stage: str,
    reason: str,
    data: bytes,
    argv: list[str] | None = None,
    letter_id: str | None = None,
    whole: bool = False,
) -> str:
    """Keep `data` with the reason: its head, or all of it if `whole` (an event already cut to size).

    A given `letter_id` makes a retry overwrite the letter rather than add one.
    """
    letter_id = letter_id or new_event_id()
    text = data[: HEAD_WINDOW if not whole else len(data)].decode("utf-8", "backslashreplace")
    record = {
        "id": letter_id,
        "recorded_at": utc_now_iso(),
        "stage": stage,
        "reason": redact_text(reason),
        # redacted before it is cut, so the cut cannot shorten a secret below what the patterns see
        "head": redact_text(text)[:HEAD_CHARS],
        "size": len(data),
        "argv": redact_argv(argv or []),
        "body": redact_text(text) if whole else None,
    }
    return write_durably(directory, letter_id + ".json", json.dumps(record).encode())


def count_dead_letters(directory: str) -> int:
    try:
        return sum(1 for n in os.listdir(directory) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        return 0
