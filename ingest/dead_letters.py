"""Dead letters: input that could not become an event, kept on disk with the reason.

The records match `schemas.dead_letters.DeadLetter`; they are written with the standard
library because the hook writes them too.
"""

import json
import os

from ingest.redact import redact_text
from schemas.files import write_durably
from schemas.ids import new_event_id, utc_now_iso

HEAD_BYTES = 512


def write_dead_letter(
    directory: str,
    stage: str,
    reason: str,
    data: bytes,
    argv: list[str] | None = None,
    letter_id: str | None = None,
) -> str:
    """Keep `data` (its head) with the reason; a given `letter_id` makes a retry overwrite, not add."""
    letter_id = letter_id or new_event_id()
    record = {
        "id": letter_id,
        "recorded_at": utc_now_iso(),
        "stage": stage,
        "reason": redact_text(reason),
        "head": redact_text(data[:HEAD_BYTES].decode("utf-8", "backslashreplace")),
        "size": len(data),
        "argv": argv or [],
    }
    return write_durably(directory, letter_id + ".json", json.dumps(record).encode())


def count_dead_letters(directory: str) -> int:
    try:
        return sum(1 for n in os.listdir(directory) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        return 0
