"""Build hook: compile tokend's engine (Cython) with the package.

Everything else lives in pyproject.toml. Without a C compiler (or Cython) the build prints one
warning line and the package installs with its pure-Python engine, which gives the same ids;
``TOKEND_REQUIRE_COMPILED=1`` (set by scripts/test.sh, so CI) turns that into a build failure.
"""

from __future__ import annotations

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

REQUIRED = os.environ.get("TOKEND_REQUIRE_COMPILED", "") not in ("", "0")


class OptionalBuildExt(build_ext):
    """build_ext that falls back to the pure-Python engine instead of failing the install."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            self._fallback(exc)

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._fallback(exc)

    def _fallback(self, exc: BaseException) -> None:
        if REQUIRED:
            raise exc
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(
            f"WARNING: tokend's compiled engine was not built ({first_line}); "
            "the pure-Python engine will be used",
            file=sys.stderr,
        )


def _extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize  # noqa: PLC0415 (a build requirement, maybe absent)
    except ImportError as exc:
        if REQUIRED:
            raise
        print(f"WARNING: tokend's compiled engine was not built ({exc})", file=sys.stderr)
        return []
    extension = Extension(
        "tokend.core.engine._compiled",
        ["core/engine/_compiled.pyx"],
        extra_compile_args=["-O3"],
    )
    return cythonize(
        [extension],
        compiler_directives={
            "language_level": 3,
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
        },
        quiet=True,
    )


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
