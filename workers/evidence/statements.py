"""What the user states in a prompt that should outlive the session: decisions ("let's use X",
"switch from X to Y", "we no longer use X"), rules and preferences ("always", "never", "I
prefer", "from now on", corrections like "no, use X"), and what they ask to be remembered; in
English and French.

Only the user's own words count: Claude Code's wrappers, escapes and code blocks are left out,
and a sentence is taken whole or not at all. Precision over volume: a sentence must open with
one of these forms (or follow "no,"), not merely contain a keyword.
"""

import re
from collections.abc import Iterator
from typing import Literal

import msgspec

from schemas.text.harness import clean, is_noise

StatementKind = Literal["decision", "rule", "remember"]

_CODE = re.compile(r"```[\s\S]*?(?:```|$)|`[^`\n]*`")
# a sentence ends at . ! or ? before a space or the end ("fly.io" and "v1.2" do not end one)
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?=[^\s.!?]))+[.!?]*")
_LEAD = (
    r"^\s*(?:(?:no|non|nope)\s*[,:!.]\s*|(?:ok(?:ay)?|so|alors|bon)\s*[,:]\s*|please\s+"
    r"|s'il te pla[iî]t\s*,?\s*)?"
)
# "never had", "always been": a story, not a rule
_NARRATED = r"(?:had|has|have|was|were|been|did|got|felt|thought|knew|saw|seen)\b"
_FORMS: list[tuple[StatementKind, re.Pattern[str]]] = [
    (
        "remember",
        re.compile(
            _LEAD + r"(?:remember|note|keep in mind|don't forget|souviens[- ]toi|retiens|n'oublie pas)"
            r"(?: that| que| qu'|\s*:)\s*(?P<what>.{8,})",
            re.IGNORECASE,
        ),
    ),
    (
        "decision",
        re.compile(
            _LEAD + r"(?P<what>(?:let'?s|we(?:'ll| will| should)?|on va|on)\s+"
            r"(?:use|go with|switch|migrate|stick with|utilise|passe à)\b.{3,}"
            r"|(?:we )?(?:chose|picked|decided (?:on|to))\s.{3,}|switch(?:ing)? (?:from|to)\s.{3,}"
            r"|we no longer use\s.{2,}|(?:use|prends) .{2,} (?:instead of|over|plutôt que|au lieu de) .{2,})",
            re.IGNORECASE,
        ),
    ),
    (
        "rule",
        re.compile(
            _LEAD + r"(?P<what>(?:(?:always|never)(?!\s+" + _NARRATED + r")|don't ever|do not ever"
            r"|from now on"
            r"|i prefer|i'd rather|i want you to always|toujours|jamais|désormais|dorénavant"
            r"|à partir de maintenant|je préfère|ne (?:jamais|plus))\b.{6,})",
            re.IGNORECASE,
        ),
    ),
]
_MAX = 300  # a statement longer than this is a paragraph, not a rule
# A rule or a decision is about the work: it names a tool, a file, a flag or a version, or asks
# for something done to code ("never give up", "always here to help" are not).
_ABOUT_WORK = re.compile(
    r"[`/\\_]|\w\.\w|\d|(?:^|\s)-{1,2}\w|\b(?:run|use|using|write|add|commit|push|pull|test|format|lint|"
    r"build|deploy|install|import|export|name|answer|reply|respond|ask|check|document|comment|log|type|"
    r"migrate|switch|refactor|rename|delete|remove|create|merge|rebase|review|mock|cache|handle|validate|"
    r"code|file|branch|function|class|method|tests?|api|server|database|query|package|library|"
    r"utilise|écris|ajoute|lance|teste|réponds|nomme|supprime|fichier|fonction)(?:s|es|ed|ing)?\b",
    re.IGNORECASE,
)


class Statement(msgspec.Struct, frozen=True):
    said: StatementKind
    text: str


def statements(prompt: str) -> Iterator[Statement]:
    """The decisions, rules and things to remember `prompt` states, a sentence each."""
    if is_noise(prompt):
        return
    text = _CODE.sub(" ", clean(prompt))
    for sentence in (s.group().strip() for s in _SENTENCE.finditer(text)):
        if len(sentence) > _MAX:
            continue
        for said, form in _FORMS:
            if found := form.match(sentence):
                what = found.group("what").strip().rstrip(".!")
                if said == "remember" or _ABOUT_WORK.search(what):
                    yield Statement(said, what[0].upper() + what[1:])
                break
