"""The dashboard at scale: each page's time to first render with N memories and M entities,
on the server and in a real browser, the knowledge graph's frame rate with 500 nodes, and the
dashboard's resident memory.

Builds a data directory once (kept in --home, built again when the projections' schema changes):
1,000 sessions of LoCoMo turns as prompts and the assistant's answers (N memories, each numbered
so every text is distinct),
M entities in five projects and 2 M facts between them (a tenth later superseded), folded by the
real projector into a published snapshot. Then starts `reverie dashboard --serve` on it, as its
own process, and times:
- server: each page's whole answer over HTTP (median of --runs, after one cold request);
- browser: Debian's Chromium (Playwright), each page opened anew: first contentful paint, and
  "ready", when what the page fetches is drawn (the chart, the graph); medians of --runs;
- the graph with 500 nodes: frames sigma.js draws per second while the camera moves (software
  WebGL, as headless Chromium has no GPU here), over 3 s;
- the dashboard process's resident memory (RSS and PSS) once every page has been served.
Prints one JSON line.

    python benchmarks/dashboard.py [--memories 100000] [--entities 10000] [--runs 5] [--home DIR]
"""

import argparse
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.common import locomo_turns  # noqa: E402
from projections.store import SCHEMA_VERSION  # noqa: E402
from reverie.dashboard.guard import cookie_name, cookie_value  # noqa: E402
from reverie.testing import Folding, event_at  # noqa: E402
from schemas import kinds  # noqa: E402
from schemas.events import Event  # noqa: E402
from schemas.memory import EntityObserved, EntityType, FactAsserted, FactSuperseded  # noqa: E402
from schemas.observed import AssistantStopped, PromptSubmitted, SessionStarted  # noqa: E402
from schemas.ontology import Relation  # noqa: E402
from schemas.settings import Settings  # noqa: E402
from tests.support.browser import PAGES  # noqa: E402

PROJECTS = [f"github.com/bench/project-{i}" for i in range(5)]
SESSIONS = 1000
TYPES: list[EntityType] = [
    "library",
    "file",
    "tool",
    "concept",
    "technology",
    "person",
    "pattern",
    "decision",
]
RELATIONS: list[Relation] = ["depends_on", "uses", "related_to", "has_component", "implements", "configures"]
BUILT = "dashboard-bench.json"


def build(settings: Settings, memories: int, entities: int) -> None:
    """Fold the data directory's events (see the module's docstring), unless built already."""
    marker = os.path.join(settings.home, BUILT)
    wanted = {"memories": memories, "entities": entities, "schema": SCHEMA_VERSION}
    if os.path.exists(marker):
        with open(marker) as f:
            if json.load(f) == wanted:
                return
    for built in (settings.event_log_dir, settings.projections_dir):  # an earlier build's
        shutil.rmtree(built, ignore_errors=True)
    turns = locomo_turns()
    rng = random.Random(7)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    folding = Folding(settings)
    per_session = memories // SESSIONS // 2
    first_events: dict[str, str] = {}
    n = 0
    for s in range(SESSIONS):
        project = PROJECTS[s % len(PROJECTS)]
        session = f"bench-{s:05d}"
        at = start + timedelta(hours=7 * s)
        started = SessionStarted(session_id=session, source="startup")
        batch = [event_at(kinds.SESSION_STARTED, started, at, project=project, session_id=session)]
        for _ in range(per_session):
            at += timedelta(seconds=40)
            asked = PromptSubmitted(session_id=session, prompt=f"{turns[n % len(turns)]} ({n})")
            said = AssistantStopped(
                session_id=session, last_assistant_message=f"{turns[(n + 1) % len(turns)]} ({n + 1})"
            )
            n += 2
            batch.append(event_at(kinds.PROMPT_SUBMITTED, asked, at, project=project, session_id=session))
            batch.append(
                event_at(
                    kinds.ASSISTANT_STOPPED,
                    said,
                    at + timedelta(seconds=20),
                    project=project,
                    session_id=session,
                )
            )
        first_events.setdefault(project, batch[1].id)
        folding.fold(batch)
    folding.fold(_knowledge(rng, entities, first_events, start))
    folding.close()
    with open(marker, "w") as f:
        json.dump(wanted, f)


def _knowledge(rng: random.Random, entities: int, causes: dict[str, str], start: datetime) -> list[Event]:
    """Entities in five projects and 2 per entity facts between them, a tenth superseded later."""
    events: list[Event] = []
    names = [f"entity-{i}" for i in range(entities)]
    for i, name in enumerate(names):
        project = PROJECTS[i % len(PROJECTS)]
        kind: EntityType = rng.choice(TYPES)
        observed = EntityObserved(entity_id=f"e:{i}", type=kind, name=name, normalized_name=name)
        events.append(
            event_at(kinds.ENTITY_OBSERVED, observed, start, project=project, caused_by=(causes[project],))
        )
    for f in range(2 * entities):
        project = PROJECTS[f % len(PROJECTS)]
        # a few hubs: most facts name one of the first entities of their project
        source = (f % len(PROJECTS)) + len(PROJECTS) * int(rng.paretovariate(1.2)) % entities
        target = rng.randrange(entities)
        valid = start + timedelta(hours=rng.randrange(24 * 300))
        relation: Relation = rng.choice(RELATIONS)
        fact = FactAsserted(
            fact_id=f"fact:{f}",
            source=f"e:{source}",
            relation=relation,
            target=f"e:{target}",
            description=f"entity-{source} {relation} entity-{target} ({f})",
            confidence=rng.choice([0.5, 0.7, 0.9, 1.0]),
            category="stack",
            valid_at=valid,
        )
        events.append(
            event_at(kinds.FACT_ASSERTED, fact, valid, project=project, caused_by=(causes[project],))
        )
        if f % 10 == 0:
            ended = valid + timedelta(days=20)
            superseded = FactSuperseded(fact_id=f"fact:{f}", invalid_at=ended, reason="bench")
            events.append(
                event_at(
                    kinds.FACT_SUPERSEDED, superseded, ended, project=project, caused_by=(causes[project],)
                )
            )
    events.sort(key=lambda e: e.id)
    return events


def serve(settings: Settings) -> tuple[subprocess.Popen[str], str, int, str]:
    """`reverie dashboard --serve` on the data directory: the process, its origin, port and token."""
    env = {**os.environ, "REVERIE_HOME": settings.home, "REDIS_URL": "redis://127.0.0.1:1/0"}
    process = subprocess.Popen(
        [sys.executable, "-m", "reverie", "dashboard", "--serve", "--port", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    url = line.split("dashboard: ", 1)[1].strip()
    origin, _, query = url.partition("/?")
    token = dict(p.split("=", 1) for p in query.split("&"))["token"]
    return process, origin, int(origin.rsplit(":", 1)[1]), token


def server_times(port: int, token: str, runs: int) -> dict[str, dict[str, float]]:
    cookie = {"Cookie": f"{cookie_name(port)}={cookie_value(token)}"}
    found: dict[str, dict[str, float]] = {}
    for name, (path, _) in PAGES.items():
        paths = [
            path,
            *(["/api/activity"] if name == "overview" else []),
            *(["/api/graph"] if name == "graph" else []),
        ]
        times = []
        for i in range(runs + 1):
            started = time.perf_counter()
            for p in paths:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                connection.request("GET", p, headers=cookie)
                answer = connection.getresponse()
                answer.read()
                assert answer.status == 200, (p, answer.status)
                connection.close()
            if i:  # the first is cold: the snapshot attached, the templates compiled
                times.append((time.perf_counter() - started) * 1000)
            else:
                cold = (time.perf_counter() - started) * 1000
        found[name] = {"median_ms": round(statistics.median(times), 1), "cold_ms": round(cold, 1)}
    return found


def browser_times(origin: str, token: str, runs: int) -> tuple[dict[str, dict[str, float]], float, int]:
    from playwright.sync_api import sync_playwright

    from tests.support.browser import chromium_path

    found: dict[str, dict[str, float]] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        page.goto(f"{origin}/?token={token}")
        for name, (path, ready) in PAGES.items():
            paint, drawn = [], []
            for _ in range(runs):
                page.goto(origin + path)
                page.wait_for_selector(ready, timeout=120_000)
                drawn.append(page.evaluate("() => performance.now()"))
                paint.append(page.evaluate(FIRST_PAINT_JS))
            found[name] = {
                "first_paint_ms": round(statistics.median(paint), 1),
                "ready_ms": round(statistics.median(drawn), 1),
            }
        page.goto(f"{origin}/graph?nodes=500")
        page.wait_for_selector("#graph[data-ready=yes]", timeout=120_000)
        fps, nodes = page.evaluate(FPS_JS)
        browser.close()
    return found, fps, nodes


FIRST_PAINT_JS = "() => performance.getEntriesByName('first-contentful-paint')[0].startTime"

# frames sigma draws in 3 s while the camera turns and zooms a little every frame
FPS_JS = """async () => {
  let frames = 0;
  renderer.on("afterRender", () => { frames += 1; });
  const camera = renderer.getCamera();
  const started = performance.now();
  while (performance.now() - started < 3000) {
    await new Promise((done) => requestAnimationFrame(done));
    const t = (performance.now() - started) / 1000;
    camera.setState({ angle: t / 3, ratio: 1 + 0.2 * Math.sin(t) });
  }
  return [frames / ((performance.now() - started) / 1000), graph.order];
}"""


def memory_kb(pid: int) -> tuple[int, int]:
    """The process's resident set and proportional set sizes, in kB."""
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    with open(f"/proc/{pid}/smaps_rollup") as f:
        pss = next(int(line.split()[1]) for line in f if line.startswith("Pss:"))
    return rss, pss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--entities", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--home", default="/tmp/reverie-dashboard-bench")
    args = parser.parse_args()
    os.makedirs(args.home, mode=0o700, exist_ok=True)
    settings = Settings(args.home)
    started = time.monotonic()
    build(settings, args.memories, args.entities)
    built_s = time.monotonic() - started
    process, origin, port, token = serve(settings)
    try:
        idle = memory_kb(process.pid)
        server = server_times(port, token, args.runs)
        browser, fps, nodes = browser_times(origin, token, args.runs)
        served = memory_kb(process.pid)
    finally:
        process.terminate()
        process.wait(30)
    found = {
        "benchmark": "dashboard",
        "memories": args.memories,
        "entities": args.entities,
        "facts": 2 * args.entities,
        "built_s": round(built_s, 1),
        "server": server,
        "browser": browser,
        "graph_fps_500": round(fps, 1),
        "graph_nodes": nodes,
        "rss_mb_idle": round(idle[0] / 1024, 1),
        "rss_mb": round(served[0] / 1024, 1),
        "pss_mb": round(served[1] / 1024, 1),
    }
    print(json.dumps(found))


if __name__ == "__main__":
    main()
