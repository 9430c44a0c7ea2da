"""The ground floor for text: script ranges, script runs and BM25 (imports no bot package)."""
