"""What the benchmarks share: events built from the real hook payload captures."""

import glob
import json
import os
from typing import Any

from ingest.envelope import encode_event
from schemas.ids import new_event_id, utc_now_iso
from schemas.kinds import HOOK_KINDS, SOURCE_CLAUDE_CODE

HERE = os.path.dirname(os.path.abspath(__file__))
PAYLOADS = os.path.join(HERE, "..", "..", "shared", "fixtures", "claude-code", "hook-payloads")


def fixture_payloads() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted(glob.glob(os.path.join(PAYLOADS, "*", "*.json"))):
        with open(path) as f:
            found += json.load(f)
    return found


def hook_events(n: int) -> list[bytes]:
    """`n` events as the hook makes them, cycling through the real payloads, each its own id."""
    payloads = fixture_payloads()
    now = utc_now_iso()
    return [
        encode_event(
            HOOK_KINDS[p["hook_event_name"]],
            p,
            event_id=new_event_id(),
            ts=now,
            recorded_at=now,
            project="bench",
            source=SOURCE_CLAUDE_CODE,
        )
        for p in (payloads[i % len(payloads)] for i in range(n))
    ]


LOCOMO = os.path.join(HERE, "..", "..", "shared", "bench", "locomo", "locomo10_dev.json")


def locomo_turns(path: str = LOCOMO) -> list[str]:
    """Every dialog turn of the LoCoMo conversations: real, short, distinct texts."""
    with open(path) as f:
        conversations = json.load(f)
    return [
        f"{turn['speaker']}: {turn['text']}"
        for c in conversations
        for key, session in c["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]


def locomo_questions(path: str = LOCOMO) -> list[str]:
    with open(path) as f:
        return [qa["question"] for c in json.load(f) for qa in c["qa"]]
