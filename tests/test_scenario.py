"""A new user's day, with real parts: the fixture transcripts (months old) imported into a
running stack, every thinking job run, and memory still true and recallable afterwards: no fact
that nothing contradicts is forgotten, recall still finds each fact, and the hook still answers
what it answered before; a prompt memory does not answer gets nothing."""

import subprocess

import pytest

from benchmarks.coding_memory import QUESTIONS, load_questions, transcript_cwds
from ingest.injection import ask
from ingest.project import project_of
from schemas.settings import Settings
from tests.support.captures import TRANSCRIPTS
from tests.support.processes import BIN, Stack
from tests.support.settling import settled

pytestmark = pytest.mark.integration

# questions a fresh import answers (benchmarks/coding_memory_questions.json), one per category
ASKED = ["fact-debounce", "debug-propagators", "arch-tail-supervision", "conv-migrations", "cross-format-fix"]


def injected(settings: Settings, prompt: str, cwd: str, session: str) -> str:
    """What the UserPromptSubmit hook is given for `prompt`, asked of the service as the hook asks
    it, but with time to answer on a busy machine (the hook itself waits 2 s)."""
    request = {
        "hook": "UserPromptSubmit", "prompt": prompt, "project": project_of({"cwd": cwd}, {}),
        "session_id": session, "deadline_s": 10.0,
    }  # fmt: skip
    answer = ask(settings.recall_socket_path, request, 30.0)
    assert "context" in answer, answer
    return str(answer["context"])


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
    before = {q.id: injected(settings, q.question, cwds[q.evidence[0].file], "before") for q in questions}
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
        assert q.answered_by(injected(settings, q.question, cwds[q.evidence[0].file], "after")), q.id
    assert (
        injected(settings, "explain how python decorators work", cwds[questions[0].evidence[0].file], "after")
        == ""
    )
