"""tokend.v1: Python code generated from tokenizer.proto by scripts/gen_proto.py."""
