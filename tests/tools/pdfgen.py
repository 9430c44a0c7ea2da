"""Generated documents for the tool tests and the bench: PDFs (fpdf2) and HTML pages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fpdf import FPDF

IPA_FONT = Path("/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf")

_LATIN_WORDS = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda sigma tau upsilon phi "
    "chi psi omega river mountain lantern harbor meadow copper velvet orbit ember"
).split()
_JAPANESE_SENTENCES = (
    "吾輩は猫である。名前はまだ無い。",
    "どこで生れたかとんと見当がつかぬ。",
    "何でも薄暗いじめじめした所でニャーニャー泣いていた事だけは記憶している。",
    "東京の天気は晴れ、最高気温は二十五度です。",
    "日本語の文章を抽出できるか確認します。",
)


def latin_page_text(index: int, words: int) -> str:
    """Deterministic Latin text for page `index` with about `words` words."""
    picked = [_LATIN_WORDS[(index * 7 + n * 3) % len(_LATIN_WORDS)] for n in range(words)]
    return f"Page {index + 1} begins. " + " ".join(picked) + f". End of page {index + 1}."


def japanese_page_text(index: int, sentences: int) -> str:
    """Deterministic Japanese text for page `index` with `sentences` sentences."""
    body = "".join(
        _JAPANESE_SENTENCES[(index + n) % len(_JAPANESE_SENTENCES)] for n in range(sentences)
    )
    return f"第{index + 1}ページ。{body}"


def require_japanese_font() -> Path:
    """The IPA Gothic font, or skip the test with the reason (install fonts-ipafont-gothic)."""
    if not IPA_FONT.is_file():
        pytest.skip(f"Japanese PDF test needs {IPA_FONT} (Debian package fonts-ipafont-gothic)")
    return IPA_FONT


def make_pdf(pages: list[str], *, font: Path | None = None, font_size: int = 10) -> bytes:
    """A PDF with one page per string; Japanese text needs `font` (a TTF)."""
    pdf = FPDF(format="A4")
    pdf.set_auto_page_break(auto=False)
    if font is not None:
        pdf.add_font("body", "", str(font))
        family = "body"
    else:
        family = "Helvetica"
    for text in pages:
        pdf.add_page()
        pdf.set_font(family, size=font_size)
        pdf.multi_cell(0, font_size * 0.5, text)
    return bytes(pdf.output())


def squash(text: str) -> str:
    """Text with every whitespace run removed (PDF line wrapping is layout, not content)."""
    return re.sub(r"\s+", "", text)


# --- HTML pages --------------------------------------------------------------------------

# Phrases that only occur in boilerplate; none may survive main-text extraction.
BOILERPLATE_MARKERS = (
    "Section link",
    "Related story",
    "Commenter",
    "Buy cheap widgets",
    "Copyright 2024",
)


def article_paragraph(index: int) -> str:
    """One deterministic paragraph of article text."""
    words = " ".join(_LATIN_WORDS[(index * 5 + n) % len(_LATIN_WORDS)] for n in range(40))
    return f"Paragraph {index} of the article explains the topic at length: {words}."


def make_article_page(*, semantic: bool, paragraphs: int = 40, links: int = 30) -> str:
    """An article page with navigation, related links, comments, an ad and a footer.

    `semantic` uses nav/main/article/aside/footer; otherwise every block is a plain <div>
    (the case a plain tag heuristic leaks).
    """
    body = "".join(f"<p>{article_paragraph(i)}</p>" for i in range(paragraphs))
    nav = (
        "<ul>"
        + "".join(f"<li><a href='/s{i}'>Section link {i}</a></li>" for i in range(links))
        + "</ul>"
    )
    related = (
        "<h3>Related posts</h3><ul>"
        + "".join(
            f"<li><a href='/r{i}'>Related story {i} headline</a></li>" for i in range(links // 3)
        )
        + "</ul>"
    )
    comments = "<h3>Comments</h3>" + "".join(
        f"<div class='comment'><p>Commenter {i} says: great post, thanks!</p></div>"
        for i in range(links // 3)
    )
    ad = "<div class='ad advert'>Buy cheap widgets now! Advertisement</div>"
    footer = "<p>Copyright 2024 Example Corp. All rights reserved. Privacy. Terms.</p>"
    head = "<head><meta charset='utf-8'><title>Article title</title></head>"
    if semantic:
        return (
            f"<!doctype html><html>{head}<body><nav>{nav}</nav><main><article>"
            f"<h1>The headline</h1>{body}</article><aside>{related}</aside>"
            f"<section id='comments'>{comments}</section></main>{ad}<footer>{footer}</footer>"
            "</body></html>"
        )
    return (
        f"<!doctype html><html>{head}<body><div id='nav' class='navigation menu'>{nav}</div>"
        f"<div id='content'><div class='post'><h1>The headline</h1>{body}</div>"
        f"<div class='related'>{related}</div><div id='comments' class='comments'>{comments}"
        f"</div></div>{ad}<div id='footer' class='footer'>{footer}</div></body></html>"
    )
