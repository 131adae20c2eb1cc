"""What the product stands on: database adapters, the embedded database, embedding providers,
the publisher, deploy settings, health."""
