"""Language features, one module each."""
