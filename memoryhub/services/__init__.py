"""Writes of the memory domain, one module per subject; see each module's docstring."""
