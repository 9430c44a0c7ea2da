"""Pure text logic: pages of at most 2,000 characters with code fences intact, small renderers."""

from __future__ import annotations

import itertools
import random

import pytest

from bot.exts._text import (
    FENCE,
    ReplyDraft,
    close_open_fence,
    readable_mentions,
    receipt_line,
    render_sources,
    split_chunks,
    split_message,
    strip_bot_mention,
    thread_name,
    tool_line,
)
from bot.prompts.ui_text import ui_text
from bot.turn.events import RememberedEvent

WORDS = "alpha beta gamma delta 京都 の 秋 は 美しい epsilon zeta 🎉 https://example.org/x".split()


def _random_text(rng: random.Random) -> str:
    """Prose, long lines, blank lines and code blocks (some left open) in random order."""
    parts: list[str] = []
    for _ in range(rng.randint(1, 40)):
        kind = rng.random()
        if kind < 0.5:
            parts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 120))))
        elif kind < 0.7:
            lines = [
                "    " * rng.randint(0, 2) + "x = " + "y" * rng.randint(0, 200)
                for _ in range(rng.randint(1, 60))
            ]
            lang = rng.choice(["", "python", "js", "a b"])
            closing = "\n```" if rng.random() < 0.9 else ""
            parts.append(f"```{lang}\n" + "\n".join(lines) + closing)
        elif kind < 0.8:
            parts.append("z" * rng.randint(100, 5000))  # one line with no break at all
        else:
            parts.append(f"inline {FENCE}code{FENCE} and `tick`")
        parts.append(rng.choice(["\n", "\n\n", "\n\n\n", " "]))
    return "".join(parts)


@pytest.mark.parametrize("seed", range(150))
def test_pages_fit_keep_fences_balanced_and_keep_the_text(seed: int) -> None:
    rng = random.Random(seed)
    text = _random_text(rng)
    limit = rng.choice([2000, 2000, 500, 100])
    chunks = split_chunks(text, limit)
    assert "".join(chunk.body for chunk in chunks) == text, "nothing lost or added"
    for chunk in chunks:
        page = str(chunk)
        assert len(page) <= limit
        assert page.count(FENCE) % 2 == 0, "every page closes what it opens"
    for before, after in itertools.pairwise(chunks):
        # A code block cut in two is closed and reopened in its language.
        assert bool(before.suffix) == bool(after.prefix)
        if after.prefix:
            assert after.prefix.startswith(FENCE) and after.prefix.endswith("\n")


def test_prefers_paragraphs_then_lines() -> None:
    paragraphs = [f"Paragraph {i}. " + "word " * 60 for i in range(12)]
    text = "\n\n".join(paragraphs)
    pages = split_message(text)
    assert len(pages) > 1
    for page in pages:
        assert page.startswith("Paragraph ") and page.rstrip().endswith("word")


def test_a_long_code_block_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"print({i})" for i in range(400))
    pages = split_message(f"Here:\n```python\n{code}\n```\nDone.")
    assert len(pages) >= 2
    assert pages[0].endswith("```") and pages[1].startswith("```python\n")
    assert all(page.count(FENCE) % 2 == 0 for page in pages)
    assert pages[-1].endswith("Done.")


def test_short_text_is_one_page_and_blank_text_none() -> None:
    assert split_message("hello") == ["hello"]
    assert split_message("\n\n  \n") == []
    assert close_open_fence("```py\nx = 1") == "```py\nx = 1\n```"
    assert close_open_fence("a ```b``` c") == "a ```b``` c"
    with pytest.raises(ValueError):
        split_chunks("x" * 300, limit=50)


def test_reply_draft_streams_tool_lines_then_drops_them() -> None:
    draft = ReplyDraft()
    draft.tool("1", "🔎", 'web_search "kyoto"', "running")
    assert draft.pages() == ['-# 🔎 web_search "kyoto" …']
    draft.tool("1", "🔎", 'web_search "kyoto"', "done")
    draft.add_text("Kyoto is ")
    assert draft.pages() == ['Kyoto is\n\n-# 🔎 web_search "kyoto" … ✓']
    draft.add_text("old.\n```py\nx = 1")
    assert draft.pages()[0].startswith("Kyoto is old.\n```py\nx = 1\n```"), "open fence closed"
    draft.finish(sources=render_sources([{"title": "Kyoto", "url": "https://k.example"}], "Src"))
    assert draft.pages() == [
        "Kyoto is old.\n```py\nx = 1\n```\n\n**Src**\n1. Kyoto — <https://k.example>"
    ]


def test_a_receipt_is_one_small_line_after_the_answer_and_before_the_sources() -> None:
    ui = ui_text("en")
    receipt = receipt_line(RememberedEvent(12, "my `cat`\nis\tMochi " + "x" * 200, True), ui)
    assert receipt.startswith("-# 🧠 Remembered: my 'cat' is Mochi xxx")
    assert receipt.endswith("… · `/memory me forget 12` to forget it") and "\n" not in receipt
    refused = receipt_line(RememberedEvent(None, "my dog", False, "full"), ui)
    assert refused == (
        "-# 🧠 Not remembered: you already have the most facts I keep here · forget some with "
        "`/memory me forget`"
    )
    draft = ReplyDraft()
    draft.add_text("Noted.")
    sources = render_sources([{"title": "Kyoto", "url": "https://k.example"}], "Src")
    draft.finish(notes=f"{receipt}\n{refused}", sources=sources)
    assert draft.pages() == [f"Noted.\n\n{receipt}\n{refused}\n\n{sources}"]


def test_reply_draft_seals_full_pages_and_never_changes_them() -> None:
    draft = ReplyDraft()
    text = "\n\n".join(f"Part {i}: " + "lorem ipsum " * 40 for i in range(12))
    seen: list[list[str]] = []
    for start in range(0, len(text), 97):
        draft.add_text(text[start : start + 97])
        seen.append(draft.pages())
    draft.finish(error="⚠️ The model stopped.")
    final = draft.pages()
    for pages in seen:
        for index, page in enumerate(pages[:-1]):
            assert final[index] == page, "a sealed page is final"
    assert all(len(page) <= 2000 for page in final)
    assert final[-1].endswith("⚠️ The model stopped.")
    assert " ".join("".join(final).split()).startswith("Part 0: lorem")


def test_tool_line_sources_and_mentions() -> None:
    assert tool_line("📄", "pdf_to_text a.pdf", "error") == "-# 📄 pdf_to_text a.pdf … ✗"
    assert tool_line("🔧", "mystery", "running") == "-# 🔧 mystery …"
    assert "`" not in tool_line("🔧", "a ```b``` c", "done")
    block = render_sources(
        [
            {"title": "A [title] with *marks*", "url": "https://a.example/1"},
            {"title": "dup", "url": "https://a.example/1"},
            {"title": "bad", "url": "javascript:alert(1)"},
            {"title": "bad", "url": "https://x.example/<script>"},
            {"title": "", "url": "http://b.example"},
        ],
        "Sources",
    )
    assert block == (
        "**Sources**\n1. A title with marks — <https://a.example/1>\n2. <http://b.example>"
    )
    assert render_sources([], "Sources") == ""
    assert strip_bot_mention("<@42> hi <@!42> there <@&7>", 42, 7) == "hi  there"
    assert readable_mentions("ask <@5> and <@6> :) <:wave:123>", {5: "alice"}) == (
        "ask @alice and <@6> :) :wave:"
    )


def test_thread_names_are_short_and_clean() -> None:
    assert thread_name("<@1> **What** is `this`?", "Chat") == "What is this?"
    assert thread_name("<@1>", "Chat with alice") == "Chat with alice"
    long = thread_name("word " * 100, "x")
    assert len(long) <= 81 and long.endswith("…")
    assert thread_name("```py\ncode only\n``` then text", "x") == "then text"
