"""Just enough of the Redis protocol (RESP2) for the hook to append one event.

The hook runs as a fresh process per Claude Code event, and `import redis` alone costs about
170 ms there (redis-py imports its asyncio client): more than the hook's whole budget. This
module speaks the few commands the hook needs over a plain socket (`_socket`, as in
ingest/sockets.py), within a deadline. Long-running processes use redis-py.
"""

from __future__ import annotations

import _socket

from ingest import sockets

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Reply = bytes | int | list[Any] | None


class RedisUnavailable(OSError):
    """The server could not be reached, or did not answer in time, or answered with an error."""


class RedisRefused(RedisUnavailable):
    """The server answered with an error (a command it does not know, or will not run now)."""


class Address:
    """Where a Redis URL points, read the way redis-py reads it (percent-decoded user and password)."""

    __slots__ = ("db", "host", "password", "path", "port", "tls", "username")

    def __init__(self, url: str) -> None:
        self.username: str | None = None
        self.password: str | None = None
        self.host: str | None = None
        self.port = 6379
        self.path: str | None = None
        self.db = 0
        self.tls = url.startswith("rediss://")
        if url.startswith("unix://") and not any(c in url for c in "?@%#"):
            self.path = url[len("unix://") :]  # the embedded default: no parser needed (urllib costs 3 ms)
            return
        try:
            self._parse(url)
        except ValueError as e:
            raise RedisUnavailable(f"cannot read the Redis URL {url!r}: {e}") from None

    def _parse(self, url: str) -> None:
        from urllib.parse import parse_qs, unquote, urlsplit

        parts = urlsplit(url)
        if parts.scheme not in ("redis", "rediss", "unix"):
            raise ValueError(f"unsupported scheme {parts.scheme!r}")
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        self.username = unquote(parts.username) if parts.username else None
        self.password = unquote(parts.password) if parts.password else query.get("password")
        if parts.scheme == "unix":
            self.path = unquote(parts.path)
        else:
            self.host = parts.hostname or "localhost"
            self.port = parts.port or 6379
            db = parts.path.strip("/")
            if db.isdigit():  # redis-py ignores any other path
                self.db = int(db)
        if "db" in query:
            self.db = int(query["db"])


def _encode(args: tuple[bytes | str, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg.encode() if isinstance(arg, str) else arg
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def _addresses(host: str, port: int, timeout: float) -> list[tuple[int, tuple[str, int]]]:
    """(family, address) pairs for `host`, within `timeout`.

    No signal interrupts a DNS lookup (the C library retries), so a name is resolved in a
    thread we stop waiting for; an IP literal needs no lookup.
    """
    for family in (_socket.AF_INET, _socket.AF_INET6):
        try:
            _socket.inet_pton(family, host)
        except OSError:
            continue
        return [(family, (host, port))]
    import threading

    found: list[tuple[int, tuple[str, int]]] = []

    def lookup() -> None:
        try:
            infos = _socket.getaddrinfo(host, port, type=_socket.SOCK_STREAM)
        except OSError:
            return
        found.extend((info[0], (str(info[4][0]), int(info[4][1]))) for info in infos)

    thread = threading.Thread(target=lookup, daemon=True)
    thread.start()
    thread.join(timeout)
    if not found:
        raise RedisUnavailable(f"cannot resolve {host!r} within {timeout:g} s")
    return list(found)


def connect_tcp(host: str, port: int, timeout: float) -> _socket.socket:
    error: OSError = RedisUnavailable(f"no address for {host!r}")
    for family, address in _addresses(host, port, max(timeout, 0.1)):
        sock = _socket.socket(family, _socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(address)
            return sock
        except OSError as e:
            sock.close()
            error = e
    raise error


class Connection:
    """One socket to the server, with a deadline for connecting and for each reply."""

    def __init__(
        self, url: str, connect_timeout: float = 0.05, reply_timeout: float = 0.25, own: bool = False
    ) -> None:
        """`own`: the URL is reverie's embedded server, whose socket and peer are checked
        (ingest/sockets.py) before a byte is sent."""
        address = Address(url)
        try:
            if address.path is not None and own:
                sock = sockets.connect(address.path, connect_timeout)
            elif address.path is not None:
                sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
                sock.settimeout(connect_timeout)
                sock.connect(address.path)
            else:
                sock = connect_tcp(address.host or "localhost", address.port, connect_timeout)
            if address.tls:
                import socket
                import ssl

                plain = socket.socket(sock.family, sock.type, sock.proto, sock.detach())
                plain.settimeout(connect_timeout)  # the handshake too: detach() dropped the timeout
                sock = ssl.create_default_context().wrap_socket(plain, server_hostname=address.host)
            sock.settimeout(reply_timeout)
        except OSError as e:
            raise RedisUnavailable(f"cannot connect to {url}: {e}") from None
        self._sock = sock
        self._buffer = b""
        setup: list[tuple[bytes | str, ...]] = []
        if address.password:
            setup.append(
                ("AUTH", address.username, address.password)
                if address.username
                else ("AUTH", address.password)
            )
        if address.db:
            setup.append(("SELECT", str(address.db)))
        if setup:
            self.pipeline(setup)

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pipeline(self, commands: list[tuple[bytes | str, ...]]) -> list[Reply]:
        """Send every command in one write, then read one reply each."""
        try:
            self._sock.sendall(b"".join(_encode(c) for c in commands))
            return [self._reply() for _ in commands]
        except RedisUnavailable:  # Redis answered, or closed: said as such (a refusal stays one)
            raise
        except OSError as e:
            raise RedisUnavailable(f"no reply from Redis: {e}") from None

    def command(self, *args: bytes | str) -> Reply:
        return self.pipeline([args])[0]

    def _line(self) -> bytes:
        while b"\r\n" not in self._buffer:
            self._fill()
        line, _, self._buffer = self._buffer.partition(b"\r\n")
        return line

    def _fill(self) -> None:
        chunk = self._sock.recv(65536)
        if not chunk:
            raise RedisUnavailable("connection closed by Redis")
        self._buffer += chunk

    def _reply(self) -> Reply:
        line = self._line()
        tag, body = line[:1], line[1:]
        if tag == b"+":
            return body
        if tag == b"-":
            raise RedisRefused(f"Redis error: {body.decode(errors='replace')}")
        if tag == b":":
            return int(body)
        if tag == b"$":
            size = int(body)
            if size < 0:
                return None
            while len(self._buffer) < size + 2:
                self._fill()
            data, self._buffer = self._buffer[:size], self._buffer[size + 2 :]
            return data
        if tag == b"*":
            count = int(body)
            return None if count < 0 else [self._reply() for _ in range(count)]
        raise RedisUnavailable(f"unexpected reply from Redis: {line[:40]!r}")
