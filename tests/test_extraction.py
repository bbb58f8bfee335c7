"""Extraction runs as RQ jobs the dispatcher enqueues per archived batch, and appends derived
events; a job that fails every try is named in `reverie status` with its error."""

import functools
import json
import os
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import fakeredis
import msgspec
import pytest
from rq import Queue

from ingest.emit import append
from ingest.transcripts import ImportedEvent, find_transcripts, read_transcript
from projections.event_log import EventLog
from projections.recall.memories import Continuity, Memories
from projections.recall.render import render_continuity
from projections.recall.words import jaccard, word_set
from reverie.testing import Folding, imported_event, make_event
from schemas import kinds, memory
from schemas.events import Event
from schemas.ids import new_event_id
from schemas.observed import FactCorrected
from schemas.settings import QUEUE, Settings
from schemas.text.fence import escape
from schemas.text.verdicts import Verdict, verdict
from tests.support.captures import TRANSCRIPTS
from tests.support.processes import BIN, Stack, run_hook, wait_for
from workers.dispatcher import Dispatcher
from workers.evidence.failures import command_key, signature
from workers.extraction.derive import derive, derive_session
from workers.extraction.episodes import episodes
from workers.extraction.files import canonical_name, entity_id, file_entities
from workers.extraction.manifests import dependencies
from workers.extraction.settling import DUPLICATE_JACCARD, StandingFact, settle
from workers.redis_client import connect
from workers.thinking.follower import Derived
from workers.thinking.registry import named
from workers.thinking.runner import Segment, Session, enqueue, run

NOW = datetime.now(UTC)


def tool(path: str, project: str = "/home/u/app", kind: str = kinds.TOOL_USED, name: str = "Read") -> Event:
    return make_event(
        kind, {"tool_name": name, "tool_input": {"file_path": path}}, id=new_event_id(), ts=NOW,
        recorded_at=NOW, project=project, source="test", session_id="s",
    )  # fmt: skip


def test_each_file_a_batch_names_is_one_entity_of_its_project_with_the_events_that_name_it() -> None:
    read, edit = (
        tool("/home/u/app/src/db.py"),
        tool("/home/u/app/src/db.py", kind=kinds.TOOL_FAILED, name="Edit"),
    )
    other_project = tool("/home/u/lib/src/db.py", project="/home/u/lib")
    outside = tool("/etc/hosts")
    prompt = make_event(
        kinds.PROMPT_SUBMITTED, {"prompt": "look at /home/u/app/x.py"}, id=new_event_id(), ts=NOW,
        recorded_at=NOW, project="/home/u/app", source="test",
    )  # fmt: skip

    searched = make_event(
        kinds.TOOL_USED,
        {"tool_name": "Grep", "tool_input": {"pattern": "x", "path": "/home/u/app/lib"}},
        id=new_event_id(),
        ts=NOW,
        recorded_at=NOW,
        project="/home/u/app",
        source="test",
    )  # a folder searched is no file
    vendored = tool("/home/u/app/deps/plug/lib/plug.ex")  # nor is what the project vendors or builds

    observations = list(file_entities([read, edit, other_project, outside, prompt, searched, vendored]))
    assert all(len(causes) == 1 for _, _, causes in observations)  # one per event, never per batch
    found: dict[tuple[str, str], tuple[memory.EntityObserved, list[str]]] = {}
    for entity, project, causes in observations:
        assert found.setdefault((project, entity.name), (entity, []))[0] == entity
        found[(project, entity.name)][1].extend(causes)

    assert sorted(found) == [
        ("/home/u/app", "/etc/hosts"),
        ("/home/u/app", "src/db.py"),
        ("/home/u/lib", "src/db.py"),
    ]
    entity, causes = found[("/home/u/app", "src/db.py")]
    assert entity.type == "file" and sorted(causes) == sorted([read.id, edit.id])
    assert entity.entity_id == entity_id("file", "src/db.py", "/home/u/app")
    assert entity.entity_id != found[("/home/u/lib", "src/db.py")][0].entity_id


def test_the_dispatcher_enqueues_one_extraction_per_batch_of_observed_events(settings: Settings) -> None:
    client = fakeredis.FakeRedis()
    dispatcher = Dispatcher(settings, client, consumer="test", block_ms=10)
    dispatcher.start()
    observed = [tool(f"/home/u/app/f{n}.py") for n in range(3)]
    append(client, [msgspec.json.encode(e) for e in observed])
    dispatcher.archive(dispatcher.read(">"))
    [job] = Queue(QUEUE, connection=client).jobs
    [(name, batch)] = [job.args]
    assert job.func_name == "workers.thinking.runner.run" and name == "extract"
    assert isinstance(batch, Segment) and sorted(batch.ids) == sorted(e.id for e in observed)
    assert job.retries_left == 2

    run(name, batch, client, settings)  # what a worker does: three entities, derived
    dispatcher.archive(dispatcher.read(">"))
    assert len(Queue(QUEUE, connection=client).jobs) == 1  # derived events are not extracted again


@pytest.mark.integration
def test_a_file_the_agent_reads_becomes_an_entity_that_says_why(stack: Stack, env: dict[str, str]) -> None:
    payload = {
        "session_id": "s-files", "hook_event_name": "PostToolUse", "cwd": "/tmp", "tool_name": "Read",
        "tool_input": {"file_path": "/tmp/src/settings.py"}, "tool_response": {"content": "DEBUG = False"},
    }  # fmt: skip
    assert run_hook(json.dumps(payload).encode(), env).returncode == 0
    rows = wait_for(
        lambda: stack.query(
            "SELECT e.type, e.name, p.caused_by, h.kind FROM entities e "
            "JOIN provenance p ON p.subject = e.entity_id JOIN events h ON h.id = p.caused_by"
        ),
        timeout=60,
        what="the file's entity, folded",
    )
    assert rows == [("file", "src/settings.py", rows[0][2], kinds.TOOL_USED)]


@pytest.mark.integration
def test_a_job_that_fails_every_try_is_named_in_status_with_its_error(
    stack: Stack, env: dict[str, str]
) -> None:
    queue = Queue(QUEUE, connection=connect(stack.settings))
    elsewhere = os.path.join(stack.settings.home, "another-machine", "seg-0.parquet")
    job = enqueue(queue, named("extract"), Segment(elsewhere, [new_event_id()]), retry_after_s=[1, 1])

    def failed() -> list[dict[str, str]]:
        result = subprocess.run(
            [str(BIN), "status", "--json"], env=env, capture_output=True, text=True, timeout=30
        )
        return list(json.loads(result.stdout)["newest_failed_jobs"])

    [shown] = wait_for(failed, timeout=60, what="the job, failed three times")
    assert shown["id"] == job.id and "share the stack's data directory" in shown["error"]
    job.refresh()  # type: ignore[no-untyped-call]
    assert job.retries_left == 0 and job.is_failed  # tried three times
    human = subprocess.run([str(BIN), "status"], env=env, capture_output=True, text=True, timeout=30)
    assert "failed jobs" in human.stdout and "seg-0.parquet" in human.stdout


def bash(command: str, stdout: str, kind: str = kinds.TOOL_USED, project: str = "/home/u/app") -> Event:
    payload = {"tool_name": "Bash", "tool_input": {"command": command}, "tool_response": {"stdout": stdout}}
    return make_event(
        kind,
        payload,
        id=new_event_id(),
        ts=NOW,
        recorded_at=NOW,
        project=project,
        source="test",
        session_id="s",
    )


def prompt(text: str, project: str = "/home/u/app") -> Event:
    return make_event(
        kinds.PROMPT_SUBMITTED, {"prompt": text}, id=new_event_id(), ts=NOW, recorded_at=NOW, project=project,
        source="test", session_id="s",
    )  # fmt: skip


@functools.cache
def fixture_events() -> list[Event]:
    """Every event the import makes of the fixture transcripts."""
    found = find_transcripts(str(TRANSCRIPTS))
    items = [i for path in found for i in read_transcript(path)]
    return [imported_event(i) for i in items if isinstance(i, ImportedEvent)]


def facts_of(events: list[Event]) -> list[memory.FactAsserted]:
    return [d.payload for d in derive(events) if isinstance(d.payload, memory.FactAsserted)]


def test_a_commit_git_took_is_a_fact_of_its_project_and_one_it_refused_is_none() -> None:
    message = "git commit -m \"$(cat <<'EOF'\nfeat: trace LiveView events\n\nAdd spans for mount.\nEOF\n)\""
    refused = bash(message, "mix format failed", kind=kinds.TOOL_FAILED)
    taken = bash(message, "[main 1a2b3c4] feat: trace LiveView events\n 2 files changed")
    [fact] = facts_of([refused, taken])
    assert fact.description == "Commit 1a2b3c4 on main: feat: trace LiveView events\nAdd spans for mount."
    assert (fact.relation, fact.category, fact.network, fact.memory_type) == (
        "created", "decisions", "experience", "episodic"
    )  # fmt: skip
    assert fact.valid_at == NOW and fact.dimensions.where == "main"


@pytest.mark.parametrize(
    ("said", "relation", "category"),
    [
        ("From now on, run mix format before every commit.", "prefers", "patterns"),
        ("Let's use Oban for the background jobs", "decided_for", "decisions"),
        ("remember that the staging database listens on 5433", "learned_that", "context"),
    ],
)
def test_what_the_user_states_is_a_fact_of_its_project(said: str, relation: str, category: str) -> None:
    [fact] = facts_of([prompt(said)])
    assert (fact.relation, fact.category, fact.memory_type) == (relation, category, "semantic")
    assert fact.description[0].isupper() and fact.description.rstrip(".").lower() in said.lower()


def test_nothing_is_stated_by_wrappers_code_or_claude_codes_own_prompts() -> None:
    noise = [
        prompt("<command-name>/compact</command-name><command-args>always keep the tests</command-args>"),
        prompt("```\nalways run this\n```"),
        prompt("Your task is to create a detailed summary of the conversation so far. Always be thorough."),
        prompt("the tests always fail on CI"),
        prompt("Never give up! Let's keep going. Remember to take breaks. Always here to help."),
        prompt("Never had a chance to visit it, we'll keep pushing each other"),
    ]
    assert facts_of(noise) == []


def test_a_fact_is_the_same_whichever_batch_or_run_derives_it() -> None:
    said = prompt("Let's use Oban for the background jobs")
    first, again = facts_of([said]), facts_of([said, prompt("unrelated words")])
    assert [f.fact_id for f in first] == [f.fact_id for f in again]
    assert facts_of([prompt("Let's use Oban for the background jobs", project="/home/u/other")])[
        0
    ].fact_id != (first[0].fact_id)


@pytest.mark.integration
def test_a_rule_the_user_states_becomes_a_fact_of_the_project(
    stack: Stack, env: dict[str, str], tmp_path: "os.PathLike[str]"
) -> None:
    project = os.path.realpath(str(tmp_path))
    said = {
        "session_id": "s-rule", "hook_event_name": "UserPromptSubmit", "cwd": project,
        "prompt": "From now on, run mix format before every commit.",
    }  # fmt: skip
    assert run_hook(json.dumps(said).encode(), env | {"CLAUDE_PROJECT_DIR": project}).returncode == 0
    rows = wait_for(
        lambda: stack.query("SELECT relation, description, project, category FROM facts"),
        timeout=60,
        what="the rule, a fact",
    )
    assert rows == [("prefers", "From now on, run mix format before every commit", project, "patterns")]
    texts = stack.query("SELECT project FROM memory_texts WHERE kind = 'fact'")
    assert texts == [(project,)]


def test_a_compaction_summary_gives_its_errors_with_their_fixes_and_its_key_concepts() -> None:
    events = fixture_events()
    facts = facts_of(events)
    errors = [f for f in facts if f.category == "errors"]
    by_text = {f.description.split(":", 1)[0]: f for f in errors}
    # the first summary of ae4a77f8's session: nine errors, one left unsolved
    assert by_text["BadMapError in OTEL processor config"].relation == "solved_by"
    assert "flat traces_exporter: :stdout" in by_text["BadMapError in OTEL processor config"].description
    assert by_text["Dialyzer false positive (UNRESOLVED)"].relation == "blocked_by"
    assert len(errors) == 15 and all(f.network == "experience" for f in errors)
    stack = [f.description for f in facts if f.category == "stack"]
    assert (
        "AshSqlite migrations via mix ash.codegen" in stack and len(stack) == len(set(stack)) + 1
    )  # bd twice
    assert all("**" not in f.description and "`" not in f.description for f in facts)


def test_each_session_is_one_episode_with_its_goal_what_was_done_and_its_outcome() -> None:
    events = fixture_events()
    drawn = {episode.session_id: episode for episode, _, _ in episodes(events)}
    finished = drawn["fa812bfe-b295-4cca-9c2f-fdf01028cb46"]
    assert finished.title == "Work on bead spotter-a0y" and finished.outcome == "success"
    assert "feat: add transcript tail adapter and live tail workers (spotter-a0y.3)" in finished.summary
    assert "Single-session transcript bootstrap sync" in finished.summary  # its compaction summary's intent
    assert "Last words: All pushed." in finished.summary  # the agent's own account, as the session ended
    project = next(e.project for e in events if e.session_id == finished.session_id)
    assert entity_id("file", "lib/spotter/services/active_session_registry.ex", project) in finished.entities
    # its summary left a Dialyzer warning unresolved, but its checks passed after that, to its end
    assert drawn["ae4a77f8-aedd-4bc1-888f-c94edc91af04"].outcome == "success"
    assert all(e.summary.endswith(f"Outcome: {e.outcome}") for e in drawn.values())


def test_the_dispatcher_enqueues_the_episode_of_each_session_a_batch_ends(settings: Settings) -> None:
    client = fakeredis.FakeRedis()
    dispatcher = Dispatcher(settings, client, consumer="test", block_ms=10)
    dispatcher.start()
    ended = make_event(
        kinds.SESSION_ENDED, {"reason": "logout"}, id=new_event_id(), ts=NOW, recorded_at=NOW, project="/p",
        source="test", session_id="s-ended",
    )  # fmt: skip
    append(client, [msgspec.json.encode(ended), msgspec.json.encode(tool("/home/u/app/a.py"))])
    dispatcher.archive(dispatcher.read(">"))
    jobs = [job.args for job in Queue(QUEUE, connection=client).jobs]
    assert ("episodes", Session("s-ended")) in jobs and ("signals", Session("s-ended")) in jobs
    assert [name for name, _ in jobs].count("extract") == 1


@pytest.mark.integration
def test_an_imported_session_becomes_an_episode(stack: Stack, env: dict[str, str]) -> None:
    short = str(TRANSCRIPTS / "short.jsonl")
    result = subprocess.run([str(BIN), "import", short], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    [(title, outcome, summary)] = wait_for(
        lambda: stack.query("SELECT title, outcome, summary FROM episodes"), timeout=60, what="the episode"
    )
    assert (
        title
        and summary.startswith(f"Goal: {title}")
        and outcome in ("success", "failure", "partial", "unknown")
    )


def test_a_dispatcher_starting_over_a_log_extracts_its_newest_segment_again(settings: Settings) -> None:
    """A crash between a segment's write and its job's enqueue loses no extraction."""
    log = EventLog(settings.event_log_dir)
    log.append([tool("/home/u/app/old.py")])
    newest = [tool("/home/u/app/a.py"), tool("/home/u/app/b.py")]
    segment = log.append(newest)
    client = fakeredis.FakeRedis()
    Dispatcher(settings, client, consumer="test", block_ms=10).start()
    [job] = Queue(QUEUE, connection=client).jobs
    name, batch = job.args
    assert (name, batch.path, sorted(batch.ids)) == ("extract", segment, sorted(e.id for e in newest))


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("cd app && uv run pytest -x tests/test_a.py 2>&1 | tail -20", "pytest"),
        ("git add . && git commit -m \"$(cat <<'EOF'\nfeat: x\n\nCo-Authored-By: C\nEOF\n)\"", "git commit"),
        ("MIX_ENV=test mix test --failed", "mix test"),
        ("npx vitest run", "vitest"),
        ("/usr/bin/make -j4 build", "make build"),
    ],
)
def test_the_same_command_is_the_same_program_and_subcommand(command: str, key: str) -> None:
    assert command_key(command) == key


def test_a_signature_is_the_line_naming_the_error_with_its_particulars_made_placeholders() -> None:
    one = "Exit code 1\nTraceback (most recent call last):\n  File \"/a/b.py\", line 3\nKeyError: 'user_17'"
    other = "Exit code 1\nTraceback (most recent call last):\n  File \"/c/d.py\", line 9\nKeyError: 'id'"
    assert signature(one) == signature(other) == "KeyError: <value>"
    assert signature("Error: Pre-commit validation failed:\\n\\n[FORMAT] Code is not formatted.") == (
        "[FORMAT] Code is not formatted."
    )


def test_a_failure_then_an_edit_then_a_pass_is_an_error_solved_by_the_edit() -> None:
    failed = bash("pytest -x", "", kind=kinds.TOOL_FAILED)
    failed = msgspec.structs.replace(failed, payload=msgspec.Raw(msgspec.json.encode({
        "tool_name": "Bash", "tool_input": {"command": "pytest -x"},
        "error": "Exit code 1\nE   ImportError: cannot import name 'parse' from 'app.dates'",
    })))  # fmt: skip
    edit = tool("/home/u/app/app/dates.py", name="Edit")
    unrelated = tool("/home/u/app/README.md")  # read, not edited: no part of the fix
    passed = bash("pytest -x 2>&1 | tail -3", "===== 12 passed in 0.4s =====")
    session = [failed, edit, unrelated, passed]
    session = [msgspec.structs.replace(e, ts=NOW + timedelta(seconds=n)) for n, e in enumerate(session)]

    found = list(derive_session(session))
    [error] = [
        d.payload
        for d in found
        if isinstance(d.payload, memory.EntityObserved) and d.payload.type == "error_pattern"
    ]
    assert error.name == "ImportError: cannot import name <value> from <value>"
    [fact] = [d for d in found if d.kind == kinds.FACT_ASSERTED]
    assert isinstance(fact.payload, memory.FactAsserted)
    assert (fact.payload.source, fact.payload.relation, fact.payload.category) == (
        error.entity_id,
        "solved_by",
        "errors",
    )
    assert "editing app/dates.py" in fact.payload.description and "README" not in fact.payload.description
    assert fact.caused_by == tuple(sorted(e.id for e in (session[0], session[1], session[3])))
    [check] = [
        d.payload
        for d in found
        if isinstance(d.payload, memory.EntityObserved) and d.payload.type == "command"
    ]
    assert (check.name, check.properties["runs"], check.properties["failures"]) == ("pytest", 2, 1)


def test_a_failure_a_pipe_hid_is_a_failure_and_a_rerun_that_changed_nothing_fixed_nothing() -> None:
    hidden = bash(
        "pytest 2>&1 | tail -5", "FAILED tests/test_a.py::test_x - AssertionError\n1 failed, 3 passed"
    )
    again = bash("pytest 2>&1 | tail -5", "4 passed")
    session = [
        msgspec.structs.replace(e, ts=NOW + timedelta(seconds=n)) for n, e in enumerate([hidden, again])
    ]
    found = list(derive_session(session))
    assert [d.payload.name for d in found if isinstance(d.payload, memory.EntityObserved)] == [
        "FAILED <path>::test_x - AssertionError",
        "pytest",
    ]
    assert not [d for d in found if d.kind == kinds.FACT_ASSERTED]  # a flake, or nothing we saw


def read(path: str, content: str) -> Event:
    payload = {
        "tool_name": "Read",
        "tool_input": {"file_path": path},
        "tool_response": {"type": "text", "file": {"filePath": path, "content": content}},
    }
    return make_event(
        kinds.TOOL_USED, payload, id=new_event_id(), ts=NOW, recorded_at=NOW, project="/home/u/app",
        source="test", session_id="s",
    )  # fmt: skip


MANIFEST_CASES = [
    (
        "package.json",
        '{"dependencies": {"react": "^18.2.0"}, "devDependencies": {"vitest": "1.6.0"}}',
        {("react", "^18.2.0", False), ("vitest", "1.6.0", True)},
    ),
    (
        "pyproject.toml",
        '[project]\ndependencies = ["duckdb>=1.1", "rq[cli] ~= 2.0; python_version>\'3.9\'"]\n'
        '[project.optional-dependencies]\ntest = ["pytest"]\n',
        {("duckdb", ">=1.1", False), ("rq", "~= 2.0", False), ("pytest", "", True)},
    ),
    (
        "requirements.txt",
        "# pinned\n-r base.txt\nredis==5.0.1\nmsgspec\n",
        {("redis", "==5.0.1", False), ("msgspec", "", False)},
    ),
    (
        "Cargo.toml",
        '[dependencies]\nserde = { version = "1.0", features = ["derive"] }\ntokio = "1"\n'
        '[dev-dependencies]\ninsta = "1.34"\n',
        {("serde", "1.0", False), ("tokio", "1", False), ("insta", "1.34", True)},
    ),
    (
        "go.mod",
        "module x\n\ngo 1.22\n\nrequire (\n\tgithub.com/spf13/cobra v1.8.0\n)\n"
        "require golang.org/x/sync v0.7.0\n",
        {("github.com/spf13/cobra", "v1.8.0", False), ("golang.org/x/sync", "v0.7.0", False)},
    ),
    (
        "mix.exs",
        '  defp deps do\n    [\n      # {:dep_from_hexpm, "~> 0.3.0"},\n      {:phoenix, "~> 1.8"},\n'
        '      {:credo, "~> 1.7", only: [:dev, :test], runtime: false},\n      {:x, github: "u/x"}\n    ]\n',
        {("phoenix", "~> 1.8", False), ("credo", "~> 1.7", True), ("x", "from github", False)},
    ),
]


@pytest.mark.parametrize(("name", "content", "expected"), MANIFEST_CASES, ids=[c[0] for c in MANIFEST_CASES])
def test_a_manifest_the_agent_reads_declares_the_projects_dependencies(
    name: str, content: str, expected: set[tuple[str, str, bool]]
) -> None:
    found = {(d.name, d.version, d.dev) for d in dependencies([read(f"/home/u/app/{name}", content)])}
    assert found == expected


def test_a_dependency_is_a_library_the_project_depends_on_and_a_new_version_rewords_the_fact() -> None:
    old = read("/home/u/app/package.json", '{"dependencies": {"react": "^17.0.0"}}')
    new = read("/home/u/app/package.json", '{"dependencies": {"react": "^18.2.0"}}')
    [before], [after] = facts_of([old]), facts_of([new])
    assert (before.relation, before.category, before.description) == (
        "depends_on",
        "stack",
        "app depends on react ^17.0.0",
    )
    assert after.fact_id == before.fact_id and after.description == "app depends on react ^18.2.0"
    assert after.target == entity_id("library", "react", "/home/u/app")
    other_spelling = read("/home/u/app/requirements.txt", "React==18.3\n")
    [again] = facts_of([other_spelling])
    assert (again.fact_id, again.target) == (after.fact_id, after.target)  # one library, however spelled
    broken = read("/home/u/app/package.json", '{"dependencies": {"react": ')  # a partial read says nothing
    assert facts_of([broken]) == []


@pytest.mark.parametrize(
    "name", ["AuthProvider", "the auth provider", "auth_provider", "Auth-Provider", "AUTHProvider"]
)
def test_the_spellings_of_one_name_are_one_canonical_name(name: str) -> None:
    assert canonical_name(name) == "auth provider"


def test_an_edit_that_adds_a_dependency_to_mix_exs_declares_it() -> None:
    added = '      {:opentelemetry_api, "~> 1.5"},\n      {:opentelemetry, "~> 1.7"},\n'
    payload = {
        "tool_name": "Edit",
        "tool_input": {"file_path": "/home/u/app/mix.exs", "old_string": "[", "new_string": added},
    }
    edit = make_event(
        kinds.TOOL_USED,
        payload,
        id=new_event_id(),
        ts=NOW,
        recorded_at=NOW,
        project="/home/u/app",
        source="test",
    )
    assert {(d.name, d.version) for d in dependencies([edit])} == {
        ("opentelemetry_api", "~> 1.5"),
        ("opentelemetry", "~> 1.7"),
    }


def test_a_fix_names_the_changed_command_without_its_output_filters_nor_the_looks_between() -> None:
    failed = make_event(
        kinds.TOOL_FAILED,
        {"tool_name": "Bash", "tool_input": {"command": "git push"},
         "error": "Exit code 128\nfatal: The current branch feat-a0y has no upstream branch."},
        id=new_event_id(), ts=NOW, recorded_at=NOW, project="/home/u/app", source="test", session_id="s",
    )  # fmt: skip
    looked = bash("git status", "On branch feat-a0y")
    pushed = bash("git push --set-upstream origin feat-a0y 2>&1 | tail -3", "branch set up to track")
    session = [
        msgspec.structs.replace(e, ts=NOW + timedelta(seconds=n))
        for n, e in enumerate([failed, looked, pushed])
    ]
    [fact] = [d.payload for d in derive_session(session) if isinstance(d.payload, memory.FactAsserted)]
    assert fact.description == (
        "`git push` failed with: fatal: The current branch feat-a0y has no upstream branch. "
        "Fixed by running `git push --set-upstream origin feat-a0y`."
    )


def test_what_the_agent_files_and_closes_on_the_command_line_is_what_it_did() -> None:
    body = "\"$(cat <<'EOF'\n## Summary\n- live tail\nEOF\n)\""
    pr = f'gh pr create --title "feat: tail workers" --body {body} && echo ok'
    closed = bash('bd close web-12 --reason="Moved the frontend to pnpm; build green"', "closed")
    looked = bash("bd show web-12", "...")  # reads, records nothing
    refused = msgspec.structs.replace(
        bash('gh issue create --title "never filed"', ""), kind=kinds.TOOL_FAILED
    )
    facts = facts_of([bash(pr, "https://github.com/u/app/pull/3"), closed, looked, refused])
    assert sorted(f.description for f in facts) == [
        "Closed web-12: Moved the frontend to pnpm; build green",
        "Pull request: feat: tail workers: ## Summary - live tail",
    ]
    assert all((f.relation, f.network, f.category) == ("created", "experience", "decisions") for f in facts)


def test_a_failure_reads_alike_live_or_stored_and_json_text_stays_text() -> None:
    from workers.evidence.failures import output_of

    said = {"stdout": "FAILED tests/test_x.py", "stderr": "\x1b[31mboom\x1b[0m"}
    assert output_of(said) == output_of(msgspec.json.encode(said).decode()) == "FAILED tests/test_x.py\nboom"
    assert output_of('{"error": "bad request"}') == '{"error": "bad request"}'  # a command's own JSON


def failed_run(command: str, error: str) -> Event:
    payload = {"tool_name": "Bash", "tool_input": {"command": command}, "error": error}
    return make_event(
        kinds.TOOL_FAILED, payload, id=new_event_id(), ts=NOW, recorded_at=NOW, project="/home/u/app",
        source="test", session_id="s",
    )  # fmt: skip


def in_order(events: list[Event]) -> list[Event]:
    return [msgspec.structs.replace(e, ts=NOW + timedelta(seconds=n)) for n, e in enumerate(events)]


def solved(found: list[Derived]) -> list[memory.FactAsserted]:
    return [d.payload for d in found if isinstance(d.payload, memory.FactAsserted)]


def test_a_fix_is_a_fix_only_once_its_check_passed_and_a_check_left_failing_is_a_block() -> None:
    first = failed_run("npm run build", "Exit code 1\nTypeError: generate is not a function")
    edit = tool("/home/u/app/next.config.js", name="Edit")
    otherwise = failed_run("npm run build", "Exit code 1\nError: Cannot find module 'next/font'")
    left = solved(list(derive_session(in_order([first, edit, otherwise]))))
    assert [f.relation for f in left] == ["blocked_by"]  # the edit changed the error, fixed nothing
    [block] = left
    assert block.description == (
        "`npm run build` still failed when the session ended: Error: Cannot find module 'next/font'"
    )  # the error as it was, not its signature
    passed = bash("npm run build", "Compiled successfully")
    edit_again = tool("/home/u/app/package.json", name="Edit")
    fixed = solved(list(derive_session(in_order([first, edit, otherwise, edit_again, passed]))))
    assert sorted(f.relation for f in fixed) == ["solved_by", "solved_by"]
    first_fix = next(f for f in fixed if "generate is not a function" in f.description)
    assert "next.config.js" in first_fix.description and "package.json" in first_fix.description


def test_a_call_claude_code_cancelled_or_the_user_refused_is_no_error() -> None:
    cancelled = failed_run("mix test", "<tool_use_error>Sibling tool call errored</tool_use_error>")
    refused = failed_run("mix phx.server", "The user doesn't want to proceed with this tool use.")
    ran = bash("mix test", "12 tests, 0 failures")
    found = list(derive_session(in_order([cancelled, refused, ran])))
    assert [
        d for d in found if isinstance(d.payload, memory.EntityObserved) and d.payload.type == "error_pattern"
    ] == []
    assert solved(found) == []


def test_a_settled_fix_ends_the_block_it_solves() -> None:
    block = memory.FactAsserted(
        fact_id="fact:block", source="project:app", relation="blocked_by", target="error_pattern:e",
        description="`mix test` still failed when the session ended: boom", category="errors",
    )  # fmt: skip
    fix = memory.FactAsserted(
        fact_id="fact:fix", source="error_pattern:e", relation="solved_by",
        description="`mix test` failed with: boom. Fixed by editing lib/a.ex.", category="errors",
    )  # fmt: skip
    cause = bash("mix test", "ok")
    standing = StandingFact(
        fact_id="fact:block", source="project:app", relation="blocked_by", target="error_pattern:e",
        description=block.description, confidence=1.0, memory_type="episodic", versions=1,
    )  # fmt: skip
    found = list(
        settle(
            [Derived(kinds.FACT_ASSERTED, fix, "/home/u/app", (cause.id,))], lambda p: [standing], no_cosine
        )
    )
    assert [(d.kind, getattr(d.payload, "fact_id", None)) for d in found] == [
        (kinds.FACT_ASSERTED, "fact:fix"),
        (kinds.FACT_SUPERSEDED, "fact:block"),
    ]


def no_cosine(text: str, others: Sequence[str]) -> list[float]:
    return [0.0] * len(others)


def test_a_dependency_keeps_the_name_its_manifest_spells() -> None:
    manifest = read(
        "/home/u/app/package.json", '{"devDependencies": {"@xterm/addon-fit": "^0.10.0", "lazy_html": "1.0"}}'
    )
    names = sorted(f.description for f in facts_of([manifest]))
    assert names == ["app uses, to develop, @xterm/addon-fit ^0.10.0", "app uses, to develop, lazy_html 1.0"]


def test_a_block_a_summary_named_is_ended_once_the_sessions_checks_pass_to_its_end() -> None:
    session = [e for e in fixture_events() if e.session_id == "ae4a77f8-aedd-4bc1-888f-c94edc91af04"]
    [block] = [f for f in facts_of(session) if f.relation == "blocked_by"]
    assert block.description.startswith("Dialyzer false positive (UNRESOLVED)")
    ended = [d for d in derive_session(session) if d.kind == kinds.FACT_SUPERSEDED]
    assert [d.payload.fact_id for d in ended if isinstance(d.payload, memory.FactSuperseded)] == [
        block.fact_id
    ]


def test_a_fix_said_again_ends_a_block_and_a_summarys_fix_ends_its_earlier_block() -> None:
    cause = bash("mix test", "ok")
    fix = memory.FactAsserted(
        fact_id="fact:fix", source="error_pattern:e", relation="solved_by",
        description="`mix test` failed with: boom. Fixed by editing lib/a.ex.", category="errors",
    )  # fmt: skip

    def known(fact_id: str, relation: str, description: str, source: str, target: str | None) -> StandingFact:
        return StandingFact(
            fact_id=fact_id, source=source, relation=relation, target=target, description=description,
            confidence=1.0, memory_type="episodic", versions=1,
        )  # fmt: skip

    standing = [
        known("fact:fix", "solved_by", fix.description, "error_pattern:e", None),
        known("fact:block", "blocked_by", "`mix test` still failed: boom", "project:app", "error_pattern:e"),
    ]
    found = list(
        settle([Derived(kinds.FACT_ASSERTED, fix, "/a", (cause.id,))], lambda p: standing, no_cosine)
    )
    assert [(d.kind, getattr(d.payload, "fact_id", None)) for d in found][-1] == (
        kinds.FACT_SUPERSEDED,
        "fact:block",
    )
    summary_block = known(
        "fact:sb",
        "blocked_by",
        "Dialyzer false positive (UNRESOLVED): {:ok, id} never matches",
        "project:app",
        None,
    )
    solved = memory.FactAsserted(
        fact_id="fact:sf", source="project:app", relation="solved_by",
        description="Dialyzer false positive: fixed by reading the id with :otel_span.hex_trace_id/1",
    )  # fmt: skip
    ended = [
        d.payload.fact_id
        for d in settle(
            [Derived(kinds.FACT_ASSERTED, solved, "/a", (cause.id,))], lambda p: [summary_block], no_cosine
        )
        if isinstance(d.payload, memory.FactSuperseded)
    ]
    assert ended == ["fact:sb"]


def test_a_correction_derives_the_fact_that_holds_in_the_users_words_from_itself_alone() -> None:
    wrong_event = new_event_id(int((NOW - timedelta(days=2)).timestamp() * 1000))
    stated = new_event_id(int((NOW - timedelta(days=3)).timestamp() * 1000))
    said = FactCorrected(
        fact_id="fact:old", text="The API runs on port 8443", source="project:app", relation="uses",
        target="entity:port", category="stack", memory_type="episodic", network="experience",
        scope="project", updated_by=wrong_event, stated_in=[stated],
    )  # fmt: skip
    correction = make_event(
        kinds.FACT_CORRECTED, said, id=new_event_id(), ts=NOW, recorded_at=NOW, project="/home/u/app",
        source=kinds.SOURCE_DASHBOARD,
    )  # fmt: skip
    [superseded, asserted, unsaid] = derive([correction])
    right = memory.corrected_fact_id("/home/u/app", "fact:old", "The API runs on port 8443")
    assert (superseded.kind, asserted.kind) == (kinds.FACT_SUPERSEDED, kinds.FACT_ASSERTED)
    assert asserted.caused_by == superseded.caused_by == (correction.id, wrong_event)
    fact = asserted.payload
    assert isinstance(fact, memory.FactAsserted)
    # what the wrong one was about (the graph links it there), in the user's words
    assert (fact.fact_id, fact.description, fact.source, fact.relation, fact.target, fact.valid_at) == (
        right, "The API runs on port 8443", "project:app", "uses", "entity:port", NOW,
    )  # fmt: skip
    # a standing fact of the user's, held fully: not the episode the wrong one was
    assert (fact.confidence, fact.memory_type, fact.category, fact.dimensions.who) == (
        1.0, "semantic", "stack", "the user",
    )  # fmt: skip
    ended = superseded.payload
    assert isinstance(ended, memory.FactSuperseded)
    assert (ended.fact_id, ended.by_fact_id, ended.invalid_at) == ("fact:old", right, NOW)
    # the prompt that stated the wrong one says it no more either
    assert unsaid.kind == kinds.MEMORY_SUPERSEDED and unsaid.caused_by == (correction.id, stated)
    assert isinstance(unsaid.payload, memory.MemorySuperseded)
    assert (unsaid.payload.memory_id, unsaid.payload.by_memory_id) == (stated, right)
    assert list(derive([correction])) == [superseded, asserted, unsaid]  # the same, however often it runs


def test_a_correction_stands_in_the_users_words_even_where_they_repeat_the_wrong_facts() -> None:
    """The user changed one value of a long fact: its words are nearly the wrong one's (a
    duplicate, to settling) and the model puts them as close; the correction is asserted all the
    same, never taken for a restatement of the fact it ends."""
    wrong = "Always install the frontend dependencies with npm ci before running the browser tests in CI"
    right = (
        "Always install the frontend dependencies with pnpm install before running the browser tests in CI"
    )
    assert jaccard(word_set(wrong), word_set(right)) > DUPLICATE_JACCARD
    said = FactCorrected(
        fact_id="fact:npm", text=right, source="project:app", relation="decided_for",
        category="decisions", updated_by=new_event_id(int((NOW - timedelta(days=1)).timestamp() * 1000)),
    )  # fmt: skip
    correction = make_event(
        kinds.FACT_CORRECTED, said, id=new_event_id(), ts=NOW, recorded_at=NOW, project="/home/u/app",
        source=kinds.SOURCE_DASHBOARD,
    )  # fmt: skip
    standing = StandingFact(
        fact_id="fact:npm", source="project:app", relation="decided_for", description=wrong,
        confidence=1.0, memory_type="semantic", versions=1,
    )  # fmt: skip

    def close(text: str, others: Sequence[str]) -> list[float]:
        return [0.99] * len(others)

    settled = list(settle(derive([correction]), lambda p: [standing], close))
    assert [(d.kind, getattr(d.payload, "fact_id", None)) for d in settled] == [
        (kinds.FACT_SUPERSEDED, "fact:npm"),
        (kinds.FACT_ASSERTED, memory.corrected_fact_id("/home/u/app", "fact:npm", right)),
    ]
    # a restatement by anyone else still strengthens the fact it repeats
    again = memory.FactAsserted(
        fact_id="fact:again", source="project:app", relation="decided_for", description=right
    )
    [restated] = settle(
        [Derived(kinds.FACT_ASSERTED, again, "/home/u/app", (correction.id,))], lambda p: [standing], close
    )
    assert restated.kind == kinds.FACT_RECONSOLIDATED


# A session on a small calculator: what its tests said, what the user said, and what it ended as.
CALC = "/home/u/calc"
PYTEST_FAILED = """Exit code 1
============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /home/u/calc
collected 1 item

tests/test_calc.py F                                                     [100%]

=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(1, 1) == 2
E       assert 1 == 2

tests/test_calc.py:4: AssertionError
=========================== short test summary info ============================
FAILED tests/test_calc.py::test_add - assert 1 == 2
============================== 1 failed in 0.02s ==============================="""
TEST_ADD_FAILS = "`pytest tests/test_calc.py` failed: FAILED tests/test_calc.py::test_add - assert 1 == 2"


def calc(kind: str, payload: dict[str, Any]) -> Event:
    return make_event(
        kind, payload, id=new_event_id(), ts=NOW, recorded_at=NOW, project=CALC, source="test",
        session_id="calc-1",
    )  # fmt: skip


def asked(prompt: str) -> Event:
    return calc(kinds.PROMPT_SUBMITTED, {"prompt": prompt})


def ran(command: str, output: str, failed: bool = False) -> Event:
    if failed:
        return calc(
            kinds.TOOL_FAILED, {"tool_name": "Bash", "tool_input": {"command": command}, "error": output}
        )
    said = {"tool_name": "Bash", "tool_input": {"command": command}, "tool_response": {"stdout": output}}
    return calc(kinds.TOOL_USED, said)


def edited(path: str) -> Event:
    given = {"file_path": f"{CALC}/{path}", "old_string": "a - b", "new_string": "a + b"}
    return calc(kinds.TOOL_USED, {"tool_name": "Edit", "tool_input": given, "tool_response": {}})


def episode_of(session: list[Event]) -> tuple[memory.EpisodeRecorded, tuple[str, ...]]:
    [(episode, _, causes)] = episodes(session)
    return episode, causes


def told_next(settings: Settings, session: list[Event]) -> tuple[Continuity, list[str]]:
    """What the project's next session is told of this one, and where this one stood (its
    compaction manifest's blockers), as the snapshot of its events says."""
    folding = Folding(settings)
    folding.fold(session)
    folding.close()
    memories = Memories(settings)
    try:
        return memories.continuity(CALC, "calc-2"), memories.manifest(CALC, "calc-1")["blockers"]
    finally:
        memories.close()


def blocks(session: list[Event]) -> list[str]:
    return [f.description for f in solved(list(derive_session(session))) if f.relation == "blocked_by"]


def test_a_failing_test_fixed_later_is_no_blocker_and_its_episode_a_success(settings: Settings) -> None:
    session = in_order(
        [
            asked("Fix add in calc.py so that the tests pass"),
            ran("pytest tests/test_calc.py", PYTEST_FAILED, failed=True),
            edited("calc.py"),
            ran("pytest tests/test_calc.py", "1 passed in 0.01s"),
        ]
    )
    episode, causes = episode_of(session)
    fixed = f"{TEST_ADD_FAILS}, then `pytest tests/test_calc.py` passed after editing calc.py"
    assert episode.outcome == "success" and session[3].id in causes  # the run that told it
    assert f"Solved error: {fixed}\n" in episode.summary
    assert "Blocker" not in episode.summary and "test session starts" not in episode.summary
    assert "Told by: `pytest tests/test_calc.py` passed after failing\nOutcome: success" in episode.summary
    assert blocks(session) == []
    told, stood = told_next(settings, session)
    assert told.blockers == [] and stood == []  # never a blocker, at the next session or after a compaction
    assert told.solved == [fixed]  # told as solved: the error and what fixed it
    started = render_continuity(told, 6_000)
    assert f"## Solved last time\n- {escape(fixed)}" in started and "Blockers" not in started


def test_a_session_ending_on_a_failing_check_is_a_failure_with_that_blocker(settings: Settings) -> None:
    session = in_order(
        [
            asked("Fix add in calc.py so that the tests pass"),
            ran("pytest tests/test_calc.py", PYTEST_FAILED, failed=True),
            edited("calc.py"),
            # the same failure, its exit status lost to a pipe: the output says it
            ran("pytest tests/test_calc.py 2>&1 | tail -3", PYTEST_FAILED.split("\n", 1)[1][-150:]),
        ]
    )
    episode, _ = episode_of(session)
    assert episode.outcome == "failure"
    assert f"Blocker: {TEST_ADD_FAILS}\n" in episode.summary and "Solved error" not in episode.summary
    assert blocks(session) == [
        "`pytest tests/test_calc.py` still failed when the session ended: "
        "FAILED tests/test_calc.py::test_add - assert 1 == 2"
    ]
    told, stood = told_next(settings, session)
    assert told.blockers == [TEST_ADD_FAILS] and stood == [TEST_ADD_FAILS]  # once, its telling line alone
    assert told.solved == []


def test_a_session_whose_user_thanks_the_agent_is_a_success(settings: Settings) -> None:
    failing = [
        asked("Fix add in calc.py so that the tests pass"),
        ran("pytest tests/test_calc.py", PYTEST_FAILED, failed=True),
        edited("calc.py"),
    ]
    session = in_order([*failing, asked("Great, that works, thanks!")])
    episode, causes = episode_of(session)
    assert episode.outcome == "success" and session[3].id in causes
    assert "Told by: the user approved: Great, that works, thanks!\n" in episode.summary
    assert blocks(session) == []  # the user's thanks say the test they saw failing is solved
    told, _ = told_next(settings, session)
    assert told.blockers == []
    assert told.solved == [f"{TEST_ADD_FAILS}, then the user approved: Great, that works, thanks!"]
    # a complaint after the thanks has the last word
    complained = in_order([*failing, asked("Great, that works, thanks!"), asked("hmm, it still fails")])
    episode, _ = episode_of(complained)
    assert episode.outcome == "failure" and f"Blocker: {TEST_ADD_FAILS}\n" in episode.summary


def test_a_session_where_nothing_tells_how_it_went_stays_unknown(settings: Settings) -> None:
    session = in_order(
        [
            asked("It doesn't work: add(1, 1) gives 0"),  # the request: it judges nothing the agent did
            calc(kinds.TOOL_USED, {"tool_name": "Read", "tool_input": {"file_path": f"{CALC}/calc.py"}}),
            edited("calc.py"),
            ran("pytest tests/test_calc.py", "1 passed in 0.01s"),  # it never failed: no fix
            ran("grep -rn sub calc.py", "", failed=True),  # a look that found nothing: no error
            asked("Now add a docstring to sub"),
        ]
    )
    episode, _ = episode_of(session)
    assert episode.outcome == "unknown"
    assert "Told by" not in episode.summary and "Blocker" not in episode.summary
    told, stood = told_next(settings, session)
    assert told.blockers == told.solved == stood == []


@pytest.mark.parametrize(
    ("said", "heard"),
    [
        ("thanks!", "approved"),
        ("Great, that works", "approved"),
        ("perfect", "approved"),
        ("merci", "approved"),
        ("ok that works, thanks", "approved"),
        ("LGTM, commit it", "approved"),
        ("ça marche !", "approved"),
        ("it still fails", "complained"),
        ("hmm, doesn't work", "complained"),
        ("No, that's wrong", "complained"),
        ("same error", "complained"),
        ("Thanks, but the tests still fail", "complained"),
        ("ça ne marche toujours pas", "complained"),
        ("ça marche pas", "complained"),
        ("no thanks, use pnpm", None),
        ("thanks in advance: add a CLI", None),
        ("merci de corriger le test", None),
        ("does it work?", None),
        ("it works locally but not in CI", None),
        ("super slow build, can you look", None),
        (
            "scrolling in xterm.js still does not work, search how tmux handles it",
            None,
        ),  # a problem of its own
        ("[Request interrupted by user]", None),
        ("```\nFAILED tests/test_a.py - still failing\n```", None),  # pasted output
    ],
)
def test_the_users_words_approve_or_complain_of_the_work_or_say_nothing_of_it(
    said: str, heard: Verdict | None
) -> None:
    assert verdict(said) == heard
