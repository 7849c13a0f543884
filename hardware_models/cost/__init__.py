"""Cost models; each formula is written in its function's docstring."""
