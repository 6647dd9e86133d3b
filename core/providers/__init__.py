"""Model providers: one protocol for every structured derivation task."""

from __future__ import annotations

from core.errors import InvalidInputError
from core.providers.base import BlockSummary, Extraction, Provider

# Names get_provider accepts ("deepseek" is an alias of "openai", whose defaults are DeepSeek's).
PROVIDERS = ("offline", "openai", "deepseek")


def get_provider(name: str | None = None) -> Provider:
    """The provider called ``name`` (default: the deterministic offline one)."""
    name = (name or "offline").strip().lower()
    if name == "offline":
        # start-up time: a provider's module is loaded when it is chosen (openai_compat pulls in http.client, ~11 ms)
        from core.providers.offline import OfflineProvider

        return OfflineProvider()
    if name in ("openai", "deepseek"):
        from core.providers.openai_compat import OpenAICompatProvider

        return OpenAICompatProvider()
    raise InvalidInputError(f"unknown provider {name!r}; available: {', '.join(PROVIDERS)}")


__all__ = ["BlockSummary", "Extraction", "Provider", "get_provider"]
