"""Built-in LLM tools, their registry and the safe fetching they share."""
