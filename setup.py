"""Build the bfsvtab SQLite extension, and compile the extraction modules with Cython.

Package metadata lives in setup.cfg.
"""

import hashlib
import json
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


# Modules of plain Python that extraction spends its time in, compiled by Cython when it is
# installed (the build requires it): the same source, about a tenth fewer instructions.
COMPILED = ["extraction", "relations", "extract", "linking"]
SOURCES_FILE = "compiled_sources.json"  # llm_graphrag.compiled reads it


def source_hash(path):
    with open(path, "rb") as fp:
        return hashlib.sha256(fp.read()).hexdigest()


def compiled_extensions():
    try:
        from Cython.Build import cythonize
    except ImportError:
        return []
    extensions = [Extension(f"llm_graphrag.{name}", [f"llm_graphrag/{name}.py"]) for name in COMPILED]
    return cythonize(
        extensions, build_dir="build/cython", quiet=True,
        compiler_directives={"language_level": 3, "binding": True},
    )


class build_sqlite_extension(build_ext):
    """build_ext that checks for sqlite3ext.h first and says how to get it, and records
    which source each compiled module was built from."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1  # the compiled modules take a while each

    def build_extensions(self):
        self._check_header()
        super().build_extensions()
        names = [ext.name.rpartition(".")[2] for ext in self.extensions]
        built = {name: source_hash(f"llm_graphrag/{name}.py") for name in names if name in COMPILED}
        with open(self._sources_file()[1], "w") as fp:
            json.dump(built, fp, indent=2, sort_keys=True)

    def _sources_file(self):
        """``(in the source tree, in the build directory)`` paths of ``SOURCES_FILE``."""
        return os.path.join("llm_graphrag", SOURCES_FILE), os.path.join(self.build_lib, "llm_graphrag", SOURCES_FILE)

    def copy_extensions_to_source(self):  # pip install -e
        super().copy_extensions_to_source()
        inplace_file, regular_file = self._sources_file()
        self.copy_file(regular_file, inplace_file, level=self.verbose)

    def _get_output_mapping(self):
        yield from super()._get_output_mapping()
        if self.inplace:
            inplace_file, regular_file = self._sources_file()
            yield regular_file, inplace_file

    def get_export_symbols(self, ext):
        if ext.name.rpartition(".")[2] in COMPILED:
            return super().get_export_symbols(ext)
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
    ]
    + compiled_extensions(),
    cmdclass={"build_ext": build_sqlite_extension},
)
