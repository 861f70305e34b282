"""Type stub of the compiled engine (``_compiled.pyx``)."""
