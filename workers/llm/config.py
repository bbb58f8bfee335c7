"""How the LLM extractor is configured: `[llm]` in the data directory's settings.toml, each
key overridden by its REVERIE_LLM_* variable.

    [llm]
    provider = "anthropic"          # claude-cli | anthropic | openai (none: the LLM is off)
    model = "claude-haiku-4-5"
    base_url = "https://api.anthropic.com"   # openai: e.g. http://127.0.0.1:11434/v1 (Ollama)
    api_key_env = "ANTHROPIC_API_KEY"        # the variable holding the key (none for claude-cli)
    daily_token_budget = 200000     # input and output tokens a day, all sessions; required
    timeout_s = 120
    command = "claude"              # claude-cli: the Claude Code executable

Background work must never spend tokens without a cap: a provider without a positive daily
budget is refused with the reason.
"""

import os
import tomllib
from collections.abc import Mapping
from typing import Annotated

import msgspec

from schemas.llm import Provider
from schemas.settings import Settings

_DEFAULTS: dict[str, dict[str, str]] = {
    "claude-cli": {"model": "", "base_url": "", "api_key_env": ""},
    "anthropic": {
        "model": "claude-haiku-4-5",
        "base_url": "https://api.anthropic.com",
        "api_key_env": "ANTHROPIC_API_KEY",
    },
    "openai": {"model": "", "base_url": "http://127.0.0.1:11434/v1", "api_key_env": "OPENAI_API_KEY"},
}
_INTEGERS = ("daily_token_budget", "timeout_s")


class LLMSettings(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    provider: Provider
    daily_token_budget: Annotated[int, msgspec.Meta(gt=0)]
    model: str = ""
    base_url: str = ""
    api_key_env: str = ""
    timeout_s: Annotated[int, msgspec.Meta(gt=0, le=3600)] = 120
    command: str = "claude"

    @property
    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None


class BadSettings(ValueError):
    pass


def llm_settings(settings: Settings, environ: Mapping[str, str] | None = None) -> LLMSettings | None:
    """The LLM extractor's settings, or None when it is off. BadSettings says what is wrong."""
    env = os.environ if environ is None else environ
    table = _file_table(settings.settings_file)
    for key in ("provider", "model", "base_url", "api_key_env", "command", *_INTEGERS):
        if value := env.get(f"REVERIE_LLM_{key.upper()}"):
            table[key] = value
    if not table.get("provider"):
        return None
    provider = table["provider"]
    if provider not in _DEFAULTS:
        raise BadSettings(f"llm provider {provider!r}: choose claude-cli, anthropic or openai")
    if "daily_token_budget" not in table:
        raise BadSettings(
            "llm: set daily_token_budget (in settings.toml's [llm], or REVERIE_LLM_DAILY_TOKEN_BUDGET): "
            "background extraction never spends tokens without a cap"
        )
    for key, default in _DEFAULTS[provider].items():
        table.setdefault(key, default)
    try:
        for key in _INTEGERS:
            if isinstance(given := table.get(key), str):
                table[key] = int(given)
        return msgspec.convert(table, LLMSettings)
    except (ValueError, msgspec.ValidationError) as e:
        raise BadSettings(f"llm settings ({settings.settings_file} and REVERIE_LLM_*): {e}") from None


def configured(settings: Settings) -> LLMSettings | None:
    """The LLM the settings configure, if any; a misconfigured one is none (the deterministic
    path stands), and its asker says why: `llm_settings` raises BadSettings with the reason."""
    try:
        return llm_settings(settings)
    except BadSettings:
        return None


def _file_table(path: str) -> dict[str, object]:
    try:
        with open(path, "rb") as f:
            found = tomllib.load(f).get("llm", {})
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise BadSettings(f"{path}: {e}") from None
    if not isinstance(found, dict):
        raise BadSettings(f"{path}: [llm] must be a table")
    return dict(found)
