"""A process of the stack killed outright, the supervisor or an RQ worker, at any moment: no
process is left behind, and no job is stuck or lost."""

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
import redis
from rq import Queue, Worker
from rq.job import Job, JobStatus
from rq.registry import StartedJobRegistry

from schemas import kinds
from schemas.ids import new_event_id
from schemas.settings import QUEUE, Settings
from tests.support.http import QuietHandler, on_loopback
from tests.support.processes import BIN, Stack, children, run_hook, stack_processes, wait_for
from workers.redis_client import connect, is_up
from workers.status import stack_status
from workers.supervisor import process_layout
from workers.thinking import runner
from workers.thinking.registry import named
from workers.thinking.runner import Segment, enqueue
from workers.thinking.schedule import CATCH_UP, cron_name, scheduler

pytestmark = pytest.mark.integration

GONE_WITHIN_S = 5.0
TITLE = "Move the frontend to pnpm"
ANSWER = {
    "entities": [{"name": "pnpm", "type": "tool"}],
    "facts": [
        {
            "subject": "the project", "relation": "USES", "object": "pnpm", "category": "stack",
            "statement": "The frontend installs its packages with pnpm, not npm.", "confidence": 0.9,
        }
    ],
    "episode": {"title": TITLE, "summary": "Switched to pnpm; the build passes.", "outcome": "success"},
}  # fmt: skip


class HeldLLM:
    """An OpenAI-compatible model on loopback that holds the first `held` requests unanswered
    (the job asking stays under way) until it is closed, and answers every later one well."""

    def __init__(self, held: int) -> None:
        self.requests = 0
        self.closing = threading.Event()
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                fake.requests += 1
                if fake.requests <= held:
                    fake.closing.wait()
                    return
                message = {"role": "assistant", "content": json.dumps(ANSWER)}
                usage = {"prompt_tokens": 1000, "completion_tokens": 250}
                data = json.dumps({"choices": [{"message": message}], "usage": usage}).encode()
                self.reply(200, "application/json", data)

        self.server = on_loopback(Handler)

    def env(self) -> dict[str, str]:
        """What the stack's environment takes to extract each session with this model."""
        return {
            "REVERIE_LLM_PROVIDER": "openai",
            "REVERIE_LLM_BASE_URL": f"http://127.0.0.1:{self.server.server_address[1]}/v1",
            "REVERIE_LLM_DAILY_TOKEN_BUDGET": "1000000",
            "REVERIE_LLM_TIMEOUT_S": "600",
        }

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()


def _held(held: int, env: dict[str, str]) -> Iterator[tuple[HeldLLM, dict[str, str]]]:
    llm = HeldLLM(held)
    yield llm, {**env, **llm.env()}
    llm.close()


@pytest.fixture
def held_once(env: dict[str, str]) -> Iterator[tuple[HeldLLM, dict[str, str]]]:
    yield from _held(1, env)


@pytest.fixture
def held_thrice(env: dict[str, str]) -> Iterator[tuple[HeldLLM, dict[str, str]]]:
    yield from _held(3, env)


@pytest.fixture(autouse=True)
def reaped(settings: Settings) -> Iterator[None]:
    """Whatever a failing test leaves of its stack is killed after it."""
    yield
    for pid in stack_processes(settings):
        os.kill(pid, signal.SIGKILL)


def _session(env: dict[str, str], session: str) -> None:
    """A session through the hooks, start to end: the end has a worker extract it."""
    for event, extra in [
        ("SessionStart", {"source": "startup"}),
        ("UserPromptSubmit", {"prompt": "switch the frontend to pnpm, npm keeps breaking"}),
        ("SessionEnd", {"reason": "exit"}),
    ]:
        body = {"hook_event_name": event, "session_id": session, "cwd": "/tmp", **extra}
        assert run_hook(json.dumps(body).encode(), env).returncode == 0


def _asked(llm: HeldLLM, times: int) -> bool:
    return llm.requests == times


def _episodes(stack: Stack) -> int:
    """How many of the archived episodes the model gave."""
    episodes = f"kind = '{kinds.EPISODE_RECORDED}' and payload->>'title' = '{TITLE}'"
    [(count,)] = stack.query(f"select count(*) from events where {episodes}")
    return int(count)


def _none_left(settings: Settings, when: str) -> None:
    """Await every process of the stack gone, within GONE_WITHIN_S of the supervisor's kill."""
    try:
        wait_for(lambda: not stack_processes(settings), timeout=GONE_WITHIN_S, what="no process left")
    except AssertionError:
        left = stack_processes(settings)
        raise AssertionError(f"the supervisor killed {when} left {left}") from None


def _kill(process: "subprocess.Popen[bytes]") -> None:
    process.kill()
    process.wait()


def _up(env: dict[str, str], settings: Settings) -> "subprocess.Popen[bytes]":
    with open(os.path.join(settings.home, "up.log"), "ab") as log:
        return subprocess.Popen([str(BIN), "up"], env=env, stdout=log, stderr=log)


def _killed_once_started(env: dict[str, str], settings: Settings, started: int, registered: bool) -> None:
    """Start a stack, and kill its supervisor once `started` processes started (and the
    worker `registered`, if asked); its processes are all gone soon after."""
    supervisor = _up(env, settings)
    wait_for(lambda: len(children(supervisor.pid)) >= started, timeout=60, what=f"{started} processes")
    if registered:
        wait_for(lambda: stack_status(settings).workers, timeout=60, what="the worker registered")
    _kill(supervisor)
    _none_left(
        settings, f"once {started} processes started" + (" and the worker registered" if registered else "")
    )


def test_the_supervisor_killed_while_the_stack_starts_leaves_no_process(
    env: dict[str, str], settings: Settings
) -> None:
    # at each step of the start: before any process, after each one started, and once the
    # worker registered, while it and the embedder load their model; three times over (a kill
    # lands a little earlier or later in a process's start each time)
    every = len(process_layout(settings))
    for _ in range(3):
        for started in range(every + 1):
            _killed_once_started(env, settings, started, registered=False)
        _killed_once_started(env, settings, every, registered=True)


def test_the_supervisor_killed_during_a_job_leaves_no_process(
    held_once: tuple[HeldLLM, dict[str, str]], settings: Settings
) -> None:
    llm, env = held_once
    stack = Stack(env, settings).start()
    _session(env, "during-a-job")
    wait_for(lambda: llm.requests >= 1, timeout=90, what="the session's extraction under way")
    assert stack.process is not None
    _kill(stack.process)
    _none_left(settings, "while a worker ran a job")


def test_the_supervisor_killed_while_claude_p_extracts_leaves_no_process(
    env: dict[str, str], settings: Settings, tmp_path: Path
) -> None:
    claude = tmp_path / "claude"  # what `claude -p` does here: says it started, then thinks forever
    claude.write_text(f"#!/bin/sh\ntouch {tmp_path / 'asked'}\nexec sleep 600\n")
    claude.chmod(0o755)
    llm = {"REVERIE_LLM_PROVIDER": "claude-cli", "REVERIE_LLM_COMMAND": str(claude)}
    env = {**env, **llm, "REVERIE_LLM_DAILY_TOKEN_BUDGET": "1000000", "REVERIE_LLM_TIMEOUT_S": "600"}
    stack = Stack(env, settings).start()
    _session(env, "claude-p")
    wait_for(lambda: (tmp_path / "asked").exists(), timeout=90, what="claude -p asked, by a work horse")
    assert stack.process is not None
    _kill(stack.process)
    _none_left(settings, "while a work horse waited for claude -p")


@pytest.mark.parametrize("exited", [0, 2])
def test_the_supervisor_killed_while_it_stops_the_stack_leaves_no_process(
    env: dict[str, str], settings: Settings, exited: int
) -> None:
    stack = Stack(env, settings).start()
    assert stack.process is not None
    supervisor = stack.process.pid
    running = len(children(supervisor))
    stack.process.terminate()  # it stops its processes together, the server last
    wait_for(lambda: len(children(supervisor)) <= running - exited, timeout=60, what=f"{exited} stopped")
    _kill(stack.process)
    _none_left(settings, f"while it stopped the stack, {exited} processes stopped")


def _worker(stack: Stack) -> int:
    """The pid of the stack's one RQ worker (not its work horse, nor its scheduler)."""
    assert stack.process is not None
    supervisor = stack.process.pid
    workers: list[int] = wait_for(lambda: children(supervisor, "worker"), timeout=60, what="a worker")
    return workers[0]


def test_a_job_a_killed_worker_held_runs_again_within_a_minute(
    held_once: tuple[HeldLLM, dict[str, str]], settings: Settings
) -> None:
    llm, env = held_once
    stack = Stack(env, settings).start()
    _session(env, "killed-worker")
    wait_for(lambda: llm.requests == 1, timeout=90, what="the session's extraction under way")
    os.kill(_worker(stack), signal.SIGKILL)  # its work horse and its scheduler die with it
    wait_for(lambda: llm.requests == 2, timeout=60, what="the extraction run again")
    wait_for(lambda: _episodes(stack) == 1, timeout=60, what="the episode the model gave, archived")
    assert stack_status(settings).failed_jobs == 0
    stack.stop()


def test_a_job_killed_on_every_try_is_shown_failed_and_retried_not_lost(
    held_thrice: tuple[HeldLLM, dict[str, str]], settings: Settings
) -> None:
    llm, env = held_thrice
    stack = Stack(env, settings).start()
    _session(env, "killed-thrice")
    for tried in (1, 2, 3):
        wait_for(partial(_asked, llm, tried), timeout=90, what=f"try {tried} under way")
        os.kill(_worker(stack), signal.SIGKILL)
        if tried == 2:  # tried again after 30 s: meanwhile status says so
            waiting = wait_for(lambda: stack_status(settings).next_scheduled_jobs, timeout=60, what="a retry")
            assert waiting[0].description == "episodes of session killed-thrice"
    failed = wait_for(lambda: stack_status(settings).newest_failed_jobs, timeout=60, what="the job failed")
    assert failed[0].description == "episodes of session killed-thrice"
    said = subprocess.run([str(BIN), "status"], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "reverie think --retry-failed" in " ".join(said.split())

    retried = subprocess.run(
        [str(BIN), "think", "--retry-failed"], env=env, capture_output=True, text=True, timeout=300
    )
    assert retried.returncode == 0, retried.stderr
    assert "1 failed derivation queued again: 1 finished" in retried.stdout
    wait_for(lambda: _episodes(stack) == 1, timeout=60, what="the episode the model gave, archived")
    assert (llm.requests, stack_status(settings).failed_jobs) == (4, 0)
    stack.stop()


# A rule stated in each of two sessions of a project: the catch-up groups such wordings by
# meaning, so it asks the recall service for their vectors (workers/dynamics/crystallize.py)
RULES = ["always use pnpm for installs", "never commit to main directly"]
CATCH_UP_OF_THINK = "catch-up (reverie think)"
TRIES = 1 + len(runner.RETRY_AFTER_S)  # how often a job is tried, its worker killed or not


def _rules_said(env: dict[str, str], stack: Stack) -> None:
    """Two sessions of a project through the hooks, each stating one of RULES; awaited until
    the projections hold them as the signals the catch-up reads."""
    project = os.path.join(stack.settings.home, "app")
    os.makedirs(project, exist_ok=True)
    for n, rule in enumerate(RULES):
        for event, extra in [
            ("SessionStart", {"source": "startup"}),
            ("UserPromptSubmit", {"prompt": rule}),
            ("SessionEnd", {"reason": "exit"}),
        ]:
            body = {"hook_event_name": event, "session_id": f"rules-{n}", "cwd": project, **extra}
            assert run_hook(json.dumps(body).encode(), env).returncode == 0
    wait_for(lambda: _rules(stack) == len(RULES), timeout=120, what="the rules, as signals of the project")


def _rules(stack: Stack) -> int:
    [(count,)] = stack.query(
        "SELECT count(DISTINCT s.text) FROM signals s JOIN sessions USING (session_id) "
        "WHERE sessions.project IS NOT NULL AND s.signal = 'preference'"
    )
    return int(count)


def _recall_service_stopped(stack: Stack) -> int:
    """SIGSTOP the stack's recall service, and its pid: a job asking it for vectors waits for its
    answer (a minute at most, then loads the model itself), so a catch-up stays under way."""
    assert stack.process is not None
    supervisor = stack.process.pid
    [service] = wait_for(lambda: children(supervisor, "serve"), what="the recall service")
    os.kill(service, signal.SIGSTOP)
    return int(service)


def _started(client: redis.Redis, description: str) -> Job | None:
    """The job under way described so, once a worker runs it."""
    registry = StartedJobRegistry(QUEUE, connection=client)
    for job in Job.fetch_many(registry.get_job_ids(cleanup=False), connection=client):
        if job is not None and job.description == description and _running(job):
            return job
    return None


def _running(job: Job, killed: frozenset[str] = frozenset()) -> bool:
    """Whether a worker runs `job`, other than those `killed` (their record says so a while)."""
    job.refresh()  # type: ignore[no-untyped-call]
    return job.get_status(refresh=False) == JobStatus.STARTED and job.worker_name not in killed


def _kill_its_worker(job: Job) -> str:
    """SIGKILL the RQ worker running `job` (its work horse and its scheduler die with it); its
    name."""
    job.refresh()  # type: ignore[no-untyped-call]
    assert job.worker_name is not None
    worker = Worker.find_by_key(Worker.redis_worker_namespace_prefix + job.worker_name, job.connection)
    assert worker is not None and worker.pid is not None
    os.kill(worker.pid, signal.SIGKILL)
    return job.worker_name


def _finished(job: Job) -> bool:
    return job.get_status(refresh=True) == JobStatus.FINISHED


def _kill_its_worker_on_each_try(job: Job, kills: int) -> None:
    """Await `job` under way and SIGKILL its worker, on each of its first `kills` tries."""
    killed: frozenset[str] = frozenset()
    for tried in range(1, kills + 1):
        wait_for(partial(_running, job, killed), timeout=90, what=f"try {tried} under way")
        killed |= {_kill_its_worker(job)}


@pytest.mark.parametrize("kills", [1, TRIES])
def test_reverie_think_waits_for_a_job_whose_worker_was_killed_to_run_again(
    env: dict[str, str], settings: Settings, kills: int
) -> None:
    stack = Stack(env, settings).start()
    _rules_said(env, stack)
    service = _recall_service_stopped(stack)
    think = subprocess.Popen(
        [str(BIN), "think", "all"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    client = connect(settings)
    job: Job = wait_for(
        lambda: _started(client, CATCH_UP_OF_THINK), timeout=120, what="the catch-up under way"
    )
    _kill_its_worker_on_each_try(job, kills)
    os.kill(service, signal.SIGCONT)
    if kills < TRIES:
        wait_for(partial(_finished, job), timeout=60, what="the catch-up run again, to its end")
        said, errors = think.communicate(timeout=300)
        assert (think.returncode, "done" in said) == (0, True), errors
        job.refresh()  # type: ignore[no-untyped-call]
        assert job.retries_left == TRIES - 1 - kills  # each kill cost it one try, no more
        assert stack_status(settings).failed_jobs == 0
    else:  # killed on every try: it says so, and fails
        _, errors = think.communicate(timeout=300)
        assert think.returncode == 1
        assert (
            "catch-up failed on a worker: its worker died under it (killed, or out of memory), "
            f"on the last of its {TRIES} tries" in " ".join(errors.split())
        )
    stack.stop()


def _scheduled_catch_up(client: redis.Redis) -> Job:
    """The catch-up, enqueued as RQ's cron scheduler does at its minute: with no Retry."""
    [cron] = [c for c in scheduler(client).get_jobs() if c.name == cron_name("catch-up")]
    return cron.enqueue(client)


@pytest.mark.parametrize("kills", [1, TRIES])
def test_a_scheduled_job_a_killed_worker_held_runs_again_three_times_at_most(
    env: dict[str, str], settings: Settings, kills: int
) -> None:
    stack = Stack(env, settings).start()
    _rules_said(env, stack)
    service = _recall_service_stopped(stack)
    client = connect(settings)
    job = _scheduled_catch_up(client)
    _kill_its_worker_on_each_try(job, kills)
    os.kill(service, signal.SIGCONT)
    if kills < TRIES:
        wait_for(partial(_finished, job), timeout=60, what="the job run again, to its end")
        job.refresh()  # type: ignore[no-untyped-call]
        assert job.retries_left == TRIES - 1 - kills  # given the queue's tries; the kill cost one
        assert stack_status(settings).failed_jobs == 0
    else:  # killed on every try: failed, for the catch-up and `reverie status`
        wait_for(lambda: job.get_status(refresh=True) == JobStatus.FAILED, timeout=60, what="the job failed")
        failed = stack_status(settings).newest_failed_jobs
        assert [(f.id, "AbandonedJobError" in f.error) for f in failed] == [(job.id, True)]
    stack.stop()


def _idle(settings: Settings) -> bool:
    workers = stack_status(settings).workers
    return bool(workers) and "idle" in workers[0].state


# a worker run by hand, with no supervisor: it waits 3 s for its Redis, not GONE_AFTER_S
_WORKER = (
    "import sys, threading; from schemas.settings import Settings; "
    "from workers.queue_worker import run_worker; "
    "sys.exit(run_worker(Settings.from_env(), threading.Event(), gone_after_s=3.0))"
)


@pytest.mark.parametrize("lost", ["at work", "before it came"])
def test_a_worker_exits_once_its_redis_is_gone_for_good(
    env: dict[str, str], settings: Settings, lost: str
) -> None:
    server = subprocess.Popen([str(BIN), "server"], env=env)
    wait_for(lambda: is_up(settings), timeout=30, what="the server")
    if lost == "before it came":
        _kill(server)
    worker = subprocess.Popen([sys.executable, "-c", _WORKER], env=env)
    if lost == "at work":
        wait_for(lambda: _idle(settings), timeout=90, what="the worker waiting for jobs")
        _kill(server)
    assert worker.wait(timeout=60) == 1
    wait_for(lambda: not stack_processes(settings), timeout=GONE_WITHIN_S, what="its scheduler gone too")


def test_the_hourly_catch_up_queues_a_failed_derivation_again(stack: Stack) -> None:
    client = connect(stack.settings)
    queue = Queue(QUEUE, connection=client)
    elsewhere = os.path.join(stack.settings.home, "another-machine", "seg-0.parquet")  # fails every try
    job = enqueue(queue, named("extract"), Segment(elsewhere, [new_event_id()]), retry_after_s=[1, 1])
    wait_for(lambda: job.get_status(refresh=True) == JobStatus.FAILED, timeout=60, what="the job failed")
    job.refresh()  # type: ignore[no-untyped-call]
    failed_at = job.ended_at
    assert failed_at is not None

    def tried_again() -> bool:
        job.refresh()  # type: ignore[no-untyped-call]
        return job.is_failed and job.ended_at is not None and job.ended_at > failed_at

    queue.enqueue(runner.retry_failed_job)  # what the scheduler does at 50 past each hour
    wait_for(tried_again, timeout=60, what="the job tried once more, and failed again")
    [planned] = [s for s in stack_status(stack.settings).scheduled if s.name == CATCH_UP]
    assert planned.cron == "50 * * * *" and planned.next_run is not None
