"""Fake HTTP services on loopback (a model's API, an OpenAI-compatible LLM): the server, in a
thread of the test's process, and the quiet handler whose `reply` they answer with."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that logs nothing and answers with `reply`."""

    def reply(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


def on_loopback(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """`handler`'s server on a free port of 127.0.0.1, serving from a daemon thread."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
