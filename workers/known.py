"""What the agent holds already, which the UserPromptSubmit hook does not give it again: the files
Claude Code loads as memory where its session began (CLAUDE.md with reverie's own section in it,
the user's text, rules, auto memory: ingest/claude_memory.py lists them), and what SessionStart
gave the same session.

Each file is read at most FILE_LIMIT bytes, and again only when its size or modification time
changed; what SessionStart gave is kept for the last SESSIONS sessions, in the recall service's
memory (a restarted service gives a session's start again at most once more).
"""

import os
from collections import OrderedDict

from ingest.claude_memory import Place, memory_files
from ingest.project import kept_place
from schemas.disk.files import read_file

FILE_LIMIT = 256 * 1024
SESSIONS = 1_024


class Known:
    def __init__(self, sessions_dir: str, home: str) -> None:
        self.sessions_dir = sessions_dir
        self.home = home
        self._files: dict[str, tuple[tuple[int, int], str]] = {}  # path -> ((size, mtime), text)
        self._started: OrderedDict[str, str] = OrderedDict()  # session -> what SessionStart gave

    def started(self, session_id: str | None, given: str) -> None:
        """Keep what SessionStart gave `session_id`."""
        if not session_id or not given:
            return
        self._started[session_id] = given
        self._started.move_to_end(session_id)
        while len(self._started) > SESSIONS:
            self._started.popitem(last=False)

    def of(self, session_id: str | None) -> list[str]:
        """The texts the agent of `session_id` holds already."""
        if not session_id:
            return []
        held = [self._started[session_id]] if session_id in self._started else []
        place = kept_place(self.sessions_dir, session_id)
        if place is None or not place[1]:
            return held
        files, _, _ = memory_files(Place(*place), self.home, os.environ)
        return held + [text for f in files if (text := self._read(f.path))]

    def _read(self, path: str) -> str:
        try:
            status = os.stat(path)
            stamp = (status.st_size, status.st_mtime_ns)
            cached = self._files.get(path)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            data, _ = read_file(path, FILE_LIMIT)
        except OSError:
            self._files.pop(path, None)
            return ""
        text = data.decode("utf-8", "replace")
        self._files[path] = (stamp, text)
        return text
