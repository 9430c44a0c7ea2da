"""A turn's vocabulary, below chat/, tools/ and memory/: events, hooks and tool results."""
