# cython: language_level=3
"""The compiled encoding engine (see tokend.core.engine for the interface and glossary)."""

include "_pretok.pxi"
