"""Plumbing shared by every part of the bot: background tasks, keyed locks, logging set-up."""
