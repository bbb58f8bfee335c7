"""What a memory asked to be remembered is about: Memory Fabric's 17 categories, and how one is
told from the text when none is given (the first category, in this order, with a keyword in it).

These are topics for what the user or agent remembers by hand (`reverie remember`, the MCP
server's `memory_remember`); the facts extraction derives carry their own five (schemas/memory.py).
"""

import re
from typing import Literal

RememberedCategory = Literal[
    "decision",
    "architecture",
    "pattern",
    "blocker",
    "constraint",
    "preference",
    "pagination",
    "database",
    "authentication",
    "api",
    "frontend",
    "performance",
    "testing",
    "deployment",
    "observability",
    "ai-ml",
    "data-pipeline",
    "security",
]
Outcome = Literal["success", "failed"]

# category -> the words that tell it, checked in this order (a word's plural and -ing forms too)
_KEYWORDS: dict[RememberedCategory, tuple[str, ...]] = {
    "decision": ("chose", "choose", "decided", "decide", "selected", "picked"),
    "architecture": ("architecture", "design", "system"),
    "pattern": ("pattern", "convention", "style"),
    "blocker": ("blocked", "blocker", "issue", "bug", "workaround"),
    "constraint": ("must", "cannot", "required", "constraint"),
    "pagination": ("pagination", "cursor", "offset", "page"),
    "database": ("database", "sql", "postgres", "postgresql", "query", "mysql", "sqlite"),
    "authentication": ("auth", "jwt", "oauth", "token", "session", "login"),
    "api": ("api", "endpoint", "rest", "graphql"),
    "frontend": ("react", "component", "frontend", "ui", "css"),
    "performance": ("performance", "slow", "fast", "cache", "latency"),
    "testing": ("test", "pytest", "jest", "coverage"),
    "deployment": ("deploy", "ci", "cd", "docker", "kubernetes", "k8s"),
    "observability": ("monitoring", "logging", "tracing", "metrics"),
    "ai-ml": ("llm", "rag", "embedding", "langchain", "model"),
    "data-pipeline": ("etl", "streaming", "batch", "pipeline"),
    "security": ("security", "vulnerability", "owasp", "cve"),
}
# "preference" has no keywords in Memory Fabric's table; these phrasings say one
_PREFERENCE = ("prefer", "always", "never", "rather")
CATEGORIES: tuple[RememberedCategory, ...] = (*_KEYWORDS, "preference")
DEFAULT_CATEGORY: RememberedCategory = "decision"
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def detect_category(text: str) -> RememberedCategory:
    """The category `text` is about: the first whose keyword it holds, else "preference" if it
    states one, else "decision" (Memory Fabric's default)."""
    words: set[str] = set()
    for word in _WORD.findall(text.lower()):
        words.update((word, word.removesuffix("s"), word.removesuffix("ing"), *word.split("-")))
    for category, keywords in _KEYWORDS.items():
        if words.intersection(keywords):
            return category
    return "preference" if words.intersection(_PREFERENCE) else DEFAULT_CATEGORY
