"""The dialects of diffc, one per file."""
