"""The admin page in headless Debian Chromium (Playwright) against a live admin API."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import (
    Browser,
    BrowserContext,
    Locator,
    Page,
    ViewportSize,
    async_playwright,
    expect,
)

from bot.services import ServiceOptions
from tests.admin_api.conftest import PASSWORD, Admin, StartAdmin, admin_starter
from tests.conftest import LLM_MODELS, SettingsFactory
from tests.fakes.llm_server import FakeLLMServer

HERE = Path(__file__).resolve().parent

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "admin_page"
# Test-only copy of axe-core (scripts/vendor.sh); injected into the page, never served.
AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
DESKTOP: ViewportSize = {"width": 1280, "height": 800}
PHONE: ViewportSize = {"width": 390, "height": 844}
# Without the background-networking flags Chromium keeps calling home on a closed network.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 10_000
# Every screen of the page: a new screen joins the screenshot, layout and axe runs by its name here.
SCREENS = (
    "status",
    "activity",
    "notes",
    "logs",
    "settings",
    "memory",
    "topics",
    "spaces",
    "tools",
    "live-log",
    "conversations",
    "chat",
    "words",
    "members",
    "connections",
)
# The seven sections of the bar (navigation.js) and the screens inside each, as tabs.
SECTIONS: dict[str, tuple[str, ...]] = {
    "status": ("status", "activity", "logs", "live-log"),
    "conversations": ("conversations", "memory"),
    "chat": ("chat",),
    "memory": ("notes", "words", "members"),
    "topics": ("topics",),
    "models": ("connections", "tools"),
    "settings": ("settings", "spaces"),
}
SECTION_OF = {screen: section for section, screens in SECTIONS.items() for screen in screens}
# Accessibility problems that fail a test (axe's "moderate" and "minor" are reported only).
AXE_FAILING_IMPACTS = frozenset({"serious", "critical"})
# Finds the controls that are cut off (tests/admin_page/cut_controls.js).
CUT_CONTROLS_JS = (Path(__file__).parent / "cut_controls.js").read_text(encoding="utf-8")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every async test here runs on the session's event loop, where the one browser lives."""
    for item in items:
        if item.path.is_relative_to(HERE) and item.get_closest_marker("asyncio") is not None:
            item.add_marker(pytest.mark.asyncio(loop_scope="session"), append=False)


# Starting Playwright's driver and Chromium took about a second per test: one browser serves
# the run (each test still gets its own browser context: no cookies, storage or pages shared).
# Every async fixture a test here uses therefore runs on the session's loop too.
@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def browser() -> AsyncIterator[Browser]:
    """Debian's Chromium (Playwright's own browser download cannot work here)."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing; .ci/run installs Debian's chromium package")
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield launched
        finally:
            await launched.close()


@dataclass
class Ui:
    """A browser tab on the admin page, the admin API behind it, and what the page reported."""

    admin: Admin
    context: BrowserContext
    page: Page
    page_errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)

    @property
    def status(self) -> Locator:
        """The aria-live status region."""
        return self.page.locator("#status")

    def screen(self, name: str) -> Locator:
        """One screen's section (hidden screens stay in the document)."""
        return self.page.locator(f"#screen-{name}")

    async def open(self) -> None:
        """Load the page (the login form shows until logged in)."""
        await self.page.goto(self.admin.url + "/")

    async def login(self) -> None:
        """Log in through the form and wait for the first screen."""
        await self.open()
        await self.page.get_by_label("Admin password").fill(PASSWORD)
        await self.page.get_by_role("button", name="Log in").click()
        await expect(self.page.locator("#nav")).to_be_visible()
        # The first screen and the space selector load after login; wait for every request so
        # a test that then moves the clock (login expiry) does not race them.
        await self.page.wait_for_load_state("networkidle")

    async def go(self, screen: str) -> None:
        """Open a screen: its section in the bar, then its tab; wait until its data arrived."""
        section = SECTION_OF[screen]
        toggle = self.page.locator("#menu-toggle")
        if await toggle.is_visible() and await toggle.get_attribute("aria-expanded") != "true":
            await toggle.click()  # the phone menu
        link = self.page.locator(f'#nav a[data-section="{section}"]')
        await link.click()
        await expect(link).to_have_attribute("aria-current", "page")
        tab = self.page.locator(f'#tabs a[data-screen="{screen}"]')
        if await tab.count():
            await tab.click()
            await expect(tab).to_have_attribute("aria-current", "page")
        root = self.page.locator(f"#screen-{screen}")
        await expect(root).to_be_visible()
        await expect(root).not_to_have_attribute("data-loading", "true")

    def artifact(self, name: str) -> Path:
        """A path for a kept test artifact (screenshots) in tests/artifacts/admin_page/."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        return ARTIFACTS / name

    async def shoot(self, name: str) -> None:
        """Keep a full-page screenshot at desktop and at phone width in tests/artifacts/."""
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        await self.page.evaluate("window.scrollTo(0, 0)")  # sticky parts draw where they belong
        for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
            await self.page.set_viewport_size(size)
            await self.page.screenshot(path=ARTIFACTS / f"{name}-{label}.png", full_page=True)
        await self.page.set_viewport_size(DESKTOP)

    async def enable_axe(self) -> None:
        """Make axe-core available in every page of this tab (before the page's own scripts, past
        its Content-Security-Policy, which still applies to the page itself)."""
        await self.context.add_init_script(path=str(AXE))

    async def axe(self, label: str) -> list[str]:
        """Run axe-core over the page as shown; its serious and critical violations, described."""
        violations = await self.page.evaluate(
            """async () => {
              const result = await axe.run(document, {resultTypes: ['violations']});
              return result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
                nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' '))}));
            }"""
        )
        return [
            f"{label}: {v['id']} ({v['impact']}): {v['help']} at {v['nodes']}"
            for v in violations
            if v["impact"] in AXE_FAILING_IMPACTS
        ]

    async def settle(self) -> None:
        """Wait two animation frames, so resize observers (charts) have drawn at the new size."""
        await self.page.evaluate(
            "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
        )

    async def cut_controls(self, screen: str, where: str) -> list[str]:
        """Controls of `screen` (and the bar) cut off by a scroll box, the window or their box."""
        found = await self.screen(screen).evaluate(CUT_CONTROLS_JS)
        found += await self.page.locator("header.top").evaluate(CUT_CONTROLS_JS)
        return [f"{where}: {item['text']!r}: {item['why']}" for item in found]

    async def api(self, method: str, path: str, **kwargs: Any) -> Any:
        """Call the API directly (bearer token) and return its JSON, checking for success."""
        reply = await self.admin.call(method, path, **kwargs)
        assert reply.status < 300, (method, path, reply.status, reply.text)
        return reply.json

    def assert_clean(self) -> None:
        """No uncaught script error and no Content-Security-Policy violation happened."""
        assert self.page_errors == [], self.page_errors
        assert self.csp_violations == [], self.csp_violations


@pytest_asyncio.fixture(loop_scope="session")
async def llm() -> AsyncIterator[FakeLLMServer]:
    """The loopback LLM (as in tests/conftest.py), on the browser's event loop."""
    async with FakeLLMServer(models=LLM_MODELS) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="session")
async def start_admin(
    make_settings: SettingsFactory, service_options: ServiceOptions, llm: FakeLLMServer
) -> AsyncIterator[StartAdmin]:
    """The admin API fixture of tests/admin_api, on the browser's event loop."""
    async with admin_starter(make_settings, service_options, llm) as start:
        yield start


@pytest_asyncio.fixture(loop_scope="session")
async def admin(start_admin: StartAdmin) -> Admin:
    """An admin API with a password and a token, Ollama backend."""
    return await start_admin()


OpenUi = Callable[..., Awaitable[Ui]]


@pytest_asyncio.fixture(loop_scope="session")
async def open_ui(start_admin: StartAdmin, browser: Browser) -> AsyncIterator[OpenUi]:
    """open_ui(**start_admin_kwargs): a fresh browser context on a fresh admin API."""
    contexts: list[BrowserContext] = []

    async def open_(**kwargs: Any) -> Ui:
        admin = await start_admin(**kwargs)
        context = await browser.new_context(viewport=DESKTOP, accept_downloads=True)
        contexts.append(context)
        context.set_default_timeout(TIMEOUT_MS)
        page = await context.new_page()
        ui = Ui(admin, context, page)
        page.on("pageerror", lambda error: ui.page_errors.append(str(error)))
        page.on(
            "console",
            lambda message: (
                ui.csp_violations.append(message.text)
                if re.search("Content Security Policy", message.text)
                else None
            ),
        )
        return ui

    yield open_
    for context in contexts:
        await context.close()


@pytest_asyncio.fixture(loop_scope="session")
async def ui(open_ui: OpenUi) -> Ui:
    """The page on an admin API with a password, a token and every optional service."""
    return await open_ui()
