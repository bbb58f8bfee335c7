"""What the user is doing, guessed from the prompt's words (English and French), and the
queries recall asks on its behalf: each aimed at a category of memory, with a weight.

Deterministic on purpose: the same prompt always asks the same queries, so a recall can be
explained and replayed.
"""

import re

from schemas.memory import Category
from schemas.recall import Query, Task

# Word stems: a prompt word counts when it starts with one of them.
_STEMS: dict[Task, tuple[str, ...]] = {
    "bugfix": (
        "fix", "bug", "broken", "regress", "crash", "wrong", "patch", "repair",
        "corrig", "répar", "repar", "cass", "plant",
    ),
    "debug": (
        "debug", "error", "exception", "traceback", "stack trace", "fail", "why does", "investigat",
        "log", "erreur", "échou", "echou", "pourquoi", "débog", "debog", "trace",
    ),
    "feature": (
        "add", "implement", "create", "build", "support", "new ", "introduc", "enable",
        "ajout", "implément", "implement", "crée", "cree", "créer", "nouvel", "permet",
    ),
    "refactor": (
        "refactor", "rename", "clean", "simplif", "extract", "reorganiz", "restructur", "move",
        "renomm", "nettoy", "réorganis", "reorganis", "déplac", "deplac", "factoris",
    ),
    "design": (
        "design", "architect", "approach", "trade-off", "tradeoff", "should we", "plan", "strateg",
        "conception", "concevoir", "approche", "compromis", "devrait-on", "faut-il", "stratég",
    ),
    "question": (
        "what", "how", "where", "when", "which", "who", "explain", "?",
        "quoi", "comment", "où", "quand", "quel", "qui", "expliqu", "est-ce",
    ),
}  # fmt: skip
# A tie goes to the more specific task.
_PRIORITY: tuple[Task, ...] = ("bugfix", "debug", "refactor", "design", "feature", "question")
_WORD = re.compile(r"[\w'-]+|\?", re.UNICODE)
# Linear on any text: each alternative starts only where its run starts (the look-behinds) and
# never backtracks into a run it read (possessive `++`); tried from every letter of a long run of
# letters, hex or CJK, the plain pattern took 1.1 s on 8,000 characters.
_IDENTIFIER = re.compile(r"(?<![\w./-])[\w./-]*[._/][\w./-]+|(?<![a-z])[a-z]++[A-Z]\w*|[A-Z][a-z]++[A-Z]\w*")
_STOPWORDS_TEXT = """
    a an and are as at be but by can could did do does for from had has have how i if in into is it its
    me my of on or our please should so that the their them then there these they this to was we were what
    when where which who why will with would you your le la les un une des du de et est en dans pour que
    qui quoi sur pas par avec ce cette ces je tu il elle nous vous ils au aux se sa son ses mon ma mes
    pourquoi comment quand où quel quelle quels est-ce"""
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def classify(prompt: str) -> Task:
    """The task a prompt is most likely about; "unknown" when no keyword says."""
    text = prompt.lower()
    words = _WORD.findall(text)
    scores = {task: sum(_hits(stem, text, words) for stem in stems) for task, stems in _STEMS.items()}
    best = max(scores.values())
    if best == 0:
        return "unknown"
    return next(task for task in _PRIORITY if scores[task] == best)


def _hits(stem: str, text: str, words: list[str]) -> int:
    if " " in stem or not stem.isalnum():  # a phrase, or punctuation
        return text.count(stem.strip())
    return sum(word.startswith(stem) for word in words)


def identifiers(text: str) -> list[str]:
    """Names from code in `text`: dotted, slashed or snake_case words, camelCase ones."""
    return _IDENTIFIER.findall(text)


def keywords(prompt: str) -> list[str]:
    """The prompt's content words, in order, once each (identifiers kept whole)."""
    rest = _IDENTIFIER.sub(" ", prompt)
    words = [w for w in _WORD.findall(rest) if w.lower() not in _STOPWORDS and w != "?" and len(w) > 1]
    return list(dict.fromkeys([*identifiers(prompt), *words]))


# The category a task's own query aims at, and the second query it asks.
_FOCUS: dict[Task, tuple[Category, str]] = {
    "bugfix": ("errors", "error failure fix"),
    "debug": ("errors", "error exception failed"),
    "feature": ("decisions", "decided prefer convention"),
    "refactor": ("patterns", "pattern convention structure"),
    "design": ("decisions", "decision chose trade-off"),
    "question": ("context", ""),
    "unknown": ("context", ""),
}


def queries(prompt: str, task: Task | None = None) -> list[Query]:
    """3 to 5 queries for `prompt`: itself, its keywords, its identifiers, and the task's angle."""
    task = task or classify(prompt)
    words = keywords(prompt)
    focus, angle = _FOCUS[task]
    found = [Query(prompt.strip(), focus, 1.0), Query(" ".join(words) or prompt.strip(), "context", 0.8)]
    if names := identifiers(prompt):
        found.append(Query(" ".join(dict.fromkeys(names)), "stack", 0.7))
    if angle:
        found.append(Query(f"{' '.join(words[:8])} {angle}".strip(), focus, 0.5))
    if len(found) < 3:
        found.append(Query(" ".join(words[:4]) or prompt.strip(), "patterns", 0.4))
    return found[:5]
