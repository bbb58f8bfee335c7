"""What the benchmarks share: events built from the real hook payload captures."""

import glob
import json
import os
import subprocess
import tempfile
from datetime import datetime
from typing import Any

from ingest.emit import encode
from ingest.envelope import encode_event
from schemas.ids import derived_event_id, new_event_id, utc_now_iso
from schemas.kinds import HOOK_KINDS, SOURCE_CLAUDE_CODE, SOURCE_IMPORT

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


def prompt_event(
    prompt: str, *, project: str, session_id: str, at: datetime, key: str, **payload: object
) -> tuple[str, bytes]:
    """A UserPromptSubmit event as an import sends it, and its id, derived from (at, project,
    key): sending it again is not a second prompt."""
    event_id = derived_event_id(int(at.timestamp() * 1000), project, key)
    stamp = at.isoformat().replace("+00:00", "Z")
    body = {"hook_event_name": "UserPromptSubmit", "session_id": session_id, "prompt": prompt, **payload}
    return encode(
        HOOK_KINDS["UserPromptSubmit"],
        body,
        project=project,
        source=SOURCE_IMPORT,
        ts=stamp,
        event_id=event_id,
        recorded_at=stamp,
    )


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


def timed(command: list[str], env: dict[str, str]) -> dict[str, float]:
    """One run of `command`, as the operating system accounts it."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%e %U %S %M", "-o", out.name, *command],
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        wall, user, system, rss = out.read().split()
    return {"wall_s": float(wall), "cpu_s": float(user) + float(system), "rss_mb": int(rss) / 1024}
