"""The dashboard: memory seen and steered in a browser (`reverie dashboard`, and served by `reverie up`).

    server.py   where it listens, its token, `reverie dashboard` and the stack's process
    guard.py    who may ask: loopback Host and Origin, the token then its cookie; the headers
                every answer carries (a strict Content-Security-Policy)
    reads.py    what the pages show, read from the projector's last snapshot (DuckDB)
    app.py      the pages and the JSON they fetch (Starlette), and the changes a user makes:
                each one event, through the same `emit` as every other writer (source
                `dashboard`), so a replay rebuilds it

Pages are rendered on the server (Jinja2); the graph (sigma.js on graphology) and the charts
(uPlot) are drawn by files shipped in static/vendor/, as the npm registry ships them: nothing is
built at install time nor loaded from elsewhere at run time.
"""
