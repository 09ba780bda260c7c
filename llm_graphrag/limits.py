"""Per-file limits that keep any single input file well under 1 GB of memory.

Three limits, each a per-database setting (``llm graphrag settings limits``):

* ``max_file_bytes``: larger files are not read at all;
* ``max_chunks``: a file that chunks into more is not stored (extraction's memory grows
  with the chunks of a file);
* ``max_html_depth``: HTML nested deeper is not walked (the loaders recurse).

A file over a limit is an error for that file only, naming the limit and how to raise it.
The defaults keep the worst file they allow under 1 GB of peak RSS, measured with
``bench/bench_limits.py``.
"""

import errno
import os
import stat
from dataclasses import asdict, dataclass

from .loaders import LoadError

SETTING = "limits"
EXAMPLE = '{"max_file_bytes": 4000000, "max_chunks": 1000, "max_html_depth": 512}'


class LimitExceeded(LoadError):
    """A file over one of the limits; ``str(error)`` names it and how to raise it."""


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 4_000_000
    max_chunks: int = 1_000
    max_html_depth: int = 512

    @classmethod
    def from_setting(cls, value):
        return cls(**check_setting(value if value is not None else {}))

    def to_dict(self):
        return asdict(self)


def check_setting(value):
    """The ``limits`` setting, checked: positive integers for any of the three keys."""
    if not isinstance(value, dict):
        raise ValueError(f"limits must be a JSON object, e.g. {EXAMPLE}")
    unknown = set(value) - set(Limits.__dataclass_fields__)
    if unknown:
        raise ValueError(f"limits: unknown keys {', '.join(sorted(unknown))}; use {EXAMPLE}")
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, int) or number < 1:
            raise ValueError(f"limits: {key} must be a positive integer, not {number!r}")
    return value


def _exceeded(what, value, limit, key, fix="split the file"):
    return LimitExceeded(
        f"{what} ({value:,}) is over the limit of {limit:,} ({SETTING}.{key}); {fix}, or "
        f"raise the limit: llm graphrag settings {SETTING} '{{\"{key}\": {value}}}'"
    )


# The limits of the ingest running in this process (set by ``activate``), for the
# loaders, which are called as ``loader(path, data)``.
_active = Limits()


def activate(limits):
    global _active
    _active = limits


def active():
    return _active


def read_file(path, limits=None, *, follow=True):
    """The bytes of the regular file at ``path``, read only when within ``max_file_bytes``.

    The file is opened without blocking (a FIFO put in its place cannot hang the reader)
    and checked after opening: ``OSError`` for anything but a regular file, or for a
    symbolic link when not ``follow``; ``LimitExceeded`` for a file too large.
    """
    limits = limits or _active
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if info.st_size > limits.max_file_bytes:
            raise _exceeded("the file's size in bytes", info.st_size, limits.max_file_bytes, "max_file_bytes")
        with os.fdopen(fd, "rb", closefd=False) as fp:
            data = fp.read(limits.max_file_bytes + 1)
        if len(data) > limits.max_file_bytes:  # it grew while being read
            raise _exceeded("the file's size in bytes", len(data), limits.max_file_bytes, "max_file_bytes")
        return data
    finally:
        os.close(fd)


def check_chunks(count, limits=None):
    limits = limits or _active
    if count > limits.max_chunks:
        raise _exceeded("the file's chunk count", count, limits.max_chunks, "max_chunks")


def check_html_depth(depth, limits=None):
    limits = limits or _active
    if depth > limits.max_html_depth:
        raise _exceeded(
            "the HTML's nesting depth", depth, limits.max_html_depth, "max_html_depth",
            fix="flatten the markup",
        )
