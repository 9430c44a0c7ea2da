"""Request and response shapes the store's own dataclasses do not already give, per resource."""
