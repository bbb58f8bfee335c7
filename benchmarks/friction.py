"""`reverie friction` throughput: the whole command, as a user runs it, over the fixture
transcripts copied N times (each copy its own sessions), in transcript MB per second of wall
time (start-up included), each run timed by the operating system (/usr/bin/time); the median of
--runs. Prints one JSON line.

    python benchmarks/friction.py [--copies 10] [--runs 5]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.common import timed  # noqa: E402

TRANSCRIPTS = os.path.join(HERE, "..", "..", "shared", "fixtures", "claude-code", "transcripts")


def copies(folder: str, n: int) -> int:
    """`n` copies of the fixtures under `folder`, each copy's session ids its own; their bytes."""
    size = 0
    for copy in range(n):
        for root, _, files in os.walk(TRANSCRIPTS):
            for name in files:
                if not name.endswith(".jsonl"):
                    continue
                source = os.path.join(root, name)
                target = os.path.join(folder, f"copy{copy}", os.path.relpath(source, TRANSCRIPTS))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(source) as f:
                    text = f.read()
                for session in ("ae4a77f8", "fa812bfe", "55604662", "491e126e", "d6e0bada"):
                    text = text.replace(session, f"{copy:08d}"[:8] if copy else session)
                with open(target, "w") as f:
                    f.write(text)
                size += len(text.encode())
    return size


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="friction-bench-")
    try:
        size = copies(os.path.join(work, "transcripts"), args.copies)
        env = {**os.environ, "REVERIE_HOME": os.path.join(work, "home")}
        reverie = os.path.join(os.path.dirname(sys.executable), "reverie")
        command = [reverie, "friction", os.path.join(work, "transcripts"), "--out", os.path.join(work, "out")]
        runs = [timed(command, env) for _ in range(args.runs)]
        seconds = statistics.median(r["wall_s"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        with open(os.path.join(work, "out", "friction_summary.json")) as f:
            sessions = json.load(f)["sessions"]
    finally:
        shutil.rmtree(work)
    print(
        json.dumps(
            {
                "benchmark": "friction",
                "transcript_mb": round(size / 1e6, 2),
                "sessions": sessions,
                "runs": args.runs,
                "seconds": round(seconds, 2),
                "cpu_s": round(cpu, 2),
                "mb_per_s": round(size / 1e6 / seconds, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
