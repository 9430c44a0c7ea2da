"""One module per resource; each exposes `routes(deps)`, its part of the route table."""
