"""Infrastructure: the database and its adapters, the embedded server, the broker, the
publisher, jobs and the embedding providers. Nothing here knows about documents or people."""
