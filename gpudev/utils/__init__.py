"""``gd.utils``: PyTorch's ``torch.utils`` names; today ``gd.utils.data``."""

from . import data

__all__ = ["data"]
