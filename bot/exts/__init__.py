"""Discord extensions (cogs); the only place besides bot/bot.py that imports discord."""
