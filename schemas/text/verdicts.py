"""What the user's words say of the agent's work: thanks or approval ("thanks", "great, that
works", "perfect", "merci", "ça marche"), or that it does not work ("it still fails", "that
didn't fix it", "same error", "ça ne marche toujours pas"); in English and French, with a few
words of German and Spanish. Deterministic, standard library only.

Only the user's own words count: Claude Code's wrappers and markers, and code blocks (pasted
output) are left out. A complaint, like a statement (workers/evidence/statements.py), must open
a sentence (after "no,", "hmm", "but"...), not merely hold its words: "scrolling in xterm.js
still does not work" raises a problem of its own, where "still not working" answers the agent.
An approval opens a sentence too, and is no question and has no "but" ("it works locally but
not in CI"); thanks may stand anywhere ("ok that works, thanks!"), but not "no thanks", "thanks
in advance" or "merci de ...", which ask. A complaint anywhere in a prompt (a clause after "but"
too) outweighs its thanks ("thanks, but it still fails").
"""

import re
from typing import Literal

from schemas.text.harness import clean, is_noise

Verdict = Literal["approved", "complained"]

_CODE = re.compile(r"```[\s\S]*?(?:```|$)|`[^`\n]*`")
# a sentence ends at . ! or ? before a space or the end ("fly.io" and "v1.2" do not end one)
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?=[^\s.!?]))+[.!?]*")
_SENTENCE_MAX = 300  # longer, it is a paragraph or pasted output, not an answer
# where a sentence turns: what follows "but" opens a clause of its own ("thanks, but it still fails")
_TURN = re.compile(r",?\s+(?:but|mais|though|however|aber|pero)\s+", re.IGNORECASE)
# what may come before the verdict: "ok,", "hmm", "no,", "but", "oh wow", "bon,"
_LEAD = (
    r"^\s*(?:(?:ok(?:ay)?|hmm+|hm+|well|so|but|and|yes|yeah|yep|oh|wow|no+|nope|nah|non|sorry"
    r"|unfortunately|now|alors|bon|mais|euh|ah|oui|ja|sí)\b\s*[,:;!.…-]*\s*)*"
)
# a word of approval, alone or before what it approves ("great, now ...", "perfect!"), never
# the start of something else ("super slow", "top of the file")
_WORD = (
    r"(?:perfect|great|awesome|excellent|brilliant|amazing|fantastic|wonderful|nice|cool|sweet|lgtm"
    r"|parfait|génial|impeccable|nickel|bravo|super|top|perfekt|prima|perfecto|genial)"
)
_THEN = r"(?=\s*(?:[,.!;:)…]|$|\s(?:thanks?|thank you|merci|now|work|job|one|ça|that|this|it)\b))"
_APPROVAL = re.compile(
    _LEAD
    + r"(?:"
    + _WORD
    + _THEN
    + r"|(?:good|great|nice) (?:job|work)|well done|looks (?:good|great|right)|all good"
    r"|(?:it|that|this|everything|all)(?:'s| is) (?:fixed|solved|working|good|perfect|great|right)"
    r"|(?:it|that|this|everything|now it)(?: now)? "
    r"(?:works|worked|is working|did it|did the trick|fixed it|solved it)"
    r"|works(?: now| great| perfectly| fine)?(?=\s*(?:[,.!;:)]|$))|working now"
    r"|(?:ça|ca|c'est|cela) (?:marche|fonctionne|bon|parfait|nickel|réglé|résolu)"
    r"|(?:es )?(?:klappt|funktioniert)(?! nicht)|(?:ya )?funciona)",
    re.IGNORECASE,
)
_THANKS = re.compile(
    r"(?<!\bno )(?<!\bno, )\b(?:thanks|thank you|thank u|thx|tysm|many thanks|much appreciated|merci|danke"
    r"|gracias|grazie)\b(?!\s+(?:to|for nothing|in advance|de|d')\b)",
    re.IGNORECASE,
)
_SUBJECT = r"(?:(?:it|this|that|the (?:tests?|build|app|page|server|fix|error|ci|script)|tests?|build|ci)\s+)"
_COMPLAINT = re.compile(
    _LEAD
    + r"(?:"
    + _SUBJECT
    + r"?(?:still\s+)?(?:(?:does|did|is|was|are)(?:n'?t| not)|won'?t|can'?t|cannot)\s+(?:seem to\s+)?"
    r"(?:work|fix|help|compile|build|run|start|load|pass|solve|change anything)"
    r"|" + _SUBJECT + r"(?:still\s+)?(?:fails?|failing|failed|breaks|broke|crash(?:es|ed)?|errors)\b"
    r"|(?:it|this|that)(?:'s| is) (?:still )?(?:broken|failing|wrong|not working|not fixed|the same)"
    r"|still (?:broken|failing|fails|failed|not working|not fixed|wrong|the same|getting|seeing|red"
    r"|happening|there|erroring|crashing)"
    r"|(?:the )?same (?:error|issue|problem|failure)"
    r"|not (?:working|fixed|solved)"
    r"|(?:that|this|it)(?:'s| is) not (?:right|it|what i (?:asked|wanted))"
    r"|(?:that'?s|this is) wrong|you broke"
    r"|(?:ça|ca|cela|c'est) (?:ne )?(?:marche|fonctionne) (?:toujours |plus |)pas"
    r"|(?:ça|ca) (?:plante|crashe)|toujours (?:pas|la même erreur|le même problème|cassé|en échec)"
    r"|(?:c'est )?(?:toujours )?cassé|(?:ne )?(?:marche|fonctionne) (?:toujours )?pas"
    r"|(?:es )?(?:funktioniert|geht|klappt) (?:immer noch |noch )?nicht"
    r"|no funciona|sigue sin funcionar|sigue fallando)\b",
    re.IGNORECASE,
)


def verdict(prompt: str) -> Verdict | None:
    """What `prompt` says of the agent's work (see the module's docstring): None when it says
    nothing of it."""
    if is_noise(prompt):
        return None
    text = _CODE.sub(" ", clean(prompt))
    sentences = [s.group().strip() for s in _SENTENCE.finditer(text)]
    sentences = [s for s in sentences if s and len(s) <= _SENTENCE_MAX]
    if any(_COMPLAINT.match(clause) for s in sentences for clause in _TURN.split(s)):
        return "complained"
    approved = any(_APPROVAL.match(s) and not s.endswith("?") and " but " not in s for s in sentences)
    if approved or any(_THANKS.search(s) for s in sentences):
        return "approved"
    return None
