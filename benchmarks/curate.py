"""`reverie curate` at scale, and the memory section it writes for the fixture transcripts.

- scale: a project with --facts current facts (and a tenth as many superseded, episodic,
  low-confidence and multi-line ones the section must leave out, 200 episodes, 50 preferences),
  folded by the real projector into a data directory kept in --home (built again when the
  projections' schema changes). Then `reverie curate --project DIR` runs as a whole process,
  --runs times, each timed by the operating system (/usr/bin/time: wall, user+system CPU, peak
  RSS), and the section's query alone in this process; medians.
- fixtures: a stack on a scratch data directory imports ../shared/fixtures/claude-code/transcripts
  (`reverie import`), settles, runs every thinking job (`reverie think all`), settles again,
  and the section of each of the transcripts' projects is measured: lines, bytes, facts,
  preferences, episodes (written into a scratch folder, never the transcripts' own paths).
Prints one JSON line.

    python benchmarks/curate.py [--facts 50000] [--runs 5] [--home DIR] [--skip-fixtures]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta

import msgspec

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.coding_memory import (  # noqa: E402
    import_transcripts,
    running_stack,
    stack_env,
    think_all,
    transcript_cwds,
    wait_until_settled,
)
from benchmarks.common import timed  # noqa: E402
from projections import sql  # noqa: E402
from projections.curation import render, section  # noqa: E402
from projections.store import SCHEMA_VERSION  # noqa: E402
from reverie.curating import curate  # noqa: E402
from reverie.testing import Folding, event_at  # noqa: E402
from schemas import kinds  # noqa: E402
from schemas.events import Event  # noqa: E402
from schemas.memory import Category, EpisodeRecorded, FactAsserted, FactSuperseded, PreferenceCrystallized  # noqa: E402
from schemas.settings import Settings  # noqa: E402

REVERIE = os.path.join(os.path.dirname(sys.executable), "reverie")
TRANSCRIPTS = os.path.join(HERE, "..", "..", "shared", "fixtures", "claude-code", "transcripts")
BUILT = "curate-bench.json"
CATEGORIES: tuple[Category, ...] = ("decisions", "patterns", "errors", "stack", "context")


def build(settings: Settings, project: str, facts: int) -> None:
    """The project's memory, folded once (kept while the schema and the size stay)."""
    marker = os.path.join(settings.home, BUILT)
    wanted = {"facts": facts, "schema": SCHEMA_VERSION, "project": project, "build": 2}
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == wanted:
                return
    start = datetime(2025, 1, 1, tzinfo=UTC)
    events: list[Event] = []

    def derived(kind: str, payload: msgspec.Struct, at: datetime) -> None:
        events.append(event_at(kind, payload, at, project=project, caused_by=("01BENCHCAUSE",)))

    for n in range(facts + facts // 10 * 4):
        at = start + timedelta(minutes=n)
        odd = n - facts  # past `facts`: the ones the section leaves out, a tenth of each kind
        fact = FactAsserted(
            fact_id=f"fact:{n}",
            source=f"entity:{n % 997}",
            relation="learned_that",
            description=f"Standing rule {n}: keep module {n % 997} free of import cycles"
            + ("\nsecond line" if 0 <= odd < facts // 10 else ""),
            confidence=0.5 if facts // 10 <= odd < 2 * facts // 10 else 1.0,
            memory_type="episodic" if 2 * facts // 10 <= odd < 3 * facts // 10 else "semantic",
            category=CATEGORIES[n % len(CATEGORIES)],
            valid_at=at,
        )
        derived(kinds.FACT_ASSERTED, fact, at)
        if odd >= 3 * facts // 10:
            ended = FactSuperseded(fact_id=fact.fact_id, invalid_at=at, reason="bench")
            derived(kinds.FACT_SUPERSEDED, ended, at + timedelta(seconds=1))
    for n in range(200):
        at = start + timedelta(hours=n)
        episode = EpisodeRecorded(episode_id=f"episode:{n}", session_id=f"s{n}", title=f"Session {n}",
                                  summary="...", started_at=at)  # fmt: skip
        derived(kinds.EPISODE_RECORDED, episode, at)
    for n in range(50):
        preference = PreferenceCrystallized(preference_id=f"p:{n}", statement=f"Preference number {n} holds",
                                            strength=0.6 + n / 200, evidence=3 + n)  # fmt: skip
        derived(kinds.PREFERENCE_CRYSTALLIZED, preference, start)
    events.sort(key=lambda e: e.id)
    folding = Folding(settings)
    for first in range(0, len(events), 20_000):
        folding.fold(events[first : first + 20_000])
    folding.close()
    with open(marker, "w") as f:
        json.dump(wanted, f)


def scale(home: str, facts: int, runs: int) -> dict[str, object]:
    root = os.path.join(home, "project")
    os.makedirs(root, exist_ok=True)
    project = os.path.realpath(root)  # a folder outside git: its real path names it
    settings = Settings(home)
    build(settings, project, facts)
    env = stack_env(home)
    processes = [timed([REVERIE, "curate", "--project", root], env) for _ in range(runs)]
    queries = []
    for _ in range(runs):
        began = time.perf_counter()
        db = sql.connect(settings, snapshot_required=True, files=False)
        part = section(db, project)
        db.close()
        queries.append(time.perf_counter() - began)
    return {
        "facts": facts,
        "process_wall_s": statistics.median(r["wall_s"] for r in processes),
        "process_cpu_s": statistics.median(r["cpu_s"] for r in processes),
        "process_rss_mb": round(statistics.median(r["rss_mb"] for r in processes), 1),
        "section_query_ms": round(1000 * statistics.median(queries), 1),
        "section_lines": len(render(part).splitlines()),
        "facts_written": len(part.facts),
        "facts_left_out": part.facts_left_out,
    }


def fixtures() -> dict[str, dict[str, int]]:
    """The section of each fixture project, after the import and after the thinking jobs."""
    with tempfile.TemporaryDirectory(prefix="rv-curate-") as home:
        env = stack_env(home)
        settings = Settings(home)
        with running_stack(REVERIE, env, settings):
            import_transcripts(REVERIE, env, TRANSCRIPTS)
            wait_until_settled(settings)
            think_all(REVERIE, env)
            wait_until_settled(settings)
        projects = sorted(set(transcript_cwds(TRANSCRIPTS).values()))
        sections = {}
        for project in projects:
            written = curate(settings, project, tempfile.mkdtemp(dir=home), dry_run=False)
            block = render(written.section)
            sections[project] = {
                "lines": len(block.splitlines()),
                "bytes": len(block.encode()),
                "facts": len(written.section.facts),
                "preferences": len(written.section.preferences),
                "episodes": len(written.section.episodes),
            }
        return sections


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--facts", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--home", help="keep the built data directory here (default: a scratch one)")
    parser.add_argument("--skip-fixtures", action="store_true", help="only the run at scale")
    args = parser.parse_args()
    home = args.home or tempfile.mkdtemp(prefix="rv-curate-scale-")
    result: dict[str, object] = {"benchmark": "curate", "scale": scale(home, args.facts, args.runs)}
    if not args.skip_fixtures:
        result["fixtures"] = fixtures()
    print(json.dumps(result))


if __name__ == "__main__":
    main()
