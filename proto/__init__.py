"""tokend.proto: the service contract and the Python code generated from it."""
