"""Allow / Deny buttons for a tool call that asks its member first (bot.turn.approval).

The question is posted where the turn answers; only the member who asked may decide (anyone
else pressing is told so, privately, and nothing changes). Once decided, or when the time is
up, the question is edited to say what happened and its buttons are removed.
"""

from __future__ import annotations

import asyncio
import logging
import secrets

import discord

from bot.prompts.ui_text import UiText, ui_text
from bot.turn.approval import ApprovalAsk, Decision, Verdict

log = logging.getLogger(__name__)

CUSTOM_ID_PREFIX = "playchat-approval"
_DETAIL_CHARS = 200


def _question(ui: UiText, ask: ApprovalAsk, member: str) -> str:
    detail = ask.detail.replace("`", "'")[:_DETAIL_CHARS]
    return ui.approval_question.format(
        member=member, tool=ask.label, detail=f"`{detail}`", seconds=f"{ask.timeout:g}"
    )


class _Choice(discord.ui.Button["_Question"]):
    """Allow or Deny: a press hands its verdict to the question."""

    def __init__(self, verdict: Verdict, label: str, style: discord.ButtonStyle, nonce: str):
        super().__init__(
            label=label, style=style, custom_id=f"{CUSTOM_ID_PREFIX}:{nonce}:{verdict}"
        )
        self.verdict: Verdict = verdict

    async def callback(self, interaction: discord.Interaction) -> None:
        """The member pressed this button (the view checked who)."""
        if self.view is not None:
            await self.view.answer(interaction, self.verdict)


class _Question(discord.ui.View):
    """The two buttons of one question; the first press of the member who asked decides."""

    def __init__(self, member_id: int, ui: UiText, ask: ApprovalAsk) -> None:
        super().__init__(timeout=None)
        self.member_id = member_id
        self.ui = ui
        self.ask = ask
        self.decided: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        nonce = secrets.token_hex(8)
        self.add_item(_Choice("allowed", ui.approval_allow, discord.ButtonStyle.success, nonce))
        self.add_item(_Choice("denied", ui.approval_deny, discord.ButtonStyle.danger, nonce))

    async def answer(self, interaction: discord.Interaction, verdict: Verdict) -> None:
        """Decide: the question shows the verdict, its buttons go, the turn goes on."""
        if self.decided.done():
            await interaction.response.defer()
            return
        self.decided.set_result(Decision(verdict, str(interaction.user.id)))
        self.stop()
        text = self.ui.approval_allowed if verdict == "allowed" else self.ui.approval_denied
        try:
            await interaction.response.edit_message(
                content=text.format(member=f"<@{self.member_id}>", tool=self.ask.label), view=None
            )
        except discord.HTTPException as exc:
            log.warning("could not show the approval of %s: %s", self.ask.tool, exc)

    async def interaction_check(self, interaction: discord.Interaction) -> bool:
        """Only the member who asked decides; anyone else is told so, privately."""
        if interaction.user.id == self.member_id:
            return True
        log.info(
            "user %d pressed the approval of %s asked of %d: refused",
            interaction.user.id,
            self.ask.tool,
            self.member_id,
        )
        await interaction.response.send_message(
            self.ui.approval_not_yours.format(member=f"<@{self.member_id}>"), ephemeral=True
        )
        return False


class ButtonApprover:
    """Asks one member in one channel, with buttons (an `Approver` for the engine)."""

    def __init__(self, channel: discord.abc.Messageable, member_id: int) -> None:
        self._channel = channel
        self._member_id = member_id

    async def __call__(self, ask: ApprovalAsk) -> Decision:
        """Post the question and wait for the member's press, at most `ask.timeout` s."""
        ui = ui_text(ask.language)
        view = _Question(self._member_id, ui, ask)
        mention = f"<@{self._member_id}>"
        message = await self._channel.send(
            _question(ui, ask, mention), view=view, suppress_embeds=True
        )
        try:
            async with asyncio.timeout(ask.timeout):
                return await asyncio.shield(view.decided)
        except TimeoutError:
            if view.decided.done():
                return view.decided.result()  # pressed at the last moment
            await self._close(message, view, ui, ask)
            return Decision("timeout")
        except asyncio.CancelledError:
            # The turn ended meanwhile (its time bound, a stop): the question is over too.
            await self._close(message, view, ui, ask)
            raise

    @staticmethod
    async def _close(
        message: discord.Message, view: _Question, ui: UiText, ask: ApprovalAsk
    ) -> None:
        """Show that nobody decided in time and take the buttons away."""
        view.stop()
        if view.decided.done():
            return
        view.decided.cancel()
        text = ui.approval_timed_out.format(tool=ask.label, seconds=f"{ask.timeout:g}")
        try:
            await message.edit(content=text, view=None)
        except discord.HTTPException as exc:
            log.warning("could not close the approval question %d: %s", message.id, exc)
