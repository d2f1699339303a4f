"""PyTorch's ``torch.nn.parameter`` names: Parameter, the lazy layers' placeholders and is_lazy."""

from .._lazy import UninitializedBuffer, UninitializedParameter, is_lazy
from .module import Parameter

__all__ = ["Parameter", "UninitializedBuffer", "UninitializedParameter", "is_lazy"]
