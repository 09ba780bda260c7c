"""Normalization rules the loaders share: what a page is, what it is called, what to drop.

Generic rules, not per site:

* A page is *generated* rather than written when its main content is mostly links (a
  general index, a module index, a table of contents), a search form with hardly any text
  (a search page) or one block of code (a source listing). ``page_kind()`` measures this
  from ``PageStats`` and returns the kind and a reason; ingest leaves such pages out
  unless asked to keep them (see ``GENERATED_KINDS``).
* A page's title is its own: the main heading, or the ``<title>`` without the site's name
  (``page_title()``).
* A list of links to the page's own sections is a table of contents
  (``table_of_contents()``) and a paragraph of nothing but links a navigation bar
  (``nav_bar()``); the loaders drop both from written pages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .loaders import Block

# Kinds a loader sets on generated pages, and what ingest reports when it skips them.
GENERATED_KINDS = {
    "index": "index page",
    "search": "search page",
    "code": "source code listing",
}

# A page is an index page when links hold this share of its text, or when this share of
# its text is in items (list items, table rows, terms, paragraphs) that start with a link
# (a module index: a link and a line about it per row), given at least MIN_INDEX_UNITS.
# A page with at least INDEX_MAX_PROSE characters of text outside such items, making
# INDEX_PROSE_SHARE of its text, is written whatever its links (an introduction over a
# long list of links); its link lists are dropped as navigation instead.
INDEX_LINK_SHARE = 0.6
INDEX_LED_SHARE = 0.8
MIN_INDEX_UNITS = 8
INDEX_MAX_PROSE = 1500
INDEX_PROSE_SHARE = 0.25
# A source listing: one code block holds this share of the text.
CODE_SHARE = 0.8
# A search page: a search form, fewer words than this outside it and no more than
# SEARCH_MAX_UNITS paragraphs or items (a line on how to search, not a page with a form).
SEARCH_MAX_WORDS = 60
SEARCH_MAX_UNITS = 3
# A list is a table of contents when links to the page's own sections hold this share
# of its text.
TOC_LINK_SHARE = 0.8


@dataclass
class PageStats:
    """Counts over a page's main content, boilerplate left out.

    ``chars`` and ``link_chars`` count letters and digits outside code blocks and
    headings, ``code_chars`` those inside code blocks and ``largest_code`` those in the
    largest one; ``units`` are list items, table rows, terms and paragraphs with text,
    ``lead_units`` those whose text starts with a link and ``led_chars`` the characters
    in them.
    """

    chars: int = 0
    link_chars: int = 0
    code_chars: int = 0
    largest_code: int = 0
    words: int = 0
    units: int = 0
    lead_units: int = 0
    led_chars: int = 0
    search_form: bool = False

    def add_text(self, chars: int, in_link: bool, units: list):
        """Count ``chars`` of text; ``units`` is the stack of open units (see ``html_stats``)."""
        self.chars += chars
        if in_link:
            self.link_chars += chars
        i = len(units)
        while i and units[i - 1] is None:  # units still waiting for text: this starts them
            i -= 1
            units[i] = in_link
            self.units += 1
            self.lead_units += in_link
        if True in units:
            self.led_chars += chars

    @property
    def led_share(self) -> float:
        """The share of the text in units that start with a link."""
        return self.led_chars / self.chars if self.chars else 0.0

    @property
    def link_share(self) -> float:
        return self.link_chars / self.chars if self.chars else 0.0

    @property
    def code_share(self) -> float:
        """The share of the text in the largest code block."""
        total = self.chars + self.code_chars
        return self.largest_code / total if total else 0.0


def page_kind(stats: PageStats) -> tuple:
    """``(kind, reason)`` for a generated page, or ``("", "")`` for a written one."""
    if stats.largest_code and stats.code_share >= CODE_SHARE:
        return "code", (
            f"{GENERATED_KINDS['code']} ({stats.code_share:.0%} of the text is one code listing)"
        )
    if (
        stats.search_form
        and stats.words < SEARCH_MAX_WORDS
        and stats.units <= SEARCH_MAX_UNITS
        and not stats.code_chars
    ):
        return "search", (
            f"{GENERATED_KINDS['search']} (a search form and {stats.words} words of text)"
        )
    prose = stats.chars - stats.led_chars
    written = prose >= INDEX_MAX_PROSE and prose >= INDEX_PROSE_SHARE * stats.chars
    if not written and (
        stats.link_share >= INDEX_LINK_SHARE
        or (stats.units >= MIN_INDEX_UNITS and stats.led_share >= INDEX_LED_SHARE)
    ):
        return "index", (
            f"{GENERATED_KINDS['index']} ({stats.link_share:.0%} of the text is links, "
            f"{stats.led_share:.0%} is in items that start with one)"
        )
    return "", ""


def table_of_contents(chars: int, link_chars: int, links: int, anchor_chars: int) -> bool:
    """Whether a list is the page's own table of contents: mostly links to its sections.

    Counts as ``html_link_chars()`` returns them. Lists of links to other pages stay: in
    the main content they are a "See also" or a section's pages, not navigation.
    """
    return chars > 0 and anchor_chars >= TOC_LINK_SHARE * chars


def nav_bar(chars: int, link_chars: int, links: int, anchor_chars: int) -> bool:
    """Whether a paragraph is a navigation bar: three or more links and no other words."""
    return links >= 3 and link_chars == chars


# Where a loader dropped navigation: a stand-in block that ``drop_emptied_headings()``
# removes, with the heading over it when nothing else is under that heading.
DROPPED = Block("dropped", "")


def drop_emptied_headings(blocks) -> list:
    """``blocks`` without ``DROPPED`` and without headings left empty by it ("Contents")."""
    if DROPPED not in blocks:
        return blocks
    out = []
    n = len(blocks)
    for i, block in enumerate(blocks):
        if block is DROPPED:
            continue
        if block.kind == "heading" and i + 1 < n and blocks[i + 1] is DROPPED:
            j = i + 1
            while j < n and blocks[j] is DROPPED:
                j += 1
            if j == n or (blocks[j].kind == "heading" and blocks[j].level <= block.level):
                continue
        out.append(block)
    return out


# ---------------------------------------------------------------------------------------
# Titles

_SEPARATOR = re.compile(r"\s+(?:[-|–—·•»:]|::)\s+")
_MARKUP = re.compile(r"\*\*|`")
_PLACEHOLDER = re.compile(r"<[^<>]*>")  # a generator's stand-in, such as Sphinx's "<no title>"


def plain(text: str) -> str:
    """Heading text without the loaders' inline markup (backticks, ``**``)."""
    return " ".join(_MARKUP.sub("", text).split())


def _key(text: str) -> str:
    return " ".join(re.sub(r"[^\w]+", " ", text.lower()).split())


def page_title(title: str, heading: str = "", site_names=()) -> str:
    """The page's own title from its ``<title>``, its main heading and its site's names.

    The main heading wins when there is one (the ``<title>`` usually repeats it and adds the
    site's name). Otherwise the ``<title>`` loses the parts that name the site: a part equal
    to one of ``site_names`` (the site header, ``og:site_name``), or else the last part after
    a separator ("Page — Site", "Page | Site").
    """
    heading = plain(heading)
    title = " ".join(title.split())
    names = {_key(name) for name in site_names if name}
    if heading and _key(heading) not in names:
        return heading
    matches = list(_SEPARATOR.finditer(title))
    if not matches:
        return "" if _PLACEHOLDER.fullmatch(title) else title
    starts = [0] + [m.end() for m in matches]
    ends = [m.start() for m in matches] + [len(title)]
    pieces = [title[s:e] for s, e in zip(starts, ends)]
    lo, hi = 0, len(pieces)
    while lo < hi and _key(pieces[lo]) in names:
        lo += 1
    while hi > lo and _key(pieces[hi - 1]) in names:
        hi -= 1
    if lo == hi:
        return title
    if (lo, hi) == (0, len(pieces)):
        hi -= 1  # no part names the site: "Page — Site"
    own = title[starts[lo] : ends[hi - 1]]
    return "" if _PLACEHOLDER.fullmatch(own) else own


# ---------------------------------------------------------------------------------------
# HTML

_UNIT_TAGS = frozenset(("li", "tr", "dt", "p"))
_HEADING_TAGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
_SEARCH_INPUT = "input[type=search], input[name=q], input[type=text]"
_BRACKETED = re.compile(r"^\[[^\]]{1,20}\]$")  # "[source]", "[edit]", "[1]"
_TRAIL = re.compile(r"\s*[»›>→/]\s*$")
_NON_WORD = re.compile(r"[\W_]+")


def word_chars(text: str) -> int:
    """Letters and digits in ``text``: separators like "|" or "»" are not text."""
    return len(_NON_WORD.sub("", text))


def html_depth(node) -> int:
    """How deep elements and text nest under ``node`` (1: ``node`` alone), found without
    recursion: the loaders' walks recurse, so pages deeper than ``limits.max_html_depth``
    are refused before them."""
    top = node.mem_id
    deepest, depth, current = 0, 1, node
    while True:
        deepest = max(deepest, depth)
        child = current.child
        if child is not None:
            current, depth = child, depth + 1
            continue
        while current.mem_id != top and current.next is None:
            current, depth = current.parent, depth - 1
        if current.mem_id == top:
            return deepest
        current = current.next


def html_stats(node, skip) -> PageStats:
    """``PageStats`` of an HTML element; ``skip(child)`` says which subtrees are boilerplate.

    Heading text counts as words but not as characters, so a title over a code listing
    does not hide that the page is code.
    """
    stats = PageStats()
    units = []  # open units: None until their first text, then whether a link led it

    def text(content, in_link, in_heading):
        n = word_chars(content)
        if n:
            stats.words += len(content.split())
            if not in_heading:
                stats.add_text(n, in_link, units)

    def visit(parent, in_heading):
        for child in parent.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                text(child.text_content or "", False, in_heading)
                continue
            if tag == "form":
                if child.css_first(_SEARCH_INPUT):
                    stats.search_form = True
                continue
            if skip(child):
                continue
            if tag == "pre":  # a code block, counted whole
                n = word_chars(child.text(deep=True))
                stats.code_chars += n
                stats.largest_code = max(stats.largest_code, n)
            elif tag == "a" and child.attributes.get("href"):  # a link, counted whole
                text(child.text(deep=True), True, in_heading)
            elif tag in _UNIT_TAGS:
                units.append(None)
                visit(child, in_heading)
                units.pop()
            else:
                visit(child, in_heading or tag in _HEADING_TAGS)

    visit(node, False)
    return stats


def html_link_chars(node) -> tuple:
    """``(chars, link_chars, links, anchor_chars)``: letters and digits in ``node``, in its
    links, the number of links and the letters in links to the page's own sections."""
    chars = word_chars(node.text(deep=True))
    links = node.css("a[href]")
    link_chars = anchor_chars = 0
    for link in links:
        n = word_chars(link.text(deep=True))
        link_chars += n
        if (link.attributes.get("href") or "").startswith("#"):
            anchor_chars += n
    return chars, min(link_chars, chars), len(links), min(anchor_chars, chars)


def bracketed_link(node) -> bool:
    """A link whose text is in brackets, like "[source]" or "[edit]": an affordance."""
    return bool(_BRACKETED.match(" ".join(node.text(deep=True).split())))


def site_link_heading(node) -> bool:
    """A heading that is all one link to another page: a site or section banner."""
    links = node.css("a[href]")
    if len(links) != 1:
        return False
    href = links[0].attributes.get("href") or ""
    if href.startswith("#") and href != "#":  # a section linking back to a table of contents
        return False
    text = " ".join(node.text(deep=True).split())
    return bool(text) and " ".join(links[0].text(deep=True).split()) == text


def html_trail(tree) -> list:
    """Breadcrumbs from a navigation list whose items end with a trail separator (»).

    Sphinx and many site themes render the path to a page as ``<li>Home »</li>
    <li>Section »</li><li>Page</li>``; the items before the page are the breadcrumbs.
    """
    for nav in tree.css("nav, [role=navigation]"):
        trail = []
        for item in nav.css("li"):
            if len(item.css("li")) > 1:  # lexbor's css() includes the node itself
                continue
            text = " ".join(item.text(deep=True).split())
            if text and _TRAIL.search(text):
                crumb = _TRAIL.sub("", text)
                if crumb:
                    trail.append(crumb)
            elif trail and text:
                break
        if trail:
            return trail
    return []


def site_names(tree) -> list:
    """Names the page gives its site: ``og:site_name`` and link-only banner headings."""
    names = []
    for meta in tree.css("meta"):
        if (meta.attributes.get("property") or "").lower() == "og:site_name":
            names.append(meta.attributes.get("content") or "")
    for heading in tree.css("h1, h2"):
        if site_link_heading(heading):
            names.append(" ".join(heading.text(deep=True).split()))
    return [name for name in names if name]
