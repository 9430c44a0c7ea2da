"""Model connections on the page: create one with a key (never shown again), edit it keeping
the key, the Test button reporting success (loopback LLM up) and failure (a closed port) in
words, delete; a server picks its default model among the connections."""

from __future__ import annotations

import socket

from playwright.async_api import expect

from tests.admin_page.conftest import Ui
from tests.fakes.llm_server import FakeLLMServer, Text

GUILD = "guild:100"
SECRET = "sk-test-abcdef123456"


def closed_port() -> int:
    """A local port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_create_edit_test_and_delete_a_connection(ui: Ui) -> None:
    await ui.enable_axe()
    await ui.login()
    await ui.go("connections")
    screen = ui.screen("connections")
    before = len((await ui.api("GET", "/api/models/presets"))["presets"])

    await screen.get_by_role("button", name="New connection").click()
    form = screen.get_by_role("form", name="New connection")
    await form.get_by_label("Name").fill("Local GPU")
    await form.get_by_label("Backend").select_option("ollama")
    await form.get_by_label("Model").fill("gpu-model")
    await form.get_by_label("API key").fill(SECRET)
    await form.get_by_role("button", name="Create connection").click()
    await expect(ui.status).to_contain_text("Connection Local GPU saved.")
    presets = (await ui.api("GET", "/api/models/presets"))["presets"]
    (stored,) = [p for p in presets if p["label"] == "Local GPU"]
    assert (stored["value"], stored["backend"], stored["api_key"]["last4"]) == (
        "ollama/gpu-model",
        "ollama",
        "3456",
    )
    row = screen.locator(f'#connection-table tr[data-id="{stored["id"]}"]')
    await expect(row).to_contain_text("set (…3456)")
    assert SECRET not in await ui.page.content()

    # Editing shows an empty key field; leaving it empty keeps the stored key.
    await row.get_by_role("button", name="Edit Local GPU").click()
    form = screen.get_by_role("form", name="Edit Local GPU")
    await expect(form.get_by_label("API key")).to_have_value("")
    await expect(form.get_by_label("Model")).to_have_value("gpu-model")
    await form.get_by_label("Name").fill("Local GPU box")
    await form.get_by_role("button", name="Save connection").click()
    await expect(ui.status).to_contain_text("Connection Local GPU box saved.")
    preset = await ui.admin.services.repos.presets.get(stored["id"])
    assert preset is not None and (preset.label, preset.api_key) == ("Local GPU box", SECRET)

    # Test: the loopback model server has the model and answers.
    ui.admin.llm.models.append("gpu-model")
    ui.admin.llm.script(Text("OK"))
    await row.get_by_role("button", name="Test Local GPU box").click()
    result = row.locator("output.result")
    await expect(result).to_have_attribute("data-ok", "true")
    await expect(result).to_contain_text(f"Works at {ui.admin.llm.url}")
    await expect(result).to_contain_text("OK")

    # Test: nothing listens at the address.
    down = await ui.api(
        "POST",
        "/api/models/presets",
        json_body={
            "label": "Office box",
            "value": "ollama/other-model",
            "api_base": f"http://127.0.0.1:{closed_port()}",
        },
    )
    await ui.page.reload()
    await expect(screen).to_be_visible()
    down_row = screen.locator(f'#connection-table tr[data-id="{down["id"]}"]')
    await down_row.get_by_role("button", name="Test Office box").click()
    failed = down_row.locator("output.result")
    await expect(failed).to_have_attribute("data-ok", "false")
    await expect(failed).to_contain_text("✗")
    await expect(failed).to_have_attribute("data-kind", "unreachable")
    await expect(failed).to_contain_text("Unreachable: no server answers at http://127.0.0.1:")
    assert await ui.axe("connections tested") == []
    await ui.shoot("connections")

    delete = down_row.get_by_role("button", name="Delete Office box")
    await delete.click()
    await expect(delete).to_have_text("Press again to delete")
    await delete.click()
    await expect(ui.status).to_contain_text("Deleted the connection Office box.")
    await expect(down_row).to_have_count(0)
    assert len((await ui.api("GET", "/api/models/presets"))["presets"]) == before + 1
    ui.assert_clean()


async def test_a_server_picks_its_default_model_among_the_connections(ui: Ui) -> None:
    await ui.admin.services.spaces.ensure(GUILD, "Ramen Club")
    await ui.api(
        "POST", "/api/models/presets", json_body={"label": "Local", "value": "ollama/qwen3:8b"}
    )
    await ui.login()
    await ui.go("spaces")
    pick = ui.page.get_by_label("Default model of Ramen Club (guild:100)")
    await expect(pick).to_have_value("")
    await pick.select_option("ollama/qwen3:8b")
    await expect(ui.status).to_contain_text("Ramen Club (guild:100) now uses ollama/qwen3:8b.")
    record = await ui.admin.services.spaces.get(GUILD)
    assert record is not None and record.default_model == "ollama/qwen3:8b"
    await ui.page.reload()
    await ui.go("spaces")
    await expect(pick).to_have_value("ollama/qwen3:8b")
    await pick.select_option("")
    await expect(ui.status).to_contain_text("now uses the global model.")
    ui.assert_clean()


async def test_the_test_names_a_missing_model_and_a_refused_key(ui: Ui) -> None:
    async with FakeLLMServer(models=("gpt-test",)) as guarded:
        guarded.required_key = "sk-right-0123456789"
        for body in (
            {"label": "Not pulled", "value": "ollama/never-pulled"},
            {"label": "Wrong key", "value": "openai/gpt-test", "api_base": guarded.openai_base,
             "api_key": "sk-wrong-0123456789"},
        ):  # fmt: skip
            await ui.api("POST", "/api/models/presets", json_body=body)
        await ui.login()
        await ui.go("connections")
        screen = ui.screen("connections")
        missing = screen.locator("#connection-table tr", has_text="Not pulled")
        await missing.get_by_role("button", name="Test Not pulled").click()
        result = missing.locator("output.result")
        await expect(result).to_have_attribute("data-kind", "not_found")
        await expect(result).to_contain_text(f"Model missing on the server at {ui.admin.llm.url}")
        await expect(result).to_contain_text("ollama pull never-pulled")

        refused = screen.locator("#connection-table tr", has_text="Wrong key")
        await refused.get_by_role("button", name="Test Wrong key").click()
        result = refused.locator("output.result")
        await expect(result).to_have_attribute("data-kind", "auth")
        await expect(result).to_contain_text(f"Key refused by the server at {guarded.openai_base}")
        assert "sk-wrong" not in await ui.page.content()
    ui.assert_clean()


async def test_a_dead_connection_warns_on_its_own_row_and_the_configured_one_is_marked(
    ui: Ui,
) -> None:
    await ui.login()
    dead = f"http://127.0.0.1:{closed_port()}"
    body = {"label": "Spare", "value": "ollama/spare", "api_base": dead}
    made = await ui.api("POST", "/api/models/presets", json_body=body)
    await ui.api("POST", "/api/readiness/check")
    await ui.go("connections")
    screen = ui.screen("connections")
    spare = screen.locator(f'#connection-table tr[data-id="{made["id"]}"]')
    await expect(spare.locator(".connection-warning")).to_contain_text("Not answering: ")
    await expect(spare.locator(".connection-warning")).to_contain_text(dead)
    configured = screen.locator("#connection-table tbody tr").first
    await expect(configured).to_contain_text("(configured: LLM_MODEL, follows it)")
    await expect(configured.locator(".connection-warning")).to_have_count(0)
    ui.assert_clean()


async def test_a_space_keeps_time_in_the_zone_the_owner_types(ui: Ui) -> None:
    await ui.admin.services.spaces.ensure(GUILD, "Ramen Club")
    await ui.login()
    await ui.go("spaces")
    field = ui.page.get_by_label("Time zone of Ramen Club (guild:100)")
    await expect(field).to_have_value("")
    await field.fill("Mars/Olympus")
    await field.press("Enter")
    await expect(ui.status).to_contain_text("unknown time zone")
    await expect(field).to_have_value("")
    await field.fill("Asia/Tokyo")
    await field.press("Enter")
    await expect(ui.status).to_contain_text("Ramen Club (guild:100) now keeps time in Asia/Tokyo.")
    assert await ui.admin.services.repos.token_usage.timezone(GUILD) == "Asia/Tokyo"
    await ui.page.reload()
    await ui.go("spaces")
    await expect(field).to_have_value("Asia/Tokyo")
    ui.assert_clean()
