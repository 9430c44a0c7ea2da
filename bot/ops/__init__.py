"""Operating the bot: readiness of its parts (model, Discord, database, MCP, scheduler)."""
