"""Playwright helpers for the browser tests: one Chromium per test session, a fresh context
per test, screenshots under test-results/screenshots/, and an API client for the agent's side.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from django.contrib.auth.models import AbstractBaseUser
from django.test import Client

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-results" / "screenshots"
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # Debian's package, else Playwright's own download (`make test` tries both: .ci/browser).
        path = CHROMIUM if Path(CHROMIUM).exists() else playwright.chromium.executable_path
        if not Path(path).exists():
            # On CI a missing browser is a broken setup, not a reason to pass without these tests.
            message = "no Chromium: neither Debian's package nor Playwright's download"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
        chromium = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


# How Chromium logs a page or resource that answered an HTTP error.
FAILED_LOAD = re.compile(r"Failed to load resource: the server responded with a status of (\d{3})")
# How htmx logs the same failed load when an htmx request made it (its responseError event).
HTMX_FAILED_LOAD = re.compile(r"Response Status Error Code (\d{3}) from ([^?,]+)")


class Pages:
    """Opens pages in fresh browser contexts and fails the test on any console error
    (a Content-Security-Policy violation shows up there), except the failed loads the test
    said it would cause (``expect_failed_load``), each exactly as often as it said, and the
    other console errors it said it would cause (``expect_console_error``)."""

    def __init__(self, browser: Any, base_url: str) -> None:
        self.browser = browser
        self.base_url = base_url
        self.contexts: list[Any] = []
        self.errors: list[str] = []
        self.failed_loads: Counter[tuple[int, str]] = Counter()
        self.expected_loads: Counter[tuple[int, str]] = Counter()
        self.expected_errors: Counter[str] = Counter()

    def expect_failed_load(self, status: int, path: str, times: int = 1) -> None:
        """The test opens ``path`` (a URL path, no query) and checks that it answers ``status``:
        the browser logs such a load as a console error, which is then not a failure."""
        self.expected_loads[(status, path)] += times

    def expect_console_error(self, text: str) -> None:
        """The test causes a console error starting with ``text`` (a request that fails
        without an HTTP status, say), once."""
        self.expected_errors[text] += 1

    def _console(self, message: Any) -> None:
        if message.type != "error":
            return
        failed = FAILED_LOAD.match(message.text)
        by_htmx = HTMX_FAILED_LOAD.match(message.text)
        if failed:
            path = urlsplit(message.location.get("url", "")).path
            self.failed_loads[(int(failed.group(1)), path)] += 1
        elif by_htmx and (int(by_htmx.group(1)), by_htmx.group(2)) in self.expected_loads:
            pass  # the announced failed load, as htmx reports it too
        elif expected := next((t for t in self.expected_errors.elements()
                               if message.text.startswith(t)), None):
            self.expected_errors[expected] -= 1
        else:
            self.errors.append(message.text)

    def unexpected(self) -> list[str]:
        """Console errors nobody announced, and announced failed loads that did not happen."""
        extra = self.failed_loads - self.expected_loads
        missing = self.expected_loads - self.failed_loads
        return [*self.errors,
                *(f"expected a console error {text!r}, which did not happen"
                  for text in self.expected_errors.elements()),
                *(f"unexpected HTTP {status} loading {path} (expect_failed_load({status}, "
                  f"{path!r}) if the test means it)" for status, path in extra.elements()),
                *(f"expected HTTP {status} loading {path}, which did not happen"
                  for status, path in missing.elements())]

    def new(self, *, user: AbstractBaseUser | None = None, phone: bool = False) -> Any:
        context = self.browser.new_context(
            base_url=self.base_url, viewport=PHONE if phone else {"width": 1280, "height": 900},
            is_mobile=phone, has_touch=phone,
        )
        if user is not None:
            client = Client()
            client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
            context.add_cookies([{"name": "sessionid", "value": client.cookies["sessionid"].value,
                                  "url": self.base_url}])
        self.contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def pages(browser: Any, live_server: Any) -> Iterator[Pages]:
    opened = Pages(browser, live_server.url)
    yield opened
    opened.close()
    unexpected = opened.unexpected()
    assert unexpected == [], "\n".join(unexpected)  # (this module is not assertion-rewritten)


def shot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


class Api:
    """The agent's and the app's side: the real API over HTTP against the live server."""

    def __init__(self, base_url: str, key: str) -> None:
        self.http = httpx.Client(base_url=f"{base_url}/api/v1",
                                 headers={"Authorization": f"Bearer {key}"}, timeout=10)

    def tool(self, user_id: str, **command: Any) -> dict[str, Any]:
        response = self.http.post(f"/users/{user_id}/memory", json=command)
        assert response.status_code == 200, response.text
        return response.json()

    def index(self, user_id: str, **params: str) -> dict[str, Any]:
        response = self.http.get(f"/users/{user_id}/memory/index", params=params)
        assert response.status_code == 200, response.text
        return response.json()

    def capture(self, user_id: str, session_id: str, messages: list[dict[str, Any]],
                **body: Any) -> dict[str, Any]:
        response = self.http.post(f"/users/{user_id}/sessions/{session_id}/messages",
                                  json={"messages": messages, **body})
        assert response.status_code == 201, response.text
        return response.json()

    def portal_link(self, user_id: str) -> str:
        response = self.http.post(f"/users/{user_id}/portal-link")
        assert response.status_code == 201, response.text
        return response.json()["url"]
