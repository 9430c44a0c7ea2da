"""Charts (js/chart.js over the vendored uPlot) on the logs screen, under the page's CSP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from playwright.async_api import expect

from tests.admin_page.conftest import DESKTOP, PHONE, Ui

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


async def seed_calls(ui: Ui, latencies: list[int], failed: set[int]) -> None:
    """One call per latency, ten minutes apart, oldest first; indexes in `failed` failed."""
    logs = ui.admin.services.repos.api_logs
    for n, latency in enumerate(latencies):
        row = await logs.add(
            session_id=None,
            model="ollama/test-model",
            purpose="chat",
            request_json="{}",
            response_text=None if n in failed else "ok",
            error="The model broke" if n in failed else None,
            latency_ms=latency,
        )
        created = (START + timedelta(minutes=10 * n)).isoformat(timespec="microseconds")
        await ui.admin.services.db.execute(
            "UPDATE api_logs SET created_at = ? WHERE id = ?", (created, row)
        )


async def plotted(ui: Ui) -> list[list[float | None]]:
    """The data the uPlot instance holds, as the chart's table lists it."""
    rows = ui.page.locator("#log-chart .chart-table tbody tr")
    return [
        [None if cell == "—" else float(cell.removesuffix(" ms")) for cell in cells[1:]]
        for cells in [await row.locator("th, td").all_text_contents() for row in await rows.all()]
    ]


async def test_the_logs_chart_draws_every_call_of_the_page(ui: Ui) -> None:
    latencies = [120, 80, 300, 95, 110, 70, 400]
    await seed_calls(ui, latencies, failed={2})
    await ui.login()
    await ui.go("logs")
    chart = ui.page.locator("#log-chart")
    await expect(chart).to_have_attribute("data-points", str(len(latencies)))
    await expect(chart.locator("figcaption")).to_contain_text(
        "7 calls on this page from", use_inner_text=True
    )
    await expect(chart.locator("figcaption")).to_contain_text(
        "median latency 110 ms, slowest 400 ms; 1 failed."
    )
    canvas = chart.locator("canvas")
    await expect(canvas).to_be_visible()
    box = await canvas.bounding_box()
    assert box is not None and box["width"] > 600 and box["height"] > 100

    # The numbers behind the drawing, oldest first: failed calls are their own series.
    assert await plotted(ui) == [
        [lat, None] if n != 2 else [None, lat] for n, lat in enumerate(latencies)
    ]
    await chart.get_by_text("Show the numbers").click()
    await expect(chart.locator(".chart-table")).to_be_visible()
    await ui.shoot("logs-chart")

    # The chart follows its container's width.
    await ui.page.set_viewport_size(PHONE)
    await ui.settle()
    phone = await canvas.bounding_box()
    assert phone is not None and phone["width"] < PHONE["width"]
    await ui.page.set_viewport_size(DESKTOP)

    # Filtering redraws it with the calls that match.
    await ui.screen("logs").get_by_label("Errors only").check()
    await ui.page.get_by_role("button", name="Apply filter").click()
    await expect(chart).to_have_attribute("data-points", "1")
    assert await plotted(ui) == [[None, 300.0]]
    ui.assert_clean()


async def test_an_empty_period_says_what_to_expect(ui: Ui) -> None:
    await ui.login()
    await ui.go("logs")
    chart = ui.page.locator("#log-chart")
    await expect(chart).to_have_attribute("data-points", "0")
    await expect(chart.locator(".chart-empty")).to_be_visible()
    await expect(chart.locator(".chart-empty")).to_contain_text("No LLM calls match yet.")
    await expect(chart.locator(".chart-canvas")).to_be_hidden()
    ui.assert_clean()


async def test_the_policy_allows_uplots_styles_but_not_style_attributes(ui: Ui) -> None:
    """uPlot styles through the CSSOM (allowed by style-src 'self'); a style= attribute written
    as markup would be refused, so the page never relies on one."""
    await seed_calls(ui, [10, 20], failed=set())
    await ui.login()
    await ui.go("logs")
    await expect(ui.page.locator("#log-chart")).to_have_attribute("data-points", "2")
    # uPlot sized its parts through element.style, and the browser applied it.
    width = await ui.page.locator("#log-chart .u-wrap").evaluate("el => el.style.width")
    assert width.endswith("px") and float(width[:-2]) > 0
    ui.assert_clean()

    applied = await ui.page.evaluate(
        """() => new Promise((done) => {
          const probe = document.createElement('div');
          document.body.append(probe);
          probe.style.color = 'rgb(1, 2, 3)';
          const viaCssom = getComputedStyle(probe).color;
          document.addEventListener('securitypolicyviolation', (event) => {
            const viaAttribute = getComputedStyle(probe).color;
            probe.remove();
            done({viaCssom, viaAttribute, directive: event.effectiveDirective});
          }, {once: true});
          probe.setAttribute('style', 'color: rgb(4, 5, 6)');
        })"""
    )
    assert applied["viaCssom"] == "rgb(1, 2, 3)"
    assert applied["directive"].startswith("style-src")
    assert applied["viaAttribute"] != "rgb(4, 5, 6)", "a style attribute was applied"
