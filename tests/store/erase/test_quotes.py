"""What counts as an answer quoting an erased text: a run of its characters (16, or 8 in CJK
text, or the whole of a shorter text), case and spacing ignored — but not a run the answer's
own question holds, nor the attachment framing every message with a file carries; and an
erase finds the quoting answers stored after its scan ahead, on both engines."""

from __future__ import annotations

from bot.memory.member_memory import ERASED_PLACEHOLDER
from bot.store import Repositories
from bot.store.engine.database import Database
from bot.store.erase.member_erase import erase_member, scan_ahead
from bot.store.erase.quotes import Quotes, quotes_of

A = "guild:1"
X, Y = "111", "222"
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


async def test_an_answer_stored_after_the_scan_ahead_is_blanked_too(db: Database) -> None:
    repos = Repositories.over(db)
    thread = (await repos.sessions.create(A, title="pets")).id
    said = await repos.messages.add(A, thread, "user", SAID, author_id=X)
    await repos.messages.add(A, thread, "assistant", "Sleepy!", reply_to=said.id)
    asked = await repos.messages.add(A, thread, "user", "What did she say?", author_id=Y)
    early = await repos.messages.add(A, thread, "assistant", f"She said: {SAID}", reply_to=asked.id)
    ahead = await scan_ahead(db.fetchall, A, X, X)
    assert ahead.found == (early.id,)
    # Written between the scan and the erase's transaction: found inside it.
    late = await repos.messages.add(A, thread, "assistant", f"Again: {SAID}", reply_to=asked.id)
    kept = await repos.messages.add(A, thread, "assistant", "Cats sleep a lot.", reply_to=asked.id)

    async with db.transaction() as conn:
        erased = await erase_member(conn, A, X, X, ERASED_PLACEHOLDER, ahead=ahead)

    assert erased.quoting == 2
    texts = {m.id: m.content for m in await repos.messages.recent_live(A, thread, 10)}
    assert texts[early.id] == texts[late.id] == ERASED_PLACEHOLDER
    assert texts[kept.id] == "Cats sleep a lot." and texts[asked.id] == "What did she say?"
