"""Coding memory: can reverie answer what a developer asks later about past Claude Code sessions?

In the spirit of CodeMemo (questions over Claude Code transcripts). The questions
(benchmarks/coding_memory_questions.json, six categories: factual, debugging, architecture,
temporal, convention, cross-session) are about the fixture transcripts in
../shared/fixtures/claude-code/transcripts: which error was hit and what fixed it, which tool
or library the project uses, what was decided and why, which file holds what, what the user
asked for, what came first or last, what spans both big sessions. Each names the transcript
lines that hold its answer (file, 1-based line) and an answer pattern, a case-insensitive
regex matching a text that holds the answer; before anything starts, every evidence line is
checked to match its pattern, and no question may match its own.

Starts a stack (`reverie up`) on a scratch data directory, imports the transcripts through the
real path (`reverie import`, which waits for archiving), waits until the stack has settled (the
stream read, no job queued or running, every segment of the log folded into the published
projections, every memory text embedded, all of it unchanged over a few polls), then, for every
question, in the project of the transcript holding its first evidence line (a transcript's
project is its cwd: the two big sessions ran in two worktrees, so they are two projects):

- top5: asks the warm recall service over its socket (`reverie recall`'s request, which leaves
  out the questions asked before) and checks the pattern against the texts of the 5 best
  memories;
- injected: runs the real `reverie hook UserPromptSubmit` with the question as the prompt and
  the transcript's cwd, and checks the pattern against the context it prints for Claude Code
  (its additionalContext, as printed: verbatim inside the fence), a pause apart as a person types.

All top-5 questions are asked before any hook runs: the hook records its prompt, which becomes
a memory of the project. Then 20 prompts that nothing in these sessions answers
(benchmarks/unrelated_prompts.json: "explain how python decorators work") go through the same
hook, and what it injects for them is measured: it should be nothing, or a line.

With `--think`, every thinking job then runs as the scheduler would have it (`reverie think
all`, on the stack's worker, at the machine's own time: imported history is old by then), the
stack settles again, and all of it is measured a second time, the hooks as a later session
(the first pass's questions are that earlier session's prompts now, as a user asking again
days later would have them).

With `--think-first`, the thinking jobs run before the questions are first asked (that pass
is "thought"), as when a user imports history and asks days later.

Prints one JSON line: per pass ("before" or "thought", and "after" with --think), hits per category for
both, how many hooks printed a context (and how many of those were the project's profile, the
fallback when the service is late), the characters injected per question (median, max) and per
unrelated prompt (median, max), and per question [id, top5, injected, characters], each context
injected, and each that differed when asked again; a summary on stderr.

    python benchmarks/coding_memory.py [--home DIR] [--questions FILE] [--pause 1] [--think] [--think-first]

The stack is heavy on a small machine: run one such job at a time (`flock /tmp/heavy.lock ...`).
"""

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import msgspec

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from rq import Queue  # noqa: E402

from ingest.injection import ask  # noqa: E402
from ingest.project import project_key, project_of  # noqa: E402
from projections import sql  # noqa: E402
from projections.event_log import EventLog  # noqa: E402
from schemas.kinds import HOOK_CONTEXT_LIMIT  # noqa: E402
from schemas.settings import QUEUE, Settings  # noqa: E402
from schemas.text.fence import guarded  # noqa: E402
from schemas.text.gist import gist  # noqa: E402
from workers.redis_client import connect  # noqa: E402
from workers.status import stack_status  # noqa: E402

TRANSCRIPTS = os.path.join(HERE, "..", "..", "shared", "fixtures", "claude-code", "transcripts")
QUESTIONS = os.path.join(HERE, "coding_memory_questions.json")
UNRELATED = os.path.join(HERE, "unrelated_prompts.json")
RELEVANCE = os.path.join(HERE, "coding_memory_relevance.json")
CATEGORIES = ("factual", "debugging", "architecture", "temporal", "convention", "cross-session")
TOP_K = 5
SETTLED_POLLS = 3  # the same state this many polls in a row, POLL_S apart
POLL_S = 2.0


class Evidence(msgspec.Struct, frozen=True):
    file: str  # a transcript's basename
    line: int  # 1-based


class Question(msgspec.Struct, frozen=True):
    id: str
    category: str
    question: str
    answer_pattern: str
    evidence: list[Evidence]
    note: str = ""

    def answered_by(self, text: str) -> bool:
        return re.search(self.answer_pattern, text, re.IGNORECASE) is not None


class Outcome(msgspec.Struct, frozen=True):
    question: Question
    top5: bool
    injected: bool


def load_questions(path: str) -> list[Question]:
    with open(path, "rb") as f:
        questions = msgspec.json.decode(f.read(), type=list[Question])
    unknown = {q.category for q in questions} - set(CATEGORIES)
    assert not unknown, f"unknown categories: {unknown}"
    return questions


def transcript_paths(root: str) -> dict[str, str]:
    """Each transcript's basename -> its path (subagents' transcripts included)."""
    return {
        name: os.path.join(folder, name)
        for folder, _, files in os.walk(root)
        for name in files
        if name.endswith(".jsonl")
    }


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def check_labels(questions: list[Question], root: str) -> None:
    """Every evidence line holds text the answer pattern matches, and no question matches its
    own pattern (the hook records each question as a memory)."""
    paths = transcript_paths(root)
    lines: dict[str, list[str]] = {}
    for q in questions:
        assert not q.answered_by(q.question), f"{q.id}: the question gives its answer away"
        for e in q.evidence:
            if e.file not in lines:
                with open(paths[e.file], encoding="utf-8") as f:
                    lines[e.file] = f.readlines()
            text = "\n".join(_strings(json.loads(lines[e.file][e.line - 1])))
            assert q.answered_by(text), f"{q.id}: {e.file}:{e.line} does not hold the answer"


def transcript_cwds(root: str) -> dict[str, str]:
    """Each transcript's basename -> the working directory its lines name (the first one)."""
    cwds = {}
    for name, path in transcript_paths(root).items():
        with open(path, encoding="utf-8") as f:
            cwd = next((c for c in (json.loads(line).get("cwd") for line in f) if c), None)
        if cwd:
            cwds[name] = cwd
    return cwds


def stack_env(home: str) -> dict[str, str]:
    """This environment for the stack and the hook: its own data directory, its own server, and
    the project named by the payload's cwd alone."""
    dropped = {"REDIS_URL", "CLAUDE_PROJECT_DIR"}
    return {k: v for k, v in os.environ.items() if k not in dropped} | {"REVERIE_HOME": home}


def wait_for(what: str, check: Callable[[], object], timeout_s: float, every_s: float = 0.5) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(every_s)


def import_transcripts(reverie: str, env: dict[str, str], root: str) -> None:
    began = time.perf_counter()
    done = subprocess.run([reverie, "import", root], env=env, capture_output=True, text=True, timeout=1_800)
    assert done.returncode == 0, done.stderr
    first = done.stdout.strip().splitlines()[:1]
    print(f"imported in {time.perf_counter() - began:.1f} s: {' '.join(first)}", file=sys.stderr)


def _idle_jobs(settings: Settings) -> bool:
    queue = Queue(QUEUE, connection=connect(settings))
    registries = (queue.started_job_registry, queue.scheduled_job_registry, queue.deferred_job_registry)
    return queue.count == 0 and all(r.count == 0 for r in registries)


def _projected_and_embedded(settings: Settings) -> tuple[int, int] | None:
    """(segments, memories) when every segment of the log is folded into the published
    projections and every memory text is embedded; else None."""
    segments = {os.path.basename(p) for p in EventLog(settings.event_log_dir).segments()}
    try:
        with sql.connect(settings, snapshot_required=True) as db:
            folded = {
                name for (name,) in db.execute("SELECT name FROM projections.folded_segments").fetchall()
            }
            [(memories, missing)] = db.execute(
                "SELECT count(*), count(*) FILTER (e.memory_id IS NULL) FROM memory_documents m"
                " LEFT JOIN embedded e USING (memory_id, content_hash)"
            ).fetchall()
    except sql.NoSnapshot:
        return None
    return (len(segments), int(memories)) if segments <= folded and not missing else None


def settled_state(settings: Settings) -> tuple[int, int, int] | None:
    """What the stack holds (events archived, segments, memories) when it has nothing left to
    do; None while it is still busy."""
    status = stack_status(settings)
    if not status.reachable or status.lag or status.pending or status.spooled:
        return None
    if not _idle_jobs(settings):
        return None
    held = _projected_and_embedded(settings)
    return (status.archived, *held) if held else None


def wait_until_settled(settings: Settings, timeout_s: float = 3_600) -> tuple[int, int, int]:
    """The stack's state once it stayed settled and unchanged SETTLED_POLLS polls in a row: a
    job that ends sends derived events, which are archived, folded and embedded in turn."""
    deadline = time.monotonic() + timeout_s
    seen: list[tuple[int, int, int] | None] = []
    while len(seen) < SETTLED_POLLS or len(set(seen[-SETTLED_POLLS:])) != 1 or seen[-1] is None:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the stack did not settle within {timeout_s} s (last: {seen[-1:]})")
        seen.append(settled_state(settings))
        time.sleep(POLL_S)
    state = seen[-1]
    assert state is not None
    return state


def recalled_texts(settings: Settings, prompt: str, project: str) -> list[str]:
    """The texts of the TOP_K best memories the warm service recalls for `prompt` in `project`."""
    request = {
        "prompt": gist(prompt), "project": project, "limit": TOP_K, "deadline_s": 10.0, "answers_only": True
    }  # fmt: skip
    answer = ask(settings.recall_socket_path, request, 30.0)
    assert "recall" in answer, answer
    return [str(r["text"]) for r in answer["recall"]["results"][:TOP_K]]


def hook_context(reverie: str, env: dict[str, str], prompt: str, cwd: str, session_id: str) -> str:
    """The context `reverie hook UserPromptSubmit` prints for Claude Code to inject, as printed
    (fenced, escaped); "" for nothing."""
    payload = {"session_id": session_id, "hook_event_name": "UserPromptSubmit", "cwd": cwd, "prompt": prompt}
    done = subprocess.run(
        [reverie, "hook", "UserPromptSubmit"],
        input=json.dumps(payload).encode(),
        env=env,
        capture_output=True,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    try:
        return str(json.loads(out)["hookSpecificOutput"]["additionalContext"]) if out.strip() else ""
    except (ValueError, KeyError, TypeError):
        return out


def from_profile(settings: Settings, project: str, context: str) -> bool:
    """Whether `context` is the project's profile, the hook's fallback when the service is late."""
    try:
        with open(settings.profile_path(project), encoding="utf-8") as f:
            return context == guarded(f.read(HOOK_CONTEXT_LIMIT), HOOK_CONTEXT_LIMIT)
    except OSError:
        return False


def cwd_of(question: Question, cwds: dict[str, str]) -> str:
    """The working directory of the transcript that holds the question's (first) evidence."""
    return cwds[question.evidence[0].file]


def project_asked(question: Question, cwds: dict[str, str]) -> str:
    """The project the question is asked in: the hook's, from that working directory."""
    return project_of({"cwd": cwd_of(question, cwds)}, {})


def ask_service(settings: Settings, questions: list[Question], cwds: dict[str, str]) -> list[bool]:
    """Whether each question's answer is among the texts of its top TOP_K memories."""
    wait_for("the recall service listens", lambda: os.path.exists(settings.recall_socket_path), 300)
    for _ in range(3):  # the first answers load the baseline and warm the caches
        recalled_texts(settings, questions[0].question, project_asked(questions[0], cwds))
    hits = []
    for q in questions:
        texts = recalled_texts(settings, q.question, project_asked(q, cwds))
        hits.append(any(q.answered_by(t) for t in texts))
    return hits


class HookRuns(msgspec.Struct):
    hits: list[bool]
    characters: list[int]  # of each context printed ("" counts 0)
    contexts: list[str]  # each context printed
    printed: int = 0  # hooks that printed a context
    from_profile: int = 0  # of which the project's profile: the service was late


def run_hooks(
    reverie: str,
    settings: Settings,
    prompts: list[tuple[str, str]],
    answered_by: Callable[[int, str], bool],
    pause_s: float,
    session_id: str,
) -> HookRuns:
    """For each (prompt, cwd): whether the hook's context answers it (`answered_by(i, text)`, as
    printed), how long it is, and where the contexts came from."""
    runs = HookRuns(hits=[], characters=[], contexts=[])
    env = stack_env(settings.home)
    for i, (prompt, cwd) in enumerate(prompts):
        time.sleep(pause_s)  # a person types: the stack folds and embeds the prompt before
        # a session belongs to the project it began in: one session per project asked in
        context = hook_context(reverie, env, prompt, cwd, f"{session_id}-{project_key(cwd)}")
        runs.printed += bool(context)
        runs.from_profile += from_profile(settings, project_of({"cwd": cwd}, {}), context)
        runs.characters.append(len(context))
        runs.contexts.append(context)
        runs.hits.append(bool(context) and answered_by(i, context))
    return runs


def tally(outcomes: list[Outcome], which: Callable[[Outcome], bool]) -> dict[str, int]:
    counts = {c: sum(which(o) for o in outcomes if o.question.category == c) for c in CATEGORIES}
    return counts | {"all": sum(which(o) for o in outcomes)}


def spread(values: list[int]) -> dict[str, float]:
    return {"median": statistics.median(values) if values else 0, "max": max(values, default=0)}


class Pass(msgspec.Struct):
    """One measurement of the settled stack: the questions, through the service and the hook
    (twice in a row), and the unrelated prompts through the hook."""

    outcomes: list[Outcome]
    hooks: HookRuns
    again: HookRuns
    unrelated: HookRuns
    unrelated_prompts: list[str]


def items(context: str) -> list[str]:
    """The items of a printed context: its lines that start with "- " (render.py's)."""
    return [line[2:] for line in context.splitlines() if line.startswith("- ")]


_DATED = re.compile(r"^\[\d{4}-\d\d-\d\d\] ")


def item_key(question_id: str, item: str) -> str:
    """What a relevance label names: the question, and the item's text less its date."""
    return question_id + "\t" + _DATED.sub("", item)


def relevance(outcomes: list[Outcome], contexts: list[str], labels: dict[str, bool]) -> dict[str, Any]:
    """Of the items injected for the questions, how many a reader labelled relevant, and how
    many no label names yet (they count in neither share)."""
    keys = [item_key(o.question.id, i) for o, c in zip(outcomes, contexts, strict=True) for i in items(c)]
    known = [labels[k] for k in keys if k in labels]
    return {
        "items": len(keys),
        "labelled": len(known),
        "relevant": sum(known),
        "share_relevant": round(sum(known) / len(known), 3) if known else None,
        "unlabelled": sorted({k for k in keys if k not in labels}),
    }


def report(name: str, measured: Pass, labels: dict[str, bool]) -> dict[str, Any]:
    outcomes, hooks = measured.outcomes, measured.hooks
    per_category = {c: sum(o.question.category == c for o in outcomes) for c in CATEGORIES}
    top5, injected = tally(outcomes, lambda o: o.top5), tally(outcomes, lambda o: o.injected)
    print(f"-- {name}", file=sys.stderr)
    for c in (*CATEGORIES, "all"):
        n = per_category.get(c, len(outcomes))
        print(f"{c:>13}: {n:3d} questions  top-5 {top5[c]:3d}  injected {injected[c]:3d}", file=sys.stderr)
    asked, unrelated = spread(hooks.characters), spread(measured.unrelated.characters)
    print(
        f"the hook printed a context for {hooks.printed} of {len(outcomes)} prompts"
        f" ({hooks.from_profile} of them the project's profile), {asked['median']:.0f} characters"
        f" (median), {asked['max']} at most; for {measured.unrelated.printed} of"
        f" {len(measured.unrelated.characters)} unrelated prompts, {unrelated['median']:.0f} (median),"
        f" {unrelated['max']} at most",
        file=sys.stderr,
    )
    same = sum(a == b for a, b in zip(hooks.contexts, measured.again.contexts, strict=True))
    judged = relevance(outcomes, hooks.contexts, labels)
    print(
        f"asked again at once: {same} of {len(outcomes)} contexts the same,"
        f" {sum(measured.again.hits)} answers;"
        f" items injected {judged['items']}, labelled {judged['labelled']}, relevant {judged['relevant']}",
        file=sys.stderr,
    )
    return {
        "questions": len(outcomes),
        "same_when_asked_again": same,
        "injected_when_asked_again": sum(measured.again.hits),
        "relevance": judged,
        "top5": top5,
        "injected": injected,
        "hook_printed": hooks.printed,
        "hook_from_profile": hooks.from_profile,
        "injected_characters": asked,
        "unrelated_printed": measured.unrelated.printed,
        "unrelated_characters": unrelated,
        "per_question": [
            [o.question.id, o.top5, o.injected, n] for o, n in zip(outcomes, hooks.characters, strict=True)
        ],
        "contexts": {o.question.id: c for o, c in zip(outcomes, hooks.contexts, strict=True)},
        "contexts_when_asked_again": {
            o.question.id: again
            for o, first, again in zip(outcomes, hooks.contexts, measured.again.contexts, strict=True)
            if first != again
        },
        "unrelated_injected": [
            [p, c] for p, c in zip(measured.unrelated_prompts, measured.unrelated.contexts, strict=True) if c
        ],
    }


@contextlib.contextmanager
def running_stack(reverie: str, env: dict[str, str], settings: Settings) -> Iterator[None]:
    """`reverie up` in a subprocess for the time of a with block."""
    stack = subprocess.Popen([reverie, "up"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for("the stack is up", lambda: (s := stack_status(settings)).reachable and s.dispatchers, 120)
        yield
    finally:
        stack.terminate()
        stack.wait(120)


@contextlib.contextmanager
def data_directory(kept: str | None) -> Iterator[str]:
    """`kept`, or a scratch directory removed afterwards."""
    home = kept or tempfile.mkdtemp(prefix="rv-coding-")
    try:
        yield home
    finally:
        if not kept:
            shutil.rmtree(home, ignore_errors=True)


def measure(
    reverie: str,
    settings: Settings,
    questions: list[Question],
    cwds: dict[str, str],
    unrelated: list[str],
    pause_s: float,
    session_id: str,
) -> Pass:
    top5 = ask_service(settings, questions, cwds)
    asked = [(q.question, cwd_of(q, cwds)) for q in questions]
    answered = lambda i, text: questions[i].answered_by(text)  # noqa: E731
    hooks = run_hooks(reverie, settings, asked, answered, pause_s, session_id)
    again = run_hooks(reverie, settings, asked, answered, pause_s, session_id)
    places = sorted(set(cwds.values()))
    elsewhere = [(p, places[i % len(places)]) for i, p in enumerate(unrelated)]
    off_topic = run_hooks(reverie, settings, elsewhere, lambda i, text: False, pause_s, session_id)
    outcomes = [Outcome(q, t, i) for q, t, i in zip(questions, top5, hooks.hits, strict=True)]
    return Pass(outcomes, hooks, again, off_topic, unrelated)


def think_all(reverie: str, env: dict[str, str]) -> None:
    """Every thinking job, on the stack's worker, as the scheduler would enqueue them."""
    began = time.perf_counter()
    done = subprocess.run([reverie, "think", "all"], env=env, capture_output=True, text=True, timeout=3_600)
    assert done.returncode == 0, done.stderr + done.stdout
    print(f"thought in {time.perf_counter() - began:.1f} s", file=sys.stderr)


def evaluate(
    reverie: str,
    home: str,
    questions: list[Question],
    unrelated: list[str],
    transcripts: str,
    pause_s: float,
    think: bool,
    think_first: bool = False,
    labels: dict[str, bool] | None = None,
) -> dict[str, Any]:
    labels = labels or {}
    settings = Settings(home)
    env = stack_env(home)
    cwds = transcript_cwds(transcripts)
    passes: dict[str, Any] = {}
    with running_stack(reverie, env, settings):
        import_transcripts(reverie, env, transcripts)
        archived, segments, memories = wait_until_settled(settings)
        print(f"settled: {archived} events, {segments} segments, {memories} memories", file=sys.stderr)
        if think_first:  # the questions come only after the thinking jobs, as days later
            think_all(reverie, env)
            archived, segments, memories = wait_until_settled(settings)
            print(f"settled: {archived} events, {segments} segments, {memories} memories", file=sys.stderr)
        first = "thought" if think_first else "before"
        measured = measure(reverie, settings, questions, cwds, unrelated, pause_s, f"bench-{first}")
        passes[first] = report(first, measured, labels) | {"memories": memories}
        if think:
            think_all(reverie, env)
            archived, segments, memories = wait_until_settled(settings)
            print(f"settled: {archived} events, {segments} segments, {memories} memories", file=sys.stderr)
            measured = measure(reverie, settings, questions, cwds, unrelated, pause_s, "bench-after")
            passes["after"] = report("after", measured, labels) | {"memories": memories}
    return {"benchmark": "coding_memory", **passes}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--home", help="keep the data directory here, and reuse it (import adds nothing new)")
    parser.add_argument("--questions", default=QUESTIONS, help="a questions file (JSON list)")
    parser.add_argument("--transcripts", default=TRANSCRIPTS, help="the transcripts folder")
    parser.add_argument(
        "--unrelated", default=UNRELATED, help="prompts nothing remembered answers (JSON list)"
    )
    parser.add_argument(
        "--relevance",
        default=RELEVANCE,
        help="a reader's labels of injected items: {question id TAB item text: relevant} (JSON)",
    )
    parser.add_argument("--pause", type=float, default=1.0, help="seconds before each hook run")
    parser.add_argument("--think", action="store_true", help="then run every thinking job, and measure again")
    parser.add_argument(
        "--think-first", action="store_true", help="run every thinking job before the first questions"
    )
    args = parser.parse_args()
    reverie = shutil.which("reverie", path=os.path.dirname(sys.executable))
    assert reverie, "reverie is not installed beside this python"
    questions = load_questions(args.questions)
    check_labels(questions, args.transcripts)
    with open(args.unrelated, "rb") as f:
        unrelated = msgspec.json.decode(f.read(), type=list[str])
    labels: dict[str, bool] = {}
    if os.path.exists(args.relevance):
        with open(args.relevance, "rb") as f:
            labels = msgspec.json.decode(f.read(), type=dict[str, bool])
    with data_directory(args.home) as home:
        transcripts = os.path.abspath(args.transcripts)
        result = evaluate(
            reverie, home, questions, unrelated, transcripts, args.pause, args.think, args.think_first, labels
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
