"""Model connections (a preset: name, model, address, key — masked) and backend checks."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from admin_api.schemas.common import Body
from bot.config import mask_secret, model_backend, model_provider
from bot.store.repos.model_presets import ModelPreset

Title = Annotated[str, Field(min_length=1, max_length=200)]
ModelName = Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:/@+-]+$")]
ApiBase = Annotated[
    str,
    Field(
        min_length=8,
        max_length=500,
        pattern=r"^https?://[^\s/?#]+[^\s]*$",
        description="The server's address (API base), e.g. http://gpu-box:11434.",
        examples=["http://localhost:11434", "https://api.openai.com/v1"],
    ),
]
ApiKey = Annotated[str, Field(min_length=1, max_length=1000, pattern=r"^\S+$")]
TestKind = Literal["ok", "unreachable", "auth", "not_found", "timeout", "error"]


class SecretOut(BaseModel):
    """A secret as the API shows it: whether it is set, and its last 4 characters."""

    set: bool
    last4: str


class MaskedSecretIn(Body):
    """A secret sent back as it was shown ({set, last4}): the stored one is kept."""

    set: bool
    last4: Annotated[str, Field(max_length=4)] = ""


class PresetOut(BaseModel):
    """A model connection: its name (`label`), model string (`value`), address and key.

    `backend` and `provider` follow from the model string (`ollama/…` runs on the native
    Ollama client; any other provider string through LiteLLM). `api_base` null: the global
    LLM_API_BASE applies; `api_key` is always masked (unset: the global LLM_API_KEY applies,
    unless the connection names its own address).
    """

    id: int
    label: str
    value: str
    backend: Literal["ollama", "litellm"]
    provider: str
    api_base: str | None
    api_key: SecretOut
    created_at: str
    configured: bool = Field(
        default=False, description="The configured model (LLM_MODEL): what a turn uses by default."
    )
    seeded: bool = Field(
        default=False,
        description="Added for LLM_MODEL and never edited: it follows LLM_MODEL when it changes.",
    )
    state: Literal["ok", "down", "unknown"] = Field(
        default="unknown", description="Whether it answered at the last connections check."
    )
    warning: str | None = Field(
        default=None, description="Why it did not answer (the address and the fix), if not."
    )

    @classmethod
    def of(cls, preset: ModelPreset, **shown: object) -> PresetOut:
        """The preset as the API shows it (the key masked); `shown` adds configured, state…"""
        return cls.model_validate(
            {
                **cls._fields_of(preset),
                "seeded": preset.seeded,
                **shown,
            }
        )

    @staticmethod
    def _fields_of(preset: ModelPreset) -> dict[str, object]:
        return dict(
            id=preset.id,
            label=preset.label,
            value=preset.value,
            backend=model_backend(preset.value),
            provider=model_provider(preset.value),
            api_base=preset.api_base,
            api_key=SecretOut(**mask_secret(preset.api_key or "")),
            created_at=preset.created_at,
        )


class PresetListOut(BaseModel):
    """Every preset: the configured model first, then those that answered, then the rest."""

    presets: list[PresetOut]


class PresetIn(Body):
    """A new connection; without `api_base` and `api_key` it uses the global settings."""

    label: Title
    value: ModelName
    api_base: ApiBase | None = None
    api_key: ApiKey | MaskedSecretIn | None = None


class PresetUpdateIn(Body):
    """Changes to a connection; omitted fields stay. `api_base`/`api_key` null clears them;
    a masked key sent back ({set, last4} or '…abcd') keeps the stored key."""

    label: Title | None = None
    value: ModelName | None = None
    api_base: ApiBase | None = None
    api_key: ApiKey | MaskedSecretIn | None = None


class AvailableModelsOut(BaseModel):
    """The configured model and the models the configured backend offers."""

    current: str
    models: list[str]


class ConnectionTestOut(BaseModel):
    """One short call to the configured model: whether it answered, how fast, and what."""

    ok: bool
    model: str
    latency_ms: int
    reply: str
    error: str | None


class PresetTestOut(BaseModel):
    """One short call through a connection: whether it answered, and if not, why.

    `kind`: ok, unreachable (no server at the address), auth (the key was refused),
    not_found (the server does not have the model), timeout, error (anything else);
    `message` is the gateway's own sentence for the person reading it; `address` is where the
    call went (null: the hosted provider's own endpoint).
    """

    ok: bool
    kind: TestKind
    message: str
    model: str
    address: str | None
    latency_ms: int
