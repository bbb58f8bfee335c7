"""A project's identity: its repository. One function decides it (`identify`), for the hook, the
import, the installer, `reverie remember/recall/forget/reflect` and the MCP server alike.

What a folder's project is:
- in a git repository with a remote: the remote, normalized (`github.com/Owner/Repo` for
  `git@github.com:Owner/Repo.git`, `https://user:token@github.com/Owner/Repo`,
  `ssh://git@github.com:22/Owner/Repo.git`: the host in lower case, no user, password, port,
  query or `.git`; the path's case kept). Clones of one repository are one project, on this
  machine and on any other. The remote is `origin`, else the first the config names; a remote
  that is a local path is that path, made absolute (so a clone of a repository on this disk
  shares its project, whose key is its own path: below).
- in a repository without a remote: its main worktree's path (git's common directory's parent,
  or, for a bare repository, the common directory itself). Every worktree of the repository
  shares it, and it is also the path the repository's events were recorded under before
  projects were repositories.
- anywhere else: the folder's real path.
Worktrees share git's common directory, which is how they are known to be one repository: a
`.git` file names the worktree's git directory (`gitdir: ...`), whose `commondir` names the
common one, whose `config` names the remotes. Git's own files are read, never `git` itself: the
hook, which runs for every tool call, pays a stat per folder up to the repository and three
small reads, and spawns nothing.

Where a session began is its project, however the agent moves (into a subfolder, out of the
repository): the folder Claude Code started in (CLAUDE_PROJECT_DIR; else the folder of the
session's transcript, read back to the ancestor of the cwd whose key it is; else the cwd), at the
session's first hook. The hook keeps it in a small file per session under the data directory
(`kept_place`); the import keeps a transcript's first; the projector folds every event of a
session under its session's first project (projections/folds/base.py).

Where files live stays a path: each event also says the root of the worktree it happened in
(`place_of`: the worktree of its cwd while that is in the session's project, else the root the
session began in), which the hook and the import add to the payload as `worktree_root`, so
extraction names a file relative to it (`lib/x.ex` in every worktree) without reading the disk.

What was recorded under a path before is moved to that path's project by `project.identified`
events ({root, project}): the hook and the import emit one the first time they see a root with
a project other than its own path, or other than the one said last (a marker file per root
under the data directory, `first_sight`), and the stack one for each path recorded in the log
that is a folder on this disk and belongs elsewhere (workers/identify.py). The projector maps
through them, and replay gives the same tables on any machine; a path never identified stays
its own project (what transcripts imported from another machine get).

Claude Code's own name for a project, its `project_key` (the root path with every character
other than a letter or a digit turned into '-', the name of its folder under
~/.claude/projects), is for display and for finding transcripts only: it is not one-to-one
(`proj.x` and `proj-x` share one). When a key cannot be read back to a path (a transcript's
folder with no cwd inside it), the key stands in, as it did for everything recorded before
(the projections read those keys back to paths where the event's cwd allows:
`project_root` in projections/folds/base.py).

Standard library only, and no `re`: the hook imports this.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

UNKNOWN_PROJECT = "unknown"
ROOT_FIELD = "worktree_root"  # the payload field the hook and the import add: the event's worktree root
_SEPARATORS = "/\\"
_SMALL = 4096  # bytes: a .git file, a commondir
_CONFIG_LIMIT = 1 << 20  # bytes of a git config read for its remotes


def project_key(root: str) -> str:
    """Claude Code's folder name for a project rooted at `root` (POSIX or Windows path)."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in _root(root))


def _root(path: str) -> str:
    """`path` without trailing separators (but "/" stays)."""
    return path.rstrip("/\\") or path


def root_of_key(key: str, cwd: str) -> str | None:
    """The folder whose key is `key`: `cwd` or one of its ancestors (None if neither is)."""
    cwd = _root(cwd)
    ends = [i for i, c in enumerate(cwd) if c in _SEPARATORS] + [len(cwd)]
    for end in reversed(ends):
        if end and project_key(cwd[:end]) == key:
            return cwd[:end]
    return None


def transcript_project(transcript_path: str) -> str | None:
    """The project folder (Claude Code's key) of a transcript under .../projects/<key>/<session>.jsonl."""
    parts = [part for part in transcript_path.replace("\\", "/").split("/") if part]
    for i in range(len(parts) - 2, 0, -1):
        if parts[i - 1] == "projects":
            return parts[i]
    return None


# -- a folder's repository, from git's own files ---------------------------------------------


def _read(path: str, limit: int = _SMALL, errors: str = "surrogateescape") -> str | None:
    """The first `limit` bytes of the file at `path` as text, or None (missing, a folder...)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, limit).decode("utf-8", errors)
    except (OSError, ValueError):  # unreadable, or not what we wrote (a file of ours, damaged)
        return None
    finally:
        os.close(fd)


def _repository(folder: str) -> tuple[str, str | None] | None:
    """(the root of the worktree `folder` is in, git's common directory of its repository), or
    None outside any. The common directory is None when a `.git` file names no git directory."""
    path = folder
    while True:
        dotgit = os.path.join(path, ".git")
        try:
            mode = os.stat(dotgit).st_mode
        except OSError:
            mode = 0
        if mode:
            gitdir = dotgit if stat.S_ISDIR(mode) else _gitfile(path, dotgit)
            return path, _common_dir(gitdir) if gitdir else None
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent


def _gitfile(worktree: str, dotgit: str) -> str | None:
    """The git directory a `.git` file names (`gitdir: <path>`, relative to its folder)."""
    text = _read(dotgit)
    if text is None or not text.startswith("gitdir:"):
        return None
    named = text[len("gitdir:") :].strip()
    return os.path.realpath(os.path.join(worktree, named)) if named else None


def _common_dir(gitdir: str) -> str:
    """Git's common directory: what a linked worktree's `commondir` names, else the git dir itself."""
    named = _read(os.path.join(gitdir, "commondir"))
    named = named.strip() if named else ""
    return os.path.normpath(os.path.join(gitdir, named)) if named else gitdir


def _config_value(raw: str) -> str:
    """A value as git's config syntax writes it: quotes taken off, escapes read, a comment cut."""
    out: list[str] = []
    quoted = False
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == '"':
            quoted = not quoted
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append({"n": "\n", "t": "\t", "b": "\b"}.get(raw[i], raw[i]))
        elif c in "#;" and not quoted:
            break
        else:
            out.append(c)
        i += 1
    return "".join(out).strip()


def _config_section(header: str) -> str:
    """`remote "origin"` -> `remote.origin` (the subsection's case kept), `core` -> `core`."""
    name, quote, sub = header.partition('"')
    if quote:
        sub = sub.rpartition('"')[0].replace('\\"', '"').replace("\\\\", "\\")
        return name.strip().lower() + "." + sub
    return header.strip().lower()  # [remote.origin], git's old spelling, is lower case too


def git_config(text: str) -> tuple[str | None, str | None]:
    """(the url of the remote `origin`, else of the first remote that has one; `core.worktree`),
    as a git config file states them (each None if it does not)."""
    section = ""
    origin = first = worktree = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            end = line.find("]")
            section = _config_section(line[1:end]) if end > 0 else ""
            line = line[end + 1 :].strip() if end > 0 else ""
        if not line or line[0] in "#;":
            continue
        name, equals, value = line.partition("=")
        name = name.strip().lower()
        if not equals:
            continue
        if name == "url" and section.startswith("remote."):
            url = _config_value(value)
            if origin is None and section == "remote.origin":
                origin = url
            first = first or url
        elif name == "worktree" and section == "core":
            worktree = _config_value(value)
    return origin or first, worktree


def _without_git(path: str) -> str:
    path = path.rstrip("/\\")
    return (path[:-4] if path.endswith(".git") else path).rstrip("/\\")


def _host_path(host: str, path: str) -> str | None:
    # no port (ssh and https reach one repository); an IPv6 address keeps its brackets
    host = host[: host.find("]") + 1] if host.startswith("[") else host.partition(":")[0]
    host = host.strip().lower()
    path = _without_git(path.partition("?")[0].partition("#")[0].strip("/"))
    if not host:
        return None
    return f"{host}/{path}" if path else host


def remote_key(url: str, base: str = "") -> str | None:
    """The repository a remote URL names, one string for its every spelling: `host/path` for
    a URL or scp-like address (no credentials, no port, no `.git`, the host in lower case), the
    absolute path for a local one (relative to `base`); None for an empty one."""
    url = url.strip()
    if not url:
        return None
    scheme, sep, rest = url.partition("://")
    if sep and scheme.lower() != "file":
        authority, _, path = rest.partition("/")
        return _host_path(authority.rpartition("@")[2], path)  # user and password dropped
    if sep:
        local = "/" + rest.partition("/")[2]  # file:///srv/x.git, file://host/srv/x.git
    else:
        slash = url.find("/")
        at = url.rfind("@", 0, len(url) if slash < 0 else slash)
        address = url[at + 1 :]
        colon, slash = address.find(":"), address.find("/")
        # scp-like [user@]host:path, a colon before any slash (C:\repo is a drive, not a host)
        if colon > 1 and (slash < 0 or colon < slash):
            return _host_path(address[:colon], address[colon + 1 :])
        local = url
    path = os.path.normpath(os.path.join(base, local))
    return _without_git(os.path.realpath(path) if os.path.isdir(path) else path) or path


def _main_worktree(common: str, worktree: str | None) -> str:
    """Where a repository without a remote lives: its main worktree (the common dir's parent),
    or, for a bare one, its `core.worktree`, else the common directory itself."""
    common = os.path.realpath(common)
    if os.path.basename(common) == ".git":
        return os.path.dirname(common)
    return os.path.normpath(os.path.join(common, worktree)) if worktree else common


def identify(folder: str) -> tuple[str, str]:
    """(project, root) of `folder`: its repository (see the module's docstring) and the root of
    its worktree; outside any repository, its real path twice. A folder not on this disk (a
    transcript from another machine, a key that stands in) is taken as it is written."""
    path = _root(folder)
    if not path:
        return UNKNOWN_PROJECT, ""
    if not os.path.isdir(path):
        return path, path
    real = os.path.realpath(path)
    found = _repository(real)
    if found is None:
        return real, real
    root, common = found
    if common is None:
        return root, root
    config = _read(os.path.join(common, "config"), _CONFIG_LIMIT)
    url, worktree = git_config(config) if config else (None, None)
    key = remote_key(url, root) if url else None
    return key or _main_worktree(common, worktree), root


def launch_folder(payload: Mapping[str, object], environ: Mapping[str, str]) -> str | None:
    """The folder a hook payload's session was started in: CLAUDE_PROJECT_DIR, else its
    transcript's folder read back to a path through the cwd (the key itself when it cannot be),
    else the cwd; None with nothing to go on."""
    root = environ.get("CLAUDE_PROJECT_DIR")
    if root:
        return root
    cwd = payload.get("cwd")
    cwd = cwd if isinstance(cwd, str) and cwd else None
    transcript = payload.get("transcript_path")
    key = transcript_project(transcript) if isinstance(transcript, str) else None
    if key:
        return (root_of_key(key, cwd) if cwd else None) or key
    return cwd


def project_of(payload: Mapping[str, object], environ: Mapping[str, str]) -> str:
    """The project of a hook payload received in the environment `environ`, as its session's
    first hook would find it (`place_of` knows where a session began)."""
    return place_of(payload, environ)[0]


def place_of(
    payload: Mapping[str, object],
    environ: Mapping[str, str],
    began: tuple[str, str] | None = None,
    identified: Callable[[str], tuple[str, str]] = identify,
) -> tuple[str, str]:
    """(project, worktree root) of one event: the project its session began in (`began`, else
    the one its payload names), and the root of the worktree of its cwd while that cwd is in the
    same project, else the root the session began in. (`identified`: `identify`, or a cache of it.)"""
    launch = None
    if began is None:
        launch = launch_folder(payload, environ)
        began = identified(launch) if launch else (UNKNOWN_PROJECT, "")
    project, root = began
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd and cwd != launch:
        here, here_root = identified(cwd)
        if here == project:
            root = here_root
    return project, root


# -- what the hook keeps between its calls, under the data directory --------------------------


def _name(text: str) -> str:
    """A file name for `text`, one-to-one: `%`, `/`, `\\`, `#` and NUL escaped (`%2F`...); a
    digest (`#...`) when that is too long or not a name this file system takes. (No hashlib:
    its import loads OpenSSL, 2 ms of a hook's 10; only such a name pays for `_blake2`.)"""
    name = text.replace("%", "%25").replace("/", "%2F").replace("\\", "%5C").replace("#", "%23")
    name = name.replace("\0", "%00")
    try:
        fits = name not in ("", ".", "..") and len(os.fsencode(name)) <= 200
    except UnicodeError:
        fits = False
    if fits:
        return name
    if TYPE_CHECKING:
        from hashlib import blake2b
    else:
        from _blake2 import blake2b
    return "#" + blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _kept(path: str) -> tuple[str, str] | None:
    text = _read(path, 1 << 16, "surrogatepass")
    if not text or not text.endswith("\n") or text.count("\0") != 1:
        return None  # none, or half written before a crash
    project, _, root = text[:-1].partition("\0")
    return project, root


def kept_place(sessions_dir: str, session_id: str) -> tuple[str, str] | None:
    """The (project, root) the session `session_id` began in, as `keep_place` kept it."""
    return _kept(os.path.join(sessions_dir, _name(session_id)))


def keep_place(sessions_dir: str, session_id: str, place: tuple[str, str]) -> tuple[str, str]:
    """Keep `place` as where the session began, unless another hook kept one first (then that
    one); the place kept. Written whole or not at all; a file a crash left half written is
    replaced. A data directory that cannot take it keeps nothing: the place is returned."""
    path = os.path.join(sessions_dir, _name(session_id))
    temp = f"{path}.{os.getpid()}.tmp"
    data = f"{place[0]}\0{place[1]}\n".encode("utf-8", "surrogatepass")
    kept: tuple[str, str] | None = place
    try:
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except FileNotFoundError:
            os.makedirs(sessions_dir, mode=0o700, exist_ok=True)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        try:
            os.link(temp, path)  # the first hook of the session wins
        except FileExistsError:
            kept = _kept(path)
            if kept is None:  # half written before a crash
                os.replace(temp, path)
        except OSError:  # a file system without hard links
            os.replace(temp, path)
        if os.path.lexists(temp):
            os.unlink(temp)
    except OSError:
        return place
    return kept or place


def first_sight(marks_dir: str, root: str, project: str) -> str | None:
    """The marker to leave (`mark`) once it is said that `root` belongs to `project`, or None
    if there is nothing to say: it was said last, or the root is its own project and was never
    said to be another's. One read of a small file."""
    path = os.path.join(marks_dir, _name(root))
    said = _read(path, 1 << 16, "surrogatepass")
    if said == project or (said is None and project == root):
        return None
    return path


def mark(path: str, project: str) -> None:
    """Leave the marker `first_sight` named, for `project` (nothing if the data directory cannot
    take it: the identification is said again next time, which is harmless)."""
    data = project.encode("utf-8", "surrogatepass")
    try:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        except FileNotFoundError:
            os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    except OSError:
        pass
