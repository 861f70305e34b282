"""Subcommands of the ``tokend`` CLI, one module per command group."""
