"""Build the bfsvtab SQLite extension. Package metadata lives in setup.cfg."""

import os
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

try:
    from setuptools.errors import CompileError
except ImportError:  # setuptools < 59
    from distutils.errors import CompileError

MISSING_HEADER = (
    "Cannot compile the bfsvtab SQLite extension: the header sqlite3ext.h was "
    "not found. Install it and retry: apt-get install libsqlite3-dev "
    "(Debian/Ubuntu), dnf install sqlite-devel (Fedora), brew install sqlite "
    "(macOS, then set CPATH to its include directory)."
)


class build_sqlite_extension(build_ext):
    """build_ext that checks for sqlite3ext.h first and says how to get it."""

    def build_extensions(self):
        self._check_header()
        super().build_extensions()

    def get_export_symbols(self, ext):
        # A SQLite extension, not a Python module: no PyInit_ symbol to export.
        return ext.export_symbols

    def _check_header(self):
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "check_sqlite3ext.c")
            with open(source, "w") as fp:
                fp.write("#include <sqlite3ext.h>\nSQLITE_EXTENSION_INIT1\n")
            try:
                self.compiler.compile([source], output_dir=tmp)
            except CompileError:
                raise SystemExit(MISSING_HEADER)


setup(
    ext_modules=[
        Extension(
            "llm_graphrag._bfsvtab",
            sources=["llm_graphrag/bfsvtab.c"],
            extra_compile_args=["-O2"] if os.name != "nt" else [],
        )
    ],
    cmdclass={"build_ext": build_sqlite_extension},
)
