"""What the bot remembers: knowledge, notes, local knowledge base, tagging and the word pool."""
