"""The built-in loaders: Markdown, plain text, reStructuredText, HTML, PDF and DOCX.

Each loader turns the raw bytes of one file into ``Block`` objects. They are line-based
scanners built on compiled regular expressions rather than full parsers, so a large corpus
loads at several megabytes a second on one core.
"""

from __future__ import annotations

import html as html_module
import io
import re

import yaml

from llm_graphrag import limits
from llm_graphrag.hookspecs import hookimpl
from llm_graphrag.loaders import Block, LoadedDocument, LoadError, decode_text, squash
from llm_graphrag.normalize import (
    DROPPED,
    PageStats,
    bracketed_link,
    drop_emptied_headings,
    html_depth,
    html_link_chars,
    html_stats,
    html_trail,
    nav_bar,
    page_kind,
    page_title,
    site_link_heading,
    site_names,
    table_of_contents,
    word_chars,
)


@hookimpl
def register_loaders(register):
    register([".md", ".markdown", ".mdown", ".mkd"], load_markdown)
    register([".txt", ".text"], load_text)
    register([".rst", ".rest", ".rst.txt"], load_rst)
    register([".html", ".htm", ".xhtml"], load_html)
    register([".pdf"], load_pdf)
    register([".docx"], load_docx)


def _split_tags(value) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        items = value
    else:
        items = re.split(r"[,;]", str(value))
    tags = []
    for item in items:
        item = str(item).strip().strip("#").strip()
        if item and item not in tags:
            tags.append(item)
    return tags


_KINDS = ("general", "faq", "procedure")


def _apply_meta(document, meta: dict):
    """Copy title / tags / kind / lang / breadcrumbs from front matter or docinfo fields."""
    if not isinstance(meta, dict):
        return
    lower = {str(k).lower(): v for k, v in meta.items()}
    if lower.get("title"):
        document.title = squash(str(lower["title"]))
    document.tags = _split_tags(lower.get("tags", lower.get("keywords")))
    kind = str(lower.get("kind", lower.get("type", ""))).lower()
    if kind in _KINDS:
        document.kind = kind
    lang = lower.get("lang", lower.get("language"))
    if isinstance(lang, str) and re.fullmatch(r"[A-Za-z]{2}([-_][A-Za-z0-9]+)?", lang):
        document.lang = lang[:2].lower()
    crumbs = lower.get("breadcrumbs")
    if isinstance(crumbs, list):
        document.breadcrumbs = [str(c) for c in crumbs]


# =======================================================================================
# Markdown

_MD_FENCE = re.compile(r"^( {0,3})(`{3,}|~{3,})(.*)$")
_MD_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_MD_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_MD_HR = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_MD_LIST = re.compile(r"^( *)([-*+]|\d{1,9}[.)])(?:[ \t]+|$)")
_MD_QUOTE = re.compile(r"^ {0,3}> ?")
_MD_TABLE_SEP = re.compile(r"^ *\|? *:?-+:? *(\| *:?-+:? *)*\|? *$")
_MD_LINKDEF = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]+\S")
_MD_DEF = re.compile(r"^ {0,3}:[ \t]+")
_MD_HTML_BLOCK = re.compile(r"^ {0,3}</?[A-Za-z][\w-]*(\s[^>]*)?/?>\s*$")
_MD_COMMENT = re.compile(r"<!--.*?-->", re.S)

_MD_CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)", re.S)
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\](?:\([^)]*\)|\[[^\]]*\])")
_MD_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")
_MD_TAG = re.compile(r"</?[A-Za-z][\w-]*(?:\s[^<>]*)?/?>")
_MD_BOLD_UNDERSCORE = re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")
_MD_EM_STAR = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*]+?)(?<=[^\s*])\*(?![*\w])")
_MD_EM_UNDERSCORE = re.compile(r"(?<![\w_])_(?=[^\s_])([^_]+?)(?<=[^\s_])_(?![\w_])")
_MD_STRIKE = re.compile(r"~~(.+?)~~")
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~<])")
_MD_INLINE_HINT = re.compile(r"[`\[<*_\\~&!]")


_MD_UNESCAPE = {0xE000 + c: c for c in range(128)}


def _md_text(text: str) -> str:
    escaped = "\\" in text
    if escaped:  # hide escaped characters from the rules below
        text = _MD_ESCAPE.sub(lambda m: chr(0xE000 + ord(m.group(1))), text)
    text = _MD_IMAGE.sub(r"\1", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _MD_AUTOLINK.sub(r"\1", text)
    text = _MD_TAG.sub("", text)
    text = _MD_BOLD_UNDERSCORE.sub(r"**\1**", text)
    text = _MD_EM_STAR.sub(r"\1", text)
    text = _MD_EM_UNDERSCORE.sub(r"\1", text)
    text = _MD_STRIKE.sub(r"\1", text)
    if escaped:
        text = text.translate(_MD_UNESCAPE)
    if "&" in text:
        text = html_module.unescape(text)
    return text


def md_inline(text: str) -> str:
    """Markdown inline markup to plain text, keeping `code` and **bold**."""
    text = squash(text)
    if not _MD_INLINE_HINT.search(text):
        return text
    out, last = [], 0
    for match in _MD_CODE_SPAN.finditer(text):
        out.append(_md_text(text[last : match.start()]))
        out.append("`" + match.group(2).strip() + "`")
        last = match.end()
    out.append(_md_text(text[last:]))
    return squash("".join(out))


def _md_starts_block(line: str) -> bool:
    return bool(
        _MD_FENCE.match(line)
        or _MD_ATX.match(line)
        or _MD_QUOTE.match(line)
        or _MD_HR.match(line)
        or (
            _MD_LIST.match(line)
            and len(line) - len(line.lstrip()) < 4
            and line.strip() not in "-*+"
        )
    )


def _md_front_matter(text: str):
    """``(front_matter, body)``: the YAML between leading ``---`` lines, and the rest."""
    meta = {}
    if text.startswith("---\n"):
        end = re.search(r"^(---|\.\.\.)[ \t]*$", text[4:], re.M)
        if end:
            try:
                meta = yaml.safe_load(text[4 : 4 + end.start()]) or {}
            except yaml.YAMLError:
                meta = {}
            text = text[4 + end.end() :]
    return meta, text


def parse_markdown(text: str, keep_link_lists: bool = False):
    """Markdown to ``(blocks, front_matter)``.

    Tables of contents (lists of links to the page's own sections) and navigation bars
    (paragraphs of nothing but links) are dropped unless ``keep_link_lists``.
    """
    meta, text = _md_front_matter(text)
    return _md_blocks(text, keep_link_lists), meta


def _md_link_chars(raw: str):
    """``(chars, link_chars, links, anchor_chars)`` of Markdown source, as rendered text.

    ``anchor_chars`` counts the text of links to the page's own sections (``(#...)``).
    """
    links = link_chars = anchor_chars = 0
    if "[" in raw or "<" in raw:
        for match in _MD_LINK.finditer(raw):
            links += 1
            n = word_chars(md_inline(match.group(1)))
            link_chars += n
            if "](#" in match.group(0):
                anchor_chars += n
        for match in _MD_AUTOLINK.finditer(raw):
            links += 1
            link_chars += word_chars(match.group(1))
    chars = word_chars(md_inline(raw))
    return chars, min(link_chars, chars), links, min(anchor_chars, chars)


_MD_LEADING_LINK = re.compile(r"^(?:\[[^\]]+\](?:\(|\[)|<(?:https?|ftp|mailto):)")


def markdown_stats(text: str) -> PageStats:
    """``PageStats`` of a Markdown body (front matter removed), line by line."""
    stats = PageStats()
    fence = None
    block = 0
    in_paragraph = led = False
    for line in text.split("\n"):
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and not stripped.strip(fence[0]):
                stats.largest_code = max(stats.largest_code, block)
                fence = None
            else:
                n = word_chars(line)
                stats.code_chars += n
                block += n
            continue
        opening = _MD_FENCE.match(line)
        stripped = line.strip()
        if opening or not stripped or _MD_TABLE_SEP.match(line) or _MD_HR.match(line):
            if opening:
                fence, block = opening.group(2), 0
            in_paragraph = False
            continue
        if _MD_ATX.match(line) or _MD_SETEXT.match(line):
            stats.words += len(stripped.split())
            in_paragraph = False
            continue
        item = _MD_LIST.match(line)
        row = stripped.startswith("|")
        if item:
            content = line[item.end() :]
        elif row:
            content = stripped.strip("|").strip()
        else:
            content = stripped
        chars, link_chars, _, _ = _md_link_chars(content)
        stats.words += len(content.split())
        if item or row or not in_paragraph:  # a new unit; a paragraph's lines continue one
            led = bool(_MD_LEADING_LINK.match(content.lstrip()))
            stats.units += 1
            stats.lead_units += led
        stats.chars += chars
        stats.link_chars += link_chars
        stats.led_chars += chars if led else 0
        in_paragraph = not (item or row)
    if fence is not None:
        stats.largest_code = max(stats.largest_code, block)
    return stats


def _md_blocks(text: str, keep_link_lists: bool):
    if "<!--" in text:
        text = _MD_COMMENT.sub("", text)
    lines = text.expandtabs(4).split("\n")
    blocks = []
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            i += 1
            continue
        indent = len(line) - len(line.lstrip(" "))
        fence = _MD_FENCE.match(line)
        if fence:
            i = _md_fence(lines, i, fence, blocks)
            continue
        if indent >= 4:
            j = i
            while j < n and (not lines[j].strip() or lines[j].startswith("    ")):
                j += 1
            while not lines[j - 1].strip():
                j -= 1
            blocks.append(Block("code", "\n".join(l[4:] for l in lines[i:j])))
            i = j
            continue
        atx = _MD_ATX.match(line)
        if atx:
            title = md_inline(atx.group(2) or "")
            if title:
                blocks.append(Block("heading", title, len(atx.group(1))))
            i += 1
            continue
        if _MD_HR.match(line):
            i += 1
            continue
        if _MD_QUOTE.match(line):
            j = i
            parts = []
            while j < n and lines[j].strip():
                parts.append(_MD_QUOTE.sub("", lines[j], count=1))
                j += 1
            inner = _md_blocks("\n".join(parts), keep_link_lists)
            quote = "\n".join(b.render() if b.kind != "paragraph" else b.text for b in inner)
            if quote:
                blocks.append(Block("quote", quote))
            i = j
            continue
        if _MD_LIST.match(line) and stripped not in ("-", "*", "+"):
            i = _md_list(lines, i, blocks, keep_link_lists)
            continue
        if "|" in line and i + 1 < n and "-" in lines[i + 1] and _MD_TABLE_SEP.match(lines[i + 1]):
            j = i
            rows = []
            while j < n and "|" in lines[j] and lines[j].strip():
                if j != i + 1:
                    cells = lines[j].strip().strip("|").split("|")
                    rows.append(" | ".join(md_inline(c) for c in cells))
                j += 1
            blocks.append(Block("table", "\n".join(rows)))
            i = j
            continue
        if _MD_LINKDEF.match(line):
            i += 1
            continue
        if _MD_HTML_BLOCK.match(line) and not _MD_TAG.sub("", line).strip():
            i += 1
            continue
        # A paragraph, a setext heading or a definition-list entry.
        j = i + 1
        while j < n and lines[j].strip():
            if _MD_SETEXT.match(lines[j]) or _MD_DEF.match(lines[j]) or _md_starts_block(lines[j]):
                break
            j += 1
        paragraph = md_inline(" ".join(lines[i:j]))
        if j < n and _MD_SETEXT.match(lines[j]) and paragraph:
            blocks.append(Block("heading", paragraph, 1 if lines[j].strip()[0] == "=" else 2))
            i = j + 1
            continue
        if j < n and _MD_DEF.match(lines[j]):
            k = j
            definitions = []
            while k < n and _MD_DEF.match(lines[k]):
                parts = [_MD_DEF.sub("", lines[k], count=1)]
                k += 1
                while (
                    k < n
                    and lines[k].startswith("  ")
                    and lines[k].strip()
                    and not _MD_DEF.match(lines[k])
                ):
                    parts.append(lines[k])
                    k += 1
                definitions.append(md_inline(" ".join(parts)))
            for definition in definitions:
                blocks.append(Block("paragraph", f"{paragraph}: {definition}"))
            i = k
            continue
        if paragraph and not keep_link_lists and _md_nav_bar(" ".join(lines[i:j])):
            blocks.append(DROPPED)
        elif paragraph:
            blocks.append(Block("paragraph", paragraph))
        i = j
    return drop_emptied_headings(blocks)


def _md_nav_bar(raw: str) -> bool:
    return nav_bar(*_md_link_chars(raw))


def _md_fence(lines, i, fence, blocks):
    indent, marker = len(fence.group(1)), fence.group(2)
    j = i + 1
    body = []
    n = len(lines)
    while j < n:
        stripped = lines[j].strip()
        if stripped.startswith(marker[0] * len(marker)) and not stripped.strip(marker[0]):
            break
        line = lines[j]
        body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
        j += 1
    while body and not body[-1].strip():
        body.pop()
    if body:
        blocks.append(Block("code", "\n".join(body)))
    return j + 1


def _md_list(lines, i, blocks, keep_link_lists=True):
    """A list, loose or tight, with nested items and fenced code kept inside its items."""
    n = len(lines)
    items = []  # [indent_level_text, text_parts]
    depth_indents = []
    in_fence = None
    j = i
    while j < n:
        line = lines[j]
        if in_fence is not None:
            items[-1][1].append(
                "\n" + " " * (2 * items[-1][0] + 2) + line[in_fence:].rstrip()
                if line.strip()
                else "\n"
            )
            if line.strip().startswith("```") or line.strip().startswith("~~~"):
                in_fence = None
            j += 1
            continue
        if not line.strip():
            k = j + 1
            while k < n and not lines[k].strip():
                k += 1
            if (
                k < n
                and (lines[k].startswith("  ") or _MD_LIST.match(lines[k]))
                and not _MD_ATX.match(lines[k])
            ):
                j = k
                continue
            break
        match = _MD_LIST.match(line)
        if match and line.strip() not in ("-", "*", "+"):
            indent = len(match.group(1))
            while depth_indents and depth_indents[-1] > indent:
                depth_indents.pop()
            if not depth_indents or depth_indents[-1] < indent:
                depth_indents.append(indent)
            marker = match.group(2)
            if marker[-1] == ")":
                marker = marker[:-1] + "."
            if not marker[0].isdigit():
                marker = "-"
            items.append([len(depth_indents) - 1, [marker + " ", line[match.end() :]]])
        elif not items:
            break
        elif _MD_FENCE.match(line.strip()):
            in_fence = len(line) - len(line.lstrip())
            items[-1][1].append("\n" + " " * (2 * items[-1][0] + 2) + line.strip())
        elif line.startswith(" ") or not _md_starts_block(line):
            if _MD_ATX.match(line) or (not line.startswith(" ") and _MD_HR.match(line)):
                break
            items[-1][1].append(" " + line.strip())
        else:
            break
        j += 1
    out = []
    for depth, parts in items:
        # Fenced code keeps its lines; prose around it is normalized.
        segments = "".join(parts).split("\n")
        text = md_inline(segments[0]) if len(segments) == 1 else _md_item_with_code(parts)
        out.append("  " * depth + text)
    if out and not keep_link_lists:
        counts = [0, 0, 0, 0]
        for _, parts in items:
            counts = [a + b for a, b in zip(counts, _md_link_chars("".join(parts[1:])))]
        if table_of_contents(*counts):
            blocks.append(DROPPED)
            return j
    if out:
        blocks.append(Block("list", "\n".join(out)))
    return j


def _md_item_with_code(parts):
    out, prose = [], []
    for part in parts:
        if part.startswith("\n"):
            if prose:
                out.append(md_inline("".join(prose)))
                prose = []
            out.append(part)
        else:
            prose.append(part)
    if prose:
        out.append("\n" + md_inline("".join(prose)))
    return "".join(out).rstrip()


def load_markdown(path, data):
    meta, body = _md_front_matter(decode_text(data, path))
    kind, reason = page_kind(markdown_stats(body))
    blocks = _md_blocks(body, keep_link_lists=kind == "index")
    document = LoadedDocument(path=path, format="md", blocks=blocks)
    _apply_meta(document, meta)
    if kind:
        document.kind, document.generated = kind, reason
    return document


# =======================================================================================
# Plain text

_TXT_UNDERLINE = re.compile(r"^([=\-~^*#+_])\1{2,}$")
_TXT_LIST = re.compile(r"^ {0,3}([-*•+]|\d{1,3}[.)]|\(\d{1,3}\))[ \t]+\S")
_TXT_FIELD = re.compile(r"^[\w][\w ./-]{0,30}:\s+\S")
_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)*")


def parse_text(text: str):
    """Plain text: paragraphs, underlined headings, lists, indented code, a title line."""
    blocks = []
    styles = []
    paragraphs = [p for p in _BLANK_LINES.split(text.strip("\n")) if p.strip()]
    for index, paragraph in enumerate(paragraphs):
        lines = [line.rstrip() for line in paragraph.split("\n")]
        # Over- and underlined or underlined headings, possibly followed by text.
        while len(lines) >= 2:
            if (
                len(lines) >= 3
                and _TXT_UNDERLINE.match(lines[0].strip())
                and _TXT_UNDERLINE.match(lines[2].strip())
                and lines[1].strip()
            ):
                style, title, lines = lines[0].strip()[0] + "o", lines[1], lines[3:]
            elif (
                _TXT_UNDERLINE.match(lines[1].strip())
                and lines[0].strip()
                and not _TXT_LIST.match(lines[0])
            ):
                style, title, lines = lines[1].strip()[0], lines[0], lines[2:]
            else:
                break
            if style not in styles:
                styles.append(style)
            blocks.append(Block("heading", squash(title), min(styles.index(style) + 1, 6)))
        if not lines:
            continue
        if all(line.startswith(("    ", "\t")) for line in lines):
            indent = min(len(line) - len(line.lstrip()) for line in lines)
            code = "\n".join(line[indent:] for line in lines)
            if blocks and blocks[-1].kind == "code":
                blocks[-1].text += "\n\n" + code
            else:
                blocks.append(Block("code", code))
            continue
        first = lines[0].strip()
        if (
            index
            and len(lines) == 1
            and len(first) <= 60
            and first.isupper()
            and len(first.split()) <= 8
        ):
            # A short line in capitals is a heading.
            if "caps" not in styles:
                styles.append("caps")
            blocks.append(Block("heading", squash(first), min(styles.index("caps") + 1, 6)))
            continue
        if _TXT_LIST.match(lines[0]):
            items = []
            for line in lines:
                if _TXT_LIST.match(line):
                    items.append(squash(line))
                elif items:
                    items[-1] += " " + squash(line)
            text_items = "\n".join(items)
            if blocks and blocks[-1].kind == "list" and _same_list(blocks[-1].text, items[0]):
                blocks[-1].text += "\n" + text_items
            else:
                blocks.append(Block("list", text_items))
            continue
        if (
            index == 0
            and not blocks
            and len(paragraphs) > 1
            and len(first) <= 80
            and first[-1:] not in ".,;:!?"
            and (len(lines) == 1 or first.isupper() or all(len(line) <= 60 for line in lines))
        ):
            # A short first line is the title; short lines under it are a subtitle.
            styles.append("title")
            blocks.append(Block("heading", squash(first), 1))
            if len(lines) > 1:
                blocks.append(Block("paragraph", "\n".join(squash(line) for line in lines[1:])))
            continue
        if len(lines) > 1 and all(_TXT_FIELD.match(line) for line in lines):
            blocks.append(Block("paragraph", "\n".join(squash(line) for line in lines)))
        else:
            blocks.append(Block("paragraph", squash(" ".join(lines))))
    return blocks


def _same_list(previous: str, first_item: str) -> bool:
    last = previous.rsplit("\n", 1)[-1]
    return last[:1].isdigit() == first_item[:1].isdigit()


def load_text(path, data):
    blocks = parse_text(decode_text(data, path))
    return LoadedDocument(path=path, format="txt", blocks=blocks)


# =======================================================================================
# reStructuredText

_RST_ADORN_CHARS = frozenset("=-`:'\"~^_*+#<>.!$%&,/;?@\\|")
_RST_ADORN = re.compile(r"""([=\-`:'"~^_*+#<>.!$%&,/;?@\\|])\1*$""")
_RST_BULLET = re.compile(r"([-*+•‣⁃])( +|$)")
_RST_ENUM = re.compile(r"(?:(\d+|#)[.)]|\((\d+|#|[a-zA-Z])\)|([a-zA-Z])\))( +|$)")
_RST_FIELD = re.compile(r":([^:`\s][^:`]*?):(?: +(.*))?$")
_RST_DIRECTIVE = re.compile(r"\.\.[ ]+(?:\|[^|]+\|[ ]+)?([\w][\w:.+-]*?)::(?:[ ]+(.*))?$")
_RST_FOOTNOTE = re.compile(r"\.\.[ ]+\[([^\]]+)\](?:[ ]+(.*))?$")
_RST_GRID = re.compile(r"\+[-=]+\+")
_RST_SIMPLE = re.compile(r"=+( +=+)+$")

_RST_INLINE = re.compile(
    r"``(.+?)``(?!`)"  # 1: inline literal
    r"|:([\w.+-]+(?::[\w.+-]+)?):`([^`]+)`"  # 2, 3: a role
    r"|`([^`]+)`(__?)?"  # 4, 5: interpreted text or a hyperlink reference
    r"|\*\*([^*\s](?:[^*]*?[^*\s])?)\*\*"  # 6: strong
    r"|\*(?<![\w*]\*)([^*\s](?:[^*]*?[^*\s])?)\*(?![\w*])"  # 7: emphasis
    r"|\|(?<![\w|]\|)([^|\s](?:[^|]*?[^|\s])?)\|(?:__?)?(?![\w|])"  # 8: substitution
    r"|\\(.)"  # 9: an escaped character
)
_RST_FOOTNOTE_REF = re.compile(r"\s*\[(?:#[\w-]*|\*|\d+)\]_")
_RST_SUBSTITUTION = re.compile(r"^\.\.[ ]+\|([^|]+)\|[ ]+replace::[ ]+(.+)$", re.M)
_DOUBLE_SPACES = re.compile(r"  +")
_RST_TEXT_ROLES = frozenset(
    "ref doc term dfn abbr emphasis strong title-reference t title guilabel menuselection "
    "math sub sup subscript superscript index numref any".split()
)
_RST_TARGET = re.compile(r"^(.*?)\s*<[^<>]*>$", re.S)


def _rst_interpreted(text):
    if text[-1] == ">":
        target = _RST_TARGET.match(text)
        if target and target.group(1):
            text = target.group(1)
    if text[0] in "~!":
        text = text[1:]
    return text


def _rst_role(match, substitutions=None):
    index = match.lastindex
    if index == 1:
        return "`" + match.group(1) + "`"
    if index == 3:
        text = _rst_interpreted(match.group(3))
        role = match.group(2).lower()
        if role.startswith("py:"):
            role = role[3:]
        if role in _RST_TEXT_ROLES:
            return text
        if role == "pep":
            return "PEP " + text
        if role == "rfc":
            return "RFC " + text
        if role in ("issue", "bpo"):
            return "bpo-" + text
        if role == "gh":
            return "gh-" + text
        return "`" + text + "`"
    if index == 4:
        return "`" + _rst_interpreted(match.group(4)) + "`"
    if index == 5:  # `text <url>`_ and `label`_
        return _rst_interpreted(match.group(4))
    if index == 6:
        return "**" + match.group(6) + "**"
    if index == 9:
        escaped = match.group(9)
        return "" if escaped.isspace() else escaped
    if index == 8 and substitutions:
        return substitutions.get(match.group(8), match.group(8))
    return match.group(index)


def rst_inline(text: str, substitutions=None) -> str:
    """reStructuredText inline markup to plain text, keeping `code` and **bold**.

    ``substitutions`` maps ``|name|`` references to their replacement text.
    """
    if "]_" in text:
        text = _RST_FOOTNOTE_REF.sub("", text)
    if not ("`" in text or "*" in text or "|" in text or "\\" in text):
        return _DOUBLE_SPACES.sub(" ", text) if "  " in text else text
    if substitutions:
        text = _RST_INLINE.sub(lambda match: _rst_role(match, substitutions), text)
    else:
        text = _RST_INLINE.sub(_rst_role, text)
    if "  " in text:
        text = _DOUBLE_SPACES.sub(" ", text)
    return text


def _dedent(lines):
    """Remove the indentation common to the non-blank lines (blank lines are ``""``).

    Spaces sort before any printable character, so the lexicographically largest line
    is one of the least indented.
    """
    nonblank = [line for line in lines if line]
    if not nonblank:
        return lines
    low, high = min(nonblank), max(nonblank)
    indent = min(len(low) - len(low.lstrip(" ")), len(high) - len(high.lstrip(" ")))
    return [line[indent:] for line in lines] if indent else lines


# Directives whose content (and arguments) are dropped.
_RST_DROP = frozenset(
    "toctree index highlight highlightlang moduleauthor sectionauthor codeauthor testsetup "
    "testcleanup tabularcolumns include literalinclude image raw meta currentmodule module "
    "program default-role default-domain role contents sectnum target-notes header footer "
    "title limited-api-list miscnews cssclass rst-class autosummary automodule autoclass "
    "autofunction py:module py:currentmodule c:namespace c:namespace-push c:namespace-pop "
    "cpp:namespace".split()
)
_RST_CODE = frozenset(
    "code-block code sourcecode doctest testcode testoutput productionlist parsed-literal "
    "math".split()
)
_RST_ADMONITIONS = {
    "note": "Note",
    "warning": "Warning",
    "tip": "Tip",
    "important": "Important",
    "caution": "Caution",
    "attention": "Attention",
    "danger": "Danger",
    "error": "Error",
    "hint": "Hint",
    "seealso": "See also",
    "impl-detail": "CPython implementation detail",
    "availability": "Availability",
    "todo": "To do",
}
_RST_VERSIONS = {
    "versionadded": "New in version {0}",
    "versionchanged": "Changed in version {0}",
    "deprecated": "Deprecated since version {0}",
    "deprecated-removed": "Deprecated since version {0}, will be removed in version {1}",
}
_RST_QUOTES = frozenset("epigraph highlights pull-quote".split())
_RST_SIGNATURE_PREFIX = {
    "class": "class ",
    "exception": "exception ",
    "classmethod": "classmethod ",
    "staticmethod": "staticmethod ",
    "abstractmethod": "abstractmethod ",
    "coroutinefunction": "coroutine ",
    "coroutinemethod": "coroutine ",
    "awaitablefunction": "awaitable ",
    "awaitablemethod": "awaitable ",
    "decorator": "@",
    "decoratormethod": "@",
}
_RST_DESCRIPTIONS = frozenset(
    "function method attribute data describe object envvar cmdoption option opcode "
    "pdbcommand 2to3fixer monitoring-event event type member macro var struct union enum "
    "enumerator property".split()
) | frozenset(_RST_SIGNATURE_PREFIX)


class _RstParser:
    def __init__(self, substitutions=None):
        self.substitutions = substitutions or {}
        self.blocks = []
        self.styles = []
        self.meta = {}

    def heading(self, text, style):
        if style not in self.styles:
            self.styles.append(style)
        text = rst_inline(text.strip(), self.substitutions)
        if " --- " in text:
            text = text.replace(" --- ", " — ")
        self.blocks.append(Block("heading", text, min(self.styles.index(style) + 1, 6)))

    def parse(self, lines, top=False):
        blocks = self.blocks
        n = len(lines)
        i = 0
        while i < n:
            line = lines[i]
            if not line:
                i += 1
                continue
            c = line[0]
            if c == " ":
                j = i + 1
                while j < n and (not lines[j] or lines[j][0] == " "):
                    j += 1
                start = len(blocks)
                self.parse(_dedent(lines[i:j]))
                for block in blocks[start:]:
                    if block.kind == "paragraph":
                        block.kind = "quote"
                i = j
                continue
            nxt = lines[i + 1] if i + 1 < n else ""
            if c == "." and line.startswith("..") and (len(line) == 2 or line[2] == " "):
                i = self.explicit(lines, i)
                continue
            if top and c in _RST_ADORN_CHARS and _RST_ADORN.match(line):
                if (
                    nxt
                    and i + 2 < n
                    and lines[i + 2][:1] == c
                    and _RST_ADORN.match(lines[i + 2])
                    and not _RST_ADORN.match(nxt.strip() or "x")
                ):
                    self.heading(nxt, c + "o")
                    i += 3
                    continue
                if len(line) >= 4 and not nxt:
                    i += 1  # a transition
                    continue
            if (
                top
                and nxt
                and nxt[0] in _RST_ADORN_CHARS
                and (len(nxt) >= len(line) or len(nxt) >= 4)
                and _RST_ADORN.match(nxt)
            ):
                self.heading(line, nxt[0])
                i += 2
                continue
            if c in "-*+•‣⁃" and _RST_BULLET.match(line):
                i = self.items(lines, i, _RST_BULLET, False)
                continue
            if (c.isdigit() or c in "#(" or (c.isalpha() and line[1:2] == ")")) and _RST_ENUM.match(
                line
            ):
                i = self.items(lines, i, _RST_ENUM, True)
                continue
            if c == "+" and _RST_GRID.match(line):
                i = self.grid_table(lines, i)
                continue
            if c == "=" and _RST_SIMPLE.match(line):
                i = self.simple_table(lines, i)
                continue
            if c == ":" and _RST_FIELD.match(line):
                i = self.fields(lines, i, top)
                continue
            if c == "|" and (line == "|" or line[1] == " "):
                j = i
                while j < n and lines[j][:1] == "|":
                    j += 1
                text = "\n".join(rst_inline(l[2:], self.substitutions) for l in lines[i:j])
                blocks.append(Block("paragraph", text))
                i = j
                continue
            if c == ">" and line.startswith(">>>"):
                j = i
                while j < n and lines[j]:
                    j += 1
                blocks.append(Block("code", "\n".join(lines[i:j])))
                i = j
                continue
            j = i + 1
            while j < n and lines[j] and lines[j][0] != " ":
                j += 1
            if j == i + 1 and j < n and lines[j]:
                i = self.definition(lines, i)
                continue
            text = " ".join(lines[i:j]) if j > i + 1 else line
            i = j
            if text.endswith("::"):
                text = text[:-2]
                if text.endswith(" ") or not text:
                    text = text.rstrip()
                else:
                    text += ":"
                if text:
                    blocks.append(Block("paragraph", rst_inline(text, self.substitutions)))
                while i < n and not lines[i]:
                    i += 1
                if i < n and lines[i][0] == " ":
                    j = i
                    while j < n and (not lines[j] or lines[j][0] == " "):
                        j += 1
                    while not lines[j - 1]:
                        j -= 1
                    blocks.append(Block("code", "\n".join(_dedent(lines[i:j]))))
                    i = j
                continue
            blocks.append(Block("paragraph", rst_inline(text, self.substitutions)))

    def body(self, lines, i):
        """End of the indented body that starts after line ``i``."""
        n = len(lines)
        j = i + 1
        while j < n and (not lines[j] or lines[j][0] == " "):
            j += 1
        while j > i + 1 and not lines[j - 1]:
            j -= 1
        return j

    def explicit(self, lines, i):
        line = lines[i]
        end = self.body(lines, i)
        next_line = end
        directive = _RST_DIRECTIVE.match(line)
        if directive is None:
            footnote = _RST_FOOTNOTE.match(line)
            if footnote:
                text = " ".join([footnote.group(2) or ""] + [l.strip() for l in lines[i + 1 : end]])
                label = footnote.group(1)
                label = "" if label.startswith(("#", "*")) else f"[{label}] "
                self.blocks.append(
                    Block("paragraph", label + rst_inline(squash(text), self.substitutions))
                )
            return next_line  # comments, targets and substitution definitions
        name = directive.group(1).lower()
        if name in _RST_DROP:
            return next_line
        argument = directive.group(2) or ""
        body = _dedent(lines[i + 1 : end])
        # Split the body into argument continuation lines, options and content.
        k = 0
        extra = []
        while k < len(body) and body[k] and body[k][0] != ":":
            extra.append(body[k])
            k += 1
        while k < len(body) and body[k] and body[k][0] == ":" and _RST_FIELD.match(body[k]):
            k += 1
            while k < len(body) and body[k][:1] == " ":
                k += 1
        content = _dedent(body[k:]) if k else body
        blocks = self.blocks
        if name in _RST_CODE:
            code = "\n".join((extra if name == "math" else []) + content).strip("\n")
            if name == "math" and argument:
                code = argument + ("\n" + code if code else "")
            if code:
                blocks.append(Block("code", code))
        elif name in _RST_DESCRIPTIONS or ":" in name:
            signatures = [argument] + [l.strip() for l in extra]
            prefix = _RST_SIGNATURE_PREFIX.get(name.split(":")[-1], "")
            text = "\n".join(
                f"`@{s}`" if prefix == "@" else f"{prefix}`{s}`" for s in signatures if s
            )
            if text:
                blocks.append(Block("paragraph", text))
            self.parse(content)
        elif name in _RST_ADMONITIONS or name in _RST_VERSIONS or name == "admonition":
            if name in _RST_VERSIONS:
                versions = argument.split(None, 2 if name == "deprecated-removed" else 1)
                count = 2 if name == "deprecated-removed" else 1
                label = _RST_VERSIONS[name].format(*(versions + ["", ""])[:count])
                rest = " ".join(versions[count:])
                first = [rest] if rest else []
            elif name == "admonition":
                label, first = rst_inline(argument, self.substitutions), []
            else:
                label, first = _RST_ADMONITIONS[name], [argument] if argument else []
            start = len(blocks)
            self.parse(first + extra + ([""] if extra or first else []) + content)
            if len(blocks) > start and blocks[start].kind == "paragraph":
                blocks[start].text = f"{label}: {blocks[start].text}"
            else:
                blocks.insert(start, Block("paragraph", label + "."))
        elif name == "audit-event":
            parts = argument.split(None, 1)
            text = f"Raises an auditing event `{parts[0]}`" if parts else "Raises an auditing event"
            if len(parts) > 1:
                arguments = (
                    parts[1].rsplit(" ", 1)[0]
                    if " " in parts[1]
                    and parts[1].rsplit(" ", 1)[1].startswith(("func", "library"))
                    else parts[1]
                )
                text += f" with arguments `{arguments}`"
            blocks.append(Block("paragraph", text + "."))
        elif name in ("list-table", "csv-table", "table"):
            self.directive_table(name, argument, body[k:], content)
        elif name in ("rubric", "topic", "sidebar", "centered"):
            if argument:
                blocks.append(
                    Block("paragraph", "**" + rst_inline(argument, self.substitutions) + "**")
                )
            self.parse(content)
        elif name in _RST_QUOTES:
            start = len(blocks)
            self.parse(content)
            for block in blocks[start:]:
                if block.kind == "paragraph":
                    block.kind = "quote"
        else:
            # only, container, glossary, hlist, figure captions, tabs, unknown directives.
            self.parse(extra + ([""] if extra else []) + content if name != "figure" else content)
        return next_line

    def items(self, lines, i, pattern, numbered):
        n = len(lines)
        out = []
        counter = 0
        while i < n:
            line = lines[i]
            match = pattern.match(line)
            if not match:
                break
            width = match.end() if match.group(match.lastindex) else len(line) + 1
            j = i + 1
            while j < n and (not lines[j] or lines[j][0] == " "):
                j += 1
            end = j
            while end > i + 1 and not lines[end - 1]:
                end -= 1
            counter += 1
            if numbered:
                label = match.group(1) or match.group(2) or match.group(3)
                marker = f"{counter}." if label == "#" else f"{label}."
            else:
                marker = "-"
            first = line[width:] if width <= len(line) else ""
            rest = lines[i + 1 : end]
            if self.simple_item(first, rest):
                text = rst_inline(squash(" ".join([first] + rest)), self.substitutions)
            else:
                text = self.render_nested([first] + _dedent(rest) if first else _dedent(rest))
            out.append(f"{marker} {text}")
            i = j
            k = i
            while k < n and not lines[k]:
                k += 1
            if k < n and pattern.match(lines[k]):
                i = k
            else:
                break
        self.blocks.append(Block("list", "\n".join(out)))
        return i

    @staticmethod
    def simple_item(first, rest):
        """True for an item that is one paragraph: no blank line, nested list or literal."""
        if first.endswith("::"):
            return False
        for line in rest:
            if not line:
                return False
            stripped = line.lstrip()
            if stripped[:1] in "-*+•#(" or stripped[:1].isdigit() or stripped.endswith("::"):
                if (
                    _RST_BULLET.match(stripped)
                    or _RST_ENUM.match(stripped)
                    or stripped.endswith("::")
                ):
                    return False
        return True

    def render_nested(self, lines):
        inner = _RstParser(self.substitutions)
        inner.parse(lines)
        parts = []
        for block in inner.blocks:
            text = block.render() if block.kind in ("code", "heading") else block.text
            parts.append(text)
        return "\n".join(parts).replace("\n", "\n  ")

    def definition(self, lines, i):
        term = rst_inline(lines[i], self.substitutions)
        j = self.body(lines, i)
        start = len(self.blocks)
        self.parse(_dedent(lines[i + 1 : j]))
        blocks = self.blocks
        if len(blocks) > start and blocks[start].kind in ("paragraph", "quote"):
            blocks[start].kind = "paragraph"
            blocks[start].text = f"{term}: {blocks[start].text}"
        else:
            blocks.insert(start, Block("paragraph", term))
        return j

    def fields(self, lines, i, top):
        n = len(lines)
        items = []
        while i < n:
            match = _RST_FIELD.match(lines[i])
            if not match:
                break
            j = i + 1
            while j < n and lines[j][:1] == " ":
                j += 1
            value = squash(" ".join([match.group(2) or ""] + lines[i + 1 : j]))
            items.append((match.group(1), value))
            i = j
        if top and all(block.kind == "heading" for block in self.blocks):
            for name, value in items:
                self.meta[name.strip().lower()] = value
        else:
            text = "\n".join(
                f"- {rst_inline(name, self.substitutions)}: {rst_inline(value, self.substitutions)}"
                for name, value in items
            )
            self.blocks.append(Block("list", text))
        return i

    def grid_table(self, lines, i):
        n = len(lines)
        rows, current = [], None
        while i < n and lines[i] and lines[i][0] in "+|":
            line = lines[i]
            if line[0] == "+":
                if current:
                    rows.append(current)
                current = None
            else:
                cells = [c.strip() for c in line.strip("|").split("|")]
                if current is None:
                    current = cells
                elif len(cells) == len(current):
                    current = [f"{a} {b}".strip() for a, b in zip(current, cells)]
                else:
                    current = [" ".join(current + cells)]
            i += 1
        if current:
            rows.append(current)
        text = "\n".join(" | ".join(rst_inline(c, self.substitutions) for c in row) for row in rows)
        if text.strip(" |\n"):
            self.blocks.append(Block("table", text))
        return i

    def simple_table(self, lines, i):
        n = len(lines)
        border = lines[i]
        spans = [m.span() for m in re.finditer(r"=+", border)]
        rows = []
        j = i + 1
        while j < n:
            line = lines[j]
            if _RST_SIMPLE.match(line) or (line and set(line) <= {"=", " "}):
                j += 1
                if j >= n or not lines[j]:
                    break
                continue
            if not line or set(line) <= {"-", " "}:
                j += 1
                continue
            cells = [
                line[a : (spans[k + 1][0] if k + 1 < len(spans) else len(line))].strip()
                for k, (a, _) in enumerate(spans)
            ]
            if rows and not cells[0]:
                rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells)]
            else:
                rows.append(cells)
            j += 1
        text = "\n".join(" | ".join(rst_inline(c, self.substitutions) for c in row) for row in rows)
        if text.strip(" |\n"):
            self.blocks.append(Block("table", text))
        return j

    def directive_table(self, name, argument, option_lines, content):
        rows = []
        if name == "list-table":
            for line in content:
                stripped = line.strip()
                if line.startswith("* -"):
                    rows.append([stripped[3:].strip()])
                elif stripped.startswith("- ") and rows and line.startswith("  "):
                    rows[-1].append(stripped[2:])
                elif stripped and rows:
                    rows[-1][-1] += " " + stripped
        elif name == "csv-table":
            import csv

            for option in option_lines:
                match = _RST_FIELD.match(option.strip())
                if match and match.group(1) == "header" and match.group(2):
                    rows.extend(csv.reader([match.group(2)], skipinitialspace=True))
            rows.extend(csv.reader([l for l in content if l.strip()], skipinitialspace=True))
        else:
            start = len(self.blocks)
            self.parse(content)
            if argument and len(self.blocks) > start:
                self.blocks.insert(
                    start,
                    Block("paragraph", "**" + rst_inline(argument, self.substitutions) + "**"),
                )
            return
        if argument:
            self.blocks.append(
                Block("paragraph", "**" + rst_inline(argument, self.substitutions) + "**")
            )
        text = "\n".join(
            " | ".join(rst_inline(squash(c), self.substitutions) for c in row) for row in rows
        )
        if text.strip(" |\n"):
            self.blocks.append(Block("table", text))


def parse_rst(text: str):
    """reStructuredText to ``(blocks, docinfo fields)``."""
    if "\t" in text:
        text = text.expandtabs(8)
    substitutions = {}
    if "replace::" in text:
        for name, value in _RST_SUBSTITUTION.findall(text):
            substitutions[name] = rst_inline(value.strip())
    parser = _RstParser(substitutions)
    lines = text.split("\n")
    if " \n" in text or text.endswith(" "):
        lines = [line.rstrip() for line in lines]
    parser.parse(lines, top=True)
    return parser.blocks, parser.meta


def load_rst(path, data):
    blocks, meta = parse_rst(decode_text(data, path))
    document = LoadedDocument(path=path, format="rst", blocks=blocks)
    _apply_meta(document, meta)
    return document


# =======================================================================================
# HTML

_HTML_DROP = frozenset(
    "script style nav footer aside form noscript template svg button iframe input select "
    "textarea object canvas dialog menu -comment head".split()
)
_HTML_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_HTML_INLINE = frozenset(
    "a abbr b bdi bdo cite code data del dfn em font i ins kbd label mark q s samp small span "
    "strong sub sup time tt u var wbr big img br -text".split()
)
_HTML_MARKERS = (
    r"(?:nav|navbar|navigation|menu|menubar|breadcrumbs?|footer|sidebar|"
    r"sphinxsidebar|toc|related|headerlink|skip-?link|"
    r"cookie-?banner|site-?header)"
)
_HTML_BOILERPLATE = re.compile(r"(?:^|[-_\s])" + _HTML_MARKERS + r"(?:$|[-_\s])")
_HTML_BOILERPLATE_ID = re.compile(r"(?:[a-z]+[-_])?" + _HTML_MARKERS)
_HTML_BOILERPLATE_ROLES = frozenset(
    ("navigation", "banner", "contentinfo", "complementary", "search", "menu", "menubar")
)
_HTML_PHRASING = _HTML_INLINE - {"a", "label", "-text"}
_HTML_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([\w-]+)""", re.I)


def _collapse(text: str) -> str:
    """All runs of whitespace, newlines included, to one space."""
    return " ".join(text.split())


def _boilerplate(node) -> bool:
    """Navigation, sidebars, footers and banners, told by their role, class or id.

    An id names boilerplate only when it is a marker itself, perhaps with one word in front
    ("sidebar", "global-nav"): ids made from headings ("related-objects") are content.
    """
    attrs = node.attributes
    if not attrs:
        return False
    role = (attrs.get("role") or "").lower()
    if role in _HTML_BOILERPLATE_ROLES:
        return True
    marker = (attrs.get("class") or "").lower()
    if marker and (_HTML_BOILERPLATE.search(marker) or "navigation" in marker):
        return True
    ident = (attrs.get("id") or "").lower()
    return bool(ident) and bool(_HTML_BOILERPLATE_ID.fullmatch(ident))


def _skip(node) -> bool:
    """Subtrees left out of the text: dropped tags, boilerplate and banner headings."""
    tag = node.tag
    if tag in _HTML_DROP:
        return True
    if tag in _HTML_PHRASING:  # never navigation, and most of the nodes: a fast way out
        return False
    if tag == "a":
        return _boilerplate(node) or bracketed_link(node)
    return _boilerplate(node) or (tag in _HTML_HEADINGS and site_link_heading(node))


def _html_inline(node, in_pre=False) -> str:
    parts = []
    for child in node.iter(include_text=True):
        tag = child.tag
        if tag == "-text":
            parts.append(child.text_content or "")
        elif _skip(child):
            continue
        elif tag == "br":
            parts.append("\n" if in_pre else " ")
        elif tag == "img":
            continue
        elif tag in ("code", "kbd", "samp", "tt") and not in_pre:
            inner = _collapse(_html_inline(child))
            parts.append(f"`{inner}`" if inner else "")
        elif tag in ("b", "strong") and not in_pre:
            inner = _collapse(_html_inline(child))
            parts.append(f"**{inner}**" if inner else "")
        elif tag in (
            "ul",
            "ol",
            "table",
            "pre",
            "p",
            "div",
            "dd",
            "dt",
            "li",
            "blockquote",
            "tr",
            "td",
            "th",
        ):
            parts.append(" " + _html_inline(child, in_pre) + " ")
        else:
            parts.append(_html_inline(child, in_pre))
    return "".join(parts)


class _HtmlWalker:
    def __init__(self, keep_link_lists=False):
        self.blocks = []
        self.buffer = []
        # Tables of contents and navigation bars are dropped, except on pages made of
        # links (kept by choice, they keep all their links).
        self.keep_link_lists = keep_link_lists

    def flush(self):
        if self.buffer:
            text = _collapse("".join(self.buffer))
            if text:
                self.blocks.append(Block("paragraph", text))
            self.buffer = []

    def walk(self, node, in_article=False):
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                self.buffer.append(child.text_content or "")
                continue
            if _skip(child) or (tag == "header" and not in_article):
                continue
            if tag in _HTML_INLINE:
                self.buffer.append(_html_inline(_Wrap(child)) if tag != "br" else " ")
                continue
            self.flush()
            if tag in _HTML_HEADINGS:
                text = _collapse(_html_inline(child))
                if text:
                    self.blocks.append(Block("heading", text, _HTML_HEADINGS[tag]))
            elif tag == "p":
                if not self.keep_link_lists and nav_bar(*html_link_chars(child)):
                    self.blocks.append(DROPPED)
                    continue
                text = _collapse(_html_inline(child))
                if text:
                    self.blocks.append(Block("paragraph", text))
            elif tag in ("ul", "ol"):
                if not self.keep_link_lists and table_of_contents(*html_link_chars(child)):
                    self.blocks.append(DROPPED)
                    continue
                lines = self.list_lines(child, 0)
                if lines:
                    self.blocks.append(Block("list", "\n".join(lines)))
            elif tag == "pre":
                text = _html_inline(child, in_pre=True).strip("\n")
                if text.strip():
                    self.blocks.append(Block("code", text))
            elif tag == "table":
                rows = []
                for row in child.css("tr"):
                    cells = [
                        _collapse(_html_inline(cell))
                        for cell in row.iter()
                        if cell.tag in ("td", "th")
                    ]
                    if any(cells):
                        rows.append(" | ".join(cells))
                if rows:
                    self.blocks.append(Block("table", "\n".join(rows)))
            elif tag == "blockquote":
                inner = _HtmlWalker(self.keep_link_lists)
                inner.walk(child, in_article)
                inner.flush()
                text = "\n".join(b.text for b in drop_emptied_headings(inner.blocks))
                if text:
                    self.blocks.append(Block("quote", text))
            elif tag == "dl":
                term = ""
                for item in child.iter():
                    if item.tag == "dt":
                        term = _collapse(_html_inline(item))
                    elif item.tag == "dd":
                        text = _collapse(_html_inline(item))
                        self.blocks.append(Block("paragraph", f"{term}: {text}" if term else text))
            elif tag == "hr":
                continue
            else:
                self.walk(child, in_article or tag in ("article", "main"))
                self.flush()

    def list_lines(self, node, depth):
        ordered = node.tag == "ol"
        try:
            number = int(node.attributes.get("start") or 1)
        except ValueError:
            number = 1
        lines = []
        for item in node.iter():
            if item.tag != "li":
                continue
            nested = []
            parts = []
            for child in item.iter(include_text=True):
                if child.tag in ("ul", "ol"):
                    nested.extend(self.list_lines(child, depth + 1))
                elif child.tag == "-text":
                    parts.append(child.text_content or "")
                elif not _skip(child):
                    parts.append(_html_inline(_Wrap(child)))
            marker = f"{number}." if ordered else "-"
            number += 1
            lines.append("  " * depth + f"{marker} {_collapse(''.join(parts))}".rstrip())
            lines.extend(nested)
        return lines


class _Wrap:
    """Present one node as the only child of a parent, for ``_html_inline``."""

    def __init__(self, node):
        self.node = node

    def iter(self, include_text=True):
        yield self.node


def _decode_html(data: bytes, path) -> str:
    declared = _HTML_CHARSET.search(data[:2048])
    if declared:
        encoding = declared.group(1).decode("ascii").lower()
        if encoding not in ("utf-8", "utf8"):
            try:
                return data.decode(encoding).replace("\r\n", "\n")
            except (LookupError, UnicodeDecodeError):
                pass
    return decode_text(data, path)


def _html_breadcrumbs(tree) -> list:
    for selector in (
        "[aria-label*=readcrumb]",
        "[itemtype*=BreadcrumbList]",
        ".breadcrumb",
        ".breadcrumbs",
        "#breadcrumbs",
        "#breadcrumb",
    ):
        node = tree.css_first(selector)
        if node is None:
            continue
        items = [_collapse(n.text()) for n in node.css("li")] or [
            _collapse(n.text()) for n in node.css("a")
        ]
        if not items:
            items = [_collapse(p) for p in re.split(r"[/>»›|]", node.text())]
        return [item for item in items if item]
    return []


def parse_html(text: str):
    """HTML to ``(blocks, title, tags, lang, breadcrumbs, kind, reason)``, boilerplate dropped.

    ``kind`` and ``reason`` say when the page is generated (``normalize.page_kind()``).
    """
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(text)
    title_node = tree.css_first("title")
    title = _collapse(title_node.text()) if title_node else ""
    tags = []
    for meta in tree.css("meta"):
        if (meta.attributes.get("name") or "").lower() in ("keywords", "tags"):
            tags.extend(_split_tags(meta.attributes.get("content")))
    html_node = tree.css_first("html")
    lang = (html_node.attributes.get("lang") or "") if html_node else ""
    breadcrumbs = _html_breadcrumbs(tree) or html_trail(tree)
    root = tree.css_first("main") or tree.css_first("[role=main]")
    if root is None:
        articles = tree.css("article")
        root = articles[0] if len(articles) == 1 else tree.body
    kind = reason = ""
    if root is not None:
        limits.check_html_depth(html_depth(root))
        kind, reason = page_kind(html_stats(root, _skip))
    walker = _HtmlWalker(keep_link_lists=kind == "index")
    if root is not None:
        walker.walk(root, root.tag in ("main", "article"))
        walker.flush()
    blocks = drop_emptied_headings(walker.blocks)
    h1 = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    title = page_title(title, h1, site_names(tree))
    if breadcrumbs and breadcrumbs[-1] == title:
        breadcrumbs = breadcrumbs[:-1]
    return blocks, title, tags, lang, breadcrumbs, kind, reason


def load_html(path, data):
    blocks, title, tags, lang, breadcrumbs, kind, reason = parse_html(_decode_html(data, path))
    if not any(b.text for b in blocks):
        raise LoadError(
            "no readable text in this HTML (malformed markup, or only scripts and navigation); "
            "check the file in a browser"
        )
    document = LoadedDocument(path=path, format="html", blocks=blocks, title=title, tags=tags)
    document.breadcrumbs = breadcrumbs
    document.kind, document.generated = kind, reason
    if re.fullmatch(r"[A-Za-z]{2}([-_].*)?", lang):
        document.lang = lang[:2].lower()
    return document


# =======================================================================================
# PDF and DOCX (optional extras)

_PDF_LIST = re.compile(r"^([•▪◦·*–-]|\d{1,3}[.)])\s+")


def load_pdf(path, data):
    try:
        import pypdf
    except ImportError:
        raise LoadError(
            "PDF support is not installed; run pip install 'datasette-graphrag[pdf]'"
        ) from None
    if not data:
        raise LoadError("the file is empty; add some text or leave it out of the ingest")
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise LoadError("the PDF is encrypted; save an unprotected copy and ingest that")
        outline = {}

        def visit(items, depth):
            for item in items:
                if isinstance(item, list):
                    visit(item, depth + 1)
                else:
                    outline.setdefault(squash(item.title).lower(), min(depth, 6))

        visit(reader.outline, 1)
        pages = [page.extract_text() or "" for page in reader.pages]
        info = reader.metadata
        title = squash(info.title) if info and info.title else ""
        keywords = info.get("/Keywords") if info else None
    except LoadError:
        raise
    except Exception as ex:  # pypdf raises many kinds of errors for broken files
        raise LoadError(
            f"not a readable PDF ({type(ex).__name__}: {ex}); check that the file is a complete PDF"
        ) from None
    blocks = _pdf_blocks(pages, outline)
    document = LoadedDocument(path=path, format="pdf", blocks=blocks, title=title)
    document.tags = _split_tags(keywords)
    return document


def _pdf_blocks(pages, outline):
    blocks = []
    for page in pages:
        lines = [squash(line) for line in page.split("\n")]
        widths = sorted(len(line) for line in lines if line)
        typical = widths[len(widths) // 2] if widths else 0
        paragraph, items = [], []

        def flush():
            if paragraph:
                blocks.append(Block("paragraph", " ".join(paragraph).replace("- ", "-")))
                paragraph.clear()
            if items:
                blocks.append(Block("list", "\n".join(items)))
                items.clear()

        for line in lines:
            if not line:
                flush()
                continue
            level = outline.get(line.lower())
            if level:
                flush()
                blocks.append(Block("heading", line, level))
                continue
            if _PDF_LIST.match(line):
                if paragraph:
                    flush()
                marker = _PDF_LIST.match(line).group(1)
                items.append(
                    ("-" if not marker[0].isdigit() else marker.rstrip(".)") + ".")
                    + " "
                    + line[_PDF_LIST.match(line).end() :]
                )
                continue
            if items:
                items[-1] += " " + line
                if line[-1:] in ".!?:" and len(line) < 0.8 * typical:
                    flush()
                continue
            if paragraph and paragraph[-1].endswith("-") and not paragraph[-1].endswith(" -"):
                paragraph[-1] = paragraph[-1][:-1] + line
            else:
                paragraph.append(line)
            if line[-1:] in ".!?:" and len(line) < 0.8 * typical:
                flush()
        flush()
    return blocks


_MONOSPACE = ("courier", "consolas", "menlo", "monaco", "mono", "lucida console")


def load_docx(path, data):
    try:
        import docx
        from docx.table import Table
    except ImportError:
        raise LoadError(
            "DOCX support is not installed; run pip install 'datasette-graphrag[docx]'"
        ) from None
    try:
        document_in = docx.Document(io.BytesIO(data))
    except Exception as ex:
        raise LoadError(
            f"not a readable .docx file ({type(ex).__name__}); check that it opens in a word processor"
        ) from None
    blocks = []
    title = ""
    for item in document_in.iter_inner_content():
        if isinstance(item, Table):
            rows = [" | ".join(squash(cell.text) for cell in row.cells) for row in item.rows]
            rows = [row for row in rows if row.strip(" |")]
            if rows:
                blocks.append(Block("table", "\n".join(rows)))
            continue
        style = (item.style.name if item.style is not None else "") or ""
        runs = list(item.runs)
        raw = item.text
        if not raw.strip():
            continue
        lower = style.lower()
        fonts = [(r.font.name or "").lower() for r in runs if r.text.strip()]
        if (
            "code" in lower
            or "preformatted" in lower
            or "macro" in lower
            or (fonts and all(any(m in f for m in _MONOSPACE) for f in fonts))
        ):
            if blocks and blocks[-1].kind == "code":
                blocks[-1].text += "\n" + raw
            else:
                blocks.append(Block("code", raw))
            continue
        text = (
            squash("".join(f"**{r.text}**" if r.bold and r.text.strip() else r.text for r in runs))
            if runs and "".join(r.text for r in runs).strip()
            else squash(raw)
        )
        text = text.replace("****", "")
        if lower == "title":
            title = squash(raw)
            blocks.append(Block("heading", squash(raw), 1))
        elif lower.startswith("heading"):
            level = int(lower.split()[-1]) if lower.split()[-1].isdigit() else 1
            blocks.append(Block("heading", squash(raw), min(level, 6)))
        elif lower.startswith("list") or item._p.pPr is not None and item._p.pPr.numPr is not None:
            numbered = "number" in lower
            if blocks and blocks[-1].kind == "list" and blocks[-1].text[:1].isdigit() == numbered:
                count = blocks[-1].text.count("\n") + 2
                blocks[-1].text += "\n" + (f"{count}. " if numbered else "- ") + text
            else:
                blocks.append(Block("list", ("1. " if numbered else "- ") + text))
        elif "quote" in lower:
            blocks.append(Block("quote", text))
        else:
            blocks.append(Block("paragraph", text))
    properties = document_in.core_properties
    document = LoadedDocument(path=path, format="docx", blocks=blocks)
    document.title = squash(properties.title or "") or title
    document.tags = _split_tags(properties.keywords)
    if properties.language and re.fullmatch(r"[A-Za-z]{2}([-_].*)?", properties.language):
        document.lang = properties.language[:2].lower()
    return document
