"""Every hand-written SQL statement, behind named functions (see memoryhub/store/README)."""
