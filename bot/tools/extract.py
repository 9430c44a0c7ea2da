"""Text out of fetched bytes: HTML main text and PDF page texts.

The functions here are top-level and picklable: callers run them in the isolated worker
process (bot/tools/isolate.py), because they parse untrusted input with C libraries.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

# Page chrome the fallback heuristic drops before taking text. Not <head>: libxml2 puts HTML5
# elements (<main>, <article>, <nav>…) that come before any HTML4 body element into the head,
# so its only text-bearing element, <title>, is dropped instead.
DROPPED_TAGS = ("script", "style", "noscript", "template", "title", "nav", "footer", "aside")
# libxml2 stops nesting at 256 levels and drops what lies deeper; a tree that reaches this depth
# was cut short, so it is refused instead of returning part of it. Real pages stay far below.
MAX_HTML_DEPTH = 250
_META_CHARSET_RE = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.I)
_BLANK_LINES_RE = re.compile(r"\n\s*\n+")
# pdfium marks a hyphen that ends a line inside a word with U+FFFE and drops the line break.
PDF_HYPHEN_MARK = "\ufffe"
PDF_HYPHEN_REPLACEMENT = "-\n"


class ExtractionError(Exception):
    """The content could not be turned into text; the message is a full sentence."""


@dataclass(frozen=True)
class ExtractedText:
    """Main text of a page and how it was obtained ("trafilatura" or "heuristic")."""

    text: str
    method: str


@dataclass(frozen=True)
class PdfPages:
    """Texts of pages [start, start + len(texts)) of a PDF with `total_pages` pages."""

    total_pages: int
    start: int
    texts: tuple[str, ...]


def _codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip().strip("\"'")).name
    except LookupError:
        return None


def decode_text(body: bytes, charset: str | None) -> str:
    """Bytes to text: declared charset, else UTF-8, a <meta> charset, or a detected one."""
    codec = _codec(charset)
    if codec is None:
        if body.startswith(codecs.BOM_UTF8):
            codec = "utf-8-sig"
        else:
            try:
                return body.decode("utf-8")
            except UnicodeDecodeError:
                match = _META_CHARSET_RE.search(body[:4096])
                codec = _codec(match.group(1).decode("ascii")) if match else None
            if codec is None:
                codec = _detect_codec(body)
    text = body.decode(codec, errors="replace")
    return text.removeprefix("\ufeff")


def _detect_codec(body: bytes) -> str:
    from trafilatura.utils import detect_encoding

    for guess in detect_encoding(body):
        codec = _codec(guess)
        if codec is not None:
            return codec
    return "utf-8"


def normalize_text(text: str) -> str:
    """Unix newlines, no trailing spaces, runs of blank lines collapsed to one."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = [line.rstrip() for line in text.split("\n")]
    return _BLANK_LINES_RE.sub("\n\n", "\n".join(lines)).strip()


def _trafilatura_text(html: str, url: str) -> str:
    import trafilatura

    text = trafilatura.extract(
        html,
        url=url or None,
        include_comments=False,
        favor_precision=True,
        # Skips the readability/jusText comparison pass (about half the time, measured);
        # our own fallback below covers pages where the main extractor finds nothing.
        fast=True,
        include_tables=True,
        include_images=False,
        include_links=False,
        deduplicate=False,
        with_metadata=False,
        output_format="txt",
    )
    return normalize_text(text or "")


def _tree_depth(root: Any) -> int:
    """How many elements deep the parsed tree goes (counting stops at MAX_HTML_DEPTH)."""
    from lxml import etree  # type: ignore[import-untyped]

    depth = deepest = 0
    for event, _ in etree.iterwalk(root, events=("start", "end")):
        depth += 1 if event == "start" else -1
        deepest = max(deepest, depth)
        if deepest >= MAX_HTML_DEPTH:
            break
    return deepest


def _parsed_html(html: str) -> Any:
    """The document tree (None for an empty one); raises ExtractionError when nested too deep."""
    import lxml.html  # type: ignore[import-untyped]
    from lxml import etree

    # Linear in the input and capped in depth by libxml2, unlike an HTML5 tree builder, whose
    # scope checks are quadratic in the depth and which re-opens formatting elements without
    # bound (a 90 KB page took lexbor 8 s and 3 GB); comments, attribute values and script
    # text are tokens of their own, so text that looks like tags there changes nothing.
    parser = lxml.html.HTMLParser(
        encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True
    )
    try:
        root = lxml.html.document_fromstring(html.encode("utf-8", "replace"), parser=parser)
    except etree.ParserError:  # nothing but whitespace, comments or a doctype
        return None
    if _tree_depth(root) >= MAX_HTML_DEPTH:
        raise ExtractionError("The page's HTML is nested too deeply to extract its text.")
    return root


def heuristic_text(html: str) -> str:
    """The seed's heuristic: drop chrome tags, prefer article > main > page, text by lines."""
    root = _parsed_html(html)
    if root is None:
        return ""
    for node in list(root.iter(*DROPPED_TAGS)):
        node.drop_tree()
    # Elements without children are false in lxml: compare with None, never use `or`.
    candidates = (next(root.iter("article"), None), next(root.iter("main"), None))
    chosen = next((node for node in candidates if node is not None), root)
    lines = (piece.strip() for piece in chosen.itertext())
    return normalize_text("\n".join(line for line in lines if line))


def html_to_text(body: bytes, charset: str | None, url: str) -> ExtractedText:
    """Main text of an HTML page: trafilatura, or the tag heuristic when it finds nothing."""
    html = decode_text(body, charset)
    if not html.strip():
        return ExtractedText(text="", method="empty")
    try:
        text = _trafilatura_text(html, url)
    except MemoryError:
        raise
    except Exception as exc:
        # lxml and trafilatura raise assorted types on broken markup; the heuristic still runs.
        level = logging.WARNING if isinstance(exc, ImportError) else logging.DEBUG
        log.log(level, "trafilatura failed on %s: %s: %s", url, type(exc).__name__, exc)
        text = ""
    if text:
        return ExtractedText(text=text, method="trafilatura")
    return ExtractedText(text=heuristic_text(html), method="heuristic")


def looks_like_pdf(body: bytes) -> bool:
    """True when the bytes carry a PDF header near the start, as PDF readers accept it."""
    return b"%PDF-" in body[:1024]


def pdf_page_texts(body: bytes, start_page: int, max_pages: int) -> PdfPages:
    """Texts of up to `max_pages` pages from `start_page`, plus the document's page count."""
    if not looks_like_pdf(body):
        raise ExtractionError("The file is not a PDF.")
    import pypdfium2 as pdfium

    try:
        document = pdfium.PdfDocument(body)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise ExtractionError("The PDF is password-protected.") from None
        raise ExtractionError(f"The PDF could not be read ({exc}).") from None
    try:
        total = len(document)
        if not 0 <= start_page <= total:
            raise ExtractionError(
                f"The PDF has {total} pages; page {start_page + 1} is past the end."
            )
        end = min(total, start_page + max(0, max_pages))
        texts = tuple(_page_text(document, index) for index in range(start_page, end))
    finally:
        document.close()
    return PdfPages(total_pages=total, start=start_page, texts=texts)


def _page_text(document: object, index: int) -> str:
    import pypdfium2 as pdfium

    assert isinstance(document, pdfium.PdfDocument)
    try:
        page = document[index]
    except pdfium.PdfiumError as exc:
        log.debug("PDF page %d unreadable: %s", index, exc)
        return ""
    try:
        textpage = page.get_textpage()
        try:
            raw = textpage.get_text_range()
        finally:
            textpage.close()
    except pdfium.PdfiumError as exc:
        log.debug("PDF page %d text failed: %s", index, exc)
        return ""
    finally:
        page.close()
    text = str(raw).replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    return text.replace(PDF_HYPHEN_MARK, PDF_HYPHEN_REPLACEMENT).strip()
