"""The LLM extractor's contract, on loopback: a fake OpenAI-compatible server and a fake
Anthropic Messages server answer well, badly (malformed JSON, refusals, HTTP 429 and 500) or
never; every bad answer falls back on the deterministic extractor without losing the session."""

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import fakeredis
import msgspec
import pytest

from projections.event_log import EventLog
from reverie.testing import make_event, streamed
from schemas import kinds, memory
from schemas.events import Event
from schemas.ids import new_event_id
from schemas.llm import Extracted, extracted_schema
from schemas.settings import Settings
from tests.support.claude_code import Block, FakeMessagesAPI, text_block, tool_results, tool_use
from tests.support.http import QuietHandler, on_loopback
from workers.extraction.llm_reading import ask, digest, memories
from workers.llm.config import BadSettings, LLMSettings, llm_settings
from workers.thinking.runner import Session, run

GOOD = {
    "entities": [{"name": "pnpm", "type": "tool"}],
    "facts": [
        {
            "subject": "the project", "relation": "USES", "object": "pnpm", "category": "stack",
            "statement": "The frontend installs its packages with pnpm, not npm.", "confidence": 0.9,
        }
    ],
    "episode": {"title": "Move the frontend to pnpm", "summary": "Switched to pnpm; the build passes.",
                "outcome": "success"},
}  # fmt: skip
# Behaviour: what the fake answers one request with: (status, body as JSON or raw bytes, delay in s)
Answer = tuple[int, Any, float]


class FakeLLM:
    """An HTTP server on loopback that answers each request with the next of `answers` (the last
    one again once they run out) and keeps every request body."""

    def __init__(self, answers: list[Answer]) -> None:
        self.answers = answers
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                fake.requests.append({"path": self.path, **body})
                status, body, delay = fake.answers[min(len(fake.requests), len(fake.answers)) - 1]
                time.sleep(delay)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                with contextlib.suppress(OSError):  # the client gave up waiting
                    self.reply(status, "application/json", data)

        self.server = on_loopback(Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def anthropic_says(content: Any, stop_reason: str = "tool_use") -> dict[str, Any]:
    block = {"type": "tool_use", "id": "t1", "name": "record_memory", "input": content}
    if isinstance(content, str):
        block = {"type": "text", "text": content}
    return {"type": "message", "role": "assistant", "content": [block], "stop_reason": stop_reason,
            "usage": {"input_tokens": 1200, "output_tokens": 300}}  # fmt: skip


def openai_says(content: Any, refusal: str | None = None) -> dict[str, Any]:
    text = content if isinstance(content, str) else json.dumps(content)
    message = {"role": "assistant", "content": None if refusal else text, "refusal": refusal}
    return {"choices": [{"message": message}], "usage": {"prompt_tokens": 1000, "completion_tokens": 250}}


SAYS: dict[str, Callable[[Any], dict[str, Any]]] = {"anthropic": anthropic_says, "openai": openai_says}
REFUSAL: dict[str, dict[str, Any]] = {
    "anthropic": anthropic_says("I can't help with that.", stop_reason="refusal"),
    "openai": openai_says("", refusal="I can't help with that."),
}


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def serve() -> Iterator[Callable[[list[Answer]], FakeLLM]]:
    started: list[FakeLLM] = []

    def start(answers: list[Answer]) -> FakeLLM:
        started.append(FakeLLM(answers))
        return started[-1]

    yield start
    for fake in started:
        fake.close()


def configured(provider: str, fake: FakeLLM, budget: int = 100_000) -> LLMSettings:
    base = fake.url if provider == "anthropic" else f"{fake.url}/v1"
    return LLMSettings(
        provider=provider,  # type: ignore[arg-type]
        model="m",
        base_url=base,
        daily_token_budget=budget,
        timeout_s=2,
    )


T0 = datetime(2026, 3, 2, 10, tzinfo=UTC)


def session(project: str = "/home/u/web") -> list[Event]:
    said: list[tuple[str, dict[str, Any]]] = [
        (kinds.SESSION_STARTED, {"source": "startup"}),
        (kinds.PROMPT_SUBMITTED, {"prompt": "Move the frontend to pnpm, npm keeps breaking the lockfile."}),
        (
            kinds.TOOL_USED,
            {
                "tool_name": "Bash",
                "tool_input": {"command": "pnpm install"},
                "tool_response": {"stdout": "done"},
            },
        ),
        (
            kinds.ASSISTANT_STOPPED,
            {"last_assistant_message": "The frontend now uses pnpm; the build passes."},
        ),
    ]
    return [
        make_event(kind, {"session_id": "s1", **payload}, id=new_event_id(int(at(n).timestamp() * 1000)),
                   ts=at(n), recorded_at=at(n), project=project, source=kinds.SOURCE_CLAUDE_CODE,
                   session_id="s1")
        for n, (kind, payload) in enumerate(said)
    ]  # fmt: skip


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_the_schema_is_strict_and_self_contained() -> None:
    schema = extracted_schema()
    assert "$ref" not in json.dumps(schema) and schema["required"] == ["entities", "facts", "episode"]
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({**GOOD, "extra": 1}, Extracted)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({**GOOD, "episode": {"title": "t", "summary": "s", "outcome": "great"}}, Extracted)


def test_a_good_answer_becomes_entities_facts_and_the_episode(
    provider: str, serve: Callable[[list[Answer]], FakeLLM]
) -> None:
    fake = serve([(200, SAYS[provider](GOOD), 0)])
    asked = ask(configured(provider, fake), session(), spent_today=0)
    assert asked.extracted is not None and asked.used.outcome == "extracted"
    assert asked.used.input_tokens > 0 and asked.used.output_tokens > 0
    [request] = fake.requests
    assert "pnpm" in json.dumps(request) and request["path"] in ("/v1/messages", "/v1/chat/completions")
    found = list(memories(asked.extracted, session()))
    [fact] = [d.payload for d in found if isinstance(d.payload, memory.FactAsserted)]
    assert (fact.relation, fact.category, fact.confidence) == ("uses", "stack", 0.9)
    [episode] = [d.payload for d in found if isinstance(d.payload, memory.EpisodeRecorded)]
    assert (episode.title, episode.outcome, episode.session_id) == (
        "Move the frontend to pnpm",
        "success",
        "s1",
    )
    assert all(d.project == "/home/u/web" for d in found)


def test_a_malformed_answer_is_repaired_once(provider: str, serve: Callable[[list[Answer]], FakeLLM]) -> None:
    broken = {**GOOD, "facts": [{"subject": "x"}]} if provider == "anthropic" else '{"entities": [,'
    fake = serve([(200, SAYS[provider](broken), 0), (200, SAYS[provider](GOOD), 0)])
    asked = ask(configured(provider, fake), session(), spent_today=0)
    assert asked.extracted is not None and asked.used.outcome == "repaired"
    assert len(fake.requests) == 2 and "not valid" in json.dumps(fake.requests[1])
    assert asked.used.input_tokens == 2 * (1200 if provider == "anthropic" else 1000)  # both calls counted


@pytest.mark.parametrize(
    "failure",
    [
        "malformed twice",
        "refusal",
        "HTTP 429",
        "HTTP 500",
        "not JSON at all",
        "timeout",
        "refused connection",
    ],
)
def test_every_bad_answer_falls_back_and_says_why(
    provider: str, failure: str, serve: Callable[[list[Answer]], FakeLLM]
) -> None:
    answers: dict[str, list[Answer]] = {
        "malformed twice": [(200, SAYS[provider]('{"entities": "no"}'), 0)],
        "refusal": [(200, REFUSAL[provider], 0)],
        "HTTP 429": [(429, {"error": {"type": "rate_limit_error"}}, 0)],
        "HTTP 500": [(500, {"error": {"type": "api_error"}}, 0)],
        "not JSON at all": [(200, b"<html>bad gateway</html>", 0)],
        "timeout": [(200, SAYS[provider](GOOD), 5)],
        "refused connection": [(200, SAYS[provider](GOOD), 0)],
    }
    fake = serve(answers[failure])
    settings = configured(provider, fake)
    if failure == "refused connection":
        fake.close()
    started = time.monotonic()
    asked = ask(settings, session(), spent_today=0)
    assert asked.extracted is None and asked.used.outcome == "fell_back" and asked.used.reason
    assert time.monotonic() - started < 2 * settings.timeout_s + 2  # never waits past its timeouts


def test_a_spent_budget_asks_nothing(provider: str, serve: Callable[[list[Answer]], FakeLLM]) -> None:
    fake = serve([(200, SAYS[provider](GOOD), 0)])
    asked = ask(configured(provider, fake, budget=5_000), session(), spent_today=5_000)
    assert asked.extracted is None and asked.used.outcome == "over_budget" and fake.requests == []


def test_the_digest_is_the_sessions_words_within_its_limit() -> None:
    text = digest(session())
    assert text.startswith("USER: Move the frontend to pnpm") and "AGENT: The frontend now uses pnpm" in text
    long = session() + [
        make_event(kinds.PROMPT_SUBMITTED, {"prompt": f"step {n} " + "x" * 1400}, id=new_event_id(),
                   ts=at(60 * n), recorded_at=T0, project="/home/u/web", source=kinds.SOURCE_CLAUDE_CODE,
                   session_id="s1")
        for n in range(1, 60)
    ]  # fmt: skip
    cut = digest(long)
    assert len(cut) < 31_000 and "characters left out" in cut and "step 59" in cut and "USER: Move" in cut


def test_settings_need_a_provider_and_a_daily_cap(home: str) -> None:
    settings = Settings(home)
    assert llm_settings(settings, {}) is None  # off by default
    with pytest.raises(BadSettings, match="daily_token_budget"):
        llm_settings(settings, {"REVERIE_LLM_PROVIDER": "openai"})
    with open(settings.settings_file, "w") as f:
        f.write('[llm]\nprovider = "anthropic"\ndaily_token_budget = 50000\n')
    found = llm_settings(settings, {"REVERIE_LLM_MODEL": "claude-x"})
    assert found is not None and (found.provider, found.model, found.daily_token_budget) == (
        "anthropic",
        "claude-x",
        50_000,
    )
    with pytest.raises(BadSettings, match="choose claude-cli, anthropic or openai"):
        llm_settings(settings, {"REVERIE_LLM_PROVIDER": "gemini"})


def extracted_session(
    settings: Settings, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> list[Event]:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    EventLog(settings.event_log_dir).append(session())
    client = fakeredis.FakeRedis()
    run("episodes", Session("s1"), client, settings)
    return streamed(client)


def test_a_session_extracted_by_the_llm_records_its_cost_and_the_models_episode(
    settings: Settings, serve: Callable[[list[Answer]], FakeLLM], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = serve([(200, openai_says(GOOD), 0)])
    env = {
        "REVERIE_LLM_PROVIDER": "openai",
        "REVERIE_LLM_BASE_URL": f"{fake.url}/v1",
        "REVERIE_LLM_DAILY_TOKEN_BUDGET": "9000",
    }
    emitted = extracted_session(settings, env, monkeypatch)
    [used] = [msgspec.json.decode(e.payload) for e in emitted if e.kind == kinds.LLM_USED]
    assert (used["outcome"], used["input_tokens"], used["output_tokens"]) == ("extracted", 1000, 250)
    [episode] = [msgspec.json.decode(e.payload) for e in emitted if e.kind == kinds.EPISODE_RECORDED]
    assert episode["title"] == "Move the frontend to pnpm"
    assert any(e.kind == kinds.FACT_ASSERTED and b"pnpm, not npm" in bytes(e.payload) for e in emitted)


def test_a_session_the_llm_fails_on_is_extracted_deterministically_not_dropped(
    settings: Settings, serve: Callable[[list[Answer]], FakeLLM], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = serve([(500, {"error": "down"}, 0)])
    env = {
        "REVERIE_LLM_PROVIDER": "anthropic",
        "REVERIE_LLM_BASE_URL": fake.url,
        "REVERIE_LLM_DAILY_TOKEN_BUDGET": "9000",
    }
    emitted = extracted_session(settings, env, monkeypatch)
    [used] = [msgspec.json.decode(e.payload) for e in emitted if e.kind == kinds.LLM_USED]
    assert used["outcome"] == "fell_back" and "HTTP 500" in used["reason"]
    [episode] = [msgspec.json.decode(e.payload) for e in emitted if e.kind == kinds.EPISODE_RECORDED]
    assert episode["title"].startswith(
        "Move the frontend to pnpm, npm keeps breaking"
    )  # the deterministic one


def test_status_says_whether_the_llm_extracts_and_what_is_wrong(
    home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from workers.status import stack_status

    settings = Settings(home)
    assert stack_status(settings).llm.startswith("off")
    with open(settings.settings_file, "w") as f:
        f.write('[llm]\nprovider = "openai"\nmodel = "qwen3:8b"\ndaily_token_budget = 50000\n')
    state = stack_status(settings)
    assert (
        "openai qwen3:8b" in state.llm and "50,000 tokens a day" in state.llm and state.llm_tokens_today == 0
    )
    monkeypatch.setenv("REVERIE_LLM_DAILY_TOKEN_BUDGET", "none")
    assert stack_status(settings).llm.startswith("misconfigured, so off")


class FakeAnthropic(FakeMessagesAPI):
    """Each run of `claude -p` gets the next of `outputs` as its StructuredOutput tool call (the
    last again once they run out), then ends its turn; or `status`, if given, for every request."""

    def __init__(self, outputs: list[Any], status: int = 200) -> None:
        self.outputs, self.runs = outputs, 0
        super().__init__(self.answer, status)

    def answer(self, body: dict[str, Any]) -> Block:
        if tool_results(body):  # the tool call was taken: the turn ends
            return text_block("Recorded.")
        self.runs += 1
        return tool_use(
            "StructuredOutput", self.outputs[min(self.runs, len(self.outputs)) - 1], f"toolu_{self.runs}"
        )


@pytest.fixture
def claude_env(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A scratch HOME whose Claude Code settings hold a hook that leaves a file if it runs."""
    ran = str(tmp_path / "a-hook-ran")
    settings = tmp_path / "home" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    hook = {"hooks": [{"type": "command", "command": f"touch {ran}"}]}
    settings.write_text(json.dumps({"hooks": {"SessionStart": [hook], "UserPromptSubmit": [hook]}}))
    for key, value in {
        "HOME": str(tmp_path / "home"), "ANTHROPIC_API_KEY": "any", "CLAUDE_CODE_MAX_RETRIES": "0",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    return ran


def claude_settings(claude: str, fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> LLMSettings:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    return LLMSettings(
        provider="claude-cli",
        command=claude,
        model="claude-haiku-4-5",
        daily_token_budget=100_000,
        timeout_s=60,
    )


def test_claude_p_extracts_a_session_through_the_real_cli(
    claude: str, claude_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeAnthropic([GOOD])
    try:
        asked = ask(claude_settings(claude, fake, monkeypatch), session(), spent_today=0)
    finally:
        fake.close()
    assert asked.used.outcome == "extracted", asked.used.reason
    assert asked.extracted is not None and asked.extracted.episode.title == "Move the frontend to pnpm"
    assert (
        asked.used.input_tokens >= 1500 and asked.used.output_tokens >= 200
    )  # what the server said it spent
    first = fake.requests[0]
    assert first["model"] == "claude-haiku-4-5" and first["stream"] is True
    assert [t["name"] for t in first["tools"]] == ["StructuredOutput"]  # no other tool: it only answers
    assert "coding agent" in json.dumps(first["system"]) and "pnpm" in json.dumps(first["messages"])
    assert not os.path.exists(claude_env)  # the user's hooks never ran: nothing records this run


def test_claude_p_is_repaired_once_then_falls_back(
    claude: str, claude_env: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = {**GOOD, "facts": [{"subject": "x"}]}
    fake = FakeAnthropic([broken, GOOD])
    try:
        repaired = ask(claude_settings(claude, fake, monkeypatch), session(), spent_today=0)
    finally:
        fake.close()
    assert repaired.used.outcome == "repaired" and fake.runs == 2
    down = FakeAnthropic([GOOD], status=500)
    try:
        fell = ask(claude_settings(claude, down, monkeypatch), session(), spent_today=0)
    finally:
        down.close()
    assert fell.extracted is None and fell.used.outcome == "fell_back" and "exited 1" in fell.used.reason


def test_reflection_worded_by_the_model_within_its_budget(serve: Callable[[list[Answer]], FakeLLM]) -> None:
    from schemas.disposition import Disposition
    from schemas.recall import Scored
    from workers.dynamics.reflect import reflect, with_llm

    found = [Scored("m1", "fact", "DuckDB fits analytics", None, "p", None, None, 1, 1, 0, 1, 1, 1, [], {})]
    weighed = reflect("DuckDB for analytics?", "p", found, Disposition())
    fake = serve([(200, openai_says({"statement": "Keep DuckDB for analytics.", "confidence": 0.95}), 0)])
    worded, used = with_llm(configured("openai", fake), weighed, Disposition(background="a CLI"), 0)
    assert worded is not None and (worded.statement, worded.confidence, worded.formed_by) == (
        "Keep DuckDB for analytics.", 0.95, "llm",
    )  # fmt: skip
    assert worded.promote and worded.supporting == weighed.supporting  # the evidence stays the evidence
    assert (used.outcome, used.input_tokens, used.output_tokens) == ("extracted", 1000, 250)
    said = json.dumps(fake.requests[0])
    assert "DuckDB fits analytics" in said and "a CLI" in said
    wrong = serve([(200, openai_says("not json"), 0)])
    assert with_llm(configured("openai", wrong), weighed, Disposition(), 0)[0] is None
    spent = serve([(200, openai_says({"statement": "x", "confidence": 1}), 0)])
    kept, used = with_llm(configured("openai", spent, budget=10), weighed, Disposition(), 10)
    assert kept is None and used.outcome == "over_budget" and spent.requests == []


def test_a_stash_worded_by_the_model_within_its_budget_and_what_it_cost_recorded(
    serve: Callable[[list[Answer]], FakeLLM], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reverie.stashing import stash
    from reverie.testing import Folding
    from schemas.events import decode_event
    from schemas.observed import AssistantStopped, PromptSubmitted
    from workers.stashes import with_llm

    answer = {
        "goal": "Ship the CSV export of orders.",
        "decisions": ["Use csv.writer, not pandas"],
        "open_threads": ["The header row is missing"],
        "next_steps": ["Add the header row", "Run the tests"],
    }
    fake = serve([(200, openai_says(answer), 0)])
    for key, value in {"PROVIDER": "openai", "BASE_URL": f"{fake.url}/v1", "MODEL": "m"}.items():
        monkeypatch.setenv(f"REVERIE_LLM_{key}", value)
    monkeypatch.setenv("REVERIE_LLM_DAILY_TOKEN_BUDGET", "100000")
    settings = Settings(str(tmp_path / "home"), redis_url=f"unix://{tmp_path}/nobody-listens.sock")
    asked = PromptSubmitted(session_id="s1", prompt="export the orders as CSV")
    told = AssistantStopped(session_id="s1", last_assistant_message="Wrote export.py; the header is missing.")
    folding = Folding(settings)
    folding.fold(
        [
            make_event(kinds.PROMPT_SUBMITTED, asked, id=new_event_id(int(T0.timestamp() * 1000)), ts=T0,
                       recorded_at=T0, project="/shop", source="claude-code", session_id="s1"),
            make_event(kinds.ASSISTANT_STOPPED, told, id=new_event_id(int(T0.timestamp() * 1000) + 1000),
                       ts=T0 + timedelta(seconds=1), recorded_at=T0, project="/shop", source="claude-code",
                       session_id="s1"),
        ]
    )  # fmt: skip
    folding.close()
    done = stash(settings, "/shop", str(tmp_path / "shop"), "orders", None, kinds.SOURCE_CLI)
    assert (done.stash.goal, done.stash.next_steps, done.stash.worded_by) == (
        "Ship the CSV export of orders.", ["Add the header row", "Run the tests"], "openai:m",
    )  # fmt: skip
    said = json.dumps(fake.requests[0])
    assert "export the orders as CSV" in said and "the header is missing" in said
    assert "worded by openai:m" in open(done.path).read()
    spooled = [decode_event(open(os.path.join(settings.spool_dir, n), "rb").read())
               for n in sorted(os.listdir(settings.spool_dir))]  # fmt: skip
    used = [e for e in spooled if e.kind == kinds.LLM_USED]
    assert len(used) == 1 and used[0].caused_by and used[0].session_id == "s1"
    assert json.loads(bytes(used[0].payload))["output_tokens"] == 250
    broke = serve([(200, openai_says("not json"), 0)])
    monkeypatch.setenv("REVERIE_LLM_BASE_URL", f"{broke.url}/v1")
    kept = stash(settings, "/shop", str(tmp_path / "shop"), "orders", None, kinds.SOURCE_CLI)
    assert kept.stash.worded_by is None and kept.stash.goal == "export the orders as CSV"
    over, cost = with_llm(configured("openai", fake, budget=10), done.stash, ["the user: hi"], 10)
    assert over is None and cost.outcome == "over_budget" and len(fake.requests) == 1
