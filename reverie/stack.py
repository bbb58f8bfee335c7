"""`reverie up`, `down`, `status`, `replay`, `embed`, and the Procfile's other processes."""

import os
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from reverie.console import err, fail, out, progress_bar, warn_quarantined
from schemas.settings import Settings

if TYPE_CHECKING:
    from collections.abc import Callable

    from reverie.loopback import Endpoint
    from schemas.status import JobState, Quarantined, StackStatus


_STATUS_WAIT_S = 2.0  # for the recall service's answer, before the command reads it all itself


def up(detach: bool, workers: int, dashboard: bool = True) -> int:
    from workers.supervisor import Supervisor, running_pid

    settings = Settings.from_env()
    if workers < 1:
        return fail("--workers must be at least 1")
    if (pid := running_pid(settings)) is not None:
        if detach:
            out.print(f"reverie is already running (pid {pid}) with data in {settings.home}")
            return 0
        return fail(f"reverie is already running (pid {pid}); stop it with `reverie down`")
    if detach:
        return _up_detached(settings, workers, dashboard)
    from workers.logs import configure_logging

    configure_logging(json=not sys.stderr.isatty())
    return Supervisor(settings, workers, dashboard=dashboard).run()


def _up_detached(settings: Settings, workers: int, dashboard: bool) -> int:
    from workers.status import stack_status

    os.makedirs(settings.run_dir, mode=0o700, exist_ok=True)
    log_path = os.path.join(settings.run_dir, "stack.log")
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [
                sys.executable,
                "-P",
                "-m",
                "reverie",
                "up",
                "--workers",
                str(workers),
                *([] if dashboard else ["--no-dashboard"]),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
        )
    deadline = time.monotonic() + 60
    with err.status("starting reverie…"):
        while time.monotonic() < deadline:
            if process.poll() is not None:
                with open(log_path, "rb") as f:
                    tail = f.read()[-2000:].decode("utf-8", "replace")
                return fail(
                    f"the stack exited with code {process.returncode}; the end of {log_path}:\n{tail}"
                )
            state = stack_status(settings)
            if state.reachable and state.dispatchers and state.workers:
                out.print(
                    f"reverie is up (pid {process.pid}), data in {settings.home}, "
                    f"Redis at {settings.redis_shown}\nlogs: {log_path}; stop it with `reverie down`"
                )
                if dashboard:
                    out.print(_dashboard_line(settings, deadline), soft_wrap=True)
                return 0
            time.sleep(0.2)
    return fail(f"the stack did not come up within 60 s; see {log_path}")


def _dashboard_line(settings: Settings, deadline: float) -> str:
    """Where the stack's dashboard is, once it listens (by `deadline`, time.monotonic)."""
    from reverie.dashboard.server import running, url

    while (endpoint := running(settings)) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if endpoint is None:
        return "dashboard: not listening yet; `reverie dashboard` prints its URL once it does"
    return f"dashboard: {url(endpoint)}"


def down() -> int:
    from workers.supervisor import running_pid

    settings = Settings.from_env()
    pid = running_pid(settings)
    if pid is None:
        out.print("reverie is not running")
        return 0
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    with err.status(f"stopping reverie (pid {pid})…"):
        # the supervisor lets go of its pid file once every process it started has ended, then
        # ends itself (its interpreter's teardown); its parent, long gone, may be slow to reap it,
        # so ended is gone or a zombie
        while time.monotonic() < deadline:
            if running_pid(settings) is None and _ended(pid):
                out.print("reverie stopped")
                return 0
            time.sleep(0.05)
    return fail(f"reverie (pid {pid}) did not stop within 60 s")


def _ended(pid: int) -> bool:
    from workers.pids import ended

    try:
        return ended(pid)
    except PermissionError:  # the pid is another user's now: ours ended
        return True


def stack_state(settings: Settings) -> "StackStatus":
    """The stack's status: as its recall service tells it (it holds everything loaded: a few
    milliseconds), else read here from the files and Redis (a second of imports)."""
    found = _asked_status(settings)
    if found is None:
        from workers.status import stack_status

        found = stack_status(settings)
        if found.stack_pid is not None:  # up, but its service not answering
            waiting = "not answering: starting (loading the model and the memories), restarting or busy"
            found = msgspec.structs.replace(found, recall_service=waiting)
    from reverie.background_import import read_progress

    return msgspec.structs.replace(
        found,
        mcp_server=_mcp_server(settings, found.stack_pid),
        dashboard=_dashboard(settings, found.stack_pid),
        transcript_import=read_progress(settings),
    )


def _mcp_server(settings: Settings, stack_pid: int | None) -> str:
    """Where the stack's MCP server listens and whether it does (a loopback connect)."""
    from reverie.mcp_endpoint import url

    return _served(
        settings.mcp_file, stack_pid, lambda e: f"{url(e)} (listening)", url,
        "not running (sessions start `reverie mcp` on stdio)", "the stack restarts it; see its log",
    )  # fmt: skip


def _dashboard(settings: Settings, stack_pid: int | None) -> str:
    """The dashboard's URL (with its token) and whether it listens (a loopback connect)."""
    from reverie.dashboard.server import url

    return _served(
        settings.dashboard_file, stack_pid, url, lambda e: e.origin,
        "not running (`reverie dashboard` serves it)", "the stack restarts it, unless up with --no-dashboard",
    )  # fmt: skip


def _served(
    path: str,
    stack_pid: int | None,
    listening: "Callable[[Endpoint], str]",
    where: "Callable[[Endpoint], str]",
    idle: str,
    restarts: str,
) -> str:
    """What `reverie status` says of a server of the stack whose endpoint the file `path`
    keeps: `idle` when the stack is down or it never listened; where, when it does not listen;
    `listening`'s words when it does."""
    from reverie.loopback import kept, listens

    endpoint = kept(path)
    if stack_pid is None or endpoint is None or not endpoint.port:
        return idle
    if not listens(endpoint, timeout=0.2):
        return f"{where(endpoint)} (NOT LISTENING: {restarts})"
    return listening(endpoint)


def _asked_status(settings: Settings) -> "StackStatus | None":
    from ingest.injection import ask_service
    from schemas.status import StackStatus

    if not settings.recall_url and not os.path.exists(settings.recall_socket_path):
        return None
    try:
        answer = ask_service(settings, {"status": True, "deadline_s": _STATUS_WAIT_S}, _STATUS_WAIT_S)
        return msgspec.json.decode(msgspec.json.encode(answer["status"]), type=StackStatus)
    except (OSError, ValueError, KeyError, msgspec.ValidationError):
        return None


def status(as_json: bool) -> int:
    settings = Settings.from_env()
    state = stack_state(settings)
    if as_json:
        sys.stdout.write(msgspec.json.encode(state).decode() + "\n")
        return 0 if state.reachable else 1
    from rich.markup import escape
    from rich.table import Table

    table = Table(show_header=False, box=None)
    table.add_column(no_wrap=True)
    table.add_column(overflow="fold")  # a URL, a path: folded whole, never cut (the dashboard's token)
    rows = [
        ("stack", f"running (pid {state.stack_pid})" if state.stack_pid else "not running (here)"),
        ("data directory", _data_directory(settings)),
        ("recall service", state.recall_service),
        ("mcp server", state.mcp_server),
        ("dashboard", state.dashboard),
        ("redis", f"{state.redis_url} ({'reachable' if state.reachable else 'UNREACHABLE'})"),
        *_stream(state),
        ("spooled events", str(state.spooled)),
        ("dead letters", _dead_letters(state, settings)),
        ("disk", _disk(state)),
        ("archived events", f"{state.archived} in {state.segments} segments"),
        ("projections", _age("snapshot", state.projections_published_at)),
        ("vectors", _age("manifest", state.vectors_published_at)),
        *_processes(state),
        ("llm extraction", f"{escape(state.llm)}; {state.llm_tokens_today:,} tokens spent today"),
        *((f"job {job.name}", _scheduled(job)) for job in state.scheduled),
        ("memory health", _health(state.memory_health)),
    ]
    if state.transcript_import is not None:
        from reverie.background_import import described

        rows.append(("transcript import", escape(described(state.transcript_import))))
    if os.path.exists(settings.connection_file):
        rows.append(("connection", _connection(settings)))
    from reverie.installing.stale import stale_hooks

    stale = stale_hooks(os.path.expanduser("~"), os.getcwd())
    if stale:
        rows.append(
            (
                "claude code hooks",
                f"[bold red]{len(stale)} cannot run[/]: a path they name is gone (an upgrade moved "
                "reverie? run `reverie install claude-code` again), or `reverie` is not on PATH; "
                + escape(stale[0]),
            )
        )
    for name, value in rows + _quarantined(state.quarantined):
        table.add_row(f"[bold]{name}[/]", value)
    out.print(table)
    return 0 if state.reachable else 1


# what a row kept in Redis says while Redis does not answer
_UNKNOWN = "unknown (Redis does not answer)"


def _data_directory(settings: Settings) -> str:
    from rich.markup import escape

    if os.path.isdir(settings.home):
        return escape(settings.home)
    return escape(settings.home) + " (does not exist yet: no memory here; `reverie up` makes it)"


def _stream(state: "StackStatus") -> list[tuple[str, str]]:
    """The stream's rows: its length, and how far the dispatchers' consumer group is behind."""
    if not state.reachable:
        return [(name, _UNKNOWN) for name in ("stream length", "pending", "lag")]
    if state.pending is None:
        no_group = "none yet (no dispatcher has read the stream)"
        return [("stream length", str(state.stream_length)), ("pending", no_group), ("lag", no_group)]
    lag = "unknown (the server cannot count it)" if state.lag is None else str(state.lag)
    return [("stream length", str(state.stream_length)), ("pending", str(state.pending)), ("lag", lag)]


def _processes(state: "StackStatus") -> list[tuple[str, str]]:
    """Who is alive and what they do, as Redis keeps it."""
    names = ("dispatchers", "workers", "jobs under way", "scheduled jobs", "failed jobs")
    if not state.reachable:
        return [(name, _UNKNOWN) for name in names]
    said = (
        ", ".join(f"{d.consumer} (pid {d.pid})" for d in state.dispatchers) or "none alive",
        ", ".join(f"{w.name} ({w.state})" for w in state.workers) or "none alive",
        str(state.jobs_under_way or 0),
        _waiting(state),
        _failed(state),
    )
    return list(zip(names, said, strict=True))


def _dead_letters(state: "StackStatus", settings: Settings) -> str:
    """How many inputs became no event, and where to read them and take them away."""
    if not state.dead_letters:
        return "none"
    from rich.markup import escape

    return f"[yellow]{state.dead_letters}[/], input that became no event, with the reason: " + escape(
        'reverie sql "select recorded_at, stage, reason, head from dead_letters"; '
        f"each is a file in {settings.dead_letter_dir}, to delete once read"
    )


def _scheduled(job: "JobState") -> str:
    from rich.markup import escape

    every = f"cron {job.cron}"
    if job.last_run is None:
        said = f"{every}; not run yet" + (f", next {_when(job.next_run)}" if job.next_run else "")
    else:
        outcome = job.last_status or "expired"
        said = f"{every}; last {_when(job.last_run)} ({outcome}), next {_when(job.next_run)}"
    if job.last_error:
        said += f"; [bold red]last error[/]: {escape(job.last_error)}"
    return said


def _when(at: datetime | None) -> str:
    if at is None:
        return "unknown"
    seconds = (at - datetime.now(UTC)).total_seconds()
    span = f"{abs(seconds) / 3600:.1f} h" if abs(seconds) >= 3600 else f"{abs(seconds) / 60:.0f} min"
    if abs(seconds) < 60:
        span = f"{abs(seconds):.0f} s"
    return f"in {span}" if seconds > 0 else f"{span} ago"


def _health(health: dict[str, Any]) -> str:
    if not health:
        return "no snapshot yet"
    return ", ".join(f"{name} {_shown(value)}" for name, value in health.items())


def _shown(value: Any) -> str:
    if value is None:  # a ratio or a mean over nothing
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


def _connection(settings: Settings) -> str:
    """What the data directory's connection file gives (the names the environment leaves to it),
    or why it is skipped."""
    from rich.markup import escape

    from schemas.settings import read_connection

    try:
        read_connection(settings.connection_file)
    except OSError as e:
        return f"[bold red]skipped[/]: {escape(str(e))}"
    taken = ", ".join(settings.connection_from) or "nothing (the environment sets it all)"
    return escape(f"{settings.connection_file}: {taken}")


def _waiting(state: "StackStatus") -> str:
    if not state.scheduled_jobs:
        return "none"
    from rich.markup import escape

    soonest = "; ".join(
        escape(f"{job.description} {_when(datetime.fromisoformat(job.due_at))}")
        for job in state.next_scheduled_jobs[:3]
    )
    return f"[yellow]{state.scheduled_jobs}[/] (retries waiting their pause; soonest: {soonest})"


def _failed(state: "StackStatus") -> str:
    if not state.failed_jobs:
        return "none"
    from rich.markup import escape

    newest = "; ".join(escape(f"{job.description}: {job.error}") for job in state.newest_failed_jobs[:3])
    return (
        f"[bold red]{state.failed_jobs}[/] (failed every try; newest: {newest}); "
        "tried again within the hour, or now with `reverie think --retry-failed`"
    )


def _disk(state: "StackStatus") -> str:
    free = "unknown" if state.disk_free is None else f"{state.disk_free / 2**20:,.0f} MiB free"
    if state.disk_full or state.redis_write_error:
        problem = state.redis_write_error or "the stack waits for space, and resumes by itself"
        return f"[bold red]FULL[/] ({free}): {problem}"
    return free


def _quarantined(notes: "list[Quarantined]") -> list[tuple[str, str]]:
    """A row per file set aside from the log, and where they are."""
    rows = [
        (
            "quarantined",
            f"[yellow]{n.segment}[/]: "
            + (f"{n.salvaged} of {n.rows} events kept" if n.rows is not None else "unreadable, nothing kept"),
        )
        for n in notes
    ]
    return [*rows, ("quarantine folder", os.path.dirname(notes[0].moved_to))] if notes else []


def _age(what: str, published_at: float | None) -> str:
    if published_at is None:
        return "none published yet"
    return f"{what} published {max(0.0, time.time() - published_at):.1f} s ago"


def server() -> int:
    from workers.server import exec_server

    settings = Settings.from_env()
    if not settings.embedded:
        where = f" in {settings.connection_file}" if "REDIS_URL" in settings.connection_from else ""
        return fail(f"REDIS_URL is set{where} ({settings.redis_shown}): there is no embedded server to run")
    exec_server(settings)
    return 0  # not reached: the server replaced this process


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def _in_background() -> None:
    """Folding, embedding and jobs can wait, a prompt cannot: on busy cores these processes give
    way to the hooks and the recall service (a process at nice 10 gets about a tenth of the time
    one at 0 gets). Under the paced load of benchmarks/recall_latency.py at 100k memories, each
    prompt sets the stack folding, embedding and re-reading for about a second of CPU."""
    from schemas.settings import BACKGROUND_NICENESS

    os.nice(BACKGROUND_NICENESS)


def dispatch(name: str | None) -> int:
    from workers.dispatcher import Dispatcher
    from workers.logs import configure_logging
    from workers.redis_client import connect

    configure_logging(json=True)
    settings = Settings.from_env()
    Dispatcher(settings, connect(settings), consumer=name).run(_stop_on_signals())
    return 0


def project() -> int:
    _in_background()  # the imports too
    from workers.logs import configure_logging
    from workers.projector import run_projector

    configure_logging(json=True)
    run_projector(Settings.from_env(), _stop_on_signals())
    return 0


def embed() -> int:
    from projections.sql import DamagedSnapshot, NoSnapshot
    from schemas.disk.files import Busy
    from workers.embedder import lock_vectors, open_embedder, sync_once

    settings = Settings.from_env()
    try:
        lock = lock_vectors(settings)
    except Busy:
        return fail(
            "another process is embedding (a running stack's recall service keeps the vectors in step)"
        )
    with lock:
        with err.status(f"loading {settings.embedding_model}…"):
            embedder = open_embedder(settings)
        try:
            with progress_bar() as progress:
                task = progress.add_task("embedding memories", total=None)
                report = sync_once(
                    settings, embedder, lambda done, total: progress.update(task, completed=done, total=total)
                )
        except NoSnapshot:
            return fail("nothing to embed yet: start the stack (`reverie up`) or run `reverie replay` first")
        except DamagedSnapshot as e:
            return fail(str(e))
        finally:
            embedder.close()
    out.print(
        f"{report.memories_added} memories embedded ({report.chunks_added} chunks, "
        f"{report.chunks_encoded} computed, the rest from the cache), {report.memories_removed} removed; "
        f"{embedder.vectors.count()} chunks in {embedder.vectors.path}"
    )
    return 0


def serve() -> int:
    # One BLAS thread (set before NumPy loads it): the model's threads would run the embedder's
    # batches at the recall's priority, and on 2 cores a short query is no faster on two.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # and no pool of tokenizing threads: it would take the niceness of the thread that first
    # used it, the embedder's, and tokenize every prompt after at that priority
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from workers.logs import configure_logging
    from workers.recall_service import run_recall_service

    configure_logging(json=True)
    run_recall_service(Settings.from_env(), _stop_on_signals())
    return 0


def replay() -> int:
    from projections.event_log import EventLog
    from projections.projector import replay as rebuild

    settings = Settings.from_env()
    _identify_recorded(settings)
    total = EventLog(settings.event_log_dir, warn_quarantined).count()
    with progress_bar() as progress:
        task = progress.add_task("folding events", total=total)
        folded = rebuild(
            settings.event_log_dir,
            settings.projections_dir,
            progress=lambda n: progress.update(task, completed=n),
            on_quarantine=warn_quarantined,
        )
        progress.update(task, completed=total)
    out.print(f"replayed {folded} events into a fresh store, now current")
    return 0


def _identify_recorded(settings: Settings) -> None:
    """Before a replay: say which project each path recorded in the log belongs to, where this
    disk knows (workers/identify.py), and wait for the stack to archive it, so this replay folds
    what was recorded there under its project."""
    import duckdb

    from projections.sql import DamagedSnapshot, NoSnapshot, connect
    from reverie.importing import wait_until_archived
    from workers.identify import say, unidentified

    try:
        db = connect(settings, snapshot_required=True)
    except (NoSnapshot, DamagedSnapshot):
        return
    try:
        found = unidentified(db)
    except duckdb.Error:
        return
    finally:
        db.close()
    went = say(settings, found)
    if not went:
        return
    roots = ", ".join(f"{f.root} -> {f.project}" for f in found)
    err.print(f"identified {len(found)} recorded paths as their projects: {roots}", highlight=False)
    if went == "spool" or not wait_until_archived(settings, len(found), timeout=30):
        err.print(
            "the stack is not running: the identifications are spooled, and fold (rebuilding the "
            "projections once) when it starts",
            highlight=False,
        )


def scheduler() -> int:
    from workers.logs import configure_logging
    from workers.thinking.schedule import run_scheduler

    configure_logging(json=True)
    return run_scheduler(Settings.from_env())


def worker() -> int:
    _in_background()  # the imports too
    from workers.logs import configure_logging
    from workers.queue_worker import run_worker

    configure_logging(json=True)
    return run_worker(Settings.from_env(), _stop_on_signals())
