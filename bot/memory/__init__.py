"""Memory layers: knowledge, local knowledge base, tagging and the word pool."""
