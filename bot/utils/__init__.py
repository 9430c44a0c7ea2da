"""Plumbing for every part of the bot: tasks, locks, logging, redaction, access lists."""
