"""``AUGMENTATION_PROVIDER`` -> the extractor (``rules``, the default, ``openai`` or ``none``)."""

from __future__ import annotations

from memoryhub.augmentation.base import Extractor
from memoryhub.augmentation.openai import OpenAIExtractor
from memoryhub.augmentation.rules import RulesExtractor
from memoryhub.infra.chat import ChatClient

PROVIDERS = ("rules", "openai", "none")


class UnknownProvider(ValueError):
    pass


def extractor_for(provider: str, *, url: str = "", api_key: str = "", model: str = "",
                  timeout: float = 30.0, max_retries: int = 2) -> Extractor | None:
    """The extractor ``provider`` names; None for ``none`` (augmentation learns nothing).
    ``openai`` needs ``url`` and ``model`` (``AUGMENTATION_URL``, ``AUGMENTATION_MODEL``)."""
    if provider == "none":
        return None
    if provider == "rules":
        return RulesExtractor()
    if provider == "openai":
        if not url or not model:
            raise UnknownProvider("AUGMENTATION_PROVIDER=openai needs AUGMENTATION_URL and "
                                  "AUGMENTATION_MODEL")
        return OpenAIExtractor(ChatClient(url=url, api_key=api_key or None, model=model,
                                          timeout=timeout, max_retries=max_retries))
    raise UnknownProvider(f"AUGMENTATION_PROVIDER must be one of {', '.join(PROVIDERS)}, "
                          f"not {provider!r}")
