"""The passes of diffc, one per file; registered in diffc.registry."""
