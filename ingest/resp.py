"""Just enough of the Redis protocol (RESP2) for the hook to append one event.

The hook runs as a fresh process per Claude Code event, and `import redis` alone costs about
170 ms there (redis-py imports its asyncio client): more than the hook's whole budget. This
module speaks the few commands the hook needs over a plain socket, within a deadline.
Long-running processes use redis-py.
"""

from __future__ import annotations

import socket

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Reply = bytes | int | list[Any] | None


class RedisUnavailable(OSError):
    """The server could not be reached, or did not answer in time, or answered with an error."""


class Address:
    __slots__ = ("db", "host", "password", "path", "port", "tls", "username")

    def __init__(self, url: str) -> None:
        scheme, sep, rest = url.partition("://")
        if not sep or scheme not in ("redis", "rediss", "unix"):
            raise RedisUnavailable(f"unsupported Redis URL scheme in {url!r}")
        self.tls = scheme == "rediss"
        rest, _, query = rest.partition("?")
        params = dict(p.partition("=")[::2] for p in query.split("&") if p)
        userinfo, at, hostpart = rest.rpartition("@")
        if not at:
            hostpart = rest
        self.username, _, password = userinfo.partition(":") if ":" in userinfo else ("", "", userinfo)
        self.password = params.get("password") or password or None
        self.db = int(params.get("db", "0") or 0)
        self.path = self.host = None
        self.port = 6379
        if scheme == "unix":
            self.path = hostpart
        else:
            hostport, _, db = hostpart.partition("/")
            if db:
                self.db = int(db)
            host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
            self.host = host.strip("[]") or "localhost"
            self.port = int(port or 6379)


def _encode(args: tuple[bytes | str, ...]) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg.encode() if isinstance(arg, str) else arg
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class Connection:
    """One socket to the server, with a deadline for connecting and for each reply."""

    def __init__(self, url: str, connect_timeout: float = 0.05, reply_timeout: float = 0.25) -> None:
        address = Address(url)
        try:
            if address.path is not None:
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.settimeout(connect_timeout)
                sock.connect(address.path)
            else:
                sock = socket.create_connection((address.host, address.port), timeout=connect_timeout)
            if address.tls:
                import ssl

                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=address.host)
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
            raise RedisUnavailable(f"Redis error: {body.decode(errors='replace')}")
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
