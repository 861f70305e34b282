"""tokend.client: a small typed Python client for the tokend gRPC service."""
