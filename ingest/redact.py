# ruff: noqa: RUF001  (prose writes typographic quotes, apostrophes and dashes: the patterns name them)
"""Secrets never leave the machine's hook: API keys, tokens, private keys, passwords.

`redact` walks a decoded JSON value and rewrites every string that holds a secret, keys
included, and every value stored under a key whose name says it is a secret. A redacted
secret becomes `[REDACTED:<what>]`, so a reader can tell a secret was there and of what kind.

Where the patterns come from:
- token formats (a provider's prefix and shape: `ghp_` and 36 letters, `pypi-AgEIcHlwaS5vcmc...`)
  are gitleaks' rules, generated into `ingest/token_formats.py`, whose docstring names the
  gitleaks commit and how to refresh it (`python -m ingest.token_formats_build`);
- `_OWN` below holds what gitleaks lacks or states too narrowly for a redactor: providers'
  prefixes it lacks (`whsec_`, `gsk_`, `dckr_pat_`, `xoxe-`...), passwords in URLs, commands,
  connection strings and assignments (`DB_PASSWORD=`, `SECRET_KEY_BASE=`, `SLACK_TOKEN_V2=`,
  `"apiKey": ...`, never a reference: `$VAR`, `<your key>`, `process.env.KEY`), looser forms of
  the common tokens (a redactor would rather eat a made-up key than miss a real one; gitleaks, a
  scanner, would not); and secrets told by their neighbourhood: an AWS secret key (40 characters
  of base64) beside its access key id or told as an AWS secret, and secrets told in prose.

Secrets told in prose, in English, French, German, Spanish, Italian and Portuguese: a word that
names a secret (password, passphrase, API key, secret, token; mot de passe, clé secrète, jeton;
Passwort, Kennwort, Geheimnis, API-Schlüssel; contraseña, clave; parola d'ordine, chiave; senha,
palavra-passe, chave...), a link (a colon, "is", "est", "ist", "lautet", "es", "è", "é", "c'est",
"set to"...) and a value ("the wifi password is correct horse battery staple", "das Passwort ist
Geheim-4711x"); or the value first ("Xy9-Qq is the admin password", "use X as the password"). The
rule that tells a value from a description:
- what follows the link is a description when it is ordinary prose: a function word (an
  article, a pronoun, a preposition, "not", "too", "see"...: "the password is the same", "... is
  in vault", "... is too short"), a past participle ("stored", "gespeichert", "stocké",
  "guardada", "salvata", and an English phrase ending with one: "... is WPA2 protected"), or an
  adjective ("required", "invalid", "obligatoire", "erforderlich") ending its clause, followed by
  more prose ("is valid for an hour") or by one word ("Password: Invalid format"); or a
  reference (a path, a URL, `$VAR`, a dotted name, `<placeholder>`, a version, a quantity: "the
  token is v1.2.3", "... is 32 bytes");
- anything else told by a word that names nothing but a secret (password, passphrase, Passwort,
  contraseña...) is a value, to the end of its clause: a passphrase is a phrase of words ("correct
  horse battery staple" starts with an adjective followed by more words, so it is a phrase);
- the words that are ordinary words too (secret, token, clave, chiave: "the secret is patience",
  "the first token is 'The'") tell only a value shaped like a secret (letters and digits), as a
  value before its word must be ("password123 is a terrible password" describes one: "a" is no
  "the");
- the word must head its phrase: "the password field is required", "the token budget is 200,000"
  tell nothing; "the password for the db is X" does ("for" starts a complement), and so does "le
  mot de passe wifi est X" (French, Spanish, Italian and Portuguese put the adjective after).
What the rule costs: a one-word password shaped like a participle is kept ("the password is
avocado": -ado), and so is a passphrase starting with an article after "is" ("the passphrase is
the quick brown fox"; after a label it is taken); a description starting with a word the lexicons
do not know, not a participle, is redacted ("the password is monouso" was, until "monouso" was
listed). benchmarks/redaction.py measures both on a labelled set.

Cost: the hook redacts every payload on the agent's time and most strings hold no secret. Each
kind names literals one of which its matches hold (gitleaks' keywords); a string is searched
only for the kinds whose literals its lower-cased form holds, each kind's pattern compiled the
first time it is needed, from ingest/patterns.py's cache without importing `re` when the install
keeps one. Every pattern runs in linear time under `re` (no nested quantifiers:
tests/test_redact.py runs each on 100k characters of its literals); the prose and assignment
patterns run on the lower-cased text, three times faster than (?i), and their words are split
into sets only when first needed. The gitleaks formats cost a hook about 0.3 ms to import and
0.2 ms (median payload) to 3 ms (largest) more to redact.
"""

from __future__ import annotations

from ingest.patterns import compiled
from ingest.token_formats import FORMATS

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import Any

# Every pattern is taken when first needed, from ingest/patterns.py's cache (`re` costs a hook
# 6 ms to import): most strings hold none of the literals a secret holds. The caches below are
# plain dictionaries: functools costs a hook a millisecond.

# Where a token may start: not inside a word ("risk-assessment" holds no key), but right after
# an escape ("\\nsk-...") or a percent-encoded byte ("%3Dsk-..."). It also makes a long run of a
# prefix ("eyJeyJeyJ...") a single candidate, so every pattern stays linear.
_START = r"(?:(?<![A-Za-z0-9_\-])|(?<=\\[nrt])|(?<=%[0-9A-Fa-f]{2}))"
# a value quoted or bare, as shells and config files write it
# (an apostrophe inside a word, as in "can't", neither ends nor starts a quoted one)
_VALUE = r"(?:\"[^\"\n]{4,}\"|'(?:[^'\n]|(?<=\w)'(?=\w)){4,}'(?!\w)|[^\s\"',;}&]{4,})"
_SECRET_FLAGS = r"--(?:password|passwd|token|api-key|secret)"
# a name that says a secret is assigned, in the lower-cased text: ..._PASSWORD, apiKey, SECRET_KEY_BASE,
# SLACK_TOKEN_V2 (the keyword, then up to four more words)
_ASSIGNED = (
    r"(?<![:/])(?P<name>pass(?:word|wd|phrase)|secret[_-]?key|secret|token|(?:api|access|private|auth)[_-]?key"
    r"|key[_-]?base|encryption(?:_[a-z]+)?_key|credentials?|(?<=[a-z0-9])_(?:pass|pwd))"
    r"(?P<inner>(?:_[a-z0-9]+){1,4})?[\"']?\s*[:=]\s*(?P<value>" + _VALUE + ")"
)
# an AWS access key id, as gitleaks knows them
_AWS_KEY_ID_LITERALS = ("a3t", "akia", "asia", "abia", "acca")
_AWS_KEY_ID = r"(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"
_AWS_NEIGHBOURHOOD = 200  # characters either side of a secret where its key id may be
# providers' tokens gitleaks lacks or states too narrowly: (name, prefix, pattern)
_PREFIXED = (
    ("stripe-webhook-secret", "whsec_", r"whsec_[A-Za-z0-9+/=]{24,}"),
    ("groq-api-key", "gsk_", r"gsk_[A-Za-z0-9]{40,}"),
    ("xai-api-key", "xai-", r"xai-[A-Za-z0-9]{40,}"),
    ("replicate-token", "r8_", r"r8_[A-Za-z0-9]{30,}"),
    ("tailscale-key", "tskey-", r"tskey-[a-z]+-[A-Za-z0-9\-]{20,}"),
    ("docker-pat", "dckr_pat_", r"dckr_pat_[A-Za-z0-9_\-]{20,}"),
    ("netlify-token", "nfp_", r"nfp_[A-Za-z0-9]{30,}"),
    ("supabase-token", "sbp_", r"sbp_[a-f0-9]{40}"),
    ("supabase-secret-key", "sb_secret_", r"sb_secret_[A-Za-z0-9_\-]{20,}"),
    ("langsmith-key", "lsv2_", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("pinecone-key", "pcsk_", r"pcsk_[A-Za-z0-9_]{40,}"),
    ("nvidia-api-key", "nvapi-", r"nvapi-[A-Za-z0-9_\-]{40,}"),
    ("posthog-personal-key", "phx_", r"phx_[A-Za-z0-9]{40,}"),
    ("google-oauth-secret", "gocspx-", r"GOCSPX-[A-Za-z0-9_\-]{20,}"),
    ("google-oauth-token", "ya29.", r"ya29\.[A-Za-z0-9_\-]{20,}"),
    ("figma-token", "figd_", r"figd_[A-Za-z0-9_\-]{30,}"),
    ("mapbox-secret-token", "sk.eyj", r"sk\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}"),
    ("atlassian-api-token", "atatt3", r"ATATT3[A-Za-z0-9_\-=]{50,}"),
    ("square-secret", "sq0csp-", r"sq0csp-[A-Za-z0-9_\-]{30,}"),
    ("vault-token", "hvs.", r"hvs\.[A-Za-z0-9_\-]{20,}"),
    ("notion-token", "ntn_", r"ntn_[A-Za-z0-9]{40,}"),
)


class Kind:
    """A kind of secret. What is redacted of a match: the group `secret`, or what follows the
    group `keep`, or else gitleaks' secret (the `group`-th, or the first non-empty group) with
    at most a delimiter around it, or else the whole match; or, for a kind with `spans`, what
    that function finds (its pattern only says where to look). A plain class: `typing` (NamedTuple)
    would cost the hook 2 ms to import."""

    __slots__ = ("command", "entropy", "group", "literals", "name", "source", "spans")

    def __init__(
        self,
        name: str,
        literals: tuple[str, ...],
        source: str,
        entropy: float = 0.0,
        group: int = 0,
        command: str = "",
        spans: Callable[[str], list[tuple[int, int]]] | None = None,
    ) -> None:
        self.name = name
        self.literals = literals  # lower-case; a match holds one of them
        self.source = source
        self.entropy = entropy  # least Shannon entropy of gitleaks' secret
        self.group = group
        self.command = command  # a pattern the command the match is an argument of must hold
        self.spans = spans  # what to redact of a text, found by other means than one pattern's matches

    def pattern(self) -> re.Pattern[str]:
        return compiled(self.source)


# Secrets told in prose (the module's docstring says the rule). The words that name a secret, in
# lower case (the prose patterns run on the lower-cased text). A credential names nothing but a
# secret: any value told after it is one, a phrase too. The ambiguous words are ordinary words as
# well ("the secret is patience", "the first token is 'The'", "la clave del éxito"): what they tell
# is a secret only when shaped like one. A PIN is digits.
_CREDENTIALS = (
    # English
    "password", "passwd", "pwd", "passphrase", "pass phrase", "passcode", "pw", "secret key",
    "secret access key", "client secret", "shared secret", "signing secret", "webhook secret",
    "app secret", "api secret", "api key", "api-key", "apikey", "api token", "access key",
    "access token", "auth token", "bearer token", "session token", "refresh token",
    "encryption key", "signing key", "master key", "private key",
    # French
    "mot de passe", "mdp", "phrase secrète", "phrase de passe", "clé secrète", "clé privée",
    "clé d'api", "clé api", "clé d'accès", "jeton d'accès", "code secret",
    # German
    "passwort", "kennwort", "geheimer schlüssel", "geheime schlüssel", "geheimen schlüssel",
    "geheimschlüssel", "api-schlüssel", "api schlüssel", "zugangsschlüssel", "privater schlüssel",
    "zugangstoken",
    # Spanish
    "contraseña", "clave secreta", "clave de api", "clave api", "clave privada", "clave de acceso",
    "frase de contraseña", "token de acceso",
    # Italian
    "parola d'ordine", "chiave segreta", "chiave api", "chiave privata", "chiave di accesso",
    "token di accesso",
    # Portuguese
    "senha", "palavra-passe", "palavra passe", "frase-senha", "frase senha", "chave secreta",
    "chave da api", "chave api", "chave privada", "chave de acesso", "token de acesso",
)  # fmt: skip
_AMBIGUOUS = (
    "secret", "token", "jeton", "geheimnis", "clave", "secreto", "chiave", "segreto", "chave", "segredo",
    "pass",
)  # fmt: skip
# "pass" tells a value only as a label ("pass: X"), and never in upper case: "--- PASS: TestLogin2"
# is a test's result
_LABEL_ONLY = ("pass",)
# a passphrase is a phrase: after a label, even one starting with an article ("Passphrase: the
# quick brown fox")
_PHRASES = (
    "passphrase",
    "pass phrase",
    "phrase secrète",
    "phrase de passe",
    "frase de contraseña",
    "frase-senha",
)
_PINS = ("pin", "pin code", "pin-code", "code pin", "código pin", "codice pin")
# German writes its compounds as one word: "Datenbankpasswort", "Routerkennwort"
_COMPOUNDED = ("passwort", "kennwort")
# words of the languages that put an adjective after the noun: "le mot de passe wifi", "la
# contraseña nueva" (never the English "password": "the password field is required")
_POSTPOSED = (
    "mot de passe", "mdp", "phrase secrète", "phrase de passe", "clé secrète", "clé privée", "clé d'api",
    "clé api", "clé d'accès", "jeton", "jeton d'accès", "code secret", "contraseña",
    "clave", "clave secreta", "clave de api", "clave api", "clave privada", "clave de acceso",
    "frase de contraseña", "token de acceso", "secreto", "parola d'ordine", "chiave", "chiave segreta",
    "chiave api", "chiave privata", "chiave di accesso", "token di accesso", "segreto", "senha",
    "palavra-passe", "palavra passe", "frase-senha", "frase senha", "chave", "chave secreta",
    "chave da api", "chave api", "chave privada", "chave de acesso", "token de acesso", "segredo",
)  # fmt: skip
# A string is searched for a named secret when it holds one of these (every word holds one).
_NAMED_LITERALS = (
    "pass", "secr", "token", "key", "mdp", "jeton", "clé", "kennwort", "geheim", "schlüssel", "contraseña",
    "clave", "chiave", "segre", "parola d", "senha", "chave", "pin ", "pin:", "pin-", "pw ", "pw:", "pwd",
)  # fmt: skip


# a word that names a secret; what is around it decides (_told). Grouped by first letter (four
# times faster to search than the plain list) and written out, as building it costs a hook 50 µs:
# `_named_source()` builds it from the words, and tests/test_redact.py checks that they agree.
_NAMED = (
    r"(?:a(?:pi[ \t]schlüssel|pi\-schlüssel|ccess[ \t]token|ccess[ \t]key|pi[ \t]secret|pp[ \t]secret"
    r"|uth[ \t]token|pi[ \t]token|pi[ \t]key|pi\-key|pikey)|b(?:earer[ \t]token)"
    r"|c(?:hiave[ \t]di[ \t]accesso|have[ \t]de[ \t]acesso|lave[ \t]de[ \t]acceso|hiave[ \t]privata"
    r"|hiave[ \t]segreta|have[ \t]privada|have[ \t]secreta|lave[ \t]privada|lave[ \t]secreta"
    r"|lient[ \t]secret|have[ \t]da[ \t]api|lave[ \t]de[ \t]api|lé[ \t]d['’]accès|lé[ \t]secrète"
    r"|ode[ \t]secret|hiave[ \t]api|lé[ \t]privée|odice[ \t]pin|ontraseña|ódigo[ \t]pin|have[ \t]api"
    r"|lave[ \t]api|lé[ \t]d['’]api|ode[ \t]pin|lé[ \t]api|hiave|have|lave)|e(?:ncryption[ \t]key)"
    r"|f(?:rase[ \t]de[ \t]contraseña|rase[ \t]senha|rase\-senha)|g(?:eheimen[ \t]schlüssel"
    r"|eheimer[ \t]schlüssel|eheime[ \t]schlüssel|eheimschlüssel|eheimnis)|j(?:eton[ \t]d['’]accès|eton)"
    r"|k(?:ennwort)|m(?:ot[ \t]de[ \t]passe|aster[ \t]key|dp)|p(?:rivater[ \t]schlüssel"
    r"|arola[ \t]d['’]ordine|hrase[ \t]de[ \t]passe|hrase[ \t]secrète|alavra[ \t]passe|alavra\-passe"
    r"|ass[ \t]phrase|rivate[ \t]key|assphrase|asscode|assword|asswort|in[ \t]code|in\-code|asswd|ass|in"
    r"|wd|w)|r(?:efresh[ \t]token)|s(?:ecret[ \t]access[ \t]key|igning[ \t]secret|ession[ \t]token"
    r"|hared[ \t]secret|igning[ \t]key|ecret[ \t]key|ecreto|egredo|egreto|ecret|enha)"
    r"|t(?:oken[ \t]di[ \t]accesso|oken[ \t]de[ \t]acceso|oken[ \t]de[ \t]acesso|oken)"
    r"|w(?:ebhook[ \t]secret)|z(?:ugangsschlüssel|ugangstoken))(?![\w\-])"
)


def _named_source() -> str:
    """The source of `_NAMED`, from the words: each first letter, then the rest of its words, the
    longest first (a space matches one blank, an apostrophe either apostrophe)."""
    groups: dict[str, list[str]] = {}
    for word in sorted((*_CREDENTIALS, *_AMBIGUOUS, *_PINS), key=lambda w: (-len(w), w)):
        groups.setdefault(word[0], []).append(word[1:])

    def escaped(word: str) -> str:
        return word.replace("-", "\\-").replace(" ", "[ \\t]").replace("'", "['’]")

    body = "|".join(
        f"{escaped(first)}(?:{'|'.join(map(escaped, rest))})" for first, rest in sorted(groups.items())
    )
    return f"(?:{body})(?![\\w\\-])"


# what may follow it: words between it and the link ("for the staging db", "du wifi", "you
# need"), then a link (a colon, "is", "est", "lautet", "c'est"...), or else a blank alone
# ("with password X"); then the rest of the line, which the value is taken from
_VERBS = (
    r"(?:(?:is|was|has[ \t]been|got|a[ \t]été|wurde|ist|wird|fue|ha[ \t]sido|è[ \t]stat[ao]|foi|é)[ \t]+)?"
    r"(?:set|changed|reset|updated|changé|modifié|remplacé|cambiad[ao]|cambiat[ao]|modificat[ao]|"
    r"alterad[ao]|mudad[ao])[ \t]+(?:to|en|par|a|in|para)"
    r"|(?:wurde|wird|ist)[ \t]+auf|will[ \t]be|has[ \t]been|had[ \t]been|became|becomes|remains|equals"
    r"|is|was|est|était|sera|c['’]est|vaut|devient|ist|war|lautet|lautete|heißt|bleibt"
    r"|es|era|será|fue|è|e'|sarà|é|foi"
)
_TOLD_AFTER = (
    r"(?:(?P<between>(?:[ \t]+[^\s,;:!?=()\"]{1,30}){0,5}?)"
    r"(?P<link>[ \t]*(?:->|=>|→|[:=])[ \t]*(?:\n[ \t]*)?|[ \t]+[—–][ \t]+"
    rf"|[ \t]*,?[ \t]+(?:{_VERBS})(?:[ \t]*:)?[ \t]+|['’]s[ \t]+)|(?P<bare>[ \t]+))"
    r"(?P<rest>[^\n]{0,160})"
)
# "I set the password to X", "change the token to X"
_SET_TO = r"[ \t]+to[ \t]+(?P<rest>[^\n]{0,160})"
_SETTING_VERBS = ("set", "sets", "setting", "change", "changed", "changing", "reset", "update", "updated")
# a value before the word: "Xy9-Qq is the admin password", "use X as the password", "Geheim-4711x
# ist das Passwort"; the value starts a token (the apostrophe of "can't" opens no quote)
_TOLD_BEFORE = (
    r"(?<![^\s\"'(\[«„“‘:])"
    r"(?P<value>\"[^\"\n]{1,60}\"|'(?:[^'\n]|(?<=\w)'(?=\w)){1,60}'(?!\w)|[„“«‘][^\n„“”«»‘’]{1,60}[“”»’]|[^\s\"'„“”«»‘’\x60]{4,64})"
    r"[ \t]+(?P<link>is|was|ist|war|est|était|es|era|fue|è|é|foi|sera|será|sarà|as|comme|als|como|come)"
    r"(?P<phrase>(?:[ \t]+[^\s,;:.!?\"]{1,16}){0,3})(?:[ \t]+|(?<=\S-))\Z"
)
_BEFORE_LINKS = "is was ist war est était es era fue è é foi sera será sarà as comme als como come"
_TOKEN = r"\S+"

# The lexicons of the rule (the module's docstring), one string each: `_words` splits it the first
# time a process needs it. Function words end a value's search ("the", "in", "too", "see"...).
_FUNCTION_WORDS = """
    the a an this that these those my your his her its our their mine yours ours theirs it he she
    they we you i me him them us what which who whom whose where when how why whether if because
    since as at by for from in into of off on onto out over under to with within without via per
    than then there here not no never nothing none nowhere also too very so such both either neither
    each every any some all more most less least only even being been be am are is was were has
    have had do does did can could should would will shall may might must and or but nor yet about
    above after against along among around before behind below beneath beside besides between
    beyond during except inside like near outside past through throughout toward towards until
    unless upon whereas while again exactly simply only really actually currently automatically
    correctly properly securely probably usually always rarely strictly directly locally globally
    manually silently twice once soon later already anymore yesterday today tomorrow nowhere
    somewhere elsewhere anywhere everywhere across amid despite opposite round underneath unlike
    versus vs plus minus enough see cf check ask use n/a tbd todo unset going gonna supposed using
    whatever whichever anything something everything minimum maximum min max string str int
    number boolean bool bytes object float double char void it's that's there's here's what's who's
    isn't aren't wasn't weren't can't cannot don't doesn't didn't won't wouldn't shouldn't couldn't
    i'm you're we're they're i've you've we've i'll you'll it'll let's
    le la les l' un une des du de d' ce cet cette ces mon ma mes ton ta tes son sa ses notre nos
    votre vos leur leurs il elle ils elles on nous vous je j' qui que qu' quoi dont où quand comment
    pourquoi si parce car comme à au aux en dans par pour sur sous avec sans chez vers entre pas ne
    n' plus jamais rien aucun aucune très trop tout toute tous toutes aussi déjà et ou mais donc ni
    puis être été sont était avoir ont avait celui celle hier demain aujourd'hui ici assez voir
    demandez utilisez jusqu' jusqu'à selon c'est n'est qu'il qu'elle s'il j'ai
    der die das den dem des ein eine einen einem einer eines kein keine keinen mein meine meinen
    dein deine sein seine ihr ihre unser unsere euer eure es er sie wir ich du man dieser diese
    dieses jener welche welcher welches was wer wie wo wann warum ob weil dass als an am auf aus bei
    beim bis durch für gegen im in mit nach ohne über um unter vom von vor zu zum zur zwischen nicht
    nie nichts sehr auch schon nur so und oder aber denn doch sondern sind waren wird werden wurde
    hat haben dasselbe derselbe dieselbe worden gestern heute morgen hier genug siehe frag nutze
    laut gemäß seit mindestens höchstens maximal minimal
    el los las lo unos unas este esta estos estas ese esa eso mi mis tu tus su sus nuestro nuestra
    vuestro él ella ellos ellas nosotros usted yo tú quien cual cuál donde cuando cómo por porque
    para del al con sin sobre hasta desde hacia según nunca nada muy demasiado más menos también ya
    aún y pero ser son está están ha han misma mismo ayer hoy mañana aquí bastante ver pregunta
    consulta mínimo máximo sido
    lo gli uno un' questo questa quello quella mio mia miei mie tuo tua suo sua nostro nostra
    vostro loro lui lei noi voi io che chi cui dove quando perché di della dello dei degli delle dell'
    alla allo ai agli alle all' dal dalla nel nella su sul sulla tra fra non mai niente nulla molto
    troppo più anche già e ma né essere è sono stessa stesso ieri oggi domani qui abbastanza vedi
    chiedi fino finché verso presso dopo secondo almeno minimo massimo stato stata stati state
    os as um uma uns umas isto esse essa isso aquele meu minha meus minhas teu seu nosso nossa ele
    ela eles elas nós você eu quem qual onde do da dos das no na nos nas em ao à aos com sem até
    pelo pela não muito demais mas nem é são foi tem mesma mesmo ontem hoje amanhã aqui bastante
    ver veja pergunte consulte sido
    """
# adverbs a link may carry before its value: "is now X", "ist jetzt X", "est toujours X"
_TRANSPARENT = """
    now still currently simply just literally actually really always previously formerly
    maintenant toujours actuellement simplement désormais encore jetzt nun noch immer aktuell
    einfach momentan derzeit früher vorher ahora todavía aún actualmente simplemente siempre antes
    ora adesso ancora attualmente semplicemente sempre prima agora ainda atualmente simplesmente
    """
_PREDICATES = """
    valid invalid required optional correct incorrect wrong right weak strong short long longer
    shorter empty blank null none nil undefined unknown fine ok okay good bad great perfect terrible
    awful weird strange odd safe unsafe secure insecure same different new old expired missing
    public private visible hidden known shown set unset reset sent kept lost stolen broken taken
    given written chosen forgotten frozen read used put cut let shut hit split spread spent left
    found made told sold held built bought brought paid said seen done gone grown thrown drawn
    worn torn begun run won mandatory unique common simple easy hard difficult complex trivial
    obvious random temporary permanent static dynamic global local fixed default true false yes
    active inactive stale fresh ready needed plaintext cleartext plain encoded hashed salted
    encrypted reused rotated revoked leaked important sensitive confidential critical necessary
    sufficient insufficient enough present absent current recent constant consistent persistent
    transient relevant irrelevant identical equal similar obsolete outdated useless pointless friendly
    harmless back available unavailable responsible optional generic internal external personal
    shared guessable predictable
    requis obligatoire facultatif faux fausse vide valide invalide nul nulle court courte long longue
    faible fort forte sûr sûre même nouveau nouvelle ancien ancienne différent différente inconnu
    inconnue oublié perdu correcte incorrecte important importante simple facile difficile
    confidentiel confidentielle identique suffisant suffisante nécessaire actuel actuelle
    disponible sensible secret secrète
    falsch richtig korrekt leer gültig ungültig erforderlich optional sicher unsicher schwach stark
    kurz lang neu alt bekannt unbekannt gleich anders abgelaufen veraltet nötig notwendig pflicht
    wichtig einfach schwer geheim verschieden identisch gut schlecht
    obligatoria obligatorio opcional incorrecta incorrecto correcta correcto inválida inválido
    válida válido débil fuerte segura seguro corta corto larga largo vacía vacío nueva nuevo única
    único requerida requerido diferente importante sencilla sencillo fácil difícil idéntica
    idéntico necesaria necesario suficiente secreta secreto
    obbligatoria obbligatorio opzionale errata errato corretta corretto valida valido debole forte
    sicura sicuro lunga lungo vuota vuoto nuova nuovo univoca univoco richiesta richiesto diversa
    diverso importante semplice facile difficile identica identico necessaria necessario
    sufficiente segreta segreto
    obrigatória obrigatório incorreta incorreto correta correto fraca fraco curta curto longa longo
    vazia vazio nova novo diferente importante simples fácil difícil idêntica idêntico necessária
    necessário suficiente secreta secreto monouso único única
    """
# names of algorithms and encodings: "the token is base64 encoded", "... is RS256"
_ALGORITHMS = """
    sha1 sha256 sha384 sha512 md5 base64 base32 base58 utf8 utf-8 utf16 rs256 rs512 hs256 hs512
    es256 ps256 aes128 aes256 aes-256 argon2 argon2id pbkdf2 x509 oauth2 ipv4 ipv6 http2 k8s
    """
_CONJUNCTIONS = (
    "and but or nor so because und aber oder sondern denn weil et mais ou donc car y pero sino porque "
    "e ma però perché mas porém"
)
_DETERMINERS = """
    the this that my your his her its our their le la les l' ce cet cette mon ma ton ta son sa notre
    votre leur der die das den dem des mein meine meinen unser unsere dein deine sein seine ihr ihre
    dieser diese dieses el los las lo mi mis tu su nuestro nuestra este esta ese esa il gli i mio mia
    tuo tua suo sua nostro nostra questo questa o a os as meu minha teu seu nosso nossa esse essa
    """
# articles and possessives of French, Spanish, Italian and Portuguese only ("a" and "o" are English too)
_ROMANCE_DETERMINERS = (
    "la le les il lo gli l' el los las mon ma mes ton ta son sa notre votre mi mis mio mia tuo tua suo "
    "sua nostro nostra nuestro nuestra minha meu"
)
_ARTICLES = "the a an le la les l' un une der die das ein eine el los las una il lo i gli o os as um uma"
_INDEFINITE = "an un une ein eine einen einem einer uno una un' um uma"
# a secret word after these names a property of a secret, not the secret ("the length of the
# password is 12", "la taille du jeton est 256")
_OF = "of du des de d' del della dello dell' degli delle dei di da do dos"
# words that may follow a secret's word at the end of its phrase: "X was the wifi password last year"
_HEAD_FOLLOWERS = "last next yesterday today tomorrow btw lol"
_split: dict[str, frozenset[str]] = {}


def _words(lexicon: str) -> frozenset[str]:
    """The words of a lexicon, split the first time a process needs them, not at every hook's import."""
    words = _split.get(lexicon)
    if words is None:
        words = _split[lexicon] = frozenset(lexicon.split())
    return words


_OPENING = "\"'`«„“‘([{<"
_CLOSING = "\"'`»“”’)]}>"
_CLAUSE_ENDING = ".,;:!?"
_NO_DIGITS = str.maketrans("", "", "0123456789")
_QUOTES = {'"': '"', "'": "'", "`": "`", "«": "»", "„": "“”", "“": "”", "‘": "’"}


def _named_spans(text: str) -> list[tuple[int, int]]:
    """Where `text` tells a secret in prose: the values named by a word that names a secret."""
    lowered = _lowered(text)
    spans: list[tuple[int, int]] = []
    for named in compiled(_NAMED).finditer(lowered):
        if _prose_word(lowered, named.start(), named.group()):
            spans += _told(text, lowered, named) or _told_before(text, lowered, named)
    return spans


def _lowered(text: str) -> str:
    """`text` in lower case, each character in its place (a letter whose lower case is longer,
    as "İ", stays as it is)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    return lowered


def _prose_word(lowered: str, start: int, word: str) -> bool:
    """Whether the word at `start` is a word of prose, not part of a name, a path or a flag
    ("client_secret", "/etc/passwd", "--password", "arn:...:secret:"), nor the complement of
    another noun ("the length of the password")."""
    before = lowered[start - 1 : start]
    if before == "-" and lowered[start - 2 : start - 1] == "-":
        return False
    marker = lowered.rfind("[redacted:", max(0, start - 40), start)
    if marker >= 0 and "]" not in lowered[marker:start]:  # what an earlier kind wrote
        return False
    if before and (before.isalnum() or before in "_$/:.@=\\"):
        escaped = before in "nrt" and lowered[start - 2 : start - 1] == "\\"
        if not escaped and not (before.isalpha() and word in _COMPOUNDED):
            return False
    words = lowered[max(0, start - 40) : start].split()
    if words and words[-1] in _words(_DETERMINERS):
        words.pop()
    return not (words and (words[-1] in _words(_OF) or words[-1].startswith(("d'", "d’"))))


def _told(text: str, lowered: str, named: re.Match[str]) -> list[tuple[int, int]]:
    """The value told after the word `named`: "the password is X", "token: X", "with secret X"."""
    word, strength = named.group(), _strength(named.group())
    told = compiled(_TOLD_AFTER).match(lowered, named.end())
    if told is None:
        return []
    article = lowered[max(0, named.start() - 12) : named.start()].split()[-1:]
    postposed = word in _POSTPOSED or not _words(_ROMANCE_DETERMINERS).isdisjoint(article)
    if told.group("bare") is None and not _plausible_between(told.group("between"), postposed):
        # "the password field is ...": the word is no head; what follows it may still be a value
        line_end = lowered.find("\n", named.end())
        stop = min(named.end() + 160, len(text) if line_end < 0 else line_end)
        return _value(text, told.start("between"), stop, strength, "bare")
    link = (told.group("link") or "").strip()
    how = "bare" if told.group("bare") else "possessive" if link[:1] in "'’" else _link_kind(link)
    if word in _LABEL_ONLY and (how != "label" or text[named.start() : named.end()].isupper()):
        return []
    spans = _value(text, told.start("rest"), told.end("rest"), strength, how)
    if not spans and _after_setting_verb(lowered, named.start()):
        set_to = compiled(_SET_TO).match(lowered, named.end())
        if set_to is not None:
            spans = _value(text, set_to.start("rest"), set_to.end("rest"), strength, "to")
    return spans


def _strength(word: str) -> str:
    if word in _AMBIGUOUS:
        return "ambiguous"
    if word in _PHRASES:
        return "phrase"
    return "pin" if word in _PINS else "credential"


def _link_kind(link: str) -> str:
    """A label's sign ("password: X", "token = X", "key -> X") or a linking word ("is", "est")."""
    return "label" if link[:1] in ":=-→—–" else "link"


def _plausible_between(between: str, postposed: bool) -> bool:
    """Whether the words between a secret's word and its link leave the word the head of its
    phrase: "the password for the db is" does, "the password field is" does not; one adjective
    after the noun does in French, Spanish, Italian and Portuguese (`postposed`: a word of theirs,
    or one after their article, "la password nuova è")."""
    words = between.split()
    if not words:
        return True
    first = _elided(words[0])
    if first in _words(_FUNCTION_WORDS) or first in _words(_TRANSPARENT):
        return True
    # "le mot de passe wifi, c'est", "la contraseña nueva es"
    return len(words) == 1 and postposed and words[0].isalpha() and words[0] not in _words(_FUNCTION_WORDS)


def _elided(word: str) -> str:
    """A word, or the article or preposition it starts with when elided: "dell'admin" is "dell'"."""
    apostrophe = max(word.find("'"), word.find("’"))
    return word[:apostrophe].replace("’", "'") + "'" if apostrophe > 0 else word


def _after_setting_verb(lowered: str, start: int) -> bool:
    return any(w in _SETTING_VERBS for w in lowered[max(0, start - 40) : start].split()[-4:])


def _value(text: str, start: int, stop: int, strength: str, how: str) -> list[tuple[int, int]]:
    """The spans of the value that `text[start:stop]` starts with, if it is one: told by a word of
    `strength`, after a link ("is"), a label's sign (":"), a blank (`bare`: only a value shaped like
    a secret), "to" after a setting verb (the same) or "'s"."""
    tokens = _first_words(text, start, stop, strength, how)
    if not tokens or "[REDACTED:" in text[slice(*tokens[0])]:
        return []  # nothing, or what an earlier kind took
    if text[tokens[0][0]] in _QUOTES and how != "bare":
        return _quoted(text, tokens[0][0], stop, strength)
    kind = _kind_of(_bare(text, *tokens[0]))
    if how in ("bare", "to") and kind not in ("shaped", "symbolic"):  # "update the password to match ..."
        return []
    clause = _clause(text, tokens)
    if how == "possessive" and len(clause) > 1:
        return []  # "the token's sha1 is ..."
    told = _told_of(text, clause, kind, strength)
    if not told:
        return []
    # the sentence may go on with another value: "X (was Y)", "X yesterday but now it's Y"
    rest = tokens[1:] if kind in ("shaped", "symbolic", "digits") else tokens[len(clause) :]
    return [*told, *_shaped_after(text, rest)]


def _first_words(text: str, start: int, stop: int, strength: str, how: str) -> list[tuple[int, int]]:
    """The words the value may start with: past the adverbs of a link ("is now X", "ist immer noch
    X") and the article of a passphrase's label ("Passphrase: the quick brown fox")."""
    tokens = _tokens(text, start, stop)
    if how == "link":
        while tokens[1:] and _bare(text, *tokens[0]).lower() in _words(_TRANSPARENT):
            tokens = tokens[1:]
    if how == "label" and strength == "phrase" and tokens[1:] and _is_article(text, *tokens[0]):
        tokens = tokens[1:]
    return tokens


def _told_of(text: str, clause: list[tuple[int, int]], kind: str, strength: str) -> list[tuple[int, int]]:
    """What of a clause is a value, by the kind of its first word (the rule of the module's docstring)."""
    if kind in ("shaped", "symbolic"):
        return [_span(text, *clause[0])]
    if kind == "digits":
        return [_span(text, *clause[0])] if strength != "ambiguous" and len(clause) == 1 else []
    if strength not in ("credential", "phrase") or kind in ("reference", "function", "participle"):
        return []  # "... is the same", "... is stored in vault", "... ist abgelaufen"
    if kind == "predicate" and (len(clause) < 3 or _describes(_bare(text, *clause[1]))):
        return []  # "... is required", "Password: Invalid format"; not "correct horse battery staple"
    if len(clause) > 1 and _passive(_bare(text, *clause[-1])):
        return []  # "... is WPA2 protected", "... is user defined"
    if len(clause) == 2 and _kind_of(_bare(text, *clause[1])) == "predicate":
        return []  # "... is case sensitive"
    return [(_span(text, *clause[0])[0], _span(text, *clause[-1])[1])]


def _is_article(text: str, start: int, end: int) -> bool:
    return text[start:end].lower() in _words(_ARTICLES)


def _passive(word: str) -> bool:
    """Whether a word ending a phrase makes it a description: an English past participle after
    the noun it is said of ("WPA2 protected", "user defined"); a passphrase may end with another
    participle ("autumn leaves falling", "gato azul dormido")."""
    return word.endswith("ed") and _kind_of(word) == "participle"


def _describes(word: str) -> bool:
    """Whether a word after a predicate goes on describing ("valid for", "ok now", "wrong again")."""
    return word.lower() in _words(_TRANSPARENT) or _kind_of(word) in (
        "function",
        "predicate",
        "participle",
        "digits",
        "reference",
    )


def _tokens(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """The spans of the first words of `text[start:stop]`: enough for two adverbs and a clause."""
    found = []
    for token in compiled(_TOKEN).finditer(text, start, stop):
        found.append(token.span())
        if len(found) == 10:
            break
    return found


def _quoted(text: str, start: int, stop: int, strength: str) -> list[tuple[int, int]]:
    """The value between the quotes that `text[start:stop]` opens with, if it is one."""
    closers = _QUOTES[text[start]]
    end = next((i for i in range(start + 1, stop) if text[i] in closers and not _in_word(text, i)), -1)
    if end < 0:
        return []
    inside = text[start + 1 : end].strip()
    if not inside or inside.startswith(("$", "%", "<", "{", "[REDACTED:")) or _placeholder(inside):
        return []  # "${{ secrets.DB_PASSWORD }}", "<your password>", "****"
    first = start + 1 + text[start + 1 : end].index(inside)
    kind = _kind_of(inside) if " " not in inside else "phrase"
    if kind in ("shaped", "symbolic") or (
        strength in ("credential", "phrase") and kind in ("phrase", "word", "digits")
    ):
        return [(first, first + len(inside))]
    return []


def _in_word(text: str, at: int) -> bool:
    """Whether the apostrophe at `at` is one of a word ("can't", "l'api"), not a closing quote."""
    return text[at] in "'’" and text[at - 1 : at].isalnum() and text[at + 1 : at + 2].isalpha()


def _clause(text: str, tokens: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The tokens of the clause `tokens` starts: up to punctuation that ends it, a conjunction, a
    dash or a parenthesis (eight at most: a passphrase is a few words)."""
    clause: list[tuple[int, int]] = []
    for start, end in tokens[:8]:
        token = text[start:end]
        if clause and (
            token[0] in "([" or token in ("-", "–", "—") or token.lower() in _words(_CONJUNCTIONS)
        ):
            break
        clause.append((start, end))
        if token.rstrip(_CLOSING)[-1:] in _CLAUSE_ENDING:
            break
    return clause


def _shaped_after(text: str, tokens: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The other values shaped like secrets in the rest of the sentence: "X (was Y)"."""
    spans = []
    for start, end in tokens:
        if _kind_of(_bare(text, start, end)) == "shaped":
            spans.append(_span(text, start, end))
        if text[start:end].rstrip(_CLOSING)[-1:] in ".!?":
            break
    return spans


def _bare(text: str, start: int, end: int) -> str:
    """A token without the quotes, brackets and punctuation around it."""
    return text[start:end].lstrip(_OPENING).rstrip(_CLOSING + _CLAUSE_ENDING)


def _span(text: str, start: int, end: int) -> tuple[int, int]:
    """A token's span without what opens it and the punctuation that ends its clause (a ! or ?
    stays: a secret may end with one)."""
    token = text[start:end]
    opened = len(token) - len(token.lstrip(_OPENING))
    kept = len(token.rstrip(_CLOSING + ".,;:"))
    return (start + opened, start + kept) if kept > opened else (start, end)


def _kind_of(token: str) -> str:
    """What a token of prose is, for telling a value from a description: a reference to a secret
    kept elsewhere (a path, a URL, a variable, a placeholder, a version or a quantity), digits, a
    function word, a participle (by its form), a predicate (an adjective the lexicon knows), a token
    shaped like a secret (letters and digits), a symbolic one (other characters than letters), or
    a word."""
    lower = token.lower().replace("’", "'")
    if not token or _refers(token):
        return "reference"
    if token.isdigit():
        return "digits"
    if _quantity(lower) or lower in _words(_ALGORITHMS):
        return "reference"
    if lower in _words(_FUNCTION_WORDS):
        return "function"
    if _predicate_form(token):
        return "participle"
    if lower in _words(_PREDICATES):
        return "predicate"
    # string methods rather than a loop over the characters: a token may be long
    letters = lower != token.upper()
    if letters and len(token.translate(_NO_DIGITS)) < len(token):
        return "shaped" if len(token) >= 6 else "word"
    if letters and not token.replace("-", "").replace("'", "").replace("’", "").isalpha():
        return "symbolic"
    return "word" if letters else "reference"


def _refers(token: str) -> bool:
    """Whether a token points at a secret rather than being one: a path, a URL, a variable, a
    placeholder, an environment variable's name, a dotted name (`process.env.KEY`, `settings.py`),
    a version."""
    if token.startswith(("/", "~/", "./", "../", "$", "%", "<", "[", "{", "@")) or "://" in token:
        return True
    if "(" in token or "[" in token:  # code: get_token(), request.form['password']
        return True
    if _placeholder(token):
        return True
    name = token.replace("_", "")
    if "_" in token and token.isupper() and name.isalnum():
        return True
    if "." in token.strip(".") and all(p.replace("_", "").isalpha() for p in token.strip(".").split(".")):
        return True
    if "/" in token and "." in token.rsplit("/", 1)[-1]:
        return True
    version = token[1:] if token[:1] in "vV" else token
    return (
        bool(version)
        and version[0].isdigit()
        and all(p.isdigit() for p in version.split("."))
        and ("." in version or token[:1] in "vV")
    )


def _placeholder(token: str) -> bool:
    """Whether a value only stands for one: `****`, `xxxx`, `...`."""
    return not token.lower().strip("*•●x.·#_-")


def _quantity(lower: str) -> bool:
    """Whether a token is a number with its unit: 12k, 200,000, 3600s, 12k/day, 8KB, 90%."""
    if not lower[:1].isdigit():
        return False
    number = lower.rstrip("abcdefghijklmnopqrstuvwxyz%/")
    unit = lower[len(number) :].split("/", 1)[0]
    return number.replace(",", "").replace(".", "").replace("_", "").isdigit() and len(unit) <= 3


def _predicate_form(token: str) -> bool:
    """Whether a word in lower case is shaped as an adjective or a participle in one of the six
    languages: "stored", "missing", "readable", "stocké", "gespeichert", "ungültig", "guardada",
    "salvata"; a capital makes it a name or a value ("Everest"), or a German noun."""
    if not token.islower() or not token.replace("-", "").isalpha():
        return False
    if "-" in token:  # "case-sensitive", "per-user"; three parts and more are a passphrase
        parts = token.split("-")
        return len(parts) == 2 or _predicate_form(parts[-1])
    size = len(token)
    if token.endswith(("é", "ée", "és", "ées")) and size >= 4:
        return True
    if (token.endswith("ed") and size >= 4) or (
        token.endswith(("able", "ible", "lich", "isch", "ig", "bar")) and size >= 5
    ):
        return True
    if token.endswith("ing") and size >= 7:
        return True
    if token.endswith(("ado", "ada", "ido", "ida", "ato", "ata", "ito", "ita", "uto", "uta")) and size >= 6:
        return True
    return size >= 6 and token.endswith(("t", "en")) and _german_participle(token)


def _german_participle(token: str) -> bool:
    """ge-...-t/-en, with a separable prefix before it (abgelaufen) or an inseparable one instead
    (verschlüsselt, bekannt, erzeugt, entfernt)."""
    separable = ("", "ab", "an", "auf", "aus", "ein", "fest", "um", "zu", "vor", "nach", "zurück")
    if any(token.startswith(prefix + "ge") for prefix in separable):
        return True
    return token.endswith("t") and token.startswith(("ver", "be", "er", "ent", "zer"))


def _told_before(text: str, lowered: str, named: re.Match[str]) -> list[tuple[int, int]]:
    """The value told before the word `named`: "Xy9-Qq is the admin password", "use X as the
    password"; the word must end its phrase ("X is the password field" tells nothing)."""
    word, start = named.group(), named.start()
    window = max(0, start - 128)  # a value (64 at most), its link and three words
    if _words(_BEFORE_LINKS).isdisjoint(lowered[window:start].split()[-5:]):
        return []
    before = compiled(_TOLD_BEFORE).search(lowered, window, start)
    if before is None:
        return []
    phrase = before.group("phrase").split()
    romance = not _words(_ROMANCE_DETERMINERS).isdisjoint(phrase)
    if not _heads(lowered, named.end(), word in _POSTPOSED or romance):
        return []
    english = before.group("link") in ("is", "was", "as")
    if phrase and (phrase[0] in _words(_INDEFINITE) or (english and phrase[0] == "a")):
        return []  # "password123 is a terrible password"
    if any(w in _words(_FUNCTION_WORDS) and w not in _words(_DETERMINERS) for w in phrase):
        return []  # "X is not the password"
    start, end = before.span("value")
    if text.startswith("[REDACTED:", start):
        return []
    if text[start] in _QUOTES:
        return _quoted(text, start, end, _strength(word))
    kind = _kind_of(text[start:end])
    if kind in ("shaped", "symbolic") or (kind == "digits" and end - start >= 4 and word not in _AMBIGUOUS):
        return [(start, end)]
    return []


def _heads(lowered: str, end: int, postposed: bool) -> bool:
    """Whether the word ending at `end` ends its phrase: nothing follows it in its clause but a
    preposition or the like ("the password for prod", "la contraseña del admin"), or one word
    when it is a noun of the languages that put adjectives after it (`postposed`: "mon mot de
    passe Gmail", "la password precedente")."""
    following = lowered[end : end + 60].split("\n", 1)[0].split()[:2]
    for place, token in enumerate(following):
        bare = _elided(token.strip(_OPENING + _CLOSING + _CLAUSE_ENDING))
        if (
            not bare
            or token[:1] in _CLAUSE_ENDING
            or bare in _words(_FUNCTION_WORDS)
            or bare in _words(_HEAD_FOLLOWERS)
        ):
            return True
        if place or not postposed:
            return False
        if token[-1:] in _CLAUSE_ENDING:
            return True
    return True


# the upper-case words after the keyword of a name that say it holds no secret but what goes
# with one: TOKEN_TTL, PASSWORD_MIN_LENGTH, SECRET_NAME, TOKEN_URL
_METADATA = """
    TTL LIMIT LIMITS URL URI URLS ENDPOINT HOST PORT FILE PATH DIR NAME ID IDS ARN TYPE HEADER PREFIX
    FORMAT ALGORITHM ALG LENGTH LEN MIN MAX SIZE COUNT DAYS HOURS SECONDS MINUTES TIMEOUT EXPIRY EXPIRES
    EXPIRATION LIFETIME AGE ROTATION ENABLED DISABLED REQUIRED VERSION REGION SCOPE SCOPES ISSUER
    AUDIENCE RESET POLICY STRENGTH MODE PROVIDER STORE BACKEND KIND FIELD PARAM LOCATION REF AT
    CHANGED UPDATED CREATED LAST USAGE USED BUDGET HINT RULES
    """
# the words for "secret": a value too, and the commonest made-up one (POSTGRES_PASSWORD: secret)
_SECRET_WORDS = ("secret", "secrète", "secreta", "secreto", "segreta", "segreto", "geheim")
# values that say no secret is there
_NO_VALUE = ("null", "none", "nil", "undefined", "true", "false", "empty", "n/a")


def _assigned_spans(text: str) -> list[tuple[int, int]]:
    """The values assigned to secret-named variables and keys in `text`."""
    lowered = _lowered(text)
    return [m.span("value") for m in compiled(_ASSIGNED).finditer(lowered) if _assigned_secret(text, m)]


def _assigned_secret(text: str, assigned: re.Match[str]) -> bool:
    """Whether an assignment found in the lower-cased `text` assigns a secret: not to a lower-case
    _pass or _pwd (an environment variable is named in upper case), not a reference to one (`$VAR`,
    `${VAR}`, `<your key>`, `process.env.KEY`, `%TOKEN%`, `null`), not what goes with one
    (TOKEN_TTL=3600)."""
    start, end = assigned.span("name")
    if text[start] == "_" and not (
        text[start:end].isupper() and (text[start - 1].isupper() or text[start - 1].isdigit())
    ):
        return False
    value = text[assigned.start("value") : assigned.end("value")]
    bare = value.strip("\"'")
    if bare.startswith("[REDACTED:") or bare.lower() in _NO_VALUE:
        return False
    if value[:1] in "\"'":  # a literal: "foo.bar" may be a password, "${TOKEN}" is none
        return not (bare.startswith(("$", "%", "<", "{")) or _placeholder(bare))
    if _refers(bare):
        return False
    lower = bare.strip(_OPENING + _CLOSING).lower()
    if lower == assigned.group("name").strip("_"):
        return False  # a variable passed on: password = password
    kind = _kind_of(lower)
    if kind in ("function", "participle") or (kind == "predicate" and lower not in _SECRET_WORDS):
        return False  # "password: required", "Password: (hidden)", "token: see below"
    inner = assigned.group("inner")
    if inner is None:
        return True
    return not (any(p.upper() in _words(_METADATA) for p in inner.split("_")) or bare.isdigit())


_OWN = (
    Kind(
        "private-key",
        ("private key",),
        r"-----BEGIN[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    Kind("age-key", ("age-secret-key-",), r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    Kind("anthropic-key", ("sk-ant-",), _START + r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    Kind("openai-key", ("sk-",), _START + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    Kind(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _START + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    Kind("gitlab-token", ("glpat-",), _START + r"glpat-[A-Za-z0-9_\-]{20,}"),
    Kind("slack-token", ("xox", "xapp-"), _START + r"(?:xoxe\.)?(?:xox[abposre]|xapp)-[A-Za-z0-9\-]{10,}"),
    Kind("slack-webhook", ("hooks.slack.com/",), r"hooks\.slack\.com/services/[A-Za-z0-9_/]+"),
    # An AWS secret access key has no prefix of its own: 40 characters of base64 are one only
    # beside a key id (prose, a CSV of credentials) or told as an AWS secret ("the AWS secret
    # ( ... )"), which _aws_secret_told looks for. Before the key id's kind, which would hide that id.
    Kind(
        "aws-secret-key",
        (*_AWS_KEY_ID_LITERALS, "aws"),
        r"(?:(?<![A-Za-z0-9/+=])|(?<=\\[nrt]))[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
    Kind("aws-access-key", ("akia", "asia"), _START + r"(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    Kind("google-api-key", ("aiza",), _START + r"AIza[0-9A-Za-z_\-]{35}"),
    Kind("stripe-key", ("k_live_", "k_test_"), _START + r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    Kind("huggingface-token", ("hf_",), _START + r"hf_[A-Za-z0-9]{30,}"),
    *(Kind(name, (prefix.lower(),), _START + body) for name, prefix, body in _PREFIXED),
    Kind("npm-token", ("npm_",), _START + r"npm_[A-Za-z0-9]{36}"),
    Kind("sendgrid-key", ("sg.",), _START + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    Kind("jwt", ("eyj",), _START + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # the ones below keep what comes before the secret: the scheme and user, the variable name.
    # "Bearer authentication" or "basic configuration" are words, not credentials: a bearer
    # token holds a digit, and a basic one decodes to user:password.
    Kind(
        "bearer-token",
        ("bearer ",),
        r"(?<=[Bb]earer )(?=[A-Za-z0-9._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{16,}",
    ),
    Kind("basic-auth", ("basic ",), r"(?<=[Bb]asic )[A-Za-z0-9+/]{8,}={0,2}"),
    # the password runs to the last @ before the host: "https://user:p@ss@host/"; a ? or # would
    # end the authority
    Kind("url-password", ("://",), r"(?<=://)(?P<keep>[^/?#\s:@'\"]*:)[^/?#\s'\"]+(?=@)"),
    # Azure connection strings (storage, Service Bus) and the signature of a SAS URL
    Kind(
        "azure-key",
        ("accountkey=", "sharedaccesskey="),
        r"(?i)(?P<keep>\b(?:AccountKey|SharedAccessKey)=)[A-Za-z0-9+/=]{8,}",
    ),
    Kind("sas-signature", ("sig=",), r"(?P<keep>[?&;]sig=)[A-Za-z0-9%+/=_\-]{8,}"),
    Kind(
        "flag-secret",
        ("--password", "--passwd", "--token", "--api-key", "--secret"),
        rf"(?i)(?P<keep>{_SECRET_FLAGS}[= ])[^\s\"']{{4,}}",
    ),
    # curl -u user:password, --user user:password, -u 'user:pass word'
    Kind(
        "curl-user",
        ("curl",),
        r"(?P<keep>(?<![\w-])(?:-u[ \t]*|--user(?:=|[ \t]+))(?P<quote>['\"])?[^\s:'\"]*:)"
        r"(?P<secret>(?(quote)[^'\"\n]+|[^\s'\"]+))",
        command=r"\bcurl\b",
    ),
    # the mysql client's attached password: -pPASSWORD, -p'PASS WORD' (-p 3306 is no password)
    Kind(
        "mysql-password",
        ("mysql", "mariadb"),
        r"(?P<keep>(?<![\w-])-p)(?P<secret>'[^'\n]*'|\"[^\"\n]*\"|(?![\d.]+:[\d.:\-]+(?:/tcp|/udp)?(?:\s|$))[^\s'\"]+)",
        command=r"\b(?:mysql\w*|mariadb[\w-]*)\b",
    ),
    # a secret told in prose, after or before the word that names it (_named_spans); before the
    # assignments, which would take one word of a passphrase ("WiFi password: tangerine dream")
    Kind("prose-secret", _NAMED_LITERALS, _NAMED, spans=_named_spans),
    # ..._PASSWORD=value, DB_PASS=value, apiKey: "value", "token": "value", SECRET_KEY_BASE=value:
    # the name ends with the keyword (_PASS and _PWD only in upper case, as environment variables
    # are named) or with more words after it (SLACK_TOKEN_V2=, CLIENT_SECRET_PROD=); never
    # after a colon or a slash (an ARN's "secret:"); values that refer to a secret are no secret
    # (_assigned_secret: $VAR, <placeholder>, process.env.KEY, null; TOKEN_TTL=3600). Searched in
    # the lower-cased text, three times faster than (?i).
    Kind(
        "secret-assignment",
        ("pass", "pwd", "secret", "token", "key", "credential", "encryption"),
        _ASSIGNED,
        spans=_assigned_spans,
    ),
)

KINDS: tuple[Kind, ...] = _OWN + tuple(
    Kind(name, literals, source, entropy, group) for name, literals, source, entropy, group in FORMATS
)


def _is_basic_credential(match: re.Match[str]) -> bool:
    import binascii

    token = match.group(0)
    try:
        decoded = binascii.a2b_base64(token + "=" * (-len(token) % 4))
    except binascii.Error:
        return False
    # user:password is printable text; an English word read as base64 almost never is
    return b":" in decoded and all(32 <= byte < 127 for byte in decoded)


def _aws_secret_told(match: re.Match[str]) -> bool:
    """Whether 40 characters of base64 are an AWS secret key: beside a key id, or told as an AWS
    secret (both cases of letters, as base64 has and a commit id has not)."""
    text, start, end = match.string, match.start(), match.end()
    around = text[max(0, start - _AWS_NEIGHBOURHOOD) : end + _AWS_NEIGHBOURHOOD]
    if compiled(_AWS_KEY_ID).search(around) is not None:
        return True
    value, before = match.group(), text[max(0, start - _AWS_NEIGHBOURHOOD) : start].lower()
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return mixed and "aws" in before and "secret" in before[-80:]


# kinds whose matches must pass a check before they count as secrets
_CONFIRM: dict[str, Callable[[re.Match[str]], bool]] = {
    "basic-auth": _is_basic_credential,
    "aws-secret-key": _aws_secret_told,
}


def redact_text(text: str) -> str:
    """The text with every secret it holds replaced by its marker."""
    global _looked_at
    lowered = text.lower()
    _looked_at += len(lowered) + 100
    if _looked_at < _TRIE_AFTER:
        found = {literal for literal in _kinds_of_literal() if literal in lowered}
    else:
        found = set(_literal_finder().findall(lowered))
    if not found:
        return text
    for index in sorted({i for literal in found for i in _kinds_called_for(literal)}):
        kind = KINDS[index]
        if kind.spans is None:
            text = kind.pattern().sub(_replacer(kind), text)
        else:
            text = _spliced(text, kind.spans(text), f"[REDACTED:{kind.name}]")
    return text


def _spliced(text: str, spans: list[tuple[int, int]], marker: str) -> str:
    """`text` with `marker` in place of each span (spans that overlap or touch become one)."""
    kept: list[str] = []
    at = 0
    for start, end in sorted(spans):
        if end <= at:
            continue
        if start > at or not kept:
            kept.append(text[at:start])
            kept.append(marker)
        at = end
    return "".join(kept) + text[at:] if kept else text


# One pass of a trie of the literals costs half as much per character as a substring test for
# each (170 of them), and a sixth per string, but 1 to 2 ms to compile: about what the tests
# cost on 50,000 characters (a string counting for 100 more). A process compiles it once it has
# looked at that much: a hook with a typical payload never does, the transcript import at once.
_TRIE_AFTER = 50_000
_looked_at = 0
_finder: re.Pattern[str] | None = None


def _literal_finder() -> re.Pattern[str]:
    """A pattern that finds, at each place, the longest literal starting there."""
    global _finder
    if _finder is None:  # its source is long to build
        _finder = compiled(f"(?=({_trie(set(_kinds_of_literal()))}))")
    return _finder


_literals: dict[str, tuple[int, ...]] = {}


def _kinds_of_literal() -> dict[str, tuple[int, ...]]:
    if not _literals:
        for i, kind in enumerate(KINDS):
            for literal in kind.literals:
                _literals[literal] = (*_literals.get(literal, ()), i)
    return _literals


def _kinds_called_for(found: str) -> tuple[int, ...]:
    """The kinds a literal found calls for: those of the literals that start it, itself included
    (the finder reports only the longest literal at a place)."""
    kinds = _kinds_of_literal()
    return tuple(i for end in range(1, len(found) + 1) for i in kinds.get(found[:end], ()))


def _trie(words: set[str]) -> str:
    """A pattern matching the longest of `words` at a place, in time bounded by the longest word:
    each step follows one character (a trie), never trying the words one by one."""
    root: dict[str, dict[str, Any]] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict[str, dict[str, Any]]) -> str:
        import re

        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return pattern(root)


def _replacer(kind: Kind) -> Callable[[re.Match[str]], str]:
    marker = f"[REDACTED:{kind.name}]"
    confirm = _CONFIRM.get(kind.name)
    command = compiled(kind.command) if kind.command else None

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if confirm is not None and not confirm(match):
            return whole
        if command is not None and not command.search(_command_before(match)):
            return whole
        start, end = _secret_span(match, kind.group)
        if kind.entropy and _entropy(match.string[start:end]) < kind.entropy:
            return whole
        offset = match.start()
        return whole[: start - offset] + marker + whole[end - offset :]

    return replace


# compiled when first needed, like the kinds: most hooks need neither
_COMMAND_SEPARATOR = r"(?<!\\)\n|(?:;|&&|\|\|?)(?=\s)"
_DELIMITER = r"(?:[\x60'\"\s;,:=>()<]|\\[nr])?"


def _command_before(match: re.Match[str]) -> str:
    """The command that the match is an argument of, up to the match: at most 300 characters back,
    and not past a line break (unless escaped: a continued line) or a `;`, `&&`, `|`."""
    window = match.string[max(0, match.start() - 300) : match.start()]
    return compiled(_COMMAND_SEPARATOR).split(window)[-1]


def _secret_span(match: re.Match[str], group: int) -> tuple[int, int]:
    names = match.re.groupindex
    if "secret" in names:
        return match.span("secret")
    if "keep" in names:
        return match.end("keep"), match.end()
    if not group:
        group = next((i for i in range(1, match.re.groups + 1) if match.group(i)), 0)
    start, end = match.span(group)
    text = match.string
    # gitleaks' secret alone when the rest of the match only delimits it (`\b(token)(?:['";\s]|$)`)
    delimiter = compiled(_DELIMITER)
    if delimiter.fullmatch(text, match.start(), start) and delimiter.fullmatch(text, end, match.end()):
        return start, end
    return match.span()


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    import math

    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) if text else 0.0


# keys whose values are secrets: the name ends with the word; pass and pwd only as a word of their
# own (db_pass, dbPass, smtp-pwd; not bypass, compass)
_SECRET_KEY = (
    r"(?i:password|passwd|passphrase|secret|token|api_?key|access_?key|private_?key|credentials?|authorization)$"
    r"|(?i:(?:^|[_\-.])(?:pass|pwd))$|(?<=[a-z])(?:Pass|Pwd)$"
)
# the last letter of every word the pattern ends with, casefolded (as (?i) matches the long s for "s"):
# the pattern runs only on keys that end so (before one line break, which "$" allows)
_SECRET_KEY_LAST = frozenset("detnyls")


def _is_secret_key(key: str) -> bool:
    last = key[-2:-1] if key.endswith("\n") else key[-1:]
    return last.casefold() in _SECRET_KEY_LAST and compiled(_SECRET_KEY).search(key) is not None


def redact(value: Any, text: Callable[[str], str] = redact_text) -> Any:
    """The same JSON value (or builtins of a struct, tuples too) with every secret replaced: values
    under secret-named keys (strings and numbers), and secrets in strings and keys, which `text`
    redacts (it may cut them to size on the way). Keys that become the same marker stay apart
    (`[REDACTED:github-token] (2)`)."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        redacted: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and _is_secret_value(item) and _is_secret_key(key):
                item = "[REDACTED:secret-field]"
            else:
                item = redact(item, text)
            if isinstance(key, str):
                key = new = text(key)
                copies = 1
                while new in redacted:
                    copies += 1
                    new = f"{key} ({copies})"
                key = new
            redacted[key] = item
        return redacted
    if isinstance(value, list):
        return [redact(v, text) for v in value]
    if isinstance(value, tuple):  # as msgspec.to_builtins leaves a struct's tuples
        return tuple(redact(v, text) for v in value)
    return value


def _is_secret_value(value: Any) -> bool:
    return (isinstance(value, str) and value != "") or (
        isinstance(value, (int, float)) and not isinstance(value, bool)
    )


def redact_argv(argv: list[str]) -> list[str]:
    """Command-line arguments with their secrets redacted: each on its own, and the one after
    a flag that names a secret (`--token VALUE`) whole."""
    return [
        "[REDACTED:flag-secret]"
        if i and compiled(f"(?i){_SECRET_FLAGS}").fullmatch(argv[i - 1])
        else redact_text(arg)
        for i, arg in enumerate(argv)
    ]


def pattern_sources() -> list[str]:
    """Every pattern a hook may compile, for ingest/patterns.py to keep compiled."""
    return [
        *(kind.source for kind in KINDS),
        *(kind.command for kind in KINDS if kind.command),
        _COMMAND_SEPARATOR,
        _DELIMITER,
        _SECRET_KEY,
        f"(?i){_SECRET_FLAGS}",
        _AWS_KEY_ID,
        _TOLD_AFTER,
        _SET_TO,
        _TOLD_BEFORE,
        _TOKEN,
    ]
