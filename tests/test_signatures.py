"""Signatures: every public callable of gpudev._C (module functions, Array and Device methods,
the Device constructor, and so everything gpudev re-exports from the core) has a signature
inspect can read, and its parameters are exactly those its parser accepts: the same names,
kinds and defaults. The signatures come from one declaration per function (args.h,
"Signatures, declared once"), so these tests check the declarations against the parsing.

Each callable has a valid call in CALLS. From it the tests derive: every parameter that may be
passed by keyword is accepted by keyword and no other keyword is; positional-only ones are
refused by keyword; no more positional arguments are taken than the signature has, and none
fewer than it requires; and passing a default explicitly gives what leaving it out gives.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gpudev as gd
import gpudev._C as C

A = gd.arange(6.0).reshape(2, 3)
Call = tuple[tuple[Any, ...], dict[str, Any]]


def graph_root() -> gd.Array:
    x = gd.ones(3).requires_grad_()
    return (x * x).sum()


def seeded(make: Callable[[], Call]) -> Callable[[], Call]:
    """A call of a random function, reseeded so that two calls can be compared."""

    def call() -> Call:
        gd.manual_seed(0)
        return make()

    return call


# name -> a function returning (args, kwargs) of one valid call, fresh each time
FUNCTIONS: dict[str, Callable[[], Call]] = {
    "nonzero": lambda: ((A,), {}), "from_dlpack": lambda: ((np.arange(3.0),), {}),
    "matmul": lambda: ((A, A.T), {}), "allclose": lambda: ((A, A), {}),
    "all": lambda: ((A,), {}), "any": lambda: ((A,), {}), "norm": lambda: ((A,), {}),
    "argmax": lambda: ((A,), {}), "argmin": lambda: ((A,), {}), "where": lambda: ((A > 2, A, 0.0), {}),
    "stack": lambda: (([A, A],), {}), "concatenate": lambda: (([A, A],), {}),
    "array": lambda: (([1.0, 2.0],), {}), "asarray": lambda: (([1.0, 2.0],), {}),
    "zeros": lambda: (((2, 3),), {}), "ones": lambda: (((2, 3),), {}), "empty": lambda: (((2, 3),), {}),
    "full": lambda: (((2, 3), 1.5), {}), "arange": lambda: ((1, 7), {}),
    "rand": seeded(lambda: ((2, 3), {})), "randn": seeded(lambda: ((2, 3), {})),
    "cpu": lambda: ((), {}), "gpu": lambda: ((), {}), "try_gpu": lambda: ((), {}), "try_all_gpus": lambda: ((), {}),
    "num_gpus": lambda: ((), {}), "cuda_available": lambda: ((), {}), "synchronize": lambda: ((), {}),
    "manual_seed": lambda: ((0,), {}), "get_num_threads": lambda: ((), {}),
    "set_num_threads": lambda: ((gd.get_num_threads(),), {}),
    "Device": lambda: (("cuda",), {}),
}
# Array methods: name -> a function returning (self, args, kwargs)
METHODS: dict[str, Callable[[], tuple[Any, tuple[Any, ...], dict[str, Any]]]] = {
    name: (lambda: (A, (), {}))
    for name in ("cpu", "numpy", "item", "tolist", "copy", "__copy__", "_flatten", "ravel", "nonzero", "contiguous",
                 "is_contiguous", "mean", "any", "all", "argmax", "argmin",
                 "__dlpack__", "__dlpack_device__", "_transpose", "__array__", "detach", "_to", "is_pinned",
                 "pin_memory")
}
METHODS.update({
    "item": lambda: (gd.ones(()), (), {}),
    "_to": lambda: (A, ("cpu",), {}),
    "cuda": lambda: (A, (), {}),  # without a GPU: DeviceUnavailableError, after the parsing
    "astype": lambda: (A, (gd.float64,), {}),
    "reshape": lambda: (A, (3, 2), {}),
    "permute": lambda: (A, (1, 0), {}),
    "swapaxes": lambda: (A, (0, 1), {}),
    "__deepcopy__": lambda: (A, ({},), {}),
    "__format__": lambda: (A, ("",), {}),
    "requires_grad_": lambda: (gd.ones(3), (), {}),
    "backward": lambda: (graph_root(), (), {}),
})
# the elementwise functions and methods: one per row of the op lists (csrc/tables.h)
for _op in gd._C._ops:
    _x = gd.arange(6) if _op.types in ("BITWISE", "INT") else A  # integer rows take integers
    _call = (lambda x=_x: ((x,), {})) if _op.arity == 1 else (lambda x=_x: ((x, 2), {}))
    for _name in (_op.name, *_op.aliases) if _op.function else ():
        FUNCTIONS[_name] = _call
    if _op.method:
        METHODS[_op.name] = (lambda: (A, (), {})) if _op.arity == 1 else (lambda: (A, (2.0,), {}))
# the methods of the reduction list (csrc/tables.h): Array._<name> where Python wraps the C method
for _red in gd._C._reductions:
    if _red.method:
        METHODS[f"_{_red.name}" if hasattr(gd.Array, f"_{_red.name}") else _red.name] = lambda: (A, (), {})
DEVICE_METHODS: dict[str, Callable[[], tuple[Any, tuple[Any, ...], dict[str, Any]]]] = {
    "info": lambda: (gd.cpu(), (), {}),
    "__reduce__": lambda: (gd.cpu(), (), {}),
}
# results whose values are not reproducible: compared by type, shape and dtype only
UNREPEATABLE = {"empty", "__dlpack__"}


def public_core_callables() -> dict[str, Any]:
    """Name -> callable for every public callable of gpudev._C: its functions and its own types
    (not the exception classes, whose signatures are Python's own, nor numpy's dtype types)."""
    out = {}
    for name, obj in vars(C).items():
        if name.startswith("_"):
            continue
        if isinstance(obj, types.BuiltinFunctionType):
            out[name] = obj
        elif isinstance(obj, type) and obj.__module__.startswith("gpudev") and not issubclass(obj, BaseException):
            out[name] = obj
    return out


def c_methods(cls: type) -> set[str]:
    """The methods cls defines in C (PyMethodDef entries), not slots or inherited ones; for
    Array also the private ones that its Python methods call (a.to calls a._to)."""
    return {n for n, v in vars(cls).items() if isinstance(v, types.MethodDescriptorType)}


def test_every_callable_has_a_call_here():
    callables = public_core_callables()
    # Array cannot be constructed (gd.array() makes arrays); its methods are below
    assert set(callables) - {"Array"} == set(FUNCTIONS), "add a valid call to FUNCTIONS for each new function"
    assert c_methods(gd.Array) == set(METHODS), "add a valid call to METHODS for each new Array method"
    assert c_methods(gd.Device) == set(DEVICE_METHODS)


def test_re_exports_are_the_core_objects():
    # what gpudev exports under a core name is the core's own callable, so it has its signature
    for name, obj in public_core_callables().items():
        if hasattr(gd, name):
            exported = getattr(gd, name)
            if isinstance(exported, (types.BuiltinFunctionType, type)):
                assert exported is obj, name


def _cases():
    for name, make in FUNCTIONS.items():
        yield pytest.param(name, None, make, id=name)
    for cls, table in ((gd.Array, METHODS), (gd.Device, DEVICE_METHODS)):
        for name, make in table.items():
            yield pytest.param(name, cls, make, id=f"{cls.__name__}.{name}")


def _target(name: str, cls: type | None, make) -> tuple[Callable[..., Any], Callable[[], Call]]:
    """The bound callable and its valid call (fresh self for methods)."""
    if cls is None:
        return getattr(C, name), make

    def fresh() -> Call:
        self, args, kwargs = make()
        return (self,) + tuple(args), kwargs

    return getattr(cls, name), fresh


def _same(x: Any, y: Any, name: str) -> bool:
    if isinstance(x, gd.Array):
        if not (isinstance(y, gd.Array) and x.shape == y.shape and x.dtype == y.dtype and x.device == y.device):
            return False
        return name in UNREPEATABLE or np.array_equal(np.asarray(x.cpu()), np.asarray(y.cpu()), equal_nan=True)
    if isinstance(x, np.ndarray):
        return isinstance(y, np.ndarray) and np.array_equal(x, y)
    if isinstance(x, (tuple, list)):
        return type(x) is type(y) and len(x) == len(y) and all(_same(a, b, name) for a, b in zip(x, y))
    if name in UNREPEATABLE:
        return type(x) is type(y)
    return x == y


def _outcome(fn, args, kwargs) -> tuple[str, Any]:
    """What a call gives: its result, or the gpudev error it raises (cuda() without a GPU); a
    TypeError, the parser's refusal, propagates."""
    try:
        return "result", fn(*args, **kwargs)
    except gd.GpudevError as e:
        return "raised", type(e)


def _same_outcome(x, y, name) -> bool:
    return x[0] == y[0] and (_same(x[1], y[1], name) if x[0] == "result" else x[1] is y[1])


KEYWORD_REFUSALS = ("unexpected keyword", "takes no keyword", "invalid keyword")
COUNT_REFUSALS = ("argument", "takes", "(")


def _refuses(fn, args, kwargs, words) -> None:
    with pytest.raises(TypeError) as info:
        fn(*args, **kwargs)
    assert any(w in str(info.value) for w in words), str(info.value)


@pytest.mark.parametrize("name, cls, make", list(_cases()))
def test_signature_matches_the_parser(name, cls, make):
    fn, valid = _target(name, cls, make)
    sig = inspect.signature(fn)  # raises ValueError when there is no text signature
    K = inspect.Parameter
    params = list(sig.parameters.values())
    if cls is not None:  # an unbound method shows self, positional-only, first
        assert params[0].name == "self" and params[0].kind is K.POSITIONAL_ONLY
        params = params[1:]
    assert not [p for p in params if p.kind is K.VAR_KEYWORD], f"{name}: **kwargs declared"
    assert not {p.name for p in params} & {"args", "kwargs"}, f"{name}: a generic *args stands for parameters"
    skip = 1 if cls is not None else 0  # self, first of the valid call's arguments
    varargs = any(p.kind is K.VAR_POSITIONAL for p in params)
    positional = [p for p in params if p.kind in (K.POSITIONAL_ONLY, K.POSITIONAL_OR_KEYWORD)]
    base = _outcome(fn, *valid())
    args, kwargs = valid()
    given = len(args) - skip  # how many parameters the valid call gives by position
    assert varargs or given <= len(positional)

    # a keyword no parameter has is refused
    _refuses(fn, args, {**kwargs, "bogus_keyword": 1}, KEYWORD_REFUSALS)

    for i, p in enumerate(positional[:given]):
        args, kwargs = valid()
        if p.kind is K.POSITIONAL_ONLY:  # refused by keyword
            _refuses(fn, args[: skip + i], {**kwargs, p.name: args[skip + i]}, KEYWORD_REFUSALS)
        elif not (varargs and given > len(positional)):
            # by keyword, with the ones after it, it is the same call
            moved = {q.name: args[skip + i + j] for j, q in enumerate(positional[i:given])}
            assert _same_outcome(base, _outcome(fn, args[: skip + i], {**kwargs, **moved}), name), p.name
    for p in params:
        if p.kind is K.VAR_POSITIONAL or p in positional[:given] or p.name in valid()[1]:
            continue
        assert p.default is not p.empty, f"{name}: the valid call leaves out required parameter {p.name}"
        args, kwargs = valid()
        if p.kind is K.POSITIONAL_ONLY:
            _refuses(fn, args, {**kwargs, p.name: p.default}, KEYWORD_REFUSALS)
        else:  # accepted by keyword, and the declared default is the parser's
            got = _outcome(fn, args, {**kwargs, p.name: p.default})
            assert _same_outcome(base, got, name), f"{name}: {p.name}={p.default!r} is not what leaving it out does"

    if not varargs:
        # every positional parameter by position works, and one more argument is refused (also
        # where a keyword-only parameter would take it)
        args, kwargs = valid()
        full = tuple(args) + tuple(p.default for p in positional[given:])
        assert _same_outcome(base, _outcome(fn, full, kwargs), name)
        _refuses(fn, full + (None,), kwargs, COUNT_REFUSALS)
    required = [p for p in positional if p.default is p.empty]
    if required:  # leaving out the last required one is refused
        args, kwargs = valid()
        _refuses(fn, args[: skip + len(required) - 1], kwargs, COUNT_REFUSALS)


def test_keyword_only_parameters_are_keyword_only():
    # the * of the declarations: dtype and friends cannot be given by position
    for call in (lambda: gd.full((2,), 1.0, gd.float64), lambda: gd.arange(0, 4, 1, gd.float64),
                 lambda: A.__dlpack__(None), lambda: gd.zeros((2, 3), gd.float64)):
        with pytest.raises(TypeError):
            call()


def test_dimensions_and_a_shape_tuple_do_not_mix():
    assert gd.zeros(2, 3).shape == gd.zeros((2, 3)).shape == gd.zeros(shape=(2, 3)).shape == (2, 3)
    with pytest.raises(TypeError, match=r"^zeros\(shape, \*dims,"):
        gd.zeros((2, 3), 4)


def test_usage_messages_are_the_signatures():
    # the TypeError of a wrong call spells the declared signature, parameters and defaults included
    for fn, call in ((gd.zeros, lambda: gd.zeros()), (gd.norm, lambda: gd.norm()),
                     (gd.Array.sum, lambda: A.sum(0, False, 1)), (gd.arange, lambda: gd.arange())):
        text = fn.__text_signature__.replace("$module, ", "").replace("$self, ", "")
        with pytest.raises(TypeError) as info:
            call()
        assert str(info.value) == fn.__name__ + text
