"""External tools over the Model Context Protocol (stdio and streamable HTTP servers)."""
