"""The HTTP JSON API (TEI/vLLM-shaped) and the token inspector page, served by each worker."""
