"""``AUGMENTATION_PROVIDER`` -> the extractor (``rules``, the default, or ``none``)."""

from __future__ import annotations

from memoryhub.augmentation.base import Extractor
from memoryhub.augmentation.rules import RulesExtractor

PROVIDERS = ("rules", "none")


class UnknownProvider(ValueError):
    pass


def extractor_for(provider: str) -> Extractor | None:
    """The extractor ``provider`` names; None for ``none`` (augmentation learns nothing)."""
    if provider == "none":
        return None
    if provider == "rules":
        return RulesExtractor()
    raise UnknownProvider(f"AUGMENTATION_PROVIDER must be one of {', '.join(PROVIDERS)}, "
                          f"not {provider!r}")
