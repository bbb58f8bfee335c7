"""What a prompt signals of the user, after HORA's signal tracker: explicit preferences
("always", "never", "I prefer", "toujours", "jamais", "je préfère"), principles (SSOT, DRY,
KISS, YAGNI, library-first, TDD, SOLID...) and corrections ("no, ...", "I told you", "stop
...", "non, ...", "je t'ai dit", "arrête"), in English and French; and how frustrated it sounds.

Only the user's own words count: Claude Code's wrappers, fenced, indented and inline code (as CommonMark
reads them: schemas/text/markdown.py) are left
out, and a sentence gives at most one signal, the first of `PATTERNS` it matches (corrections,
then preferences, then principles). Precision over volume: "always" and "never" count where an
instruction starts ("Always use uv", "so never mock it", "you should never..."), not in a story
("it always fails", "I never had this", "never worked"); a question states no preference.

A signal's text is normalized so that wordings of one preference group together: lower case,
spaces collapsed, neutral prefixes stripped ("I think", "please", "you should", "il faut", "je
pense que", "always", "I prefer"...), negations kept and spelled one way ("don't ever" is
"never", "il ne faut jamais" is "jamais"). A principle's text is its name ("ssot"). A session
keeps each text once (the prompt that said it first) and at most MAX_PER_SESSION.

Frustration is HORA's lexical score, 1 (calm) to 5: a point for each French negative word (up
to 3) and English one (up to 2), one for a run of 3+ "!" or "?", one for capitals over 30% of
the letters of a message longer than 20 characters, one for a negative message shorter than 30;
code, paths, tags and identifiers are not the user's tone. `rising` is HORA's trend: the last
three prompts never fall and end at 3.5 or more.

Pure; the patterns are compiled once at import, and each sentence (at most _MAX_SENTENCE
characters) is searched once per pattern.
"""

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Literal

import msgspec

from schemas.text.harness import clean, is_noise
from schemas.text.markdown import prose

SignalKind = Literal["preference", "principle", "correction"]
MAX_PER_SESSION = 10
_MAX_TEXT = 200
_MAX_SENTENCE = 500  # longer is a pasted log or a paragraph, not a statement


class Signal(msgspec.Struct, frozen=True):
    kind: SignalKind
    text: str  # normalized
    said: str  # the sentence as the user wrote it (cleaned)
    pattern: str  # the name of the pattern that found it


# Where an instruction starts: the sentence's start, after a comma or a colon, after a joining
# word, or after an opinion ("I think", "je pense que").
_LEAD = (
    r"(?:^|[,;:(—]\s*|\b(?:and|but|so|also|then|please|pls|et|mais|donc|aussi|alors|puis|stp|svp)\s+"
    r"|\b(?:i think|i guess|i believe|honestly|je pense|je crois)(?:,?\s+that\s+|\s+que\s+|\s+qu'|,?\s+))"
)
# "never had", "always been", "never worked", "always fails", "always the same": a story, not an
# instruction
_STORY = (
    r"(?!\s+(?:been|had|was|were|did|seen|heard|got|knew|thought|saw|mind|the|a|an|like|so|too)\b)"
    r"(?!\s+\w+(?<![su])s\b)(?!\s+\w+(?<!e)ed\b)"
)
_DIT = r"(?!\s+(?:pas|été|eu|vu|fait|su|pu|dit)\b)"  # "toujours pas", "jamais vu": a story
_MODAL = (
    r"(?:(?:you|we) (?:should|must|need to|have to|ought to)|i want you to|make sure (?:to|you)|remember to)"
)
_DEVOIR = r"(?:on doit|tu dois|vous devez|nous devons)"
_NE_DEVOIR = r"(?:on ne doit|tu ne dois|vous ne devez|nous ne devons)"
# a French imperative opening the sentence ("utilise", "mets", "lancez"), not a pronoun
_IMPERATIVE = (
    r"^(?!(?:je|tu|il|elle|on|nous|vous|ils|elles|ça|ca|cela|ceci|ce|le|la|les|un|une|des|ces|cette)\b)"
    r"\w{3,}(?:e|es|ez|s)"
)
_ALREADY = r"(?:d[ée]j[àa] )?"
_CONTENT = r"(?P<what>.{10,})"
_PUNCT = r"\s*[,.!:;—]+\s*"
_PRINCIPLES = {
    "ssot": r"ssot|single source of truth|source unique de v[ée]rit[ée]",
    # in capitals only: "a dry run", "a solid plan" and "kiss" are not principles
    "dry": r"(?-i:DRY)|don'?t repeat yourself|keep (?:it|the code|things) dry",
    "kiss": r"(?-i:KISS)|keep it simple",
    "yagni": r"yagni|you (?:aren'?t|ain'?t) (?:gonna|going to) need it",
    "solid": r"(?-i:SOLID)|solid principles?|principes? solid",
    "library-first": r"librar(?:y|ies)[- ]first",
    "tdd": r"tdd|test[- ]driven|test-first|write (?:the |a |your )?tests? first|tests? d'abord"
    r"|d[ée]veloppement pilot[ée] par les tests",
    "type-safe": r"type[- ]safe(?:ty)?|typage strict",
    "single-responsibility": r"single[- ]responsibility|responsabilit[ée] unique",
    "separation-of-concerns": r"separation of concerns"
    r"|s[ée]paration des (?:responsabilit[ée]s|pr[ée]occupations)",
    "convention-over-configuration": r"convention over configuration",
    "composition-over-inheritance": r"composition over inheritance"
    r"|composition plut[ôo]t qu'(?:l')?h[ée]ritage",
    "immutability": r"immutability|immutable data|immuabilit[ée]|immutabilit[ée]",
    "pure-functions": r"pure functions?|fonctions? pures?",
    "fail-fast": r"fail[- ]fast",
    "least-privilege": r"least privilege|moindre privil[eè]ge",
}
# (kind, name, pattern): the statement is the group `what`, or the whole sentence
_TABLE: list[tuple[SignalKind, str, str]] = [
    # corrections first: "no, always use uv" is the user correcting the agent
    ("correction", "no", r"^(?:(?:no+|nope|nah)" + _PUNCT + ")+" + _CONTENT),
    ("correction", "told-you",
     r"\bi (?:already |just )?(?:told you|asked you)\b(?: that\b| to\b)?[,:]?\s*" + _CONTENT),
    ("correction", "i-said", r"\bi (?:already |just )?said(?: that\b| to\b|\s*[,:])\s*" + _CONTENT),
    ("correction", "stop", r"^(?:please |ok |okay )?stop" + _PUNCT + _CONTENT),
    ("correction", "stop-doing", _LEAD + r"(?P<what>stop (?!(?:some|any|every|no)thing\b)\w{2,}ing\b.{3,})"),
    ("correction", "not-again", r"\b(?:don'?t|do not) (?:ever )?do (?:that|this|it) again\b"),
    ("correction", "not-what-i-asked",
     r"\b(?:that'?s|this is|it'?s) not what i (?:asked|said|meant|wanted)\b"),
    ("correction", "how-many-times", r"\bhow many times (?:do i have to|must i|have i)\b"),
    ("correction", "non",
     r"^non(?:" + _PUNCT + r"|\s+(?=(?:pas|il|on|tu|c'est|ce|ça|utilise|garde|je)\b))" + _CONTENT),
    ("correction", "je-t-ai-dit",
     r"\bje (?:te l'ai|t'ai|vous ai) " + _ALREADY + r"dit\b[,:]?\s*(?:de |d'|que |qu')?" + _CONTENT),
    ("correction", "j-ai-dit", r"\bj'ai " + _ALREADY + r"dit\s*(?:[,:]\s*|de |d'|que |qu')" + _CONTENT),
    ("correction", "arrete", r"^arr[eê]te[sz]?" + _PUNCT + _CONTENT),
    ("correction", "arrete-de", _LEAD + r"(?P<what>arr[eê]te[sz]? (?:de |d')\s*.{5,})"),
    ("correction", "pas-ce-que-j-ai-demande",
     r"\b(?:ce n'est|c'est) pas ce que (?:j'ai|je t'ai|je vous ai) demand"),
    ("correction", "combien-de-fois", r"\bcombien de fois (?:je dois|dois-je|faut-il|je t'ai)\b"),
    # preferences, English
    ("preference", "always", _LEAD + r"(?P<what>always\b" + _STORY + r"\s+.{5,})"),
    ("preference", "should-always", r"\b(?P<what>" + _MODAL + r" always\b\s+.{5,})"),
    ("preference", "never", _LEAD + r"(?P<what>never\b" + _STORY + r"\s+.{5,})"),
    ("preference", "should-never", r"\b(?P<what>" + _MODAL + r" never\b\s+.{5,})"),
    ("preference", "dont-ever", _LEAD + r"(?P<what>(?:don'?t|do not) ever\s+.{5,})"),
    ("preference", "avoid", _LEAD + r"(?P<what>avoid\s+.{5,})"),
    ("preference", "i-prefer", r"\b(?P<what>i(?:'d| would)? (?:really |much |strongly )?prefer\s+.{2,})"),
    ("preference", "prefer-over",
     _LEAD + r"(?P<what>prefer\s+.{2,}\s+(?:over|to|instead of|rather than)\s+.{2,})"),
    ("preference", "rather", r"\b(?P<what>i(?:'d| would) rather\s+.{3,})"),
    ("preference", "from-now-on", r"\b(?:from now on|going forward|henceforth)\b,?\s+(?P<what>.{5,})"),
    # preferences, French
    ("preference", "toujours", _LEAD + r"(?P<what>toujours\b" + _DIT + r"\s+.{5,})"),
    ("preference", "il-faut-toujours", r"\b(?P<what>(?:il )?faut toujours\s+.{5,})"),
    ("preference", "on-doit-toujours", r"\b(?P<what>" + _DEVOIR + r" toujours\s+.{5,})"),
    ("preference", "imperatif-toujours", r"(?P<what>" + _IMPERATIVE + r"\s+toujours\s+.{3,})"),
    ("preference", "jamais", _LEAD + r"(?P<what>(?:ne |n')?jamais\b" + _DIT + r"\s+.{5,})"),
    ("preference", "il-ne-faut-jamais", r"\b(?P<what>(?:il )?ne faut jamais\s+.{5,})"),
    ("preference", "on-ne-doit-jamais", r"\b(?P<what>" + _NE_DEVOIR + r" jamais\s+.{5,})"),
    ("preference", "imperatif-jamais",
     _LEAD + r"(?P<what>(?:ne |n')(?!(?:est|était|a|ai|as|avait|ont|sont)\b)\w+ jamais\s+.{3,})"),
    ("preference", "evite", _LEAD + r"(?P<what>[ée]vite[sz]?\s+.{5,})"),
    ("preference", "je-prefere", r"\b(?P<what>je pr[ée]f[èée]re(?:rais)?\s+.{2,})"),
    ("preference", "privilegie", _LEAD + r"(?P<what>privil[ée]gie[sz]?\s+.{2,})"),
    ("preference", "desormais",
     r"\b(?:d[ée]sormais|dor[ée]navant|[àa] partir de maintenant)\b,?\s+(?P<what>.{5,})"),
    # principles, named in a sentence that follows or asks for them
    *(("principle", name, rf"\b(?:{pattern})\b") for name, pattern in _PRINCIPLES.items()),
]  # fmt: skip
PATTERNS: list[tuple[SignalKind, str, re.Pattern[str]]] = [
    (kind, name, re.compile(pattern, re.IGNORECASE)) for kind, name, pattern in _TABLE
]

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})  # typographic apostrophes
# a sentence ends at . ! or ? before a space or the end ("fly.io" and "v1.2" do not end one)
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?=[^\s.!?]))+[.!?]*")
_BULLETS = " \t-+>#•"  # a list's or a quote's marks before a sentence
# "Stop." or "No!" alone: what corrects is the sentence that follows
_BARE = re.compile(r"(?:(?:no+|nope|non|stop|arr[eê]te[sz]?)\s*[,.!]+\s*)+", re.IGNORECASE)
_IDIOM = re.compile(
    r"^(?:no|non|nope)\s*[,.!]?\s*(?:thanks|thank you|merci|worries|problem|prob|idea|need|rush|doubt|way"
    r"|plus|seulement|pas de (?:souci|probl[eè]me))\b",
    re.IGNORECASE,
)
# "In tests, never mock the database": the scope belongs to the preference
_SCOPE = re.compile(
    r"(?:in|for|when|if|on|with|during|inside|within|dans|pour|quand|si|avec|lors d[eu']|en|sur)\b"
    r"[^,;]{1,80},",
    re.IGNORECASE,
)


def signals(prompt: str) -> list[Signal]:
    """Every signal in one prompt, a sentence at most one."""
    found = []
    for masked, plain in _sentences(prompt):
        if _IDIOM.match(masked):
            continue
        question = masked.endswith("?")
        for kind, name, pattern in PATTERNS:
            if question and kind != "correction":
                continue
            if (match := pattern.search(masked)) and (text := _text(kind, name, match, plain)):
                found.append(Signal(kind, text, plain[:_MAX_TEXT].rstrip(), name))
                break
    return found


def _text(kind: SignalKind, name: str, match: re.Match[str], plain: str) -> str:
    if kind == "principle":
        return name
    start = match.start("what") if "what" in match.re.groupindex else 0
    scoped = _SCOPE.fullmatch(plain[:start].strip()) is not None
    return normalize((plain if scoped else plain[start:]).replace("`", ""))


def _sentences(prompt: str) -> Iterator[tuple[str, str]]:
    """The user's own sentences in `prompt`, each twice: with inline code masked (what patterns
    search) and as written (what a signal says); both are the same length."""
    if is_noise(prompt):
        return
    masked, plain = prose(clean(prompt).translate(_QUOTES))
    carried = ("", "")
    for found in _SENTENCE.finditer(masked):
        sentence = found.group()
        start = found.start() + len(sentence) - len(sentence.lstrip(_BULLETS))
        end = found.start() + len(sentence.rstrip())
        if end - start > _MAX_SENTENCE:
            carried = ("", "")
        elif _BARE.fullmatch(masked, start, end):
            carried = (carried[0] + masked[start:end] + " ", carried[1] + plain[start:end] + " ")
        elif start < end:
            yield carried[0] + masked[start:end], carried[1] + plain[start:end]
            carried = ("", "")


_NEUTRAL = re.compile(
    r"^(?:i think(?: that)?|i guess|i believe(?: that)?|i feel like|in my opinion|imo|honestly"
    r"|je pense qu(?:e|')|je crois qu(?:e|')|à mon avis|franchement"
    r"|please|pls|s'il (?:te|vous) pla[iî]t|stp|svp|ok(?:ay)?|so|and|also|alors|bon|et|aussi|donc"
    r"|" + _MODAL + r"|il faut|faut|" + _DEVOIR + r"|always|toujours"
    r"|i(?:'d| would)? (?:really |much |strongly )?prefer(?: that| if)?|i(?:'d| would) rather"
    r"|je pr[ée]f[èée]re(?:rais)?)(?:[\s,:;]+|(?<=')|$)"
)
# a negation stays, spelled one way
_NEGATIONS = (
    (re.compile(r"^(?:don't|do not) ever\b"), "never"),
    (re.compile(r"^(?:(?:il )?ne faut|" + _NE_DEVOIR + r"|ne) jamais\b"), "jamais"),
)


def normalize(text: str) -> str:
    """`text` as signals are grouped: lower case, spaces collapsed, neutral prefixes and trailing
    punctuation stripped, negations kept (one spelling each); at most _MAX_TEXT characters."""
    said = " ".join(text.translate(_QUOTES).lower().split()).strip(" .!?;:,")
    while True:
        shorter = _NEUTRAL.sub("", said, count=1)
        for negation, spelled in _NEGATIONS:
            shorter = negation.sub(spelled, shorter, count=1)
        if shorter == said:
            return said[:_MAX_TEXT].rstrip(" .!?;:,")
        said = shorter.strip(" .!?;:,")


def session_signals(prompts: Iterable[tuple[str, str]]) -> list[tuple[str, Signal]]:
    """The signals of a whole session (its prompts in order, each with its event's id): each
    normalized text once, with the event that said it first, at most MAX_PER_SESSION."""
    kept: dict[str, tuple[str, Signal]] = {}
    for event_id, prompt in prompts:
        for signal in signals(prompt):
            if signal.text in kept:
                continue
            if len(kept) == MAX_PER_SESSION:
                return list(kept.values())
            kept[signal.text] = (event_id, signal)
    return list(kept.values())


def _words(*words: str) -> list[re.Pattern[str]]:
    return [re.compile(rf"(?<!\w){word}(?!\w)") for word in words]


# HORA's lists; a word counts whole ("again" is not in "against", "non" not in "none")
_NEGATIVE_FR = _words(
    "encore", "toujours pas", "j'ai dit", "je t'ai dit", "relis", "non", "stop", "arr[eê]te", "mauvais",
    "nul", "pire", "horrible", "n'importe quoi", "rien ne marche", "[çc]a marche pas",
)  # fmt: skip
_NEGATIVE_EN = _words(
    "wrong", "broken", "terrible", "useless", "doesn't work", "still not", "i said", "again", "stop"
)
# what is not the user's tone: paths, tags, camelCase and snake or numbered identifiers
_NOT_TONE = re.compile(
    r"(?:/|\./|\.\./)\S+|</?[A-Za-z][\w:-]*(?:\s[^>]*)?/?>|\b[a-z][a-z0-9]*[A-Z]\w*\b"
    r"|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9_]*|\d[A-Z0-9_]*)\b"
)
_ACRONYM = re.compile(r"\b[A-Z]{2,}\b")
_LETTERS = re.compile(r"[^\W\d_]+")


def sentiment(prompt: str) -> float:
    """How frustrated `prompt` sounds, 1 (calm) to 5 (see the module's docstring)."""
    text = _tone(prompt)
    lower = text.lower()
    french = min(sum(1 for word in _NEGATIVE_FR if word.search(lower)), 3)
    english = min(sum(1 for word in _NEGATIVE_EN if word.search(lower)), 2)
    score = french + english
    if re.search(r"[!?]{3,}", text):
        score += 1
    if len(text) > 20 and _shouted(text):
        score += 1
    if len(text) < 30 and french + english:
        score += 1
    return float(max(1, min(5, score)))


def _tone(prompt: str) -> str:
    """The prompt's own words, without code, paths, tags or identifiers; acronyms in a sentence
    in lower case ("add a JSON API") are names, not a raised voice."""
    if is_noise(prompt):
        return ""
    text = prose(clean(prompt)).words.translate(_QUOTES)
    text = _NOT_TONE.sub(" ", text)
    words = _LETTERS.findall(text)
    if 2 * sum(1 for word in words if len(word) > 1 and word.isupper()) < len(words):
        text = _ACRONYM.sub(" ", text)
    return " ".join(text.split())


def _shouted(text: str) -> bool:
    letters = [c for c in text if c.isalpha()]
    return bool(letters) and sum(c.isupper() for c in letters) / len(letters) > 0.3


def rising(scores: Sequence[float]) -> bool:
    """HORA's trend rule: the last three prompts' frustration never falls (each at least the one
    before, as HORA compares) and the last is 3.5 or more."""
    if len(scores) < 3:
        return False
    first, second, last = scores[-3:]
    return first <= second <= last and last >= 3.5
