"""One conversation turn: context, streaming, the tool loop and events."""
