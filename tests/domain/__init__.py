"""Pure rules of the domain, no database: paths, chunking, credentials, the memory tool's texts."""
