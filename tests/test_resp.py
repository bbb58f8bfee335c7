"""The hook's own Redis client (ingest/resp.py): a refusal reaches its caller as a refusal, which
the spool's durable append tells apart from a server gone away."""

import socket
import threading
from pathlib import Path

import pytest

from ingest.resp import Connection, RedisRefused


def test_a_refusal_reaches_the_caller_as_a_refusal(tmp_path: Path) -> None:
    path = str(tmp_path / "redis.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)

    def refuse() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"-ERR unknown command 'WAITAOF'\r\n")
            conn.recv(1)  # until the client closes

    answering = threading.Thread(target=refuse, daemon=True)
    answering.start()
    with Connection(f"unix://{path}", 1, 1) as redis, pytest.raises(RedisRefused, match="WAITAOF"):
        redis.command("WAITAOF", "1", "0", "1000")
    answering.join(timeout=5)
    server.close()
