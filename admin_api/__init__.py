"""Admin API: an aiohttp app over the same services as the bot."""
