"""How the hooks and the recall service prove to each other, over TCP, that they hold
REVERIE_RECALL_TOKEN, without either ever sending it.

A stack in containers publishes its recall service on the host's loopback (docker-compose.yml).
Were the token sent, any local process listening on that port while the stack is down would
receive it, and the prompt with it. So, one line each way, before the request:

    client:  HELLO <client nonce>
    service: <service nonce> <HMAC(token, "reverie-recall service" | client nonce | service nonce)>
    client:  <HMAC(token, "reverie-recall client" | client nonce | service nonce | request)> <request>
    service: <answer>

Nonces are 16 random bytes, proofs HMAC-SHA256, both in lowercase hex. The client sends nothing
of its request until the service has proved it holds the token, and the service answers nothing
until the client has proved it too, for this very request. Each proof covers both nonces, so none
is good on another connection, and the labels keep a service's proof from passing for a
client's. One round trip more than the request alone. The exchange is not encrypted: it is meant
for loopback, where no one can read it in passing, only listen in someone's place.

Standard library only. `hmac` loads OpenSSL (about 3 ms): the hook imports this module on the
TCP path alone.
"""

import hmac
import os

HELLO = b"HELLO"
LINE_LIMIT = 256  # bytes: a hello or a challenge line, well within
PROOF_SIZE = 64  # hex digits of an HMAC-SHA256
_NONCE_BYTES = 16
_HEX = frozenset(b"0123456789abcdef")


def nonce() -> bytes:
    """A fresh nonce, as it goes on the wire."""
    return os.urandom(_NONCE_BYTES).hex().encode()


def is_nonce(value: bytes) -> bool:
    """Whether `value` is a nonce as `nonce` makes them (the proofs rely on their fixed length)."""
    return len(value) == 2 * _NONCE_BYTES and set(value) <= _HEX


def service_proof(token: str, client_nonce: bytes, service_nonce: bytes) -> bytes:
    """What the service sends to prove it holds `token`."""
    return _proof(token, b"reverie-recall service", client_nonce, service_nonce)


def client_proof(token: str, client_nonce: bytes, service_nonce: bytes, request: bytes) -> bytes:
    """What the client sends before `request` to prove it holds `token`."""
    return _proof(token, b"reverie-recall client", client_nonce, service_nonce, request)


def matches(expected: bytes, given: bytes) -> bool:
    """Whether the proof `given` is the one `expected`, compared in constant time."""
    return hmac.compare_digest(expected, given)


def _proof(token: str, label: bytes, *parts: bytes) -> bytes:
    return hmac.digest(token.encode(), b"".join((label, b"\n", *parts)), "sha256").hex().encode()
