"""The toolkit's own loaders, chunkers and extractors, registered as plugins."""
