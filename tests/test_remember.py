"""Remembering and forgetting by hand: categories told from the text, `reverie remember` and
`reverie forget` with the stack down (nothing lost), and how both fold; a newer memory that
updates an older one (a changed value) supersedes it, and a correction replaces the fact it
corrects everywhere; what a new or resumed session is told: the project's decisions, each once,
and the next steps its agent last named."""

import json
import os
import socket
import subprocess
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import fakeredis
import msgspec
import pytest

from ingest.injection import context_for
from ingest.spool import spooled
from projections import sql
from projections.curation import section
from reverie.remembering import correct
from reverie.testing import Folding, make_event, streamed
from schemas import kinds
from schemas.categories import CATEGORIES, detect_category
from schemas.events import Event, decode_event
from schemas.ids import new_event_id
from schemas.manifest import CompactionManifest, next_steps
from schemas.memory import MemorySuperseded
from schemas.observed import MemoryForgotten, MemoryRemembered
from schemas.recall import RecallRequest
from schemas.settings import Settings
from tests.support.processes import REVERIE, Stack, run_hook, wait_for
from workers.extraction.updates import Remembered, superseded, updates
from workers.thinking import runner


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Chose PostgreSQL over MongoDB for ACID requirements", "decision"),
        ("Offset pagination caused timeouts on tables with 1M+ rows", "pagination"),
        ("The payments endpoint returns 409 on retries", "api"),
        ("Run pytest with -x before pushing", "testing"),
        ("The deploy to Kubernetes needs the migration job first", "deployment"),
        ("I prefer small commits", "preference"),
        ("The office closes at six", "decision"),  # Memory Fabric's default
    ],
)
def test_a_category_is_told_from_the_text(text: str, category: str) -> None:
    assert detect_category(text) == category


def test_there_are_memory_fabrics_categories() -> None:
    assert len(CATEGORIES) == len(set(CATEGORIES)) == 18  # its 17 told by keywords, and preference


def test_remember_and_forget_with_the_stack_down_lose_nothing(env: dict[str, str], tmp_path: Path) -> None:
    env = {**env, "REDIS_URL": f"unix://{tmp_path}/nobody-listens.sock"}
    flags = ["--failed", "--agent", "db-engineer", "--global"]
    remembered = subprocess.run(
        [*REVERIE, "remember", *flags, "Offset pagination timed out"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert remembered.returncode == 0, remembered.stderr
    assert (
        "remembered as pagination for every project" in remembered.stderr and "spooled" in remembered.stderr
    )
    [path] = spooled(Settings(env["REVERIE_HOME"]).spool_dir, 0)
    memory_id = decode_event(Path(path).read_bytes()).id
    unknown = subprocess.run(
        [*REVERIE, "forget", "fact:1234", "--reason", "wrong"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert unknown.returncode == 1 and "no memory has the id 'fact:1234'" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    forgotten = subprocess.run(
        [*REVERIE, "forget", memory_id, "--reason", "wrong"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert forgotten.returncode == 0, forgotten.stderr  # spooled a moment ago: known all the same
    events = [decode_event(Path(p).read_bytes()) for p in spooled(Settings(env["REVERIE_HOME"]).spool_dir, 0)]
    assert len(events) == 2
    by_kind = {e.kind: e for e in events}
    said = json.loads(bytes(by_kind[kinds.MEMORY_REMEMBERED].payload))
    assert said == {
        "text": "Offset pagination timed out", "tags": [], "category": "pagination", "outcome": "failed",
        "agent": "db-engineer", "scope": "global",
    }  # fmt: skip
    assert by_kind[kinds.MEMORY_REMEMBERED].source == "cli"
    assert json.loads(bytes(by_kind[kinds.MEMORY_FORGOTTEN].payload)) == {
        "memory_id": memory_id,
        "reason": "wrong",
    }
    empty = subprocess.run([*REVERIE, "remember", "  "], env=env, capture_output=True, text=True, timeout=60)
    assert empty.returncode == 1 and "nothing to remember" in empty.stderr


def test_forget_of_an_id_no_memory_has_is_an_error_and_records_nothing(
    settings: Settings, env: dict[str, str], tmp_path: Path
) -> None:
    at = datetime(2026, 11, 1, tzinfo=UTC)
    kept = MemoryRemembered(text="kestrel is the staging cluster")
    remembered = make_event(
        kinds.MEMORY_REMEMBERED, kept, id="01M7" + "0" * 22, ts=at, recorded_at=at, project=str(tmp_path),
        source="cli",
    )  # fmt: skip
    folding = Folding(settings)
    folding.fold([remembered])
    folding.close()
    env = {**env, "REDIS_URL": f"unix://{tmp_path}/nobody-listens.sock"}

    def forget(memory_id: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*REVERIE, "forget", memory_id], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60
        )

    for unknown in ("01M7" + "9" * 22, "fact:nobody-knows", "01M7"):  # a prefix is no id
        refused = forget(unknown)
        assert refused.returncode == 1 and f"no memory has the id {unknown!r}" in refused.stderr
        assert "reverie recall" in refused.stderr and "Traceback" not in refused.stderr
    assert spooled(settings.spool_dir, 0) == []
    assert forget(remembered.id).returncode == 0
    assert len(spooled(settings.spool_dir, 0)) == 1


def test_what_is_remembered_for_every_project_has_none_and_what_is_forgotten_leaves_recall(
    settings: Settings,
) -> None:
    folding = Folding(settings)
    at = datetime(2026, 11, 1, tzinfo=UTC)

    def event(n: int, kind: str, payload: MemoryRemembered | MemoryForgotten) -> Event:
        return make_event(
            kind, payload, id=f"01M8{n:022d}", ts=at, recorded_at=at, project="/app", source="cli"
        )

    here = MemoryRemembered(text="kestrel is the staging cluster", category="deployment")
    everywhere = MemoryRemembered(text="pin linters", outcome="success", scope="global")
    folding.fold([event(1, kinds.MEMORY_REMEMBERED, here), event(2, kinds.MEMORY_REMEMBERED, everywhere)])
    first, second = "01M8" + "0" * 21 + "1", "01M8" + "0" * 21 + "2"
    remembered = "select memory_id, project, text from memory_texts where kind = 'remembered' order by 1"
    with sql.connect(settings) as db:
        assert db.execute(remembered).fetchall() == [
            (first, "/app", "kestrel is the staging cluster"),
            (second, None, "Worked: pin linters"),
        ]
    folding.fold([event(3, kinds.MEMORY_FORGOTTEN, MemoryForgotten(memory_id=first, reason="x"))])
    with sql.connect(settings) as db:
        assert [m for m, _, _ in db.execute(remembered).fetchall()] == [second]
        assert db.execute("select reason, source from forgotten").fetchall() == [("x", "cli")]
    folding.close()


def test_a_project_can_forget_only_what_it_sees_and_sees_only_its_own_and_global_memories(
    settings: Settings,
) -> None:
    from schemas.memory import EntityObserved, FactAsserted

    folding = Folding(settings)
    at = datetime(2026, 11, 1, tzinfo=UTC)

    def event(n: int, kind: str, payload: Any, project: str) -> Event:
        derived = kind not in (kinds.MEMORY_REMEMBERED, kinds.MEMORY_FORGOTTEN)  # (from memory 1)
        return make_event(
            kind,
            payload,
            id=f"01M9{n:022d}",
            ts=at,
            recorded_at=at,
            project=project,
            source="extractor" if derived else "mcp",
            caused_by=(memory(1),) if derived else (),
        )

    def memory(n: int) -> str:
        return f"01M9{n:022d}"

    folding.fold(
        [
            event(
                1, kinds.MEMORY_REMEMBERED, MemoryRemembered(text="kestrel is the staging cluster"), "/app"
            ),
            event(2, kinds.MEMORY_REMEMBERED, MemoryRemembered(text="pin linters", scope="global"), "/app"),
            event(
                7,
                kinds.ENTITY_OBSERVED,
                EntityObserved(
                    entity_id="lib:duckdb", type="library", name="DuckDB", normalized_name="duckdb"
                ),
                "/app",
            ),
            event(
                3,
                kinds.FACT_ASSERTED,
                FactAsserted(
                    fact_id="f-app", source="lib:duckdb", relation="uses", description="app uses DuckDB"
                ),
                "/app",
            ),
            event(
                4,
                kinds.FACT_ASSERTED,
                FactAsserted(
                    fact_id="f-ops", source="lib:duckdb", relation="uses", description="ops uses DuckDB"
                ),
                "/ops",
            ),
        ]
    )
    with sql.connect(settings) as db:
        scopes = set(db.execute("select id, project from memory_scopes").fetchall())
        assert {(memory(1), "/app"), (memory(2), None), ("f-app", "/app"), ("f-ops", "/ops")} <= scopes
        timeline = db.execute(
            "select detail, project, everywhere from entity_timeline where what like 'fact:%' order by 1"
        ).fetchall()
        assert timeline == [("app uses DuckDB", "/app", False), ("ops uses DuckDB", "/ops", False)]
    from mcp.server.mcpserver.exceptions import ToolError

    from reverie.mcp_server import timeline as told

    assert "ops uses DuckDB" in told(settings, "duckdb", "/ops") and "app uses" not in told(
        settings, "duckdb", "/ops"
    )
    assert "first seen" in told(settings, "DuckDB", "/app")
    with pytest.raises(ToolError, match="in this project"):
        told(settings, "DuckDB", "/elsewhere")
    folding.fold(
        [
            event(5, kinds.MEMORY_FORGOTTEN, MemoryForgotten(memory_id=memory(1), reason="not mine"), "/ops"),
            event(6, kinds.MEMORY_FORGOTTEN, MemoryForgotten(memory_id=memory(2), reason="outdated"), "/ops"),
        ]
    )
    remembered = "select memory_id from memory_texts where kind = 'remembered'"
    with sql.connect(settings) as db:
        assert db.execute(remembered).fetchall() == [(memory(1),)]  # the global one went, /app's stays
    folding.close()


def test_a_new_session_is_told_its_own_projects_decisions_and_those_that_hold_everywhere(
    settings: Settings,
) -> None:
    from projections.recall.memories import Memories
    from schemas.memory import FactAsserted, FailureRecurring

    at = datetime(2026, 11, 1, tzinfo=UTC)

    def decided(n: int, project: str, description: str, scope: str = "project") -> Event:
        fact = FactAsserted(
            fact_id=f"f{n}", source="e0", relation="decided_for", description=description,
            category="decisions", scope=scope,  # type: ignore[arg-type]
        )  # fmt: skip
        return make_event(
            kinds.FACT_ASSERTED, fact, id=f"01M9{n:022d}", ts=at, recorded_at=at, project=project,
            source="worker", caused_by=("01CAUSE",),
        )  # fmt: skip

    def recurring(n: int, project: str, signature: str) -> Event:
        failure = FailureRecurring(
            failure_id=f"x{n}", signature=signature, occurrences=3, example="", last_seen=at
        )
        return make_event(
            kinds.FAILURE_RECURRING, failure, id=f"01M9{n:022d}", ts=at, recorded_at=at, project=project,
            source="worker", caused_by=("01CAUSE",),
        )  # fmt: skip

    folding = Folding(settings)
    folding.fold(
        [
            decided(1, "/app", "Use PostgreSQL for orders"),
            decided(2, "/other", "Use MongoDB for the catalogue"),
            decided(3, "/other", "Pin the linters in CI", scope="global"),
            recurring(4, "/app", "pytest: fixture 'db' not found"),
            recurring(5, "/other", "mongod: connection refused"),
        ]
    )
    folding.close()
    memories = Memories(settings)
    try:
        told = memories.continuity("/app", "new-session")
    finally:
        memories.close()
    assert sorted(told.decisions) == ["Pin the linters in CI", "Use PostgreSQL for orders"]
    assert told.failures == ["pytest: fixture 'db' not found (3x)"]


def test_a_pinned_preference_is_told_first_whatever_its_strength_until_unpinned(settings: Settings) -> None:
    from projections.recall.memories import Memories
    from schemas.memory import PreferenceCrystallized
    from schemas.observed import PreferencePinned

    at = datetime(2026, 11, 1, tzinfo=UTC)

    rules = [
        "Use pnpm, never npm", "Run ruff before committing", "Write tests with pytest", "Keep commits small",
        "Prefer dataclasses to dicts", "Name branches after issues", "Squash merge pull requests",
        "Document public functions", "Pin dependencies exactly", "Avoid global state in modules",
        "Log with structlog", "Tabs are never used for indentation",
    ]  # fmt: skip

    def crystallized(n: int, strength: float) -> Event:
        preference = PreferenceCrystallized(
            preference_id=f"p{n}", statement=rules[n], strength=strength, evidence=3
        )
        return make_event(
            kinds.PREFERENCE_CRYSTALLIZED, preference, id=f"01M9{n:022d}", ts=at, recorded_at=at,
            project="/app", source="worker", caused_by=("01CAUSE",),
        )  # fmt: skip

    def pinned(n: int, pin: bool, later: int) -> Event:
        when = at + timedelta(minutes=later)
        payload = PreferencePinned(preference_id=f"p{n}", pinned=pin)
        return make_event(
            kinds.PREFERENCE_PINNED, payload, id=f"01N0{later:022d}", ts=when, recorded_at=when,
            project="/app", source=kinds.SOURCE_DASHBOARD,
        )  # fmt: skip

    def told() -> list[str]:
        memories = Memories(settings)
        try:
            return memories.continuity("/app", "new-session").preferences
        finally:
            memories.close()

    folding = Folding(settings)
    folding.fold([crystallized(n, 0.9 - n / 20) for n in range(12)])  # more than a session is told
    weakest = rules[11]
    assert len(told()) == 8 and not any(p.startswith(weakest) for p in told())
    folding.fold([pinned(11, True, 1)])
    assert told()[0].startswith(f"{weakest} (pinned, recurring: ")
    assert len(told()) == 8
    folding.fold([pinned(11, False, 2)])
    assert not any(p.startswith(weakest) for p in told())
    folding.close()


def test_the_next_steps_an_agent_says_are_left() -> None:
    said = "Migrated the orders table.\n\n## Next steps\n- add the index\n2. run alembic check\n\nThat's all."
    assert next_steps(said) == ["add the index", "run alembic check"]
    assert next_steps("Done. TODO: wire the retry") == []  # only a line that starts with it announces
    assert next_steps("TODO: wire the retry\n* then the backoff") == ["wire the retry", "then the backoff"]
    assert next_steps(None) == [] and next_steps("All green.") == []


LAST_MESSAGES = [
    (
        "I've fixed the flaky upload test: it now waits for the server to be ready.\n\n"
        "**Next steps:**\n1. **Add** the index on orders.created_at, which the report query needs\n"
        "   (the slow one, 4 s on staging)\n2. Run alembic check before the release\n"
        "3. Remove the sleep(2) workaround in conftest.py\n\nLet me know if you want me to go on.",
        [
            "**Add** the index on orders.created_at, which the report query needs"
            " (the slow one, 4 s on staging)",
            "Run alembic check before the release",
            "Remove the sleep(2) workaround in conftest.py",
        ],
    ),
    (
        "## Summary\nThe retry now backs off.\n\n## Next steps\n\n- Wire the retry into the client\n"
        "  - then drop the old loop\n- [x] Write the backoff\n- [ ] Test the jitter\n\n## Notes\nNone.",
        ["Wire the retry into the client", "then drop the old loop", "Test the jitter"],
    ),
    (
        "The migration ran on staging.\n\nRemaining:\n- deploy to production\n- tell the team in #orders",
        ["deploy to production", "tell the team in #orders"],
    ),
    (
        "J'ai corrigé le bug de pagination.\n\n### Prochaines étapes :\n1. Ajouter un test de régression\n"
        "2. Déployer en préproduction",
        ["Ajouter un test de régression", "Déployer en préproduction"],
    ),
    ("## Next steps\nRun the migration, then deploy.\n\nThat is all.", ["Run the migration, then deploy."]),
    ("Done.\n```python\n# TODO: remove this hack\nx = 1\n```\nAll green.", []),  # code says nothing
]


@pytest.mark.parametrize(("message", "steps"), LAST_MESSAGES, ids=range(len(LAST_MESSAGES)))
def test_the_next_steps_of_real_looking_last_messages(message: str, steps: list[str]) -> None:
    assert next_steps(message) == steps


def test_the_stop_hook_tells_the_service_its_last_message_redacted(
    settings: Settings, env: dict[str, str], tmp_path: Path
) -> None:
    """The snapshot knows the Stop's message only once it is archived and folded: the hook brings it."""
    os.makedirs(settings.home, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(settings.recall_socket_path)
    listener.listen()
    heard: list[bytes] = []

    def listen() -> None:
        conn, _ = listener.accept()
        with conn, conn.makefile("rb") as lines:
            heard.append(lines.readline())

    listening = threading.Thread(target=listen, daemon=True)
    listening.start()
    message = "Done.\n\nNext steps:\n1. rotate the key, the password is hunter2-Xy9!\n2. deploy"
    stop = {"session_id": "s1", "hook_event_name": "Stop", "last_assistant_message": message}
    try:
        offline = {**env, "REDIS_URL": f"unix://{tmp_path}/nobody-listens.sock"}
        assert run_hook(json.dumps(stop).encode(), offline, "Stop").returncode == 0
        listening.join(30)
    finally:
        listener.close()
    [line] = heard
    request = msgspec.json.decode(line, type=RecallRequest)
    assert (request.hook, request.session_id) == ("Stop", "s1")
    assert request.last_message is not None and "hunter2-Xy9!" not in request.last_message
    assert next_steps(request.last_message) == [
        "rotate the key, the password is [REDACTED:prose-secret]",
        "deploy",
    ]


def test_of_two_manifests_the_next_steps_of_the_newer_message_hold() -> None:
    at = datetime(2026, 11, 1, tzinfo=UTC)

    def manifest(steps: list[str], said_at: datetime | None) -> CompactionManifest:
        return CompactionManifest(
            session_id="s1", project="/app", written_at=at, at="Stop", next_steps=steps, steps_said_at=said_at
        )

    stopped = manifest(["deploy"], at)  # the Stop hook's own message
    snapshot = manifest(["older"], at - timedelta(minutes=1))  # the snapshot's, one turn behind
    assert snapshot.with_fresher_steps(stopped).next_steps == ["deploy"]
    assert stopped.with_fresher_steps(snapshot).next_steps == ["deploy"]
    assert manifest([], at + timedelta(minutes=1)).with_fresher_steps(stopped).next_steps == []
    assert manifest([], None).with_fresher_steps(stopped).next_steps == ["deploy"]  # no message known
    assert stopped.with_fresher_steps(None) == stopped


def test_a_resumed_session_is_told_the_next_steps_its_last_message_named_and_each_decision_once(
    stack: Stack, env: dict[str, str], settings: Settings, tmp_path: Path
) -> None:
    env = {**env, "CLAUDE_PROJECT_DIR": str(tmp_path)}

    def hook(event: str, **payload: Any) -> str:
        sent = {"session_id": "s1", "hook_event_name": event, "cwd": str(tmp_path), **payload}
        done = run_hook(json.dumps(sent).encode(), env, event)
        assert done.returncode == 0
        return done.stdout.decode()

    hook("UserPromptSubmit", prompt="Let's use PostgreSQL 16 for the orders service.")
    edited = {"file_path": str(tmp_path / "orders" / "models.py"), "old_string": "a", "new_string": "b"}
    hook("PostToolUse", tool_name="Edit", tool_input=edited, tool_response={"success": True})
    starting = {"session_id": "s0", "source": "startup"}  # another session, which the service tells
    wait_for(
        lambda: "PostgreSQL 16" in context_for(settings, "SessionStart", starting, str(tmp_path)),
        timeout=120,
        what="the decision extracted and known to the recall service",
    )
    message, steps = LAST_MESSAGES[0]
    hook("Stop", last_assistant_message=message)
    manifest = Path(settings.manifest_path("s1"))
    wait_for(lambda: manifest.exists() and "alembic" in manifest.read_text(), what="the Stop's manifest")

    told = hook("SessionStart", source="resume")
    assert "Where this session stood: its next steps" in told
    for step in steps:
        assert json.dumps(step)[1:-1] in told, step
    assert told.count("PostgreSQL 16 for the orders service") == 1


def test_projects_are_as_related_as_the_dependencies_and_entities_they_share(settings: Settings) -> None:
    from schemas.memory import EntityObserved, EntityType, FactAsserted

    at = datetime(2026, 11, 1, tzinfo=UTC)
    made: list[Event] = []

    def derived(kind: str, payload: EntityObserved | FactAsserted, project: str) -> None:
        n = len(made)
        made.append(
            make_event(
                kind,
                payload,
                id=f"01MA{n:022d}",
                ts=at,
                recorded_at=at,
                project=project,
                source="worker",
                caused_by=("01CAUSE",),
            )
        )

    types: dict[str, EntityType] = {"app": "project", "kafka": "tool"}
    for name in ("app", "lib1", "lib2", "lib3", "lib4", "kafka"):
        entity = EntityObserved(
            entity_id=name, type=types.get(name, "library"), name=name, normalized_name=name
        )
        derived(kinds.ENTITY_OBSERVED, entity, "")

    def fact(project: str, relation: str, target: str) -> None:
        said = FactAsserted(
            fact_id=f"{project}{target}", source="app", relation=relation,  # type: ignore[arg-type]
            target=target, description=f"{relation} {target}",
        )  # fmt: skip
        derived(kinds.FACT_ASSERTED, said, project)

    for project, libraries in {"/a": ["lib1", "lib2"], "/b": ["lib2", "lib3"], "/c": ["lib4"]}.items():
        for library in libraries:
            fact(project, "depends_on", library)
    fact("/a", "uses", "kafka")
    fact("/b", "uses", "kafka")
    folding = Folding(settings)
    folding.fold(made)
    folding.close()
    with sql.connect(settings) as db:
        related = {(a, b): round(r, 3) for a, b, r in db.execute("select * from related_projects").fetchall()}
    assert related[("/a", "/b")] == related[("/b", "/a")] == round(1 / 3 * 0.6 + 0.4, 3)
    assert related[("/a", "/c")] == related[("/c", "/b")] == 0.0


def extracted(folding: Folding, batch: list[Event]) -> list[Event]:
    """`batch` archived and folded, extraction run on it as a worker runs it, and what it derived
    folded in turn: those events."""
    if folding.projector.db is None:
        folding.projector.open()
    path = folding.log.append(batch)
    folding.projector.catch_up()
    client = fakeredis.FakeRedis()
    runner.run("extract", runner.Segment(path, [e.id for e in batch]), client, folding.settings)
    derived = streamed(client)
    if derived:
        folding.fold(derived)
    return derived


def remembered_at(minutes: int, text: str, project: str = "/app") -> Event:
    when = datetime(2026, 11, 1, tzinfo=UTC) + timedelta(minutes=minutes)
    return make_event(
        kinds.MEMORY_REMEMBERED, MemoryRemembered(text=text), id=f"01MA{minutes:022d}", ts=when,
        recorded_at=when, project=project, source=kinds.SOURCE_CLI,
    )  # fmt: skip


def shown(db: Any, kind: str) -> list[str]:
    """The texts of `kind` that memory_texts holds (what recall ranks), in time order."""
    return [
        t
        for (t,) in db.execute(f"select text from memory_texts where kind = '{kind}' order by ts").fetchall()
    ]


def test_a_newer_memory_that_changes_a_command_supersedes_the_older_one(
    settings: Settings, tmp_path: Path
) -> None:
    policy = "Install dependencies with `{}` before running the tests"
    older = remembered_at(1, policy.format("npm ci"))
    newer = remembered_at(2, policy.format("pnpm install --frozen-lockfile"))
    folding = Folding(settings)
    assert extracted(folding, [older]) == []  # nothing to update yet
    [updated] = extracted(folding, [newer])
    assert updated.kind == kinds.MEMORY_SUPERSEDED and updated.caused_by == (older.id, newer.id)
    said = msgspec.json.decode(updated.payload, type=MemorySuperseded)
    assert (said.memory_id, said.by_memory_id) == (older.id, newer.id)
    with sql.connect(settings) as db:
        # recall ranks memory_texts: the agent is handed one command, the newer
        assert shown(db, "remembered") == [policy.format("pnpm install --frozen-lockfile")]
        written = " ".join(section(db, "/app").facts)  # CLAUDE.md's memory section
        assert "pnpm install --frozen-lockfile" in written and "npm ci" not in written
        # kept in the log and in the table, only no longer recalled
        assert db.execute("select count(*) from remembered").fetchone() == (2,)
        assert db.execute(f"select count(*) from events where id = '{older.id}'").fetchone() == (1,)
        [(reason,)] = db.execute(f"select reason from forgotten where memory_id = '{older.id}'").fetchall()
        assert reason.startswith(f"superseded by {newer.id}")
    assert extracted(folding, [newer]) == []  # run again: the older stands no more, nothing more to say
    folding.close()
    elsewhere = Folding(Settings(str(tmp_path / "another-machine")))  # the same memories, the same event
    assert extracted(elsewhere, [older]) == [] and [e.id for e in extracted(elsewhere, [newer])] == [
        updated.id
    ]
    elsewhere.close()


def test_two_memories_about_different_subjects_both_stay_however_many_words_they_share(
    settings: Settings,
) -> None:
    folding = Folding(settings)
    said = [
        "run unit tests with pytest -q before pushing",
        "run the linter with ruff check before pushing",
        "The API runs on port 8080",
        "The admin API runs on port 9090",
    ]
    for minutes, text in enumerate(said):
        assert extracted(folding, [remembered_at(minutes, text)]) == []
    with sql.connect(settings) as db:
        assert shown(db, "remembered") == said
    folding.close()


@pytest.mark.parametrize(
    ("older", "newer", "updated"),
    [
        ("Use Node 18 for the build", "Use Node 20 for the build", True),  # a version
        ("Run unit tests with pytest -q", "Run unit tests with pytest -x", True),  # a flag
        ("Config lives in config/dev.toml", "Config lives in config/local.toml", True),  # a path
        ("The staging cluster is kestrel", "The staging cluster is osprey", True),  # a name
        ("Always run npm ci in CI", "Always run pnpm install --frozen-lockfile in CI", True),  # a command
        ("run unit tests with pytest -q", "run the linter with ruff check", False),  # other subjects
        ("run unit tests with pytest", "run integration tests with pytest", False),
        ("The production cluster is kestrel", "The staging cluster is kestrel", False),
        ("Unit tests live in tests/unit", "Integration tests live in tests/integration", False),
        ("Run `make test` for the backend", "Run `make lint` for the backend", False),  # another command
        (
            "Deploys are allowed on Fridays",
            "Deploys are not allowed on Fridays",
            False,
        ),  # turned, not updated
        ("the deploy key rotates monthly", "the deploy key rotates monthly", False),  # said again
    ],
)
def test_an_update_is_the_same_words_about_the_same_subject_but_for_a_value(
    older: str, newer: str, updated: bool
) -> None:
    assert updates(older, newer) is updated


def test_of_two_memories_the_later_supersedes_whichever_arrived_first() -> None:
    """A memory imported late, older than the one that stands: it is the one superseded; and a
    subagent's memory, or one in another project, is never another's update."""
    at = datetime(2026, 11, 1, tzinfo=UTC)
    standing = [
        Remembered(
            event_id="01MB2", project="/app", ts=at + timedelta(days=2), text="Use Node 20 for the build"
        ),
        Remembered(
            event_id="01MB3", project="/app", ts=at, text="Use Node 16 for the build", agent="frontend-dev"
        ),
    ]
    late = remembered_at(0, "Use Node 18 for the build")
    elsewhere = remembered_at(1, "Use Node 22 for the build", project="/other")
    found = list(superseded([late, elsewhere], lambda p: [r for r in standing if r.project == p]))
    assert [(d.payload.memory_id, d.payload.by_memory_id) for d in found] == [(late.id, "01MB2")]  # type: ignore[attr-defined]


def test_a_correction_replaces_the_fact_it_corrects_in_the_graph_recall_and_claude_md(
    settings: Settings,
) -> None:
    """As the dashboard corrects: the new fact is about what the wrong one was about (its subject
    and relation), in the user's words, held fully; the wrong one, and the prompt that stated
    it, leave recall and CLAUDE.md; the log keeps both."""
    folding = Folding(settings)
    when = datetime(2026, 11, 1, tzinfo=UTC)
    stated = make_event(
        kinds.PROMPT_SUBMITTED, {"prompt": "remember that the API runs on port 8080", "session_id": "s1"},
        id=new_event_id(int(when.timestamp() * 1000)), ts=when, recorded_at=when, project="/app",
        source=kinds.SOURCE_CLAUDE_CODE, session_id="s1",
    )  # fmt: skip
    extracted(folding, [stated])
    with sql.connect(settings) as db:
        [(wrong, subject, relation)] = db.execute("select fact_id, source, relation from facts").fetchall()
    done = correct(
        settings, wrong, "The API runs on port 8443 behind the TLS proxy", source=kinds.SOURCE_DASHBOARD
    )
    assert done.went_to == "spool"  # no stack runs: kept until one does
    [path] = spooled(settings.spool_dir, 0)
    correction = decode_event(Path(path).read_bytes())
    assert correction.source == kinds.SOURCE_DASHBOARD
    assert msgspec.json.decode(correction.payload)["stated_in"] == [stated.id]
    extracted(folding, [correction])
    with sql.connect(settings) as db:
        current = db.execute(
            "select fact_id, source, relation, description, confidence, memory_type, dimensions->>'who' "
            f"from facts_current where fact_id in ('{wrong}', '{done.memory_id}')"
        ).fetchall()
        assert current == [
            (done.memory_id, subject, relation, "The API runs on port 8443 behind the TLS proxy", 1.0,
             "semantic", "the user"),
        ]  # fmt: skip
        assert db.execute(f"select superseded_by from facts where fact_id = '{wrong}'").fetchone() == (
            done.memory_id,
        )
        linked = f"select entity_id from memory_entities where memory_id = '{done.memory_id}'"
        assert db.execute(linked).fetchall() == [(subject,)]  # where the wrong one was, in the graph
        # recall ranks memory_texts: the correction is there, the wrong fact and its prompt are not
        assert shown(db, "fact") == ["The API runs on port 8443 behind the TLS proxy"]
        assert shown(db, "prompt") == []
        assert db.execute(f"select count(*) from prompts where event_id = '{stated.id}'").fetchone() == (1,)
        written = " ".join(section(db, "/app").facts)
        assert "8443" in written and "8080" not in written
    folding.close()
