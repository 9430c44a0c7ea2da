"""How the page is served: headers, no inline script, packaged files; the connection test API."""

from __future__ import annotations

import glob
import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path

from admin_api.app import STATIC_DIR
from tests.admin_api.conftest import Admin
from tests.fakes.llm_server import HttpError, Text

ROOT = Path(__file__).resolve().parents[2]
IMPORT = re.compile(r"""^import\s[^'"]*['"](\./[\w.-]+\.js)['"];""", re.MULTILINE)


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def static_files() -> set[str]:
    return {
        path.relative_to(STATIC_DIR.parent).as_posix()
        for path in STATIC_DIR.rglob("*")
        if path.is_file()
    }


async def test_page_and_assets_carry_a_strict_policy_and_revalidate(admin: Admin) -> None:
    page = await admin.get("/", token=None)
    assert page.status == 200
    policy = page.headers["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "default-src 'none'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert "frame-ancestors 'none'" in policy
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    assert page.headers["Cache-Control"] == "no-cache"

    parser = _Tags()
    parser.feed(page.text)
    scripts = [attrs for tag, attrs in parser.tags if tag == "script"]
    assert scripts == [{"type": "module", "src": "/static/js/app.js"}], "no inline script"
    for tag, attrs in parser.tags:
        assert not any(name.startswith("on") or name == "style" for name in attrs), (tag, attrs)

    # Every module the page loads (following imports from app.js) is served as JavaScript.
    pending, seen = ["app.js"], set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        asset = await admin.get(f"/static/js/{name}", token=None)
        assert asset.status == 200, name
        assert "javascript" in asset.headers["Content-Type"], name
        assert asset.headers["Cache-Control"] == "no-cache"
        assert "innerHTML" not in asset.text and "insertAdjacentHTML" not in asset.text, name
        assert "eval(" not in asset.text and "new Function" not in asset.text, name
        pending.extend(match[2:] for match in IMPORT.findall(asset.text))
    on_disk = {path.name for path in (STATIC_DIR / "js").glob("*.js")}
    assert seen == on_disk, "every module is used and every used module exists"
    css = await admin.get("/static/admin.css", token=None)
    assert css.status == 200 and css.headers["Content-Type"].startswith("text/css")

    # The vendored chart library is served from the page's own origin; the page links its CSS.
    links = [attrs["href"] for tag, attrs in parser.tags if tag == "link" and "href" in attrs]
    assert "/static/vendor/uplot/uPlot.min.css" in links
    chart = await admin.get("/static/js/chart.js", token=None)
    assert "from '../vendor/uplot/uPlot.esm.js';" in chart.text
    uplot = await admin.get("/static/vendor/uplot/uPlot.esm.js", token=None)
    assert uplot.status == 200 and "javascript" in uplot.headers["Content-Type"]
    assert "innerHTML" not in uplot.text and "eval(" not in uplot.text
    assert "Content-Security-Policy" in uplot.headers
    uplot_css = await admin.get("/static/vendor/uplot/uPlot.min.css", token=None)
    assert uplot_css.status == 200 and uplot_css.headers["Content-Type"].startswith("text/css")
    # axe-core is for the tests only: never served.
    assert (await admin.get("/static/vendor/axe-core/axe.min.js", token=None)).status == 404

    api = await admin.get("/api/auth/session")
    assert api.headers["X-Content-Type-Options"] == "nosniff"
    assert "Cache-Control" not in api.headers or api.headers["Cache-Control"] != "no-cache"


def test_vendored_libraries_name_their_version_and_licence() -> None:
    """Each vendored library keeps its licence and a VERSIONS.md written by scripts/vendor.sh."""
    for folder, name, licence in (
        (STATIC_DIR / "vendor" / "uplot", "uplot", "MIT"),
        (Path(__file__).parent / "vendor" / "axe-core", "axe-core", "MPL-2.0"),
    ):
        versions = (folder / "VERSIONS.md").read_text(encoding="utf-8")
        row = rf"\| {name} \| [0-9.]+ \| sha512-[A-Za-z0-9+/=]+ \| {licence} \|"
        assert re.search(row, versions), versions
        assert any(path.name.startswith("LICENSE") for path in folder.iterdir())
    assert (ROOT / "scripts" / "vendor.sh").stat().st_mode & 0o111, "the script is executable"


def test_every_static_file_is_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["admin_api"]
    packaged = {
        match
        for pattern in patterns
        for match in glob.glob(pattern, root_dir=STATIC_DIR.parent, recursive=True)
        if (STATIC_DIR.parent / match).is_file()
    }
    missing = sorted(static_files() - packaged)
    assert not missing, f"not shipped in the wheel (extend package-data): {missing}"


async def test_connection_test_calls_the_configured_model(admin: Admin) -> None:
    admin.llm.script(Text("OK"))
    ok = await admin.post("/api/models/test")
    assert ok.status == 200, ok.text
    assert ok.json["ok"] is True and ok.json["reply"] == "OK" and ok.json["error"] is None
    assert ok.json["model"] == "ollama/test-model" and ok.json["latency_ms"] >= 0
    assert len(admin.llm.chat_requests) == 1
    logged = (await admin.get("/api/logs")).json["items"][0]
    assert logged["purpose"] == "connection_test"

    admin.llm.script(HttpError(404, "model not found"))
    failed = await admin.post("/api/models/test")
    assert failed.status == 200
    assert failed.json["ok"] is False and failed.json["reply"] == ""
    assert "not available" in failed.json["error"]
    assert (await admin.post("/api/models/test", token=None)).status in (401, 403)
