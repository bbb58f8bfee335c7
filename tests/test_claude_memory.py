"""Claude Code's own memory read as reverie's: CLAUDE.md, rules and auto memory cut into sections
(the block reverie writes never read), imported once, again when a file changes or goes (only
the newest reading recalled), and never injected by the hooks while `reverie recall` finds them."""

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from ingest.claude_md import END as MEMORY_END
from ingest.claude_md import START as MEMORY_START
from ingest.claude_memory import SECTION_LIMIT, Known, Place, readings, sections
from ingest.project import project_key
from projections import sql
from reverie.testing import Folding, make_event
from schemas import kinds
from schemas.settings import Settings
from tests.support.processes import REVERIE, Stack, environ_of, run_hook, wait_for
from workers.claude_memory import import_places, known
from workers.redis_client import connect

CLAUDE_MD = (
    "# Orders service\n\n## Testing\n- run `pytest -q` before pushing\n\n"
    f"{MEMORY_START}\n# Project Memory\n## Facts\n- curated by reverie\n{MEMORY_END}\n\n"
    "## Style\n```md\n# not a heading\n```\nBlack, 110 columns\n"
)


def test_sections_keep_their_headings_and_skip_the_block_reverie_writes() -> None:
    found = sections(CLAUDE_MD.replace("\n", "\r\n"))
    assert [(s.heading, s.text) for s in found] == [
        ("Orders service > Testing", "- run `pytest -q` before pushing"),
        ("Orders service > Style", "```md\n# not a heading\n```\nBlack, 110 columns"),
    ]


def test_markers_inside_a_code_fence_are_text_and_an_open_block_hides_the_rest() -> None:
    fenced = f"## How\n```\n{MEMORY_START}\nkept\n{MEMORY_END}\n```\n"
    assert sections(fenced)[0].text == f"```\n{MEMORY_START}\nkept\n{MEMORY_END}\n```"
    # markers that make no block are the user's text, as curation leaves them (it refuses to write)
    assert [s.text for s in sections(f"## A\none\n{MEMORY_START}\n## B\ntwo\n")] == [
        "one\n" + MEMORY_START,
        "two",
    ]


def test_front_matter_is_skipped_and_a_long_section_is_cut_between_paragraphs() -> None:
    paragraph = "word " * 300
    found = sections(f"---\npaths: src/**\n---\n## Rules\n{paragraph}\n\n{paragraph}\n")
    assert [s.heading for s in found] == ["Rules", "Rules"]
    assert all(len(s.text) <= SECTION_LIMIT and "paths" not in s.text for s in found)


def _write(path: Path, text: str, mtime: float | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def _files(tmp_path: Path) -> tuple[Place, Path, dict[str, str]]:
    """A project with CLAUDE.md and a rule, a user with a CLAUDE.md, and the project's auto memory."""
    root, user = tmp_path / "orders", tmp_path / "user"
    _write(root / "CLAUDE.md", CLAUDE_MD)
    _write(root / ".claude" / "rules" / "api" / "errors.md", "# Errors\nReturn problem+json on 4xx\n")
    _write(user / ".claude" / "CLAUDE.md", "## Me\nI prefer small commits\n")
    memory = user / ".claude" / "projects" / project_key(str(root)) / "memory"
    _write(memory / "MEMORY.md", "# Memory\n- [Debugging](debugging.md)\n")
    _write(memory / "debugging.md", "## Flaky test\nThe orders test needs TZ=UTC\n")
    return Place(str(root), str(root)), user, {"HOME": str(user)}


def test_readings_plan_each_file_once_again_when_changed_and_once_when_gone(tmp_path: Path) -> None:
    place, user, environ = _files(tmp_path)
    first = readings(place, {}, str(user), environ)
    assert first == readings(place, {}, str(user), environ)  # the same ids, run twice
    by_origin = {(p.payload.origin, p.payload.scope, p.payload.text) for p in first}
    assert by_origin == {
        ("project", "project", "- run `pytest -q` before pushing"),
        ("project", "project", "```md\n# not a heading\n```\nBlack, 110 columns"),
        ("rules", "project", "Return problem+json on 4xx"),
        ("user", "global", "I prefer small commits"),
        ("auto-memory", "project", "- [Debugging](debugging.md)"),
        ("auto-memory", "project", "The orders test needs TZ=UTC"),
    }
    state = {
        p.payload.path: Known(p.payload.digest, p.ts_ms, p.payload.origin, p.payload.scope) for p in first
    }
    assert readings(place, state, str(user), environ) == []

    # CLAUDE.md restored from an older copy (older mtime) is newer all the same; the rule is gone
    claude_md = Path(place.root) / "CLAUDE.md"
    _write(claude_md, CLAUDE_MD.replace("pytest -q", "pytest -x"), mtime=1_000_000)
    os.remove(Path(place.root) / ".claude" / "rules" / "api" / "errors.md")
    second = readings(place, state, str(user), environ)
    changed = [p for p in second if p.payload.path == str(claude_md)]
    assert changed[0].payload.text == "- run `pytest -x` before pushing"
    assert all(p.ts_ms == state[str(claude_md)].ts_ms + 1 for p in changed)
    [gone] = [p for p in second if p.payload.origin == "rules"]
    assert (gone.payload.digest, gone.payload.text) == ("", "")
    assert len(second) == 3


def test_only_the_newest_reading_of_a_file_is_a_memory(tmp_path: Path, settings: Settings) -> None:
    place, user, environ = _files(tmp_path)
    folding = Folding(settings)

    def fold(planned: list[Any]) -> dict[str, Known]:
        at = datetime(2026, 11, 27, tzinfo=UTC)
        folding.fold(
            [
                make_event(
                    kinds.CLAUDE_MEMORY_READ, p.payload, id=p.event_id,
                    ts=datetime.fromtimestamp(0, UTC) + timedelta(milliseconds=p.ts_ms), recorded_at=at,
                    project=place.project, source=kinds.SOURCE_CLAUDE_MEMORY,
                )
                for p in planned
            ]
        )  # fmt: skip
        with sql.connect(settings) as db:
            return known(db, place.project)

    state = fold(readings(place, {}, str(user), environ))
    _write(Path(place.root) / "CLAUDE.md", "## Testing\n- run `tox`\n")
    fold(readings(place, state, str(user), environ))
    shown = "SELECT project, text FROM memory_texts WHERE kind = 'claude-memory' ORDER BY text"
    with sql.connect(settings) as db:
        texts = db.execute(shown).fetchall()
    assert (place.project, "From Claude Code's memory (CLAUDE.md, Testing): - run `tox`") in texts
    assert not [t for _, t in texts if "pytest" in t or "Black" in t or "curated" in t]
    assert (None, "From Claude Code's memory (CLAUDE.md, Me): I prefer small commits") in texts
    folding.close()


def test_the_dispatcher_queues_one_import_for_the_sessions_a_batch_starts() -> None:
    import fakeredis
    from rq import Queue

    from workers.thinking.runner import dispatch

    queue = Queue(connection=fakeredis.FakeRedis())
    started = [("e1", kinds.SESSION_STARTED, "s2"), ("e2", kinds.SESSION_STARTED, "s1")]
    dispatch(queue, "seg", [*started, ("e3", kinds.SESSION_STARTED, "s1")])
    jobs = [j for j in queue.get_jobs() if j.func_name == "workers.claude_memory.at_session_start"]
    assert [j.args for j in jobs] == [(["s1", "s2"],)]


@pytest.fixture
def env(home: str, tmp_path: Path) -> dict[str, str]:
    """The stack's environment, its HOME (Claude Code's folder, the user's memory) the test's."""
    return {**environ_of(home), "HOME": str(tmp_path / "user")}


def _recalled(env: dict[str, str], root: str, query: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [*REVERIE, "recall", "--json", query], env=env, cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout)["results"])


@pytest.mark.integration
def test_a_session_start_imports_claude_codes_memory_which_recall_shows_and_the_hook_never_injects(
    stack: Stack, env: dict[str, str], settings: Settings, tmp_path: Path
) -> None:
    place, _, _ = _files(tmp_path)
    env = {**env, "CLAUDE_PROJECT_DIR": place.root}

    def hook(event: str, **payload: Any) -> str:
        sent = {"session_id": "s1", "hook_event_name": event, "cwd": place.root, **payload}
        done = run_hook(json.dumps(sent).encode(), env, event)
        assert done.returncode == 0, done.stderr
        return done.stdout.decode()

    hook("SessionStart", source="startup")
    rows = "SELECT count(*) FROM memory_texts WHERE kind = 'claude-memory'"
    wait_for(lambda: stack.query(rows) == [(6,)], timeout=120, what="the memory files imported at the start")

    def found(query: str) -> list[str]:
        return [r["text"] for r in _recalled(env, place.root, query) if r["kind"] == "claude-memory"]

    wait_for(lambda: any("TZ=UTC" in t for t in found("orders test TZ")), timeout=120, what="recall finds it")
    assert stack.query("SELECT DISTINCT source FROM events WHERE kind = 'claude_memory.read'") == [
        ("claude-memory",)
    ]

    told = hook("UserPromptSubmit", prompt="Which TZ does the orders test need, and how do I run pytest?")
    assert "TZ=UTC" not in told and "pytest -q" not in told

    client = connect(settings)
    assert import_places(settings, [place], client, env) == 0  # unchanged: nothing emitted
    _write(Path(place.root) / "CLAUDE.md", "## Testing\n- run the orders tests with `tox -e py312`\n")
    assert import_places(settings, [place], client, env) == 1
    wait_for(
        lambda: any("tox -e py312" in t for t in found("how do I run the orders tests")),
        timeout=120,
        what="the new CLAUDE.md recalled",
    )
    assert not [t for t in found("run pytest before pushing") if "pytest -q" in t]


def test_a_memory_file_that_is_no_regular_file_is_passed_over_never_waited_on(tmp_path: Path) -> None:
    place, user, environ = _files(tmp_path)
    claude_md = Path(place.root) / "CLAUDE.md"
    claude_md.unlink()
    os.mkfifo(claude_md)  # opening it to read would wait for a writer forever
    (Path(place.root) / "CLAUDE.local.md").symlink_to("/dev/zero")  # read, it would never end
    planned = readings(place, {}, str(user), environ)
    paths = {p.payload.path for p in planned}
    assert str(claude_md) not in paths and str(Path(place.root) / "CLAUDE.local.md") not in paths
    assert {p.payload.origin for p in planned} == {"rules", "user", "auto-memory"}
