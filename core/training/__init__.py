"""Training of the tokenizer families other than byte-level BPE (one module per kind)."""
