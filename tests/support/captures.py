"""The real Claude Code captures the tests read, in ../shared beside the checkout: hook payloads
of two CLI versions, and transcripts."""

import json
from pathlib import Path
from typing import Any

SHARED = Path(__file__).resolve().parents[3] / "shared"
FIXTURES = SHARED / "fixtures" / "claude-code"
HOOK_PAYLOADS = FIXTURES / "hook-payloads"
TRANSCRIPTS = FIXTURES / "transcripts"


def fixture_payloads() -> list[tuple[str, dict[str, Any]]]:
    """(file id, payload) for every captured hook payload, both CLI versions."""
    found = []
    for path in sorted(HOOK_PAYLOADS.glob("*/*.json")):
        for i, payload in enumerate(json.loads(path.read_text())):
            found.append((f"{path.parent.name}/{path.stem}[{i}]", payload))
    return found
