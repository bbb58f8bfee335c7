"""The optional LLM, off by default: its settings (config.py: settings.toml's `[llm]` or
REVERIE_LLM_* variables) and the providers that answer it (providers.py: `claude -p`, the
Anthropic Messages API or any OpenAI-compatible endpoint). Extraction reads finished sessions
with it (workers/extraction/llm_reading.py), reflection words its opinions with it. Every call's
tokens are recorded (`llm.used`), and a daily token budget stops it when spent.
"""
