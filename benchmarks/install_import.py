"""Import at install: `reverie install claude-code` in a scratch HOME whose ~/.claude/projects
holds the fixture transcripts (../shared/fixtures/claude-code/transcripts, copied), with a stack
running (`reverie up --detach`, a scratch REVERIE_HOME). Timed from the install's start to the
background import's last event sent (its progress file says it finished), and to the last
event archived by the stack. Prints one JSON line: events per second, both ways.

    python benchmarks/install_import.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

# the checkout's root: the fixtures' path is the tests' (tests/support/)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from reverie.background_import import read_progress
from schemas.kinds import PROJECT_IDENTIFIED
from schemas.settings import Settings
from tests.support.captures import TRANSCRIPTS


def archived(settings: Settings) -> int:
    from projections.sql import connect, query

    sql = f"SELECT count(*) FROM events WHERE source = 'import' AND kind != '{PROJECT_IDENTIFIED}'"
    return int(query(connect(settings), sql).rows[0][0])


def waited(condition: Callable[[], object], what: str, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} took over {timeout:.0f} s")
        time.sleep(0.05)


def main() -> None:
    base = tempfile.mkdtemp(prefix="rv-install-")
    home, project, data = (os.path.join(base, n) for n in ("home", "app", "data"))
    folder = os.path.join(home, ".claude", "projects", "-fixtures")
    shutil.copytree(TRANSCRIPTS, folder)
    os.makedirs(project)
    subprocess.run(["git", "init", "-q", project], check=True)
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {"HOME": home, "REVERIE_HOME": data}
    reverie = [sys.executable, "-m", "reverie"]
    settings = Settings(data)
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder) for f in fs)
    try:
        subprocess.run([*reverie, "up", "--detach"], env=env, check=True, capture_output=True)
        started = time.perf_counter()
        subprocess.run(
            [*reverie, "install", "claude-code"], env=env, cwd=project, check=True, capture_output=True
        )
        waited(lambda: getattr(read_progress(settings), "finished_at", None), "the background import")
        sent_s = time.perf_counter() - started
        progress = read_progress(settings)
        assert progress is not None
        waited(lambda: archived(settings) >= progress.sent, "archiving the imported events")
        archived_s = time.perf_counter() - started
    finally:
        subprocess.run([*reverie, "down"], env=env, capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
    print(
        json.dumps(
            {
                "benchmark": "install_import",
                "transcripts": progress.transcripts,
                "transcript_mb": round(size / 2**20, 2),
                "events": progress.events,
                "sent_s": round(sent_s, 2),
                "events_per_s_sent": round(progress.events / sent_s, 1),
                "archived_s": round(archived_s, 2),
                "events_per_s_archived": round(progress.events / archived_s, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
