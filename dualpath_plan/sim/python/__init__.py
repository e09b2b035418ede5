"""The Python fluid engine: the reference implementation of the runner (the compiled engine is its port)."""
