"""How the process runs: the event loop, the frozen start-up heap, numpy's BLAS threads."""
