"""Settings on the page: grouped by topic, masked secrets, plain values, friendly refusals, the
read-only start-up settings; the chat model choice and the one connection test (Models)."""

from __future__ import annotations

from playwright.async_api import expect

from tests.admin_api.conftest import API_KEY, TOKEN
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
    # Saved in the form's order: the Model group lists the context window before the language.
    await expect(ui.status).to_contain_text("Saved: Context window (tokens), Language.")
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


async def test_chat_model_choice_and_the_one_connection_test(ui: Ui) -> None:
    """Settings' old "Model presets" card and its "Test connection" live on Models → Connections
    (a preset is a connection): one list of connections, one connection test on the page."""
    await ui.login()
    await ui.go("settings")
    await expect(ui.screen("settings").locator("#preset-list")).to_have_count(0)
    await ui.go("connections")
    screen = ui.screen("connections")
    await expect(screen.locator("#chat-model-now")).to_have_text("ollama/test-model")

    await screen.get_by_role("button", name="New connection").click()
    form = screen.get_by_role("form", name="New connection")
    await form.get_by_label("Name").fill("Other")
    await form.get_by_label("Model").fill("other-model")
    await form.get_by_role("button", name="Create connection").click()
    await expect(ui.status).to_contain_text("Connection Other saved.")
    await screen.get_by_label("Connection to use").select_option("ollama/other-model")
    await screen.get_by_role("button", name="Use", exact=True).click()
    await expect(ui.status).to_contain_text("Chat model is now ollama/other-model.")
    await expect(screen.locator("#chat-model-now")).to_have_text("ollama/other-model")
    assert ui.admin.services.settings().llm_model == "ollama/other-model"
    await ui.go("settings")
    await expect(ui.screen("settings").get_by_label("Chat model", exact=True)).to_have_value(
        "ollama/other-model"
    )

    await ui.go("connections")
    await screen.get_by_role("button", name="New connection").click()
    form = screen.get_by_role("form", name="New connection")
    await form.get_by_label("Name").fill("Again")
    await form.get_by_label("Model").fill("other-model")
    await form.get_by_role("button", name="Create connection").click()
    await expect(ui.status).to_have_attribute("data-http-status", "409")

    assert await ui.page.get_by_role("button", name="Test connection").count() == 1
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


async def test_settings_are_grouped_by_topic_and_start_up_ones_shown_read_only(
    open_ui: OpenUi,
) -> None:
    ui = await open_ui(discord_allowed_user_ids=[1300000000000000848], admin_token=TOKEN)
    await ui.login()
    await ui.go("settings")
    screen = ui.screen("settings")
    legends = await screen.locator("fieldset.group > legend").all_inner_texts()
    assert legends == ["Model", "Memory", "Tools", "Discord", "Budgets", "Topics"]
    topics = screen.locator('fieldset[data-group="topics"]')
    assert await topics.locator(".field[data-key]").evaluate_all(
        "rows => rows.map(r => r.dataset.key)"
    ) == ["topic_quiet_hours", "topic_reply_window_minutes", "topic_backoff_max_minutes"]
    model = screen.locator('fieldset[data-group="model"]')
    keys = await model.locator(".field[data-key]").evaluate_all(
        "rows => rows.map(r => r.dataset.key)"
    )
    assert keys[:4] == ["llm_model", "llm_api_base", "embed_model", "llm_context_tokens"]
    await expect(screen.locator('fieldset[data-group="tools"]')).to_contain_text(
        "Web search results"
    )

    startup = screen.locator("#startup-settings")
    discord = startup.locator('details[data-group="discord"]')
    await discord.locator("summary").click()
    allowed = discord.locator('dd[data-key="discord_allowed_user_ids"]')
    await expect(allowed).to_have_text("1300000000000000848")  # whole: not rounded to …800
    await expect(discord).to_contain_text("DISCORD_ALLOWED_USER_IDS")
    admin = startup.locator('details[data-group="admin"]')
    await admin.locator("summary").click()
    await expect(admin.locator('dd[data-key="admin_host"]')).to_contain_text("127.0.0.1")
    await expect(admin.locator('dd[data-key="admin_token"]')).to_have_text(
        f"set · ends in …{TOKEN[-4:]}"
    )
    assert TOKEN not in await ui.page.content()
    assert await startup.locator("input, select, textarea").count() == 0, "read-only"
    ui.assert_clean()


async def test_fields_show_help_ranges_and_sources_and_the_servers_refusal(
    open_ui: OpenUi,
) -> None:
    ui = await open_ui(llm_context_tokens=8192)
    await ui.login()
    await ui.go("settings")
    tokens = ui.page.get_by_label("Context window (tokens)")
    await expect(tokens).to_have_attribute("min", "512")
    await expect(tokens).to_have_attribute("max", "1048576")
    await expect(tokens).to_have_attribute("step", "1")
    await expect(tokens).to_have_accessible_description(
        "The model's context window in tokens; the prompt is fitted to it. (512 to 1048576)"
    )
    interval = ui.page.get_by_label("Discord edit interval (seconds)")
    await expect(interval).to_have_attribute("step", "any")
    await expect(interval).to_have_attribute("min", "0.2")
    assert await ui.page.get_by_label("Tagging mode").locator("option").all_inner_texts() == [
        "keywords",
        "llm",
    ]
    row = ui.page.locator('.field[data-key="llm_context_tokens"]')
    await expect(row.locator(".source")).to_have_text("From .env")
    await expect(ui.page.locator('.field[data-key="tagging_mode"] .source')).to_have_text("Default")

    await tokens.fill("511")
    await ui.page.get_by_label("Summarise after (messages)").fill("30")
    await ui.page.get_by_role("button", name="Save settings").click()
    refusal = row.locator(".field-error")
    # A sentence under its field, without the internal key (the label names the field).
    await expect(refusal).to_have_text("Must be a whole number, at least 512 and at most 1048576.")
    await expect(ui.status).to_contain_text(
        "Please check: Context window (tokens) — must be a whole number, at least 512"
    )
    assert "llm_context_tokens" not in await ui.status.inner_text()
    await expect(tokens).to_have_attribute("aria-invalid", "true")
    await expect(ui.status).to_have_attribute("data-kind", "error")
    current = ui.admin.services.settings()
    assert (current.llm_context_tokens, current.memory_summarize_threshold) == (8192, 20)

    await tokens.fill("512")
    await ui.page.get_by_role("button", name="Save settings").click()
    await expect(ui.status).to_contain_text("Saved:")
    await expect(refusal).to_have_count(0)
    await expect(row.locator(".source")).to_contain_text("Changed here")
    assert ui.admin.services.settings().llm_context_tokens == 512
    await ui.shoot("settings-help")

    await row.get_by_role("button", name="Reset to .env").click()
    await expect(ui.status).to_contain_text("Context window (tokens) reset to its .env value.")
    await expect(ui.page.get_by_label("Context window (tokens)")).to_have_value("8192")
    await expect(row.locator(".source")).to_have_text("From .env")
    assert ui.admin.services.settings().llm_context_tokens == 8192
    ui.assert_clean()
