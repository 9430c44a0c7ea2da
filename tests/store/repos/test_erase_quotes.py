"""What counts as an answer quoting an erased text: a run of its characters (16, or 8 in CJK
text, or the whole of a shorter text), case and spacing ignored — but not a run the answer's
own question holds, nor the attachment framing every message with a file carries."""

from __future__ import annotations

from bot.store.repos.erase_quotes import Quotes, quotes_of

SAID = "My cat is called Mochi-Kinako and she sleeps all day"


def test_a_run_of_the_text_is_a_quote_whatever_its_case_and_spacing() -> None:
    quotes = Quotes([SAID])
    assert quotes.quoted_in("I heard that her cat IS CALLED   mochi-kinako, sweet")
    assert not quotes.quoted_in("Her cat is Mochi, I think")  # no 16 characters in a row


def test_japanese_needs_a_shorter_run_and_a_short_text_counts_whole() -> None:
    quotes = Quotes(["うちの猫の名前はモチキナコです", "Zorblax!"])
    assert quotes.quoted_in("猫の名前はモチキナコだそうです")  # 8 characters in a row
    assert not quotes.quoted_in("猫の名前は知りません")
    assert quotes.quoted_in("They said zorblax! twice")
    assert not Quotes(["hi"]), "too short to count"


def test_a_run_the_answers_own_question_holds_is_not_a_quote() -> None:
    quotes = Quotes([SAID])
    question = "Is it true that my cat is called Mochi-Kinako too?"
    assert not quotes.quoted_in(f"Yes: {question}", besides=question)
    assert quotes.quoted_in(f"Yes, and she sleeps all day. {question}", besides=question)


def test_the_attachment_framing_is_nobodys_words() -> None:
    framed = "[attachment:0123456789abcdef cat.txt (text/plain, 1 KB)]\n----- begin cat.txt -----"
    quotes = quotes_of([f"{framed}\nShe purrs all night long\n----- end cat.txt -----"])
    assert not quotes.quoted_in("[attachment:fedcba9876543210 dog.txt (text/plain, 1 KB)]")
    assert quotes.quoted_in("The file said she purrs all night long.")
    assert Quotes([framed]).quoted_in("[attachment:fedcba9876543210 dog.txt (text/plain, 1 KB)]")
