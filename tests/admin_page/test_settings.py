"""Settings on the page: masked secrets, plain values, presets and the connection test."""

from __future__ import annotations

from playwright.async_api import expect

from tests.admin_api.conftest import API_KEY
from tests.admin_page.conftest import OpenUi, Ui
from tests.fakes.llm_server import HttpError, Text

NEW_KEY = "sk-new-REPLACEDSECRET-WXYZ"


async def test_replace_a_secret_and_see_it_masked(open_ui: OpenUi) -> None:
    ui = await open_ui(llm_api_key=API_KEY)
    await ui.login()
    await ui.go("settings")
    masked = ui.page.locator('output.masked[data-key="llm_api_key"]')
    await expect(masked).to_have_text(f"Set · ends in …{API_KEY[-4:]}")
    assert API_KEY not in await ui.page.content()

    await ui.page.get_by_label("New LLM API key").fill(NEW_KEY)
    await ui.page.get_by_role("button", name="Replace").click()
    await expect(ui.status).to_contain_text("LLM API key saved.")
    await expect(masked).to_have_text("Set · ends in …WXYZ")
    await expect(ui.page.get_by_label("New LLM API key")).to_have_value("")
    assert "REPLACEDSECRET" not in await ui.page.content()
    assert ui.admin.services.settings().secret("llm_api_key") == NEW_KEY
    shown = (await ui.api("GET", "/api/settings"))["values"]["llm_api_key"]
    assert shown == {"set": True, "last4": "WXYZ"}
    await ui.shoot("settings")

    await ui.page.get_by_role("button", name="Reset to .env value").click()
    await ui.page.get_by_role("button", name="Really reset?").click()
    await expect(masked).to_have_text(f"Set · ends in …{API_KEY[-4:]}")
    assert ui.admin.services.settings().secret("llm_api_key") == API_KEY
    ui.assert_clean()


async def test_change_settings_and_see_refusals(ui: Ui) -> None:
    await ui.login()
    await ui.go("settings")
    tokens = ui.page.get_by_label("Context window (tokens)")
    await tokens.fill("4096")
    await ui.page.get_by_label("Language").select_option("ja")
    await ui.page.get_by_role("button", name="Save settings").click()
    await expect(ui.status).to_contain_text("Saved: Language, Context window (tokens).")
    values = (await ui.api("GET", "/api/settings"))["values"]
    assert (values["llm_context_tokens"], values["language"]) == (4096, "ja")

    await ui.page.get_by_label("Context window (tokens)").fill("2.5")
    await ui.page.get_by_role("button", name="Save settings").click()
    await expect(ui.status).to_have_attribute("data-kind", "error")
    await expect(ui.status).to_contain_text("Please check: Context window (tokens) — ")
    await expect(ui.page.get_by_label("Context window (tokens)")).to_have_attribute(
        "aria-invalid", "true"
    )
    await expect(ui.status).to_have_attribute("data-http-status", "422")
    assert ui.admin.services.settings().llm_context_tokens == 4096, "nothing half-applied"
    ui.assert_clean()


async def test_model_presets_and_connection_test(ui: Ui) -> None:
    await ui.login()
    await ui.go("settings")
    await expect(ui.page.locator("#screen-settings")).to_contain_text("ollama/other-model")

    form = ui.page.get_by_role("form", name="New model preset")
    await form.get_by_label("Preset name").fill("Other")
    await form.get_by_label("Model").fill("ollama/other-model")
    await form.get_by_role("button", name="Add preset").click()
    await expect(ui.page.locator("#preset-list")).to_contain_text("Other")
    await (
        ui.page.locator("#preset-list li", has_text="Other")
        .get_by_role("button", name="Use")
        .click()
    )
    await expect(ui.status).to_contain_text("Chat model is now ollama/other-model.")
    await expect(ui.page.get_by_label("Chat model")).to_have_value("ollama/other-model")
    assert ui.admin.services.settings().llm_model == "ollama/other-model"

    form = ui.page.get_by_role("form", name="New model preset")
    await form.get_by_label("Preset name").fill("Again")
    await form.get_by_label("Model").fill("ollama/other-model")
    await form.get_by_role("button", name="Add preset").click()
    await expect(ui.status).to_have_attribute("data-http-status", "409")

    result = ui.page.locator("#connection-result")
    ui.admin.llm.script(Text("OK"))
    await ui.page.get_by_role("button", name="Test connection").click()
    await expect(result).to_contain_text("Connected: ollama/other-model answered in")
    await expect(result).to_contain_text("“OK”")
    await expect(result).to_have_attribute("data-ok", "true")
    request = (await ui.admin.llm.wait_for_requests(1))[-1]
    assert request.model == "other-model", "the configured model was called"

    ui.admin.llm.script(HttpError(404, "model 'other-model' not found"))
    await ui.page.get_by_role("button", name="Test connection").click()
    await expect(result).to_have_attribute("data-ok", "false")
    await expect(result).to_contain_text("Failed: ollama/other-model did not answer")
    await expect(result).to_contain_text("is not available on Ollama")
    ui.assert_clean()
