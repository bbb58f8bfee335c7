"""The redis-py client every long-running process uses.

The embedded server's socket is reverie's own: each connection checks its peer runs as this
user (ingest/sockets.py) before sending a byte. A shared Redis (REDIS_URL) is the user's
to vouch for.
"""

import socket

import redis

from ingest.sockets import check_peer
from schemas.settings import Settings


class _OwnSocketConnection(redis.UnixDomainSocketConnection):
    """A connection to our embedded server: refused when another user's process serves it."""

    def _connect(self) -> socket.socket:
        sock: socket.socket = super()._connect()  # type: ignore[no-untyped-call]
        try:
            check_peer(sock, self.path)
        except OSError:
            sock.close()
            raise
        return sock


def connect(settings: Settings, timeout: float | None = 5.0) -> "redis.Redis":
    if settings.embedded:
        pool = redis.ConnectionPool(
            connection_class=_OwnSocketConnection,
            path=settings.socket_path,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
        )
        return redis.Redis(connection_pool=pool)
    return redis.Redis.from_url(settings.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout)


def is_up(settings: Settings) -> bool:
    try:
        return bool(connect(settings, timeout=0.5).ping())
    except (redis.RedisError, OSError):
        return False
