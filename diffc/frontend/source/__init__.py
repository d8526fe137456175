"""Phase 1, source text -> tokens: the preprocessor (preprocess.py, with pp_tokens.py and
pp_macros.py), the map from preprocessed offsets back to files and lines (source_map.py) and the
lexer (lexer.py)."""
