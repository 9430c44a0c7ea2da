"""Repositories: one per aggregate, each over the engine's `Database`."""
