"""PlayChat: a self-hosted Discord AI bot."""
