"""What recall reads of a prompt: its gist, at most PROMPT_LIMIT characters, the most telling ones.

People paste logs, stack traces, hashes and whole files into prompts. The model reads 256 word
pieces and every extra word costs each full-text search, so recall reads a prompt's gist:

- a run of more than 64 characters of a hash or base64 alphabet keeps its first 64 (a commit
  hash stays whole; a blob keeps a prefix that still finds it);
- a prompt still over the limit keeps its first and last lines, where people write what they
  ask, each side at most a quarter of the limit; between them, the lines that say what went
  wrong (error, exception, failed, ...), then the others in order, while the limit lasts, each
  at most an eighth of it; a gap is marked "…".

Linear in the prompt's length, deterministic, standard library only: the hook sends a long
prompt's gist (a socket carries kilobytes, not megabytes) and a shorter one whole, and the
recall service reads no more than the gist of any prompt (ingest/injection.py says where the
line between them lies).
"""

import re

PROMPT_LIMIT = 2_000
_LONG_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_-])([A-Za-z0-9+/=_-]{64})[A-Za-z0-9+/=_-]+")
_TELLING = re.compile(
    r"(?i)error|exception|traceback|fail|fatal|panic|denied|refused|timed out|timeout|not found|"
    r"cannot|unable|invalid|warning|assert|erreur|échec|echec|impossible"
)
_GAP = "…"


def gist(prompt: str, limit: int = PROMPT_LIMIT) -> str:
    """`prompt` cut to at most `limit` characters, keeping what tells most of what it asks."""
    if len(prompt) <= limit:
        return prompt if len(prompt) < 65 else _LONG_TOKEN.sub(r"\1" + _GAP, prompt)
    text = _LONG_TOKEN.sub(r"\1" + _GAP, prompt)
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    side, middle = limit // 4, limit // 8
    if len(lines) == 1:
        return text[: limit - side - 1] + _GAP + text[-side:]
    first, last = lines[0][:side], lines[-1][-side:]
    kept = {0: first, len(lines) - 1: last}
    # each kept line may cost a newline, and a gap mark with its own before it
    left = limit - len(first) - len(last) - 3
    inner = range(1, len(lines) - 1)
    telling = [i for i in inner if _TELLING.search(lines[i], 0, middle)]
    told = set(telling)
    for i in [*telling, *(i for i in inner if i not in told)]:
        line = lines[i][:middle]
        if len(line) + 3 > left:
            break
        kept[i] = line
        left -= len(line) + 3
    return _joined(kept)


def _joined(kept: dict[int, str]) -> str:
    """The kept lines in their order, a gap marked where lines were left out."""
    out: list[str] = []
    previous = -1
    for i in sorted(kept):
        if i > previous + 1:
            out.append(_GAP)
        out.append(kept[i])
        previous = i
    return "\n".join(out)
