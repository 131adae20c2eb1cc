"""mem0 compatibility (``/mem0/``): mem0's platform API over MemoryHub's services, for code
written with ``mem0ai``'s ``MemoryClient``; see api/mem0/views.py."""
