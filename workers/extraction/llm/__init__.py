"""The LLM extractor: optional, off by default. When configured (settings.toml's `[llm]` or
REVERIE_LLM_* variables), each finished session is also read by a model, through `claude -p`,
the Anthropic Messages API or any OpenAI-compatible endpoint, which must answer the strict
schema of schemas/llm.py. One repair retry, then the deterministic extractor: a session is
never dropped. Every call's tokens are recorded (`llm.used`), and a daily token budget stops
LLM extraction when spent.
"""
