"""A real browser for the dashboard's tests: Debian's Chromium (`apt-get install chromium`, as the
README's test command does when it is missing), driven by Playwright, which is told where it is
(`executable_path`) and never downloads a browser of its own.

A page collects what went wrong as it loaded and ran: console errors (a script's, a refused
Content-Security-Policy's), uncaught exceptions and failed requests; a test asserts there were
none. Screenshots go to `.cache/dashboard/` in the checkout, to be looked at.
"""

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

SCREENSHOTS = Path(__file__).resolve().parents[2] / ".cache" / "dashboard"
# each page, and what shows it has drawn what it fetches
PAGES = {
    "overview": ("/", "#activity .uplot"),
    "graph": ("/graph", "#graph[data-ready=yes]"),
    "prompts": ("/prompts", "#prompts"),
    "sessions": ("/sessions", "table.sessions"),
    "memory": ("/memory", "#quality"),
    "learned": ("/learned", "#communities"),
}


def chromium_path() -> str:
    """Where the system's Chromium is; the test fails (never skips) without one."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("no chromium: `apt-get install -y chromium` (the README's test command does it, as root)")
    return found


def chromium() -> Iterator[Browser]:
    """Headless Chromium, closed after."""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        try:
            yield browser
        finally:
            browser.close()


class Watched:
    """A page and what went wrong on it since it opened."""

    def __init__(self, browser: Browser, width: int = 1400, height: int = 900) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page: Page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on(
            "console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"failed: {r.url} {r.failure}"))

    def screenshot(self, name: str, tallest: int = 2400) -> Path:
        """The page as shown, whole down to `tallest` pixels, saved as `name`.png."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        width, height = self.page.evaluate("() => [document.body.scrollWidth, document.body.scrollHeight]")
        self.page.screenshot(
            path=str(path),
            full_page=True,
            clip={"x": 0, "y": 0, "width": width, "height": min(height, tallest)},
            animations="disabled",
            caret="hide",
        )
        return path

    def close(self) -> None:
        self.context.close()
