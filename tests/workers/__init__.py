"""Work done by Celery: tasks on a real worker over Redis, the broker transport, retention."""
