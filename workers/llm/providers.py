"""The three ways to ask a model, each answering a prompt with JSON text and the tokens spent:

- `claude-cli`: Claude Code in print mode (`claude -p`, the user's subscription), with no
  tools, no session kept, the user's settings left unread (so none of their hooks run), and
  REVERIE_HOOKS_OFF set so that reverie's own hooks, wherever installed, record nothing of it
  and never recurse into extraction; the schema goes as `--json-schema`.
- `anthropic`: the Messages API; the schema is a tool the model must call, so its input is
  the JSON.
- `openai`: any OpenAI-compatible endpoint (Ollama, vLLM, llama.cpp's server, OpenAI), with
  `response_format` set to the strict JSON schema.

Standard library HTTP (urllib): no client library to install. Every failure (a refused
connection, a timeout, HTTP 429 or 500, a refusal, a body that is not what the API promises)
is a ProviderError saying what happened; the extractor then falls back.
"""

import json
import os
import subprocess
import urllib.error
import urllib.request
from typing import Any, TypeVar

import msgspec

from schemas.llm import LLMUsed, Spent
from schemas.settings import HOOKS_OFF
from workers.lifeline import killed_with_this_process
from workers.llm.config import LLMSettings

MAX_TOKENS = 4096
T = TypeVar("T")
_TOOL = "record_memory"


class Completion(msgspec.Struct, frozen=True):
    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class ProviderError(Exception):
    """The model could not be asked, or did not answer; `spent` counts what it cost anyway."""

    def __init__(self, reason: str, spent: Completion | None = None) -> None:
        super().__init__(reason)
        self.spent = spent or Completion("")


def spent(settings: LLMSettings, outcome: Spent, reason: str = "", *calls: Completion) -> LLMUsed:
    """What asking the model cost, as the `llm.used` event records it."""
    return LLMUsed(
        provider=settings.provider,
        model=settings.model,
        input_tokens=sum(c.input_tokens for c in calls),
        output_tokens=sum(c.output_tokens for c in calls),
        outcome=outcome,
        reason=reason[:500],
    )


def answer_as(
    settings: LLMSettings, system: str, prompt: str, shape: type[T], spent_today: int
) -> tuple[T | None, LLMUsed]:
    """`prompt` answered as a `shape`, within the daily budget; None when over it, when the model
    fails, or when its answer is not a valid `shape`. What asking cost, either way."""
    if spent_today >= settings.daily_token_budget:
        reason = f"{spent_today} of {settings.daily_token_budget} tokens spent today"
        return None, spent(settings, "over_budget", reason)
    try:
        answer = complete(settings, system, prompt, msgspec.json.schema(shape))
    except ProviderError as e:
        return None, spent(settings, "fell_back", str(e), e.spent)
    try:
        said = msgspec.json.decode(answer.text.strip().removeprefix("```json").strip("`\n "), type=shape)
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        return None, spent(settings, "fell_back", f"not valid: {e}", answer)
    return said, spent(settings, "extracted", "", answer)


def complete(settings: LLMSettings, system: str, prompt: str, schema: dict[str, Any]) -> Completion:
    """`prompt`, answered by the configured model as JSON text of `schema`."""
    if settings.provider == "anthropic":
        return _anthropic(settings, system, prompt, schema)
    if settings.provider == "openai":
        return _openai(settings, system, prompt, schema)
    return _claude_cli(settings, system, prompt, schema)


def _post(url: str, body: dict[str, Any], headers: dict[str, str], timeout_s: int) -> dict[str, Any]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as e:
        raise ProviderError(f"HTTP {e.code} from {url}: {e.read()[:300].decode(errors='replace')}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        raise ProviderError(f"{url}: {getattr(e, 'reason', e)}") from None
    except ValueError as e:
        raise ProviderError(f"{url} answered something that is not JSON: {e}") from None
    if not isinstance(answer, dict):
        raise ProviderError(f"{url} answered {type(answer).__name__}, not an object")
    return answer


def _anthropic(settings: LLMSettings, system: str, prompt: str, schema: dict[str, Any]) -> Completion:
    body = {
        "model": settings.model,
        "max_tokens": MAX_TOKENS,
        "system": system,
        "messages": [{"role": "user", "content": prompt}],
        "tools": [{"name": _TOOL, "description": "Record what the session teaches.", "input_schema": schema}],
        "tool_choice": {"type": "tool", "name": _TOOL},
    }
    headers = {"x-api-key": settings.api_key or "", "anthropic-version": "2023-06-01"}
    answer = _post(f"{settings.base_url.rstrip('/')}/v1/messages", body, headers, settings.timeout_s)
    usage = answer.get("usage") or {}
    spent = Completion("", int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0))
    if answer.get("stop_reason") == "refusal":
        raise ProviderError("the model refused", spent)
    blocks = [b for b in answer.get("content") or [] if isinstance(b, dict)]
    called = [b.get("input") for b in blocks if b.get("type") == "tool_use" and b.get("name") == _TOOL]
    if called:
        return msgspec.structs.replace(spent, text=json.dumps(called[0]))
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    return msgspec.structs.replace(spent, text=text)


def _openai(settings: LLMSettings, system: str, prompt: str, schema: dict[str, Any]) -> Completion:
    body = {
        "model": settings.model,
        "max_tokens": MAX_TOKENS,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": _TOOL, "schema": schema, "strict": True},
        },
    }
    headers = {"authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    answer = _post(f"{settings.base_url.rstrip('/')}/chat/completions", body, headers, settings.timeout_s)
    usage = answer.get("usage") or {}
    spent = Completion("", int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
    choices = answer.get("choices") or [{}]
    message = choices[0].get("message") or {} if isinstance(choices[0], dict) else {}
    if message.get("refusal"):
        raise ProviderError(f"the model refused: {message['refusal']}", spent)
    return msgspec.structs.replace(spent, text=str(message.get("content") or ""))


def _claude_cli(settings: LLMSettings, system: str, prompt: str, schema: dict[str, Any]) -> Completion:
    """Claude Code 2.1 in print mode: `--json-schema` has it offer the model a StructuredOutput
    tool and report what the model called it with as `structured_output`."""
    command = [
        settings.command, "-p", "--output-format", "json", "--tools", "", "--setting-sources", "",
        "--no-session-persistence", "--json-schema", json.dumps(schema), "--append-system-prompt", system,
        *(["--model", settings.model] if settings.model else []),
    ]  # fmt: skip
    try:
        run = subprocess.run(
            command,
            input=prompt,
            capture_output=True,
            text=True,
            timeout=settings.timeout_s,
            env={**os.environ, HOOKS_OFF: "1"},
            preexec_fn=killed_with_this_process(),  # a work horse killed with its worker leaves no claude
        )
    except subprocess.TimeoutExpired:
        raise ProviderError(f"{settings.command} -p did not answer within {settings.timeout_s} s") from None
    except OSError as e:
        raise ProviderError(f"{settings.command}: {e}") from None
    try:
        answer = json.loads(run.stdout)
    except ValueError:
        said = (run.stderr or run.stdout)[:300]
        raise ProviderError(f"{settings.command} -p exited {run.returncode}: {said}") from None
    if not isinstance(answer, dict):
        raise ProviderError(f"{settings.command} -p answered {type(answer).__name__}, not an object")
    usage = answer.get("usage") or {}
    read = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    spent = Completion("", sum(int(usage.get(k) or 0) for k in read), int(usage.get("output_tokens") or 0))
    if run.returncode != 0 or answer.get("is_error"):
        why = answer.get("result") or answer.get("terminal_reason") or run.stderr
        raise ProviderError(f"{settings.command} -p exited {run.returncode}: {str(why)[:300]}", spent)
    structured = answer.get("structured_output")
    text = json.dumps(structured) if structured is not None else str(answer.get("result") or "")
    return msgspec.structs.replace(spent, text=text)
