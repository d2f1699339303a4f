"""``gd.jit.script``, ``gd.jit.trace`` and ``gd.compile``: PyTorch's compilers, which gpudev
does not have.

gpudev runs eagerly, op by op: every operation is one call from Python into the C core, which
checks its arguments and launches its kernel, and nothing fuses or caches a sequence of them.
So code written with ``torch.jit.script``, ``torch.jit.trace`` or ``torch.compile`` (d2l's
hybridize section) gets an :class:`EagerOnlyError` saying so, instead of a function that
silently runs as it did before. What a compiler would save is the fixed cost of each call;
exercise 5 (``gd.exercises.small_op_sweep``, ``python -m gpudev exercises --only 5``)
measures that cost on this machine.

    >>> import gpudev as gd
    >>> gd.compile(lambda x: x + 1)
    Traceback (most recent call last):
    ...
    gpudev.jit.EagerOnlyError: gd.compile: gpudev runs eagerly, op by op ...
"""

from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["EagerOnlyError", "compile", "script", "trace"]

_WHY = ("gpudev runs eagerly, op by op: each operation is one call into the C core and "
        "nothing compiles, fuses or caches a sequence of them, so there is nothing to {verb}. "
        "Call the function or module directly (remove the {name} call); what a compiler "
        "would save is Python's fixed cost per call, which exercise 5 measures on this "
        "machine: gd.exercises.small_op_sweep(), or python -m gpudev exercises --only 5")


class EagerOnlyError(NotImplementedError):
    """A compiler of PyTorch's (``jit.script``, ``jit.trace``, ``compile``) was asked for;
    gpudev runs every operation eagerly. A NotImplementedError."""


def _refuse(name: str, verb: str) -> NoReturn:
    raise EagerOnlyError(f"{name}: " + _WHY.format(name=name, verb=verb))


def script(obj: Any = None, *args: Any, **kwargs: Any) -> NoReturn:
    """As ``torch.jit.script``: raises EagerOnlyError (gpudev runs eagerly, op by op).

    Example:
        >>> gd.jit.script(nn.Linear(2, 2))  # doctest: +SKIP
        EagerOnlyError: gd.jit.script: gpudev runs eagerly, op by op ...
    """
    _refuse("gd.jit.script", "script")


def trace(func: Any = None, example_inputs: Any = None, *args: Any, **kwargs: Any) -> NoReturn:
    """As ``torch.jit.trace``: raises EagerOnlyError (gpudev runs eagerly, op by op)."""
    _refuse("gd.jit.trace", "trace")


def compile(model: Any = None, *args: Any, **kwargs: Any) -> NoReturn:  # noqa: A001
    """As ``torch.compile``: raises EagerOnlyError (gpudev runs eagerly, op by op), also
    when used as a decorator (``@gd.compile`` or ``@gd.compile(mode=...)``)."""
    _refuse("gd.compile", "compile")
