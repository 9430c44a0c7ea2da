"""One conversation turn: context and its layers, streaming, the tool loop."""
