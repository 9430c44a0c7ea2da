"""The turn's fitting at its limits: tool results shortened so every request fits its budget."""

from __future__ import annotations

from bot.chat.budget.tool_budget import (
    MAX_TOOL_CONTEXT_CHARS,
    ToolBudget,
    counted_chars,
    cut_to_room,
    resume_footer,
    split_footer,
)
from bot.chat.budget.turn_fit import ToolText, content_tokens, fit_tool_texts
from bot.tools.paging import PDF_RESUME_META, page_footer

HEAD = "[tool output]\n"
TAIL = "\n…[shortened]"


def item(body: str, round_number: int, footer: str = "", tail: str = TAIL) -> ToolText:
    return ToolText(HEAD, body, footer, tail, round_number)


def cost(contents: list[str]) -> int:
    return sum(content_tokens(content) for content in contents)


def whole_cost(items: list[ToolText]) -> int:
    return cost([entry.text for entry in items])


def test_results_that_fit_pass_whole_up_to_the_last_token() -> None:
    items = [item("a" * 4000, 1), item("b" * 4000, 2)]
    budget = 500 + whole_cost(items)
    fitted = fit_tool_texts(items, 500, budget)
    assert fitted is not None
    assert fitted.contents == [entry.text for entry in items] and fitted.shortened == 0
    assert fitted.tokens == budget - 500

    tighter = fit_tool_texts(items, 500, budget - 1)
    assert tighter is not None and tighter.shortened == 1
    assert 500 + tighter.tokens <= budget - 1


def test_earlier_rounds_give_way_first_and_keep_their_start_and_footer() -> None:
    footer = page_footer("tok-next")
    earlier = [item("e" * 6000, 1, footer, TAIL + page_footer("tok-start")), item("f" * 100, 1)]
    newest = [item("n" * 6000, 2)]
    items = earlier + newest
    budget = 200 + whole_cost(items) - 1000
    fitted = fit_tool_texts(items, 200, budget)
    assert fitted is not None
    long_earlier, short_earlier, latest = fitted.contents
    assert latest == newest[0].text, "the newest round stays whole while earlier ones can give"
    assert short_earlier == earlier[1].text, "a short result under the common length stays"
    assert long_earlier.startswith(HEAD + "eee") and long_earlier.endswith(
        TAIL + page_footer("tok-start")
    ), "cut: its start, the marker, the footer that resumes at the start of the page"
    assert 200 + fitted.tokens <= budget
    # The longest common length: one more character would not fit.
    kept = len(long_earlier) - len(HEAD) - len(TAIL + page_footer("tok-start"))
    longer = [earlier[0].cut(kept + 1), short_earlier, latest]
    assert 200 + cost(longer) > budget


def test_the_newest_round_is_cut_only_once_earlier_rounds_are_down_to_their_tails() -> None:
    items = [item("e" * 4000, 1), item("n" * 4000, 2), item("m" * 4000, 2)]
    floor = content_tokens(items[0].cut(0))
    room_for_newest = 600
    budget = 100 + floor + room_for_newest
    fitted = fit_tool_texts(items, 100, budget)
    assert fitted is not None
    assert fitted.contents[0] == HEAD + TAIL
    assert all(content.endswith(TAIL) for content in fitted.contents[1:])
    kept = {len(content) for content in fitted.contents[1:]}
    assert len(kept) == 1, "the newest round's results are cut to one length"
    assert 100 + fitted.tokens <= budget
    assert fitted.shortened == 3


def test_nothing_fits_below_the_shortest_forms() -> None:
    items = [item("e" * 4000, 1), item("n" * 4000, 2)]
    shortest = cost([entry.cut(0) for entry in items])
    assert fit_tool_texts(items, 100, 100 + shortest) is not None
    assert fit_tool_texts(items, 100, 100 + shortest - 1) is None


def test_heads_are_never_cut_and_a_cut_never_costs_more_than_the_whole() -> None:
    notice = ToolText("Not run: the budget is spent.", round=2)
    tiny = item("ok", 1, tail="\n…[a marker much longer than the two characters it replaces]")
    fitted = fit_tool_texts([tiny, notice], 0, cost([tiny.text, notice.head]))
    assert fitted is not None and fitted.contents == [tiny.text, notice.head]
    assert fit_tool_texts([], 10, 10) is not None and fit_tool_texts([], 11, 10) is None


def test_japanese_pages_are_cut_by_tokens() -> None:
    page = "日本語の文章です。" * 333
    items = [item(page, 1), item(page, 2)]
    budget = content_tokens(page) + 800
    fitted = fit_tool_texts(items, 0, budget)
    assert fitted is not None and fitted.tokens <= budget
    assert fitted.contents[1] == items[1].text
    assert fitted.contents[0].startswith(HEAD + "日本語の文章です。")


def test_footer_split_and_resume_at_the_start_of_the_page() -> None:
    text = "body text" + page_footer("tok-next", PDF_RESUME_META)
    body, footer = split_footer(text)
    assert body + footer == text and body.rstrip() == "body text"
    resumed = resume_footer(footer, "tok-start")
    assert "next_token: tok-start" in resumed and "tok-next" not in resumed
    assert "has_more: true" in resumed
    assert "token_replaces_previous: true" in resumed, "the PDF's own footer lines stay"
    assert resume_footer(footer, None) == "", "a first page has no token for its start"
    assert split_footer("no footer here") == ("no footer here", "")
    assert split_footer("x\n---page-info---\nnot a meta line") == (
        "x\n---page-info---\nnot a meta line",
        "",
    )
    last_page = resume_footer("", "tok-start")
    assert last_page == page_footer("tok-start"), "a cut last page can still be read again"


def test_the_cap_cuts_the_crossing_result_to_the_room_left_with_its_footer() -> None:
    budget = ToolBudget()
    pages = [item("x" * 5000, 1) for _ in range(4)]
    for page in pages:
        assert budget.take(page, [("F", "T")]) is page
    assert budget.room == MAX_TOOL_CONTEXT_CHARS - 20000 and budget.tools_allowed
    footer = "\n…[cut]" + page_footer("tok-start")
    crossing = item("y" * 5000 + "z", 1)
    cut = budget.take(crossing, [(footer, "\n…[window]"), ("\n…[cut, no token]", "\n…[w]")])
    assert counted_chars(cut) == 4000, "cut to exactly what remains"
    assert cut.footer == footer and cut.body == "y" * (4000 - len(footer))
    assert cut.cut_tail == "\n…[window]"
    assert budget.chars == MAX_TOOL_CONTEXT_CHARS and not budget.tools_allowed


def test_a_result_that_fills_the_cap_exactly_is_whole() -> None:
    budget = ToolBudget(chars=MAX_TOOL_CONTEXT_CHARS - 6000)
    page = item("x" * 6000, 1)
    assert budget.take(page, [("F", "T")]) is page
    assert budget.chars == MAX_TOOL_CONTEXT_CHARS and budget.chars_exhausted


def test_too_little_room_for_a_useful_result_counts_as_spent() -> None:
    budget = ToolBudget(chars=MAX_TOOL_CONTEXT_CHARS - budget_min_room())
    assert not budget.chars_exhausted
    budget.chars += 1
    assert budget.chars_exhausted and not budget.tools_allowed


def budget_min_room() -> int:
    return ToolBudget().min_room


def test_a_footer_too_long_for_the_room_gives_way_to_the_short_tail() -> None:
    long_footer = "\n…[cut]" + page_footer("t" * 900)
    cut = cut_to_room(item("x" * 5000, 1), 600, [(long_footer, "W1"), ("\n…[cut]", "W2")])
    assert counted_chars(cut) == 600 and cut.footer == "\n…[cut]" and cut.cut_tail == "W2"
