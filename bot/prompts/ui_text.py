"""The bot's own short texts on Discord (notices, refusals, command replies), per language."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UiText:
    """The bot's own short texts in one language."""

    sources: str
    error_prefix: str
    cooldown: str
    empty_mention: str
    image_skipped: str
    image_unreadable: str
    too_many_images: str
    file_too_large: str
    file_unsupported: str
    file_failed: str
    not_in_conversation: str
    access_denied: str
    admin_only: str
    generic_error: str
    thread_fallback: str
    note_saved: str
    note_created: str
    note_appended: str
    note_deleted: str
    note_linked: str
    note_already_linked: str
    note_unlinked: str
    note_not_linked: str
    note_not_found: str
    notes_empty: str
    note_empty_body: str
    memory_empty: str
    memory_header: str
    memory_forgotten: str
    model_show: str
    model_set_thread: str
    model_set_global: str
    model_unknown: str
    model_no_presets: str
    export_done: str
    export_too_large: str
    reset_done: str


_EN = UiText(
    sources="Sources",
    error_prefix="⚠️ ",
    cooldown="⏳ Please wait {seconds} s before sending another message.",
    empty_mention="👋 Ask me something: mention me with a question, or write in one of my threads.",
    image_skipped="🖼️ {name} skipped: the current model cannot see images.",
    image_unreadable="🖼️ {name} could not be read as an image.",
    too_many_images="🖼️ {name} skipped: at most {limit} images per message.",
    file_too_large="📎 {name} is too large ({size}; the limit is {limit}).",
    file_unsupported="📎 {name} skipped: only text, PDF and image files are read.",
    file_failed="📎 {name} could not be downloaded.",
    not_in_conversation="Use this command in one of my conversation threads (or a DM with me).",
    access_denied="You cannot use PlayChat here.",
    admin_only="Only members with the Manage Server permission or an admin role can do this.",
    generic_error="Something went wrong. Please try again.",
    thread_fallback="Chat with {name}",
    note_saved="Saved note **{title}**.",
    note_created="Created note **{title}**.",
    note_appended="Appended to note **{title}**.",
    note_deleted="Deleted note **{title}**.",
    note_linked="Linked **{title}**: its full text is now part of this thread's context.",
    note_already_linked="**{title}** was already linked to this thread.",
    note_unlinked="Unlinked **{title}** from this thread.",
    note_not_linked="**{title}** was not linked to this thread.",
    note_not_found="No note titled {title!r}.",
    notes_empty="There are no notes yet. Create one with /note write.",
    note_empty_body="(empty)",
    memory_empty="This thread has no long-term memory yet.",
    memory_header="**Long-term memory of this thread** ({count} summaries)",
    memory_forgotten="Forgot {count} summaries of this thread. The messages are kept.",
    model_show="This thread uses **{model}**. Default model: **{default}**.",
    model_set_thread="This thread now uses **{model}**.",
    model_set_global="The default model is now **{model}**.",
    model_unknown="{value!r} is not one of the model presets.",
    model_no_presets="No model presets are configured; add some in the admin page first.",
    export_done="Export of this thread ({count} messages).",
    export_too_large="The export is too large to upload ({size}).",
    reset_done="🧹 Started a fresh conversation in this thread. Earlier messages stay in the "
    "history but are no longer used.",
)

_JA = UiText(
    sources="出典",
    error_prefix="⚠️ ",
    cooldown="⏳ 続けて送信できません。あと {seconds} 秒お待ちください。",
    empty_mention="👋 メンションに続けて質問を書くか、私のスレッドで話しかけてください。",
    image_skipped="🖼️ {name} はスキップしました：現在のモデルは画像を扱えません。",
    image_unreadable="🖼️ {name} は画像として読み込めませんでした。",
    too_many_images="🖼️ {name} はスキップしました：画像は 1 メッセージ {limit} 枚までです。",
    file_too_large="📎 {name} は大きすぎます（{size}、上限 {limit}）。",
    file_unsupported="📎 {name} はスキップしました：読めるのはテキスト・PDF・画像だけです。",
    file_failed="📎 {name} をダウンロードできませんでした。",
    not_in_conversation="このコマンドは私との会話スレッド（または DM）で使ってください。",
    access_denied="ここでは PlayChat を使えません。",
    admin_only="この操作はサーバー管理権限か管理者ロールを持つメンバーだけができます。",
    generic_error="エラーが発生しました。もう一度お試しください。",
    thread_fallback="{name} との会話",
    note_saved="ノート **{title}** を保存しました。",
    note_created="ノート **{title}** を作成しました。",
    note_appended="ノート **{title}** に追記しました。",
    note_deleted="ノート **{title}** を削除しました。",
    note_linked="**{title}** をリンクしました。全文がこのスレッドのコンテキストに入ります。",
    note_already_linked="**{title}** はすでにこのスレッドにリンクされています。",
    note_unlinked="**{title}** のリンクを外しました。",
    note_not_linked="**{title}** はこのスレッドにリンクされていません。",
    note_not_found="{title!r} というノートはありません。",
    notes_empty="ノートはまだありません。/note write で作成できます。",
    note_empty_body="（空）",
    memory_empty="このスレッドにはまだ長期記憶がありません。",
    memory_header="**このスレッドの長期記憶**（要約 {count} 件）",
    memory_forgotten="このスレッドの要約を {count} 件忘れました。メッセージは残っています。",
    model_show="このスレッドのモデル: **{model}**（既定: **{default}**）",
    model_set_thread="このスレッドのモデルを **{model}** にしました。",
    model_set_global="既定のモデルを **{model}** にしました。",
    model_unknown="{value!r} はモデルプリセットにありません。",
    model_no_presets="モデルプリセットがありません。管理画面で追加してください。",
    export_done="このスレッドのエクスポート（{count} 件）",
    export_too_large="エクスポートが大きすぎてアップロードできません（{size}）。",
    reset_done="🧹 このスレッドで新しい会話を始めました。以前のメッセージは履歴に残りますが、"
    "今後は使われません。",
)


def ui_text(language: str) -> UiText:
    """The UI texts for "ja" or "en" (anything else gets English)."""
    return _JA if language == "ja" else _EN
