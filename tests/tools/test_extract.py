"""HTML main text and PDF page text, as the isolated worker computes them (run in-process)."""

from __future__ import annotations

import pickle
import time

import pytest

from bot.tools.extract import (
    ExtractedText,
    ExtractionError,
    PdfPages,
    decode_text,
    heuristic_text,
    html_to_text,
    normalize_text,
    pdf_page_texts,
)
from tests.tools.pdfgen import (
    BOILERPLATE_MARKERS,
    article_paragraph,
    japanese_page_text,
    latin_page_text,
    make_article_page,
    make_pdf,
    require_japanese_font,
    squash,
)


@pytest.mark.parametrize("semantic", [True, False], ids=["semantic-tags", "div-only"])
def test_main_text_without_boilerplate(semantic: bool) -> None:
    page = make_article_page(semantic=semantic).encode()
    result = html_to_text(page, "utf-8", "https://example.com/post")
    assert result.method == "trafilatura"
    for index in range(40):
        assert article_paragraph(index) in result.text
    leaked = [marker for marker in BOILERPLATE_MARKERS if marker in result.text]
    assert leaked == []


def test_seed_heuristic_leaks_on_div_only_pages_which_is_why_it_is_only_a_fallback() -> None:
    text = heuristic_text(make_article_page(semantic=False))
    assert any(marker in text for marker in BOILERPLATE_MARKERS)
    semantic = heuristic_text(make_article_page(semantic=True))
    assert "Section link" not in semantic and "Copyright 2024" not in semantic
    assert article_paragraph(3) in semantic


def test_fallback_heuristic_when_trafilatura_finds_nothing() -> None:
    # Trafilatura returns nothing for a fragment this small; the tag heuristic fallback still works.
    html = "<script>a()</script><nav>menu</nav><main><p>ab</p><p>cd</p></main><aside>side</aside>"
    result = html_to_text(html.encode(), None, "https://example.com/")
    assert result == ExtractedText(text="ab\ncd", method="heuristic")


def test_article_beats_main_beats_body_in_the_heuristic() -> None:
    html = "<body><p>outside</p><main><p>in main</p><article><p>in article</p></article></main>"
    assert heuristic_text(html) == "in article"
    assert heuristic_text("<body><p>outside</p><main><p>in main</p></main></body>") == "in main"
    assert heuristic_text("<body><script>x()</script><p>a</p><template>t</template></body>") == "a"


def test_empty_html_gives_empty_text() -> None:
    assert html_to_text(b"", None, "").text == ""
    assert html_to_text(b"   \n", "utf-8", "").text == ""


def test_charset_from_header_meta_or_detection() -> None:
    text = "日本語のページです。" * 20
    html = f"<html><body><article><p>{text}</p></article></body></html>"
    declared = html_to_text(html.encode("shift_jis"), "shift_jis", "https://e.com/")
    assert text in declared.text
    meta = f"<html><head><meta charset='shift_jis'></head><body><p>{text}</p></body></html>"
    assert text in html_to_text(meta.encode("shift_jis"), None, "https://e.com/").text
    assert decode_text("héllo".encode(), None) == "héllo"
    assert decode_text(b"\xef\xbb\xbfbom", None) == "bom"
    assert decode_text("abc".encode("utf-16"), "bogus-charset") != ""


def test_normalize_text_collapses_blank_lines() -> None:
    assert normalize_text("a  \r\n\r\n\r\n\n b\rc\n\n") == "a\n\n b\nc"


HOSTILE_DEPTH = 100_000
# Each unit opens a <div>; all but the first also hide a fake </div> where no tag is, which
# fooled the old textual count (100k units ran to the worker's 15 s deadline).
NESTING_UNITS = {
    "plain": b"<div>",
    "comment": b"<div><!--</div>-->",
    "attribute": b'<div title="</div>">',
    "unquoted-attribute": b"<div data-x=</div>>",
    "script": b"<div><script></div></script>",
    "escaped-script": b"<div><script><!--<script></script></div></script>",
    "style": b"<div><style></div></style>",
    "textarea": b"<div><textarea></div></textarea>",
    "cdata": b"<div><![CDATA[</div>]]>",
    "processing-instruction": b"<div><?</div>?>",
}


@pytest.mark.parametrize("unit", NESTING_UNITS.values(), ids=NESTING_UNITS.keys())
def test_deeply_nested_html_is_refused_quickly_whatever_hides_the_nesting(unit: bytes) -> None:
    html = b"<html><body>" + unit * HOSTILE_DEPTH + b"deep</body></html>"
    started = time.monotonic()
    with pytest.raises(ExtractionError, match="nested too deeply"):
        html_to_text(html, "utf-8", "https://e.com/")
    assert time.monotonic() - started < 3.0


def test_reopened_formatting_elements_cost_little() -> None:
    # An HTML5 tree builder re-opens every unclosed <b> inside each new <div>: quadratic
    # elements (lexbor: 2 s and 700 MB for 2,000 units; 3 GB for 4,000).
    units = b"".join(b"<div><b id=%d></div>" % index for index in range(5000))
    html = b"<html><body>" + units + b"deep</body></html>"
    started = time.monotonic()
    assert html_to_text(html, "utf-8", "https://e.com/").text == "deep"
    assert time.monotonic() - started < 3.0


def test_realistic_depth_and_html5_elements_before_the_body() -> None:
    depth = 200
    html = "<html><body>" + "<div>" * depth + "<p>deep text</p>" + "</div>" * depth
    assert html_to_text(html.encode(), "utf-8", "https://e.com/").text == "deep text"
    # libxml2 puts these HTML5 elements into <head>: the heuristic must still find them.
    html = "<title>T</title><header>top</header><main><p>first</p><p>second</p></main>"
    assert heuristic_text(html) == "first\nsecond"
    assert heuristic_text("<section><p>only</p></section><footer>f</footer>") == "only"


def test_results_pickle_for_the_worker() -> None:
    value = ExtractedText("t", "heuristic")
    assert pickle.loads(pickle.dumps(value)) == value
    error = ExtractionError("The file is not a PDF.")
    assert str(pickle.loads(pickle.dumps(error))) == "The file is not a PDF."


# --- PDF ---------------------------------------------------------------------------------------


def test_pdf_page_texts_by_range_with_page_count() -> None:
    pages = [latin_page_text(i, 30) for i in range(6)]
    pdf = make_pdf(pages)
    result = pdf_page_texts(pdf, 2, 3)
    assert isinstance(result, PdfPages)
    assert (result.total_pages, result.start, len(result.texts)) == (6, 2, 3)
    for offset, text in enumerate(result.texts):
        assert squash(text) == squash(pages[2 + offset])
    assert pdf_page_texts(pdf, 5, 25).texts == (pdf_page_texts(pdf, 0, 6).texts[5],)
    assert pdf_page_texts(pdf, 6, 25).texts == ()


def test_pdf_japanese_text_is_exact() -> None:
    font = require_japanese_font()
    pages = [japanese_page_text(i, 6) for i in range(3)]
    result = pdf_page_texts(make_pdf(pages, font=font), 0, 10)
    assert [squash(text) for text in result.texts] == [squash(page) for page in pages]


def test_pdfium_hyphen_marks_become_a_hyphen_and_line_break() -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(0, 10, "a hyphen-", new_x="LMARGIN", new_y="NEXT")
    pdf.cell(0, 10, "ated word", new_x="LMARGIN", new_y="NEXT")
    text = pdf_page_texts(bytes(pdf.output()), 0, 1).texts[0]
    assert "\ufffe" not in text
    assert text == "a hyphen-\nated word"


@pytest.mark.parametrize(
    "body",
    [b"", b"hello world", b"<html>not a pdf</html>", b"\x89PNG\r\n\x1a\n" + b"0" * 100],
)
def test_not_a_pdf(body: bytes) -> None:
    with pytest.raises(ExtractionError, match="not a PDF"):
        pdf_page_texts(body, 0, 25)


def test_garbage_with_a_pdf_header_is_a_clean_error() -> None:
    with pytest.raises(ExtractionError, match="could not be read"):
        pdf_page_texts(b"%PDF-1.7\n" + bytes(range(256)) * 40, 0, 25)


def test_start_past_the_end_is_an_error() -> None:
    with pytest.raises(ExtractionError, match="past the end"):
        pdf_page_texts(make_pdf(["one"]), 3, 25)
