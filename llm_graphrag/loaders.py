"""Loading documents: files in, normalized blocks and metadata out.

``load_document()`` picks a loader by file suffix from ``plugins.get_loaders()``. A loader
is called as ``loader(path, data)`` with the absolute path and the raw bytes, and returns a
``LoadedDocument`` holding at least ``path``, ``format`` and ``blocks`` (and ``title``,
``tags`` or ``breadcrumbs`` when the format knows them). ``load_document()`` fills in the
rest: hash, size, mtime, heading paths, title, language, kind and breadcrumbs.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import plugins

BLOCK_KINDS = ("heading", "paragraph", "list", "code", "table", "quote")


class LoadError(Exception):
    """A file that cannot be loaded; ``str(error)`` says what is wrong and what to do."""


@dataclass(slots=True)
class Block:
    kind: str
    text: str
    level: int = 0
    headings: tuple = ()

    def render(self) -> str:
        """The block as Markdown: headings as ``#`` lines, code fenced, quotes with ``>``."""
        if self.kind == "heading":
            return "#" * (self.level or 1) + " " + self.text
        if self.kind == "code":
            return "```\n" + self.text + "\n```"
        if self.kind == "quote":
            return "> " + self.text.replace("\n", "\n> ")
        return self.text


@dataclass
class LoadedDocument:
    path: str
    format: str
    title: str = ""
    kind: str = ""
    lang: str = ""
    blocks: list = field(default_factory=list)
    tags: list = field(default_factory=list)
    breadcrumbs: list = field(default_factory=list)
    hash: str = ""
    mtime_ms: int = 0
    size: int = 0
    # The path relative to the ingest root, or as the caller gave it: used in preludes.
    relpath: str = ""
    # Why the page is generated rather than written ("index page (...)", "search page
    # (...)", "source code listing (...)"), with ``kind`` "index", "search" or "code";
    # "" for a written page. Ingest skips generated pages unless asked to keep them.
    generated: str = ""

    @property
    def text(self) -> str:
        return "\n\n".join(block.render() for block in self.blocks)


# ---------------------------------------------------------------------------------------
# Decoding


def decode_text(data: bytes, path: str = "") -> str:
    """Bytes to text with Unix newlines; ``LoadError`` for binary or non-UTF-8 input."""
    if not data.strip():
        raise LoadError(
            "the file is empty or only whitespace; add some text or leave it out of the ingest"
        )
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as ex:
            raise LoadError(
                f"invalid UTF-16 at byte offset {ex.start}; re-save the file as UTF-8"
            ) from None
    else:
        nul = data.find(b"\x00")
        if nul != -1:
            raise LoadError(
                f"binary content (a NUL byte at offset {nul}), not a text document; "
                "remove it from the ingest paths or convert it to text"
            )
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as ex:
            offset = ex.start + (3 if data.startswith(b"\xef\xbb\xbf") else 0)
            raise LoadError(
                f"not valid UTF-8 (byte 0x{data[offset]:02x} at offset {offset}); "
                "re-save the file as UTF-8"
            ) from None
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


# ---------------------------------------------------------------------------------------
# Inline text helpers shared by the loaders

_SPACES = re.compile(r"[ \t\u00a0]+")


def squash(text: str) -> str:
    """Collapse runs of spaces and tabs to one space and strip the ends."""
    return _SPACES.sub(" ", text).strip()


# ---------------------------------------------------------------------------------------
# Metadata heuristics

_STOPWORDS = {
    "en": "the of and to in is that for it with as was on are be this by not or from at which "
    "you have an but can if will when use used",
    "de": "der die und das ist nicht den von zu mit sich des auf für ein eine im dem wird "
    "werden auch sind bei oder wenn",
    "fr": "le la les et des est une un du que dans pour qui pas sur avec par sont ce au "
    "vous être nous ou",
    "es": "el la los las y de que en un una es por con para del se no al lo como más su "
    "pero sus",
    "it": "il la di che e è un una per non con del della sono nel gli le si da al come "
    "anche più",
    "pt": "o a os as de que e do da em um uma para com não é no na por se dos mais como",
    "nl": "de het een en van in is dat op te zijn met voor niet aan er ook als bij door " "worden",
}
_STOPWORD_SETS = {lang: frozenset(words.split()) for lang, words in _STOPWORDS.items()}
_WORD = re.compile(r"[a-zßàáâãäçèéêëìíîïñòóôõöùúûüœ]+")


def guess_language(text: str) -> str:
    """ISO 639-1 code from stopword counts over the first few thousand characters.

    Returns ``""`` when there is too little prose to tell (a page of code, a table).
    """
    counts = Counter(_WORD.findall(text[:2500].lower()))
    scores = {lang: sum(counts[word] for word in words) for lang, words in _STOPWORD_SETS.items()}
    best = max(scores, key=scores.get)  # dict order breaks ties in favour of English
    return best if scores[best] >= 3 else ""


_FAQ_NAME = re.compile(r"\b(faqs?|glossary|definitions|terminology|frequently asked)\b", re.I)
_PROCEDURE_NAME = re.compile(
    r"\b(runbook|procedure|how[ -]?to|checklist|playbook|install(ing|ation)?|steps?)\b", re.I
)
_STEP_ITEM = re.compile(r"^\s*(\d+[.)]|step \d+\b)", re.I | re.M)
_QUESTION_PARA = re.compile(r"^(q|question)\s*[:.]", re.I)
_DEFINITION = re.compile(r"^\*\*[^*\n]{1,80}\*\*:\s")


def guess_kind(blocks, title: str = "", path: str = "") -> str:
    """``faq``, ``procedure`` or ``general``: which chunk budget suits the document.

    * faq: the title or file name says FAQ / glossary / definitions, or at least three
      headings are questions and they are half the headings, or at least three paragraphs
      start with ``Q:``, or most paragraphs are ``**term**: definition`` entries.
    * procedure: at least five numbered steps (list items or ``Step n`` paragraphs) making up
      40% of the words, or three steps and a title that says runbook / procedure / how-to /
      install / checklist.
    """
    name = f"{title} {Path(path).stem.replace('_', ' ')}"
    headings = [b for b in blocks if b.kind == "heading"]
    questions = sum(1 for b in headings if b.text.rstrip().endswith("?"))
    if _FAQ_NAME.search(name) or (questions >= 3 and 2 * questions >= len(headings) - 1):
        return "faq"
    paragraphs = [b for b in blocks if b.kind == "paragraph"]
    if sum(1 for b in paragraphs if _QUESTION_PARA.match(b.text)) >= 3:
        return "faq"
    definitions = sum(1 for b in paragraphs if _DEFINITION.match(b.text))
    if definitions >= 3 and 2 * definitions >= len(paragraphs):
        return "faq"
    steps = step_words = 0
    for block in blocks:
        kind, text = block.kind, block.text
        if kind == "list":
            n = len(_STEP_ITEM.findall(text))
            if n:
                steps += n
                step_words += text.count(" ") + 1
        elif kind == "paragraph" and (text[:1].isdigit() or text[:4].lower() == "step"):
            if _STEP_ITEM.match(text):
                steps += 1
                step_words += text.count(" ") + 1
    if steps >= 5:
        total_words = sum(block.text.count(" ") + 1 for block in blocks)
        if 5 * step_words >= 2 * total_words:
            return "procedure"
    if steps >= 3 and _PROCEDURE_NAME.search(title):
        return "procedure"
    return "general"


def assign_headings(blocks) -> None:
    """Set each block's ``headings`` to the path of headings above it, outermost first."""
    stack = []  # (level, text)
    path = ()
    for block in blocks:
        if block.kind == "heading":
            level = block.level or 1
            while stack and stack[-1][0] >= level:
                stack.pop()
            block.headings = tuple(text for _, text in stack)
            stack.append((level, block.text))
            path = block.headings + (block.text,)
        else:
            block.headings = path


def folder_breadcrumbs(path: str, root=None) -> list:
    """Folder names from ``root`` down to the file, or the file's last two parent folders."""
    parent = Path(path).parent
    if root is not None:
        try:
            parts = parent.relative_to(Path(os.path.abspath(root))).parts
            return list(parts)
        except ValueError:
            pass
    return [part for part in parent.parts[-2:] if part not in ("/", "")]


# ---------------------------------------------------------------------------------------
# Dispatch


def _suffix(name: str, loaders) -> str | None:
    name = name.lower()
    dot = name.rfind(".")
    if dot <= 0:
        return None
    last = name[dot:]
    second = name.rfind(".", 0, dot)
    if second > 0 and name[second:] in loaders:
        return name[second:]
    return last if last in loaders else None


def supported_suffixes() -> set:
    """File suffixes with a registered loader, such as ``.md`` or ``.rst.txt``."""
    return set(plugins.get_loaders())


def load_document(path, root=None, data: bytes | None = None) -> LoadedDocument:
    """Load and normalize one file; raises ``LoadError`` with a reason a user can act on.

    ``root`` is the folder the ingest started from: it sets ``relpath`` and the folder
    breadcrumbs. ``data`` skips reading the file (the path still picks the loader).
    """
    given = str(path)
    abs_path = os.path.abspath(given)
    loaders = plugins.get_loaders()
    suffix = _suffix(os.path.basename(abs_path), loaders)
    if suffix is None:
        known = ", ".join(sorted(loaders))
        raise LoadError(
            f"unsupported file type {Path(abs_path).suffix or '(no suffix)'!r}; "
            f"graphrag loads {known}"
        )
    mtime_ms = 0
    if data is None:
        try:
            with open(abs_path, "rb") as fp:
                stat = os.fstat(fp.fileno())
                data = fp.read()
        except FileNotFoundError:
            raise LoadError("no such file; check the path") from None
        except IsADirectoryError:
            raise LoadError(
                "this is a folder, not a file; pass the folder to ingest instead"
            ) from None
        except PermissionError:
            raise LoadError(
                "permission denied when reading the file; make it readable (chmod +r) "
                "or leave it out"
            ) from None
        except OSError as ex:
            raise LoadError(
                f"cannot read the file ({ex.strerror}); check the disk and path"
            ) from None
        mtime_ms = int(stat.st_mtime * 1000)
    else:
        try:
            mtime_ms = int(os.stat(abs_path).st_mtime * 1000)
        except OSError:
            pass
    try:
        document = loaders[suffix](abs_path, data)
    except LoadError:
        raise
    except Exception as ex:  # a parser failing on odd input must not stop an ingest
        raise LoadError(
            f"could not be parsed ({type(ex).__name__}: {ex}); check that the file is a valid "
            f"{suffix} document"
        ) from ex
    document.path = abs_path
    document.hash = hashlib.sha256(data).hexdigest()
    document.size = len(data)
    document.mtime_ms = mtime_ms
    blocks = document.blocks
    if not any(block.text.strip() for block in blocks):
        raise LoadError("no text found in the file; check that it is not empty or broken")
    if not any(block.headings for block in blocks):
        assign_headings(blocks)
    if not document.title:
        headings = [b for b in blocks if b.kind == "heading"]
        if headings:
            document.title = min(headings, key=lambda b: b.level).text
        else:
            document.title = Path(abs_path).name.split(".")[0]
    if not document.breadcrumbs:
        document.breadcrumbs = folder_breadcrumbs(abs_path, root)
    if not document.relpath:
        document.relpath = given
        if root is not None:
            rel = os.path.relpath(abs_path, os.path.abspath(root))
            if not rel.startswith(".."):
                document.relpath = rel
        document.relpath = document.relpath.replace(os.sep, "/")
    if not document.lang:
        document.lang = guess_language(_prose_sample(blocks))
    if not document.kind:
        document.kind = guess_kind(blocks, document.title, abs_path)
    return document


def _prose_sample(blocks, limit=2500):
    parts, size = [], 0
    for block in blocks:
        if block.kind in ("paragraph", "list", "quote"):
            parts.append(block.text)
            size += len(block.text)
            if size > limit:
                break
    return " ".join(parts)


def _hidden(name: str) -> bool:
    return name.startswith(".") or name == "__pycache__"


LINK_HINT = "graphrag only follows links that stay inside the folder (ingest --follow-symlinks follows them)"


def inside(path: str, folders) -> bool:
    """Whether ``path`` (a real path) is one of ``folders`` (real paths) or under one."""
    return any(path == folder or path.startswith(folder.rstrip("/") + "/") for folder in folders)


def refusal(path, within) -> str:
    """Why ``path`` may not be read when reads are confined to the folders ``within``, or "".

    The path is resolved (``~``, ``..`` and every symbolic link) first, so neither a link
    nor a glob can reach out of the folders.
    """
    real = os.path.realpath(os.path.expanduser(str(path)))
    roots = [os.path.realpath(os.path.expanduser(str(r))) for r in within]
    if inside(real, roots):
        return ""
    return (
        f"refused: resolves to {real}, outside the ingest roots ({', '.join(roots)}); "
        "only files under ingest_roots are read over HTTP and MCP"
    )


def _glob_base(pattern: str) -> str:
    """The folder a glob starts from: its path up to the first part with a wildcard."""
    parts = pattern.split(os.sep)
    for index, part in enumerate(parts):
        if glob.has_magic(part):
            return os.sep.join(parts[:index]) or (os.sep if pattern.startswith(os.sep) else ".")
    return os.path.dirname(pattern) or "."


def expand_paths(paths, *, within=None, follow_symlinks=False, skipped=None) -> tuple:
    """Files, folders (recursively) and globs (``**`` too) to sorted unique supported files.

    Returns ``(files, errors)``: ``errors`` lists ``{"path": ..., "error": ...}`` for paths
    that do not exist, globs matching nothing and files of an unsupported type. Hidden
    folders and files (``.git``) are skipped when walking folders. ``~`` is expanded.

    ``within`` confines the result to those folders: every file a walk or glob yields is
    resolved (``os.path.realpath``) and one outside them is an error starting "refused:"
    (the HTTP and MCP faces pass their ``ingest_roots``). Links to folders, and glob
    matches reached through a linked folder, that lead out of the folder (or glob base)
    they were found in are not followed unless ``follow_symlinks``; they are appended to
    ``skipped`` as ``{"path": ..., "reason": ...}``. Links to files are judged when the
    file is read (``ingest.special_file``).
    """
    loaders = plugins.get_loaders()
    found = set()
    errors = []
    skipped = [] if skipped is None else skipped
    within = None if within is None else [os.path.realpath(os.path.expanduser(str(r))) for r in within]

    def refused(path):
        problem = refusal(path, within) if within is not None else ""
        if problem:
            errors.append({"path": path, "error": problem})
        return bool(problem)

    def walk(folder):
        real_folder = os.path.realpath(folder)
        walked = {real_folder}
        for dirpath, dirnames, filenames in os.walk(folder, followlinks=follow_symlinks):
            kept = []
            for name in sorted(dirnames):
                if _hidden(name):
                    continue
                link = os.path.join(dirpath, name)
                if os.path.islink(link):
                    target = os.path.realpath(link)
                    if within is not None and refused(os.path.abspath(link)):
                        continue
                    if not follow_symlinks:
                        if not inside(target, [real_folder]):
                            skipped.append({
                                "path": os.path.abspath(link),
                                "reason": f"skipped: a symbolic link to the folder {target}, "
                                f"outside {folder}; {LINK_HINT}",
                            })
                        continue  # a link inside the folder: its files are found there
                    if target in walked or inside(os.path.realpath(dirpath), [target]):
                        skipped.append({
                            "path": os.path.abspath(link),
                            "reason": f"skipped: a symbolic link loop (to {target}, a folder "
                            "already walked); remove the link or ingest the folder once",
                        })
                        continue
                    walked.add(target)
                kept.append(name)
            dirnames[:] = kept
            for name in sorted(filenames):
                if not _hidden(name) and _suffix(name, loaders):
                    path = os.path.abspath(os.path.join(dirpath, name))
                    if not refused(path):
                        found.add(path)

    for given in paths:
        given = str(given)
        expanded = os.path.expanduser(given)
        if glob.has_magic(given):
            matches = glob.glob(expanded, recursive=True)
            if not matches:
                errors.append({"path": given, "error": "no files match this pattern"})
            base = os.path.realpath(_glob_base(expanded))
            for match in sorted(matches):
                path = os.path.abspath(match)
                if refused(path):
                    continue
                # A matched folder is judged by where it leads, a file by its folder (a
                # link to a file is judged when it is read).
                parent = os.path.realpath(path if os.path.isdir(path) else os.path.dirname(path))
                if not follow_symlinks and not inside(parent, [base]):
                    skipped.append({
                        "path": path,
                        "reason": f"skipped: reached through a symbolic link (it leads to "
                        f"{parent}, outside {_glob_base(expanded)}); {LINK_HINT}",
                    })
                elif os.path.isdir(match):
                    walk(match)
                elif _suffix(os.path.basename(match), loaders):
                    found.add(path)
        elif os.path.isdir(expanded):
            if not refused(os.path.abspath(expanded)):
                walk(expanded)
        elif os.path.isfile(expanded):
            if _suffix(os.path.basename(expanded), loaders):
                if not refused(os.path.abspath(expanded)):
                    found.add(os.path.abspath(expanded))
            else:
                errors.append(
                    {
                        "path": given,
                        "error": f"unsupported file type {Path(given).suffix or '(no suffix)'!r}; "
                        f"graphrag loads {', '.join(sorted(loaders))}",
                    }
                )
        elif os.path.lexists(expanded) and not os.path.islink(expanded):
            if not refused(os.path.abspath(expanded)):
                found.add(os.path.abspath(expanded))  # a FIFO or socket: reported unopened
        else:
            errors.append({"path": given, "error": "no such file or directory"})
    return [Path(p) for p in sorted(found)], errors
