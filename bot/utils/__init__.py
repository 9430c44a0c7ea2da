"""Plumbing for every part of the bot: background tasks, keyed locks, logging, redaction."""
