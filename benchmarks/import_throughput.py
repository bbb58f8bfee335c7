"""Import throughput: one real 3 MB Claude Code transcript (with its subagents' transcripts), from
`reverie import` to recallable, embedding included.

Starts a stack (`reverie up`) on a scratch data directory, waits until it answers, then times
`reverie import` of the transcript's session (the transcript and its `subagents/` folder, copied
to a scratch folder), and from the same start until the stack has settled: every event archived
and folded into the published projections, every memory text (the passages the tools showed and
what the agent said among them) embedded, no job queued or running (benchmarks/coding_memory.py's
test of it). Prints one JSON line: the transcript's bytes, the seconds to the import's end and to
settled, and the memories and passages the stack then holds, by kind.

    python benchmarks/import_throughput.py [--transcript FILE]

The stack is heavy on a small machine: run one such job at a time (`flock /tmp/heavy.lock ...`).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.coding_memory import (  # noqa: E402
    TRANSCRIPTS,
    running_stack,
    settled_state,
    stack_env,
    wait_for,
)
from projections import sql  # noqa: E402
from schemas.settings import Settings  # noqa: E402

SESSION = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"  # the larger of the two big fixture sessions


def copied(transcript: str, into: str) -> tuple[str, int]:
    """The transcript and its subagents' folder, copied under `into`; their bytes."""
    shutil.copy(transcript, into)
    folder = transcript.removesuffix(".jsonl")
    if os.path.isdir(folder):
        shutil.copytree(folder, os.path.join(into, os.path.basename(folder)))
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(into) for f in files)
    return into, size


def held(settings: Settings) -> dict[str, int]:
    with sql.connect(settings) as db:
        rows = db.execute("SELECT kind, count(*) FROM memory_texts GROUP BY kind ORDER BY kind").fetchall()
    return {str(kind): int(n) for kind, n in rows}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transcript", default=os.path.join(TRANSCRIPTS, f"{SESSION}.jsonl"))
    args = parser.parse_args()
    reverie = shutil.which("reverie", path=os.path.dirname(sys.executable))
    assert reverie, "reverie is not installed beside this python"
    home, scratch = tempfile.mkdtemp(prefix="rv-import-"), tempfile.mkdtemp(prefix="rv-transcripts-")
    try:
        folder, size = copied(os.path.abspath(args.transcript), scratch)
        settings, env = Settings(home), stack_env(home)
        with running_stack(reverie, env, settings):
            wait_for("the recall service listens", lambda: os.path.exists(settings.recall_socket_path), 300)
            began = time.perf_counter()
            done = subprocess.run([reverie, "import", folder], env=env, capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            imported = time.perf_counter() - began
            wait_for("the stack settles", lambda: settled_state(settings) is not None, 3_600, every_s=0.25)
            settled = time.perf_counter() - began
            kinds = held(settings)
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    result = {
        "benchmark": "import_throughput",
        "transcript_bytes": size,
        "imported_s": round(imported, 1),
        "settled_s": round(settled, 1),
        "memories": sum(kinds.values()),
        "by_kind": kinds,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
