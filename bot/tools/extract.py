"""Text out of fetched bytes: HTML main text and PDF page texts.

The functions here are top-level and picklable: callers run them in the isolated worker
process (bot/tools/isolate.py), because they parse untrusted input with C libraries.
"""

from __future__ import annotations

import codecs
import logging
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

# Page chrome the fallback heuristic drops before taking text.
DROPPED_TAGS = ("script", "style", "noscript", "template", "head", "nav", "footer", "aside")
# Lexbor's tree building is quadratic in nesting depth (200k nested divs: ~100 s); real pages
# stay far below this, so deeper input is refused instead of burning the worker's deadline.
MAX_FALLBACK_DEPTH = 8000
# Tags whose end tag may be omitted or that never have one; they do not count for depth.
_NO_DEPTH_TAGS = frozenset(
    "area base br col embed hr img input link meta param source track wbr p li dt dd tr td th "
    "option optgroup tbody thead tfoot colgroup caption rb rt rtc rp".split()
)
_TAG_RE = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9-]{0,31})")
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


def _nesting_depth(body: bytes) -> int:
    depth = deepest = 0
    for match in _TAG_RE.finditer(body):
        if match.group(2).lower() in _NO_DEPTH_TAGS:
            continue
        if match.group(1):
            depth = max(0, depth - 1)
        else:
            depth += 1
            deepest = max(deepest, depth)
    return deepest


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


def heuristic_text(html: str) -> str:
    """Fallback main text: drop chrome tags, prefer article > main > body, text by lines."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    for tag in DROPPED_TAGS:
        for node in tree.css(tag):
            node.decompose()
    root = tree.css_first("article") or tree.css_first("main") or tree.body or tree.root
    if root is None:
        return ""
    text = root.text(separator="\n", strip=True)
    return normalize_text(text)


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
    if _nesting_depth(body) > MAX_FALLBACK_DEPTH:
        raise ExtractionError("The page's HTML is nested too deeply to extract its text.")
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
