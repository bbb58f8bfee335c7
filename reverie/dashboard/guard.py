"""Who may ask the dashboard, and what every answer carries.

A request is refused (403) unless its Host names loopback, and unless it comes from the
dashboard's own pages: its Origin, if it sends one, is exactly the dashboard's (scheme, host and
port of its Host), and its Sec-Fetch-Site, if any, `same-origin` or `none` (typed or opened).
A web page that rebinds a name of its own to 127.0.0.1 sends that name; a page of another site,
or of another server on this machine's loopback (another port is the "same site" to a browser,
which sends it the SameSite cookie), sends its own origin: none reaches memory.
Then it must prove it holds the token, as Jupyter asks: the URL `reverie dashboard` prints
carries it (`?token=`); the first visit trades it for a cookie (HttpOnly, SameSite=Strict, named
for the port) and is sent on to the same page without it, so the token leaves the address bar
and the history. The cookie holds a value derived from the token, not the token: a browser
sends a cookie of 127.0.0.1 to every port there. Without either, 401 and a page that says
where the URL is.

Every answer carries a Content-Security-Policy that lets the page run and style nothing but the
dashboard's own files (no inline script, no other origin), keeps it out of frames and its
address from other sites (no referrer beyond its own origin); nothing is cached.
"""

import hashlib
import hmac
from urllib.parse import parse_qsl, quote, urlencode

from reverie.loopback import App, Headers, Message, Receive, Scope, Send, from_loopback, http_only

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    # same-origin, not no-referrer: under no-referrer a form sends `Origin: null`, refused here
    (b"referrer-policy", b"same-origin"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]
_NOT_CACHED = (b"cache-control", b"no-store")

_REFUSED_ORIGIN = (
    "Refused: the dashboard answers pages of its own, on this machine (Host and Origin must be loopback)."
)
_NO_TOKEN = (
    "Refused: this address needs the dashboard's token. Open the URL `reverie dashboard` prints "
    "(or `reverie status` shows): it carries the token once, then a cookie does."
)


def cookie_name(port: int) -> str:
    """The cookie that carries the token for the dashboard on `port`."""
    return f"reverie-dashboard-{port}"


def cookie_value(token: str) -> str:
    """What the cookie holds: a value only the token's holder can make, not the token itself."""
    return hmac.new(token.encode(), b"reverie-dashboard-cookie", hashlib.sha256).hexdigest()


def guarded(app: App, token: str, port: int) -> App:
    """`app` behind the checks of the module's docstring, every answer with SECURITY_HEADERS."""
    cookie, held = cookie_name(port), cookie_value(token)

    async def check(scope: Scope, headers: Headers, send: Send) -> bool:
        if not _own(headers):
            await _refuse(send, 403, _REFUSED_ORIGIN)
            return False
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        offered = [value for name, value in query if name == "token"]
        if offered:
            if len(offered) == 1 and hmac.compare_digest(offered[0].encode(), token.encode()):
                kept = urlencode([(n, v) for n, v in query if n != "token"])
                path = "/" + quote(scope["path"].lstrip("/"), safe="/")
                await _admit(send, path + (f"?{kept}" if kept else ""), cookie, held)
            else:
                await _refuse(send, 401, _NO_TOKEN)
            return False
        if not _holds(headers.get(b"cookie", []), cookie, held):
            await _refuse(send, 401, _NO_TOKEN)
            return False
        return True

    return _secured(http_only(app, check))


def _own(headers: Headers) -> bool:
    """Whether a request comes from the dashboard's own pages on loopback (the module's docstring)."""
    hosts, origins = headers.get(b"host", []), headers.get(b"origin", [])
    if not from_loopback(hosts, origins):
        return False
    if origins and origins[0].decode("latin-1").strip() != f"http://{hosts[0].decode('latin-1').strip()}":
        return False
    return headers.get(b"sec-fetch-site", [b"same-origin"])[0] in (b"same-origin", b"none")


def _holds(cookies: list[bytes], name: str, token: str) -> bool:
    """Whether the Cookie headers carry `name` with the value `token` (compared in constant time)."""
    found = [
        value.strip()
        for header in cookies
        for pair in header.decode("latin-1").split(";")
        for key, _, value in [pair.strip().partition("=")]
        if key == name
    ]
    return len(found) == 1 and hmac.compare_digest(found[0].encode(), token.encode())


def _secured(app: App) -> App:
    """`app`, SECURITY_HEADERS (and no-store) added to the start of every answer it sends."""

    async def secured(scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                headers += [h for h in SECURITY_HEADERS if h[0] not in names]
                if b"cache-control" not in names:
                    headers.append(_NOT_CACHED)
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, with_headers)

    return secured


async def _admit(send: Send, location: str, cookie: str, value: str) -> None:
    """Send the visitor on to `location`, holding the cookie from now on."""
    set_cookie = f"{cookie}={value}; Path=/; HttpOnly; SameSite=Strict"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("latin-1")),
                (b"set-cookie", set_cookie.encode("latin-1")),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


async def _refuse(send: Send, status: int, why: str) -> None:
    body = why.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
