"""The turn's budget: how one prompt's room is shared, tool results fitted, answers bounded."""
