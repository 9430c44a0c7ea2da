"""Language model gateway: one interface over the Ollama client and LiteLLM."""
