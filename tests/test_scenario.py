"""A new user's day, with real parts: the fixture transcripts (months old) imported into a
running stack, every thinking job run, and memory still true and recallable afterwards: no fact
that nothing contradicts is forgotten, recall still finds each fact, and the hook still answers
what it answered before; a prompt memory does not answer gets nothing."""

import json
import subprocess
from typing import Any

import pytest

from benchmarks.coding_memory import QUESTIONS, load_questions, settled_state, transcript_cwds
from ingest.context import ask
from ingest.project import project_of
from schemas.settings import Settings
from tests.conftest import BIN, TRANSCRIPTS, Stack, run_hook, wait_for

pytestmark = pytest.mark.integration

# questions a fresh import answers (benchmarks/coding_memory_questions.json), one per category
ASKED = ["fact-debounce", "debug-propagators", "arch-tail-supervision", "conv-migrations", "cross-format-fix"]


def settled(settings: Settings, timeout: float = 600) -> tuple[int, int, int]:
    """The stack's state once it has nothing left to do, twice in a row."""
    seen: list[Any] = []

    def steady() -> Any:
        seen.append(settled_state(settings))
        return len(seen) > 1 and seen[-1] is not None and seen[-1] == seen[-2] and seen[-1]

    state: tuple[int, int, int] = wait_for(steady, timeout=timeout, what="the stack to settle")
    return state


def injected(env: dict[str, str], prompt: str, cwd: str, session: str) -> str:
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": cwd, "prompt": prompt}
    done = run_hook(json.dumps(payload).encode(), env)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]) if done.stdout else ""


def recalled(settings: Settings, text: str, project: str) -> list[str]:
    answer = ask(settings.recall_socket_path, {"prompt": text, "project": project, "limit": 10}, 30.0)
    return [r["memory_id"] for r in answer["recall"]["results"]]


def test_old_history_imported_then_thought_over_stays_true_and_recallable(
    stack: Stack, env: dict[str, str], settings: Settings
) -> None:
    done = subprocess.run([str(BIN), "import", str(TRANSCRIPTS)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    settled(settings)
    facts = stack.query("SELECT fact_id, project, description FROM facts_current")
    assert len(facts) > 50
    cwds = transcript_cwds(str(TRANSCRIPTS))
    questions = [q for q in load_questions(QUESTIONS) if q.id in ASKED]
    before = {q.id: injected(env, q.question, cwds[q.evidence[0].file], "before") for q in questions}
    answered = [q for q in questions if q.answered_by(before[q.id])]
    assert len(answered) >= 4

    thought = subprocess.run(
        [str(BIN), "think", "all", "--now"], env=env, capture_output=True, text=True, timeout=600
    )
    assert thought.returncode == 0, thought.stderr
    settled(settings)

    standing = dict(stack.query("SELECT fact_id, coalesce(duplicate_of, fact_id) FROM facts"))
    current = {f for (f,) in stack.query("SELECT fact_id FROM facts_current")}
    lost = [(f, d) for f, _, d in facts if standing[f] not in current]
    assert lost == []  # each fact stands, or the one it repeats stands for it
    unfound = [
        (fact_id, text)
        for fact_id, project, text in facts
        if standing[fact_id] not in recalled(settings, text, project)
    ]
    assert unfound == []
    for q in answered:
        assert q.answered_by(injected(env, q.question, cwds[q.evidence[0].file], "after")), q.id
    project = project_of({"cwd": cwds[questions[0].evidence[0].file]}, {})
    assert injected(env, "explain how python decorators work", project, "after") == ""
