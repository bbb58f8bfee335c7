"""The warm recall service (`reverie serve`): the model, the vectors and the projections stay
loaded, and recall answers over a unix socket in milliseconds.

Its process holds the stack's one copy of the embedding model: the embedder runs in it, as a
thread at a lower priority (workers/embedder.py), and the RQ workers ask it for vectors
(`encode` requests), which it answers one at a time, at the embedder's priority, beside recalls
and without waiting for their turn. `reverie status` asks it too; `reverie reflect` and the MCP
server's memory_reflect have it form their opinions (recall, then the follower `reflect`, here:
the asker loads nothing). Should its embedding thread end by an error, the service ends, and
the supervisor starts it again.

One JSON line in (schemas/recall.py), one JSON line out. Recalls take turns (one model, one
DuckDB connection), each within its deadline: the one its asker gives (the hooks wait 2 s),
at most 10 s. A request that cannot have its turn in time, or whose recall passes it, is
answered with an error at once, so one slow request never holds the others. Every recall is fed back: a
`memory.retrieved` event (query, result ids, scores) goes to the stream, for spaced repetition.
A SessionStart answer is also kept as the project's profile, which the hooks inject when the
service is down or late. The Stop and PreCompact hooks have it write the session's compaction
manifest (schemas/manifest.py), which SessionStart gives back first after a compaction or a
resume.

On TCP (REVERIE_RECALL_LISTEN: a compose stack's, published on the host) a client and the
service first prove to each other that they hold REVERIE_RECALL_TOKEN, neither sending it
(ingest/handshake.py); a client that cannot is refused before its request is read.
"""

import contextlib
import math
import os
import socketserver
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import duckdb
import msgspec
import structlog

from ingest import handshake
from ingest.emit import Emitter
from projections import sql
from projections.embedding_model import load_encoder
from projections.recall import render
from projections.recall.block import Shown
from projections.recall.memories import Memories
from projections.recall.pipeline import Overdue, Recaller
from projections.vectors import Vectors
from schemas.disk.files import private_directory, write_durably
from schemas.disposition import Disposition
from schemas.kinds import MEMORY_RETRIEVED, SOURCE_WORKER
from schemas.manifest import AFTER, CompactionManifest, WrittenAt, next_steps
from schemas.observed import MemoryRetrieved
from schemas.recall import REQUEST_LIMIT, Given, Preview, Recall, RecallRequest
from schemas.reflection import Reflection
from schemas.settings import Settings
from schemas.status import StackStatus
from schemas.text.gist import gist
from schemas.why import Why
from workers.dynamics.reflect import evidence_request
from workers.embedder import in_background, run_embedder
from workers.known import Known
from workers.redis_client import connect
from workers.reflection import reflection
from workers.status import stack_status
from workers.why import Unknown, why

log = structlog.get_logger("reverie.recall")
REFRESH_S = 1.0  # how often the service looks for new memories
# How often it reads a snapshot that brings no new memory, only recalls and what the workers
# learned (a recall's activations, a fact's confidence): building recall's tables of a snapshot
# costs 230 ms at 100k memories, and every recall makes a snapshot.
_SNAPSHOT_EVERY_S = 5.0
_DEADLINE_S = 10.0  # the longest a recall may take, whatever its asker says
_decode = msgspec.json.Decoder(RecallRequest)
_encode = msgspec.json.Encoder()


class RecallService:
    def __init__(self, settings: Settings, recaller: Recaller) -> None:
        self.settings = settings
        self.recaller = recaller
        self.lock = threading.Lock()  # one DuckDB connection, one model: one recall at a time
        self.encoding = threading.Lock()  # the workers' texts, one request at a time
        self.reading = threading.Lock()  # the status, one request at a time
        self.redis = connect(settings, timeout=1.0)
        self.known = Known(settings.sessions_dir, os.path.expanduser("~"))
        self._opened_at = -math.inf  # when the snapshot read was opened
        self._memories_changed = False  # since it was: new memories want their features now
        self._failing: tuple[float, str] | None = None  # since when reading new memories fails, why

    def answer(self, request: RecallRequest) -> dict[str, Any]:
        """The answer to `request`; Overdue if it cannot be had within the request's deadline."""
        if request.encode is not None:  # the model alone: no snapshot, no turn to wait for
            in_background()  # this handler's thread, which ends with the request
            with self.encoding:
                vectors = self.recaller.encoder.encode(request.encode)
            return {"vectors": vectors.astype("<f4").tobytes()}
        if request.status:
            return {"status": self._status()}
        if request.why is not None:
            try:
                return {"why": self._why(request.why, request.project)}
            except Unknown as e:
                return {"error": str(e)}
        if request.prompt:  # what recall reads of a prompt is its gist, whoever sent it whole
            request = msgspec.structs.replace(request, prompt=gist(request.prompt))
        asked = (
            request if request.reflect is None else evidence_request(request.prompt, request.project or "")
        )
        deadline = time.monotonic() + min(request.deadline_s or _DEADLINE_S, _DEADLINE_S)
        if not self.lock.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            raise Overdue("the recall service is busy with other requests")
        try:
            if request.hook == "SessionStart":
                began = self._session_start(request)
                self.known.started(request.session_id, began)
                return {"context": began}
            if request.hook in ("Stop", "PreCompact"):
                self._write_manifest(request)
                return {"context": ""}
            if request.hook == "SubagentStart":
                memories = self.recaller.memories.remembered_by(request.project, request.agent or "")
                return {
                    "context": render.render_agent_memories(
                        request.agent or "", memories, render.budget("full")
                    )
                }
            if request.hook:
                known = self.known.of(request.session_id)
                found, shown, left = self.recaller.injected(request, deadline, known)
            else:
                found = self.recaller.answer(asked, deadline)
        finally:
            self.lock.release()
        if request.hook:  # what the agent is given is what was recalled
            level = render.pressure(request.transcript_bytes)
            context = render.render(shown, render.budget(level, request.transcript_bytes))
            given = _given(found, shown)
            if request.preview:
                return {"preview": Preview(context, given, found, left)}
            self._feed_back(request, request.prompt, [(m.memory_id, 1.0) for m in shown], given)
            return {"context": context}
        self._feed_back(request, found.prompt, [(r.memory_id, r.score) for r in found.results])
        if request.reflect is not None:
            return {"reflection": self._reflection(request, request.reflect, found)}
        return {"recall": found}

    def _reflection(self, request: RecallRequest, shaped: Disposition, found: Recall) -> Reflection:
        """The opinion on the request's prompt from what recall `found`, formed here as the asker
        would have formed it (reverie/reflecting.py), its events recorded as the asker's."""
        source = request.asked_by or SOURCE_WORKER
        return reflection(
            self.settings, request.prompt, request.project or "", found, shaped, source, self.redis
        )

    def refresh(self) -> None:
        """Read what the embedder wrote since (a new view of the index: recalls go on meanwhile),
        and the latest snapshot: opened and its recall tables built first, swapped in between two
        recalls. A snapshot that brings no new memory waits its turn (_SNAPSHOT_EVERY_S)."""
        try:
            self._memories_changed |= self.recaller.refresh()
            due = self._memories_changed or time.monotonic() - self._opened_at >= _SNAPSHOT_EVERY_S
            if due and (opened := self.recaller.memories.newer()):
                with self.lock:
                    self.recaller.memories.swap(opened)
                self._opened_at = time.monotonic()
                self._memories_changed = False
            self._failing = None
        except Exception as e:
            log.exception("recall.refresh_failed")  # the next tick tries again
            since = self._failing[0] if self._failing else time.monotonic()
            self._failing = (since, f"{type(e).__name__}: {e}".splitlines()[0][:200])

    def _status(self) -> StackStatus:
        """The stack's status, its snapshot figures read through the service's own snapshot."""
        with self._files_read() as reader:
            found = stack_status(self.settings, reader)
        return msgspec.structs.replace(found, recall_service=self._state())

    def _why(self, wanted: str, project: str | None) -> Why:
        """Why memory holds `wanted` (workers/why.py), read through the service's own snapshot."""
        with self._files_read() as reader:
            if reader is None:
                raise Unknown("no snapshot of the projections yet: the projector has not folded the log")
            return why(reader, wanted, project)

    @contextlib.contextmanager
    def _files_read(self) -> Iterator[duckdb.DuckDBPyConnection | None]:
        """A reader of the snapshot read now, its views of the files read (None before the first
        snapshot): one such reader at a time, the files' views being the connection's."""
        with contextlib.ExitStack() as held:
            with self.lock:  # a swap waits meanwhile: the reader is made of the snapshot read now
                reader = held.enter_context(self.recaller.memories.reader())
            with self.reading:
                if reader is not None:
                    sql.read_files(reader, self.settings)
                yield reader

    def _state(self) -> str:
        """What `status` says of the service: answering, and from memories how old if reading
        new ones fails."""
        if self._failing is None:
            return "answering"
        since, why = self._failing
        return (
            f"answering from what it read {time.monotonic() - since:.0f} s ago: reading new "
            f"memories fails ({why}); see the stack's log"
        )

    def _session_start(self, request: RecallRequest) -> str:
        continuity = self.recaller.memories.continuity(request.project, request.session_id)
        if request.source in AFTER and request.session_id:  # the session goes on: where it stood first
            manifest = self._manifest(request, "Stop")
            written = _read_manifest(self.settings.manifest_path(request.session_id))
            if manifest.is_empty():  # the snapshot does not know it yet (or lost it): what was written
                manifest = written or manifest
            manifest = manifest.with_fresher_steps(
                written
            )  # the Stop hook's message, newer than the snapshot
            return render.render_continuity(continuity, render.budget("full"), manifest)
        text = render.render_continuity(continuity, render.budget("full"))
        path = self.settings.profile_path(request.project)
        write_durably(os.path.dirname(path), os.path.basename(path), text.encode())
        return text

    def _manifest(self, request: RecallRequest, at: WrittenAt) -> CompactionManifest:
        """Where the session stands as the snapshot knows it; its next steps from the last message
        the request brings (Stop's, just said), else from the snapshot's."""
        memories = self.recaller.memories
        found = memories.manifest(request.project, request.session_id or "")
        now = datetime.now(UTC)
        said = (request.last_message, now) if request.last_message is not None else None
        said = said or memories.last_message(request.project, request.session_id or "")
        return CompactionManifest(
            session_id=request.session_id or "",
            project=request.project or "",
            written_at=now,
            at=at,
            key_decisions=found["key_decisions"],
            files_touched=found["files_touched"],
            blockers=found["blockers"],
            next_steps=next_steps(said[0]) if said else [],
            steps_said_at=said[1] if said else None,
        )

    def _write_manifest(self, request: RecallRequest) -> None:
        """Where the session stands now, kept for its SessionStart after a compaction or a resume."""
        if not request.session_id:
            return
        at: WrittenAt = "PreCompact" if request.hook == "PreCompact" else "Stop"
        path = self.settings.manifest_path(request.session_id)
        # PreCompact brings no message: the steps an earlier Stop kept stay if they are newer
        manifest = self._manifest(request, at).with_fresher_steps(_read_manifest(path))
        write_durably(os.path.dirname(path), os.path.basename(path), msgspec.json.encode(manifest))

    def _feed_back(
        self,
        request: RecallRequest,
        query: str,
        results: list[tuple[str, float]],
        given: list[Given] | None = None,
    ) -> None:
        """Append what was recalled, and how it scored (and, given, why each was given), as a
        memory.retrieved event; a recall never fails for want of it."""
        retrieved = MemoryRetrieved(
            query=query,
            results=[m for m, _ in results],
            scores=[score for _, score in results],
            given=given or [],
        )
        try:
            with Emitter(self.redis, SOURCE_WORKER) as out:
                out.emit(
                    MEMORY_RETRIEVED, retrieved, project=request.project or "", session_id=request.session_id
                )
        except Exception as e:  # Redis away: the recall still answers
            log.warning("retrieval.not_recorded", error=str(e))


def _given(found: Recall, shown: list[Shown]) -> list[Given]:
    """Why the hook gives each of `shown`: its scores in `found`, its cosine to the prompt (of its
    nearest passage, as the block weighed it), and what let it pass."""
    scored = {m.memory_id: m for m in found.results}
    return [
        Given(m.memory_id, scored[m.memory_id].score, m.similarity, scored[m.memory_id].components, m.passed)
        for m in shown
        if m.memory_id in scored
    ]  # fmt: skip


def _read_manifest(path: str) -> CompactionManifest | None:
    try:
        with open(path, "rb") as f:
            return msgspec.json.decode(f.read(), type=CompactionManifest)
    except (OSError, msgspec.DecodeError):
        return None


class Refused(Exception):
    """A client over TCP that did not prove it holds the token."""


class _Handler(socketserver.StreamRequestHandler):
    server: "_Server | _TCPServer"

    def handle(self) -> None:
        self.connection.settimeout(5.0)
        try:
            line = self._request_line()
        except Refused as e:
            log.warning("recall.refused", peer=str(self.client_address), reason=str(e))
            reply: dict[str, Any] = {"error": f"refused: {e}"}
        else:
            reply = self._reply(line)
        with contextlib.suppress(OSError):  # an asker past its deadline has hung up
            self.wfile.write(_encode.encode(reply) + b"\n")

    def _request_line(self) -> bytes:
        """The request: on the unix socket, its line; on TCP, once this service proved it holds
        the token, the line the client proved it holds it for (Refused otherwise)."""
        token = self.server.token
        if token is None:
            return self.rfile.readline(REQUEST_LIMIT + 1)
        hello, _, theirs = self.rfile.readline(handshake.LINE_LIMIT).rstrip(b"\n").partition(b" ")
        if hello != handshake.HELLO or not handshake.is_nonce(theirs):
            raise Refused("a request over TCP comes after the handshake (ingest/handshake.py)")
        mine = handshake.nonce()
        self.wfile.write(mine + b" " + handshake.service_proof(token, theirs, mine) + b"\n")
        proof, _, request = self.rfile.readline(handshake.PROOF_SIZE + REQUEST_LIMIT + 2).partition(b" ")
        if not handshake.matches(handshake.client_proof(token, theirs, mine, request.rstrip(b"\n")), proof):
            raise Refused("the request was not proved to come from a holder of the token")
        return request

    def _reply(self, line: bytes) -> dict[str, Any]:
        try:
            if len(line) > REQUEST_LIMIT:
                raise msgspec.DecodeError(f"a request is one line of at most {REQUEST_LIMIT} bytes")
            return self.server.service.answer(_decode.decode(line))
        except msgspec.DecodeError as e:  # not JSON, too long, or not a request
            return {"error": f"bad request: {e}"}
        except Overdue as e:
            log.warning("recall.overdue", error=str(e))
            return {"error": str(e)}
        except Exception as e:
            log.exception("recall.failed")
            return {"error": f"recall failed: {e}"}


class _Server(socketserver.ThreadingUnixStreamServer):
    """On this user's unix socket: who may ask is settled by the socket's directory and peer."""

    daemon_threads = True
    token: str | None = None

    def __init__(self, path: str, service: RecallService) -> None:
        self.service = service
        super().__init__(path, _Handler)


class _TCPServer(socketserver.ThreadingTCPServer):
    """On TCP (a compose stack's, published on the host's loopback): only for holders of the token."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], service: RecallService, token: str) -> None:
        self.service, self.token = service, token
        super().__init__(address, _Handler)


def _tcp_server(settings: Settings, service: RecallService) -> _TCPServer | None:
    """The TCP listener REVERIE_RECALL_LISTEN asks for, if it does; never without a token."""
    if not settings.recall_listen:
        return None
    if not settings.recall_token:
        raise SystemExit(
            "REVERIE_RECALL_LISTEN needs REVERIE_RECALL_TOKEN: recall is not served on TCP without one"
        )
    host, _, port = settings.recall_listen.rpartition(":")
    return _TCPServer((host.strip("[]") or "127.0.0.1", int(port)), service, settings.recall_token)


def open_recaller(settings: Settings, follow: bool = True) -> Recaller:
    encoder = load_encoder(settings.embedding_model)
    vectors = Vectors(settings.vectors_dir, encoder.dim)
    return Recaller(encoder, vectors, Memories(settings, follow))


def run_recall_service(settings: Settings, stop: threading.Event) -> None:
    """Serve recall on the settings' socket, and keep the vectors in step, until `stop` is set."""
    service = RecallService(settings, open_recaller(settings, follow=False))
    service.refresh()  # the memories, read before the first question
    path = settings.recall_socket_path
    private_directory(os.path.dirname(path), create=True)  # no other user binds it first
    if os.path.exists(path):
        os.unlink(path)  # a socket left by a crash (the supervisor runs one service per data directory)
    old_mask = os.umask(0o077)  # only this user may ask
    try:
        server = _Server(path, service)
    finally:
        os.umask(old_mask)
    tcp = _tcp_server(settings, service)
    servers: list[socketserver.BaseServer] = [server] if tcp is None else [server, tcp]
    for each in servers:
        threading.Thread(target=each.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    log.info("recall.serving", socket=path, tcp=settings.recall_listen)
    embedding = threading.Thread(
        target=run_embedder, args=(settings, service.recaller.encoder, stop), name="embedder"
    )
    embedding.start()
    # what follows reads new memories, and can wait: recalls (their threads started above) go first
    in_background()
    try:
        while not stop.wait(REFRESH_S):
            if not embedding.is_alive():  # it ended by an error: a new process starts it again
                raise RuntimeError("the embedding thread stopped; see its error above")
            service.refresh()
    finally:
        stop.set()  # for the embedder too, whatever ended the service
        for each in servers:
            each.shutdown()
            each.server_close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        embedding.join()
        service.recaller.memories.close()
        log.info("recall.stopped")
