"""Benchmarks: run by make bench and make bench-recall, not collected by pytest."""
