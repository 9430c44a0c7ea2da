"""One module per resource; each exposes `routes()`, its part of the route table."""
