"""tokend.server: the gRPC service over tokend.core (servicer, config, metrics, workers)."""
