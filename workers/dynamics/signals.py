"""What a prompt signals of the user, after HORA's signal tracker: explicit preferences
("always", "never", "I prefer", "toujours", "jamais", "je préfère"), principles (DRY, KISS,
SSOT, library-first, TDD...) and corrections ("no, ...", "I told you", "stop ...", "non, ...",
"je t'ai dit", "arrête"), in English and French; and how frustrated it sounds.

Only the user's own words count: Claude Code's wrappers, code blocks and inline code are left
out, and each sentence gives at most one signal (the first pattern of `PATTERNS` it matches).
A signal's text is normalized so that wordings of one preference group together: lower case,
spaces collapsed, a neutral prefix stripped ("I think", "you should", "il faut", "je pense
que", "always"...), a negation kept ("never mock the database" is not "mock the database").
A session keeps each normalized signal once, and at most MAX_PER_SESSION.

Frustration is HORA's lexical score, 1 (calm) to 5: up to 3 French and 2 English negative
words, a run of 3+ "!" or "?", capitals over 30% of a message longer than 20 characters, and a
short negative message, each a point. `rising` is the trend rule: three prompts in a row whose
scores rise, to 3.5 or more. Pure; patterns compiled once, each linear in the text.
"""

import re
from collections.abc import Iterable, Sequence
from typing import Literal

import msgspec

from schemas.text import clean, is_noise

SignalKind = Literal["preference", "principle", "correction"]
MAX_PER_SESSION = 10
EMOTIONAL_WEIGHT = 1.5  # what a correction weighs in ACT-R (projections/recall/scoring.py)
_MAX_TEXT = 200


class Signal(msgspec.Struct, frozen=True):
    kind: SignalKind
    text: str  # normalized
    said: str  # the sentence as the user wrote it
    pattern: str  # the name of the pattern that found it


_PRINCIPLES = {
    "ssot": r"ssot|single source of truth",
    "dry": r"dry|don'?t repeat yourself",
    "kiss": r"kiss|keep it simple",
    "yagni": r"yagni|you aren'?t gonna need it",
    "solid": r"solid principles?",
    "library-first": r"library[- ]first",
    "tdd": r"tdd|test[- ]driven|tests? first",
    "type-safe": r"type[- ]safe(?:ty)?",
    "single-responsibility": r"single responsibility",
    "separation-of-concerns": r"separation of concerns",
    "convention-over-configuration": r"convention over configuration",
    "composition-over-inheritance": r"composition over inheritance",
    "immutability": r"immutability|immutable data",
    "pure-functions": r"pure functions?|fonctions? pures?",
    "fail-fast": r"fail[- ]fast",
    "least-privilege": r"least privilege|moindre privil[eè]ge",
}
_THAT = r"(?:de |que |qu')?"
_ALREADY = r"(?:déjà |deja )?"
_WHAT_10 = r"(?P<what>.{10,})"
_REST = r"\s+.{5,})"  # what follows a preference's marker, closing the group `what`
# "never had", "always been": a story, not a rule
_NARRATED = r"(?!\s+(?:been|had|was|were|did|seen|heard))"
# (kind, name, pattern): the statement is the group `what`, or the whole sentence
_TABLE: list[tuple[SignalKind, str, str]] = [
    # corrections first: "no, always use uv" is the user correcting the agent
    ("correction", "no", r"^(?:no|nope|non)\s*[,.!:;]\s*(?P<what>.{10,})"),
    ("correction", "told-you", r"\bi (?:already )?(?:said|told you)(?: that| to)?\s*,?\s*(?P<what>.{10,})"),
    ("correction", "stop", r"^(?:stop|please stop)\b[,.!:]?\s*(?P<what>.{10,})"),
    ("correction", "dont-again", r"\bdon'?t (?:do that|do this) again\b.{0,}"),
    ("correction", "je-t-ai-dit", r"\bje (?:te l'ai|t'ai) " + _ALREADY + r"dit\s*" + _THAT + _WHAT_10),
    ("correction", "arrete", r"^(?:arr[eê]te|arr[eê]tez)\b[,.!:]?\s*(?P<what>.{10,})"),
    ("correction", "j-ai-dit", r"\bj'ai " + _ALREADY + r"dit\s*" + _THAT + _WHAT_10),
    ("correction", "not-what-i-asked", r"\bthat'?s not what i (?:asked|said|meant)\b"),
    ("correction", "pas-ce-que-j-ai-demande", r"\bce n'est pas ce que j'ai demandé\b"),
    # preferences, English
    ("preference", "always", r"\b(?P<what>(?:(?:you|we) should |please )?always\b" + _NARRATED + _REST),
    ("preference", "never", r"\b(?P<what>(?:never|don'?t ever|do not ever)\b" + _NARRATED + _REST),
    ("preference", "avoid", r"^(?:please )?(?P<what>avoid\s+.{5,})"),
    ("preference", "i-prefer", r"\bi(?:'d| would)? prefer\s+(?P<what>.{5,})"),
    ("preference", "rather", r"\bi'?d rather\s+(?P<what>.{5,})"),
    ("preference", "from-now-on", r"\bfrom now on,?\s+(?P<what>.{5,})"),
    ("preference", "make-sure", r"\b(?:make sure to|make sure you)\s+(?P<what>.{5,})"),
    # preferences, French
    ("preference", "toujours", r"\b(?P<what>(?:il faut |on doit )?toujours\b(?! pas)\s+.{5,})"),
    ("preference", "jamais", r"\b(?P<what>(?:il ne faut |on ne doit |ne )?jamais\s+.{5,})"),
    ("preference", "evite", r"^(?P<what>[ée]vite[rz]?\s+.{5,})"),
    ("preference", "je-prefere", r"\bje pr[ée]f[èée]re(?:rais)?\s+(?P<what>.{5,})"),
    ("preference", "desormais", r"\b(?:d[ée]sormais|dor[ée]navant),?\s+(?P<what>.{5,})"),
    ("preference", "a-partir-de-maintenant", r"\bà partir de maintenant,?\s+(?P<what>.{5,})"),
    # principles, named in a sentence that follows or asks for them
    *(("principle", name, rf"\b(?P<what>{pattern})\b") for name, pattern in _PRINCIPLES.items()),
]  # fmt: skip
PATTERNS: list[tuple[SignalKind, str, re.Pattern[str]]] = [
    (kind, name, re.compile(pattern, re.IGNORECASE)) for kind, name, pattern in _TABLE
]

_CODE = re.compile(r"```[\s\S]*?(?:```|$)|`[^`\n]*`")
# a sentence ends at . ! or ? before a space or the end ("fly.io" and "v1.2" do not end one)
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?=[^\s.!?]))+[.!?]*")
# "I never had this", "no idea", "non plus": a story or an idiom, not a signal
_NOT_A_SIGNAL = re.compile(
    r"^(?:no (?:idea|worries|problem|need)|non plus|non seulement)\b|\bi never (?:had|saw|knew|thought)\b",
    re.IGNORECASE,
)
_NEUTRAL = re.compile(
    r"^(?:(?:i think|i guess|i believe|i feel like|in my opinion|honestly|je pense que?|je crois que?|"
    r"à mon avis|please|s'il te pla[iî]t|svp|ok(?:ay)?|alors|bon)[, ]+)*"
    r"(?:(?:you|we) should (?:always )?|(?:il faut|on doit) (?:toujours )?|always |toujours |"
    r"i prefer |je pr[ée]f[èée]re )?",
    re.IGNORECASE,
)


def normalize(text: str) -> str:
    """`text` as signals are grouped: lower case, spaces collapsed, one neutral prefix and
    trailing punctuation stripped, negations kept."""
    said = " ".join(text.lower().split()).strip(" .!?;:,")
    return _NEUTRAL.sub("", said, count=1).strip(" .!?;:,")[:_MAX_TEXT]


def sentences(prompt: str) -> list[str]:
    """The user's own sentences in `prompt`: no wrappers, no code."""
    if is_noise(prompt):
        return []
    text = _CODE.sub(" ", clean(prompt))
    return [s.group().strip() for s in _SENTENCE.finditer(text) if s.group().strip()]


def signals(prompt: str) -> list[Signal]:
    """Every signal in one prompt, a sentence at most one."""
    found = []
    for sentence in sentences(prompt):
        if _NOT_A_SIGNAL.search(sentence):
            continue
        for kind, name, pattern in PATTERNS:
            if match := pattern.search(sentence):
                what = match.groupdict().get("what") or sentence
                text = normalize(what if kind != "principle" else name)
                if len(text) >= 3:
                    found.append(Signal(kind, text, sentence[:_MAX_TEXT], name))
                break
    return found


def session_signals(prompts: Iterable[tuple[str, str]]) -> list[tuple[str, Signal]]:
    """The signals of a whole session (its prompts in order, each with its event's id): each
    normalized signal once, with the event that said it first, at most MAX_PER_SESSION."""
    kept: dict[str, tuple[str, Signal]] = {}
    for event_id, prompt in prompts:
        for signal in signals(prompt):
            if len(kept) >= MAX_PER_SESSION:
                return list(kept.values())
            kept.setdefault(signal.text, (event_id, signal))
    return list(kept.values())


def weight(kind: str) -> float:
    """What a signal of this kind weighs in ACT-R: a correction carries emotion."""
    return EMOTIONAL_WEIGHT if kind == "correction" else 1.0


_NEGATIVE_FR = (
    "encore", "toujours pas", "j'ai dit", "je t'ai dit", "relis", "non", "stop", "arrête", "mauvais",
    "nul", "pire", "horrible", "n'importe quoi", "rien ne marche", "ça marche pas",
)  # fmt: skip
_NEGATIVE_EN = (
    "wrong", "broken", "terrible", "useless", "doesn't work", "still not", "i said", "again", "stop",
)  # fmt: skip
# what is not the user's tone: paths, identifiers in capitals or camelCase, markup
_NOT_TONE = re.compile(
    r"(?:/|\./|\.\./)\S+|\b[A-Z][A-Z0-9_]{2,}\b(?=[^!?]*$)|\b[a-z][a-z0-9]*[A-Z]\w*\b|</?[A-Za-z][\w:-]*[^>]*>"
)


def sentiment(prompt: str) -> float:
    """How frustrated `prompt` sounds, 1 (calm) to 5 (see the module's docstring)."""
    text = " ".join(_NOT_TONE.sub(" ", " ".join(sentences(prompt))).split())
    lower = text.lower()
    french = min(sum(1 for w in _NEGATIVE_FR if _said(w, lower)), 3)
    english = min(sum(1 for w in _NEGATIVE_EN if _said(w, lower)), 2)
    score = french + english
    if re.search(r"[!?]{3,}", text):
        score += 1
    letters = [c for c in text if c.isalpha()]
    if len(text) > 20 and letters and sum(c.isupper() for c in letters) / len(letters) > 0.3:
        score += 1
    if len(text) < 30 and french + english:
        score += 1
    return float(max(1, min(5, score)))


def _said(word: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text) is not None


def rising(scores: Sequence[float]) -> bool:
    """HORA's trend: the last three prompts' frustration rises, to 3.5 or more."""
    if len(scores) < 3:
        return False
    a, b, c = scores[-3:]
    return a <= b <= c and a < c and c >= 3.5
