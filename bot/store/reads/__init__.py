"""Read models of the admin page: activity, full-text search, conversations."""
