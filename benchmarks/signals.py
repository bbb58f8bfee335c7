"""What the signal tracker finds where there is nothing to find, and where there is.

LoCoMo's dialog turns are friends chatting: "I'm always here for you", "never give up", "no, I
haven't". Almost none of them is an instruction to a coding agent, so every signal found there
is, at best, a doubtful one: their count per thousand turns bounds the tracker's false alarms.
The real Claude Code transcripts' prompts are what it is for. Prints one JSON line (counts by
kind and pattern); `--show N` also prints N of each corpus's signals to stderr, to be read.

    python benchmarks/signals.py [--show 20]
"""

import argparse
import json
import os
import sys
from collections import Counter
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.common import locomo_turns  # noqa: E402
from ingest.transcripts import ImportedEvent, find_transcripts, read_transcript  # noqa: E402
from schemas.kinds import PROMPT_SUBMITTED  # noqa: E402
from workers.dynamics.signals import Signal, signals  # noqa: E402

TRANSCRIPTS = os.path.join(HERE, "..", "..", "shared", "fixtures", "claude-code", "transcripts")


def transcript_prompts(root: str = TRANSCRIPTS) -> list[str]:
    """The distinct prompts the real transcripts record."""
    prompts: dict[str, None] = {}
    for path in find_transcripts(root):
        for event in read_transcript(path):
            if isinstance(event, ImportedEvent) and event.kind == PROMPT_SUBMITTED:
                prompt = event.payload.get("prompt")
                if isinstance(prompt, str):
                    prompts[prompt] = None
    return list(prompts)


def tally(texts: list[str], show: int, corpus: str) -> dict[str, Any]:
    found: list[Signal] = [s for text in texts for s in signals(text)]
    for signal in found[:show]:
        print(f"{corpus}\t{signal.kind}\t{signal.pattern}\t{signal.text}", file=sys.stderr)
    return {
        "texts": len(texts),
        "signals": len(found),
        "per_1000": round(1000 * len(found) / max(len(texts), 1), 1),
        "by_kind": dict(sorted(Counter(s.kind for s in found).items())),
        "by_pattern": dict(Counter(s.pattern for s in found).most_common()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--show", type=int, default=0, help="signals of each corpus to print to stderr")
    args = parser.parse_args()
    chat = [turn.split(": ", 1)[1] for turn in locomo_turns()]  # without "Speaker: "
    print(
        json.dumps(
            {
                "benchmark": "signals",
                "locomo_chat": tally(chat, args.show, "locomo"),
                "claude_code_prompts": tally(transcript_prompts(), args.show, "claude-code"),
            }
        )
    )


if __name__ == "__main__":
    main()
