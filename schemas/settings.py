"""Where reverie keeps things and which Redis it talks to, read from the environment.

Standard library only: the hook imports this on every call.

- REVERIE_HOME: the data directory (default: $XDG_DATA_HOME/reverie, else ~/.local/share/reverie).
- REDIS_URL: a shared Redis (redis://, rediss://, unix://). Unset means the embedded server,
  reached on a unix socket inside the data directory that only this user can open (or, when
  that path is too long for a socket, in $XDG_RUNTIME_DIR/reverie or /tmp/reverie-<uid>, 0700).
- REVERIE_EMBEDDING_MODEL: the model that embeds memories (default: all-MiniLM-L6-v2, shipped
  in a wheel, loaded offline and run in NumPy). Another name or path is a sentence-transformers
  model, loaded the usual way, which may download it.
- REVERIE_RECALL_URL, REVERIE_RECALL_TOKEN: a recall service reached over TCP
  (tcp://127.0.0.1:7377: a compose stack's, published on the host), and the token both ends prove
  they hold, never sending it (ingest/handshake.py); REVERIE_RECALL_LISTEN (host:port) has the
  service listen there too, the token required.
- REVERIE_MCP_LISTEN, REVERIE_MCP_TOKEN, REVERIE_MCP_URL: where the stack's MCP server listens
  over HTTP, the token it asks for, and (for `reverie install`) one elsewhere; unset, it listens
  on loopback, on a port and with a token kept in `$REVERIE_HOME/mcp.json` (reverie/mcp_endpoint.py).
- REVERIE_SESSION_IDLE_MINUTES: how long a session sends no event before it is taken for ended
  (default 30): Claude Code closed with its terminal never says SessionEnd (workers/dynamics/idle.py).
  A value that is not a positive number is ignored.
- REVERIE_CLAUDE_MEMORY_OFF: set (to anything but empty) to leave Claude Code's own memory files
  (CLAUDE.md, .claude/rules, auto memory) unread: neither `reverie import` nor a session's start
  imports them (workers/claude_memory.py).
- REVERIE_HOOKS_OFF: set (to anything but empty) to make `reverie hook` exit at once, recording
  nothing: reverie sets it for the Claude Code it runs itself (`claude -p` extraction), so that
  run is never recorded and never recurses into extraction.

REDIS_URL, REVERIE_RECALL_URL and REVERIE_RECALL_TOKEN may also come from the data directory's
connection file, `$REVERIE_HOME/connection.env`, where `reverie install claude-code` keeps the
secrets it must not write into Claude Code's settings (a Redis password, the recall token). A
variable set (not empty) in the environment wins over the file; an empty one counts as unset, so
the installed hooks clear what Claude Code's environment may hold for another program with
`REDIS_URL=''` and the file's value applies. The file's format:

    # comments and blank lines are skipped
    REDIS_URL=redis://:PASSWORD@127.0.0.1:6379/0
    REVERIE_RECALL_TOKEN=...

one NAME=VALUE a line, the value as written to the end of the line, blanks around it trimmed
(no quotes, no expansion); other names are skipped. It is read only if it is this user's and no
other user may read or write it (0600, as install writes it): otherwise it is skipped, and
`reverie status` says why.
"""

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

HOOKS_OFF = "REVERIE_HOOKS_OFF"
STREAM = "reverie:events"
GROUP = "reverie:archivers"
QUEUE = "reverie"
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
DEFAULT_SESSION_IDLE_MINUTES = 30.0
# What can wait runs this much nicer than the hooks and recall: the projector, the RQ workers,
# the recall service's embedding thread and the encoding it does for the workers.
BACKGROUND_NICENESS = 10
CONNECTION_FILE = "connection.env"
# what the connection file may set (a Redis password and the recall token are its reason to be)
CONNECTION_NAMES = ("REDIS_URL", "REVERIE_RECALL_URL", "REVERIE_RECALL_TOKEN")
_CONNECTION_LIMIT = 1 << 16  # bytes: a connection file is a few lines
# Bump when the vectors' rows (5: projects are paths) or their chunking change: they are then
# rebuilt, from the embedding cache, in a database of their own (Settings.vectors_dir).
VECTORS_LAYOUT = 5
# Unix socket paths must fit in sun_path (108 bytes on Linux).
_MAX_SOCKET_PATH = 100


def _quote_path(path: str) -> str:
    """A path as a URL path: what a URL parser would read otherwise ('%', '?', '#') escaped."""
    return path.replace("%", "%25").replace("?", "%3F").replace("#", "%23")


def _runtime_dir(env: "Mapping[str, str]") -> str:
    """$XDG_RUNTIME_DIR/reverie, else reverie-<uid> in $TMPDIR or /tmp (made 0700 by the servers)."""
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "reverie")
    return os.path.join(env.get("TMPDIR") or "/tmp", f"reverie-{os.getuid()}")


def connection_line(line: str) -> "tuple[str, str] | None":
    """The (name, value) a line of the connection file sets, if it sets one of CONNECTION_NAMES."""
    text = line.strip()
    name, equals, value = text.partition("=")
    if not equals or text.startswith("#") or name.strip() not in CONNECTION_NAMES:
        return None
    return name.strip(), value.strip()


def read_connection(path: str) -> "dict[str, str]":
    """What the connection file at `path` sets, by name. Raises FileNotFoundError if there is
    none, and PermissionError if another user owns it or any other user may read or write it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        found = os.fstat(fd)
        if found.st_uid != os.getuid() or found.st_mode & 0o077:
            raise PermissionError(f"{path} is not this user's alone: chmod 600 it (skipped until then)")
        data = os.read(fd, _CONNECTION_LIMIT)
    finally:
        os.close(fd)
    pairs = (connection_line(line) for line in data.decode("utf-8", "replace").splitlines())
    return dict(pair for pair in pairs if pair is not None)


def without_password(url: str) -> str:
    """`url` fit to show: the password in its user part or its query replaced by `***`."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    netloc, slash, path = rest.partition("/")
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        netloc = f"{user}:***@{host}" if colon else f"***@{host}"
    path, question, query = path.partition("?")
    hidden = ("password=***" if item.lower().startswith("password=") else item for item in query.split("&"))
    return f"{scheme}://{netloc}{slash}{path}{question}{'&'.join(hidden)}"


def _positive(value: "str | None", default: float) -> float:
    """`value` as a positive finite number, else `default`."""
    try:
        number = float(value or "")
    except ValueError:
        return default
    return number if 0 < number < float("inf") else default


class Settings:
    __slots__ = (
        "claude_memory", "connection_from", "embedded", "embedding_model", "home", "recall_listen",
        "recall_token", "recall_url", "redis_url", "runtime_dir", "session_idle_minutes",
    )  # fmt: skip

    def __init__(
        self,
        home: str,
        redis_url: str | None = None,
        embedding_model: str = DEFAULT_EMBEDDING_MODEL,
        runtime_dir: str | None = None,
        *,
        recall_url: str | None = None,
        recall_token: str | None = None,
        recall_listen: str | None = None,
        connection_from: "tuple[str, ...]" = (),
        session_idle_minutes: float = DEFAULT_SESSION_IDLE_MINUTES,
        claude_memory: bool = True,
    ) -> None:
        self.home = os.path.abspath(home)
        # sockets whose path in `home` would not fit go here: a directory of this user's alone
        self.runtime_dir = runtime_dir or _runtime_dir(os.environ)
        self.embedded = not redis_url
        self.redis_url = redis_url or "unix://" + _quote_path(self.socket_path)
        self.embedding_model = embedding_model
        self.recall_url = recall_url  # a recall service on TCP (tcp://host:port), not our unix socket
        self.recall_token = recall_token  # what both ends of a TCP recall exchange prove they hold
        self.recall_listen = recall_listen  # host:port the recall service also listens on (TCP)
        self.connection_from = connection_from  # the names taken from the connection file
        self.session_idle_minutes = session_idle_minutes  # silent this long: taken for ended
        self.claude_memory = claude_memory  # Claude Code's own memory files are imported

    @classmethod
    def from_env(cls, environ: "Mapping[str, str] | None" = None) -> "Settings":
        """The settings `environ` (default: this process's environment) gives, the data
        directory's connection file filling in what it leaves unset (a file that is missing,
        unreadable or not private is skipped)."""
        env = os.environ if environ is None else environ
        home = env.get("REVERIE_HOME")
        if not home:
            data = env.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
            home = os.path.join(data, "reverie")
        try:
            connection = read_connection(os.path.join(home, CONNECTION_FILE))
        except OSError:
            connection = {}
        taken = tuple(name for name in CONNECTION_NAMES if connection.get(name) and not env.get(name))

        def named(name: str) -> str | None:
            return env.get(name) or connection.get(name) or None

        model = env.get("REVERIE_EMBEDDING_MODEL") or DEFAULT_EMBEDDING_MODEL
        return cls(
            home,
            named("REDIS_URL"),
            model,
            _runtime_dir(env),
            recall_url=named("REVERIE_RECALL_URL"),
            recall_token=named("REVERIE_RECALL_TOKEN"),
            recall_listen=env.get("REVERIE_RECALL_LISTEN") or None,
            connection_from=taken,
            session_idle_minutes=_positive(
                env.get("REVERIE_SESSION_IDLE_MINUTES"), DEFAULT_SESSION_IDLE_MINUTES
            ),
            claude_memory=not env.get("REVERIE_CLAUDE_MEMORY_OFF"),
        )

    def _path(self, *parts: str) -> str:
        return os.path.join(self.home, *parts)

    def _socket(self, name: str) -> str:
        """Where socket `name` lives: in the data directory when the path fits, else in this
        user's runtime directory, named after the data directory (ingest/sockets.py)."""
        path = self._path(f"{name}.sock")
        if len(path) <= _MAX_SOCKET_PATH:
            return path
        return os.path.join(self.runtime_dir, f"{self._digest}-{name}.sock")

    @property
    def _digest(self) -> str:
        """The data directory's name in the runtime directory, which all of a user's share."""
        import hashlib

        return hashlib.blake2b(self.home.encode(), digest_size=6).hexdigest()

    @property
    def connection_file(self) -> str:
        """Where the secrets for reaching a stack elsewhere are kept (see the module's docstring)."""
        return self._path(CONNECTION_FILE)

    @property
    def mcp_file(self) -> str:
        """Where the stack's MCP server keeps its port and token (reverie/mcp_endpoint.py)."""
        return self._path("mcp.json")

    @property
    def dashboard_file(self) -> str:
        """Where the dashboard keeps its port and token (reverie/dashboard/server.py)."""
        return self._path("dashboard.json")

    @property
    def redis_shown(self) -> str:
        """The Redis URL fit to print: its password hidden."""
        return without_password(self.redis_url)

    @property
    def settings_file(self) -> str:
        """The user's settings (TOML): the LLM extractor's, for now (workers/llm/)."""
        return self._path("settings.toml")

    @property
    def socket_path(self) -> str:
        """The embedded Redis-compatible server's socket."""
        return self._socket("redis")

    @property
    def recall_socket_path(self) -> str:
        """The warm recall service's socket (`reverie serve`)."""
        return self._socket("recall")

    @property
    def profiles_dir(self) -> str:
        """Each project's last SessionStart context: what the hooks inject when the service is down."""
        return self._path("profiles")

    def profile_path(self, project: str | None) -> str:
        """`project`'s profile, named by a digest of the project: one file per project, whatever
        its path."""
        import hashlib

        digest = hashlib.blake2b((project or "").encode("utf-8", "surrogatepass"), digest_size=16)
        return os.path.join(self.profiles_dir, digest.hexdigest() + ".md")

    @property
    def sessions_dir(self) -> str:
        """Where each session began (its project and worktree root), kept by its first hook
        (ingest/project.py: a session stays in the project it started in)."""
        return self._path("sessions")

    @property
    def identified_dir(self) -> str:
        """A marker per root and the project it was identified as, so a hook emits the
        `project.identified` event once (ingest/project.py)."""
        return self._path("identified")

    def manifest_path(self, session_id: str) -> str:
        """`session_id`'s compaction manifest (schemas/manifest.py), named by a digest of it."""
        import hashlib

        digest = hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=16)
        return os.path.join(self._path("manifests"), digest.hexdigest() + ".json")

    @property
    def spool_dir(self) -> str:
        """Events a hook could not deliver, one file each, drained by the dispatcher."""
        return self._path("spool")

    @property
    def spool_dirs(self) -> list[str]:
        """The spool, and where hooks spool when the data directory's disk is full: this user's
        runtime directory (often in memory: lost on a reboot, kept through an outage)."""
        return [self.spool_dir, os.path.join(self.runtime_dir, f"{self._digest}-spool")]

    @property
    def dead_letter_dir(self) -> str:
        """Input that could not become an event, one JSON record each, with the reason."""
        return self._path("dead-letter")

    @property
    def event_log_dir(self) -> str:
        """The durable event log: Parquet segments."""
        return self._path("events")

    @property
    def projections_dir(self) -> str:
        """The tables folded from the log (DuckDB), rebuilt by `reverie replay`, and the vectors."""
        return self._path("projections")

    @property
    def vectors_root(self) -> str:
        """The vectors (projections/vectors.py): the embedder's lock, the embedding cache, and a
        LanceDB database per model and layout."""
        return os.path.join(self.projections_dir, "vectors")

    @property
    def vectors_dir(self) -> str:
        """The LanceDB database of this model's vectors: another model or layout is another one."""
        import hashlib
        import re

        model = self.embedding_model
        version = hashlib.blake2b(f"{model}\n{VECTORS_LAYOUT}".encode(), digest_size=4).hexdigest()
        slug = re.sub(r"[^A-Za-z0-9.]+", "-", model).strip("-")[-48:]
        return os.path.join(self.vectors_root, f"{slug}-{version}")

    @property
    def redis_dir(self) -> str:
        """The embedded server's working directory (its append-only file)."""
        return self._path("redis")

    @property
    def run_dir(self) -> str:
        """The detached stack's pid file and process logs."""
        return self._path("run")
