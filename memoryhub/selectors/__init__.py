"""Reads of the memory domain, one module per subject."""
