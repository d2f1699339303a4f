"""Hostile arguments for every public function of gpudev and every method of its Array.

SIGNATURES and METHODS describe each callable's parameters by kind (a shape, a device, a
dtype, an axis, arrays, a number...) with a good value that makes the call valid. The sweep
replaces one argument at a time (the long profile also two at a time) with each hostile value
of that kind and each generic one: wrong types, ints beyond int64, NaN and infinities, NUL
bytes and very long strings, deeply nested lists, ``__index__``/``__float__``/``__bool__``
objects that raise or empty the list they sit in. Every call must return or raise an
exception of a documented kind (hostile.judge), leave its array arguments unchanged when it
raises, and finish (a watchdog turns a hang into a failure). A public callable missing from
the tables fails test_every_public_callable_is_swept, so new functions join the sweep.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import gpudev as gd
from gpudev._api import composites
from conftest import DEVICES

from .conftest import PROFILE, TALLY
from .hostile import (
    ALLOWED, Boom, BoolMutates, BoolRaises, FloatMutates, FloatRaises, IndexMutates, IndexRaises, ReprRaises,
    deep_list, hang_watchdog, judge,
)

# NumPy warns when a hostile float overflows its scalar types; the oracle judges the outcome
pytestmark = [pytest.mark.fuzz, pytest.mark.filterwarnings("ignore::RuntimeWarning")]

# ---------------------------------------------------------------------------------------------
# hostile values: generic ones for every parameter, and more for each kind of parameter
# ---------------------------------------------------------------------------------------------

# Each value is made fresh for every call (a factory): calls may change what they are given.
Factory = Callable[[], Any]


def _self_emptying_list(make_item: Callable[[list], Any], *rest: Any) -> Factory:
    def make() -> list:
        lst: list = [None, *rest]
        lst[0] = make_item(lst)
        return lst
    return make


GENERIC: dict[str, Factory] = {
    "None": lambda: None, "True": lambda: True, "False": lambda: False, "0": lambda: 0, "-1": lambda: -1,
    "1.5": lambda: 1.5, "nan": lambda: math.nan, "inf": lambda: math.inf, "-inf": lambda: -math.inf,
    "2**63": lambda: 2**63, "-2**63-1": lambda: -(2**63) - 1, "2**64": lambda: 2**64, "10**100": lambda: 10**100,
    "1e300": lambda: 1e300, "5e-324": lambda: 5e-324, "complex": lambda: 1 + 2j, "str": lambda: "x",
    "empty str": lambda: "", "long str": lambda: "x" * 100_000, "nul str": lambda: "cpu\x00junk",
    "bytes": lambda: b"cpu", "list": lambda: [], "tuple": lambda: (), "dict": lambda: {}, "set": lambda: {1},
    "object": object, "type": lambda: int, "Ellipsis": lambda: Ellipsis, "slice": lambda: slice(None),
    "index raises": IndexRaises, "float raises": FloatRaises, "bool raises": BoolRaises,
    "repr raises": ReprRaises, "index mutates": lambda: IndexMutates([], 1),
    "deep list": lambda: deep_list(5000), "np.uint64": lambda: np.uint64(2**63), "np.float16": lambda: np.float16(1),
    "np.bool_": lambda: np.bool_(True), "np.int8": lambda: np.int8(-3), "np array": lambda: np.arange(3),
    "np 0-d": lambda: np.array(2.5), "np object": lambda: np.array([None, 1], dtype=object),
    "gd 0-d": lambda: gd.array(1.5), "gd empty": lambda: gd.zeros((0, 3)), "gd int": lambda: gd.arange(3),
    "missing gpu": lambda: gd.Device("cuda:63"), "callable": lambda: (lambda *a, **k: None),
}


class RaisingProducer:
    """A DLPack producer whose methods raise the caller's own error."""

    def __dlpack_device__(self):
        raise Boom("__dlpack_device__")

    def __dlpack__(self, **kwargs):
        raise Boom("__dlpack__")


class LyingProducer:
    """A DLPack producer that says one thing and hands over another."""

    def __init__(self, device: Any, capsule: Callable[[], Any]) -> None:
        self.device, self.capsule = device, capsule

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        return self.capsule()


def _used_capsule() -> Any:
    capsule = np.arange(3.0).__dlpack__()
    np.from_dlpack(type("Once", (), {"__dlpack__": lambda s, **k: capsule,
                                     "__dlpack_device__": lambda s: (1, 0)})())
    return capsule


class ListMutatingIter(list):
    """A list of arrays whose iteration empties it halfway."""

    def __iter__(self):
        first = True
        for item in list.__iter__(self):
            yield item
            if first:
                self.clear()
                first = False


BY_KIND: dict[str, dict[str, Factory]] = {
    "shape": {
        "emptied by __index__": _self_emptying_list(lambda lst: IndexMutates(lst, 2), 3, 4),
        "huge": lambda: (2**62, 2**62), "too big": lambda: (2**40,), "negative": lambda: (2, -1),
        "beyond int64": lambda: (2**63,), "empty huge": lambda: (0, 2**62, 2**62), "65 dims": lambda: (1,) * 65,
        "floats": lambda: (2.0, 3.0), "strings": lambda: ("2",), "numpy ints": lambda: [np.int64(2), np.uint8(3)],
        "bools": lambda: (True, 2), "nested": lambda: ((2, 3),), "np array": lambda: np.array([2, 3]),
    },
    "dim": {"huge": lambda: 2**62, "too big": lambda: 2**40, "negative": lambda: -5, "float": lambda: 2.0},
    "device": {
        "cuda:99": lambda: "cuda:99", "cuda:63": lambda: "cuda:63", "cuda:-1": lambda: "cuda:-1", "CPU": lambda: "CPU",
        " cpu": lambda: " cpu", "cuda:1 nul": lambda: "cuda:1\x00", "long index": lambda: "cuda:" + "9" * 1000,
        "cuda": lambda: "cuda", "Device gpu": lambda: gd.gpu(5),
    },
    "dtype": {
        "nul": lambda: "float32\x00", "uint64": lambda: "uint64", "np.uint64": lambda: np.uint64,
        "complex": lambda: np.complex64, "structured": lambda: [("a", "f4")], "float16": lambda: "float16",
        "bool": lambda: np.bool_, "object": lambda: "object", "unicode": lambda: "U10", "np dtype": lambda: np.dtype("i2"),
    },
    "axis": {
        "2**32": lambda: 2**32, "-2**63": lambda: -(2**63), "dup": lambda: (0, 0), "huge in tuple": lambda: (0, 2**40),
        "list": lambda: [0], "mutating tuple": lambda: (IndexMutates([], 0),), "float": lambda: 1.0,
        "np int": lambda: np.int64(-1), "nested": lambda: ((0,),),
    },
    "array": {
        "np float": lambda: np.ones(3), "list": lambda: [1.0, 2.0], "int": lambda: 3, "float": lambda: 2.5,
        "gd float64": lambda: gd.ones((2, 3), dtype=gd.float64), "gd 0-d int": lambda: gd.array(7),
        "gd (3, 1)": lambda: gd.ones((3, 1)), "gd big": lambda: gd.ones(20_000), "gd view": lambda: gd.ones((4, 3))[1:3],
    },
    "arrays": {
        "empty": lambda: [], "one": lambda: [gd.ones(3)], "not arrays": lambda: [gd.ones(3), [1, 2]],
        "generator": lambda: (gd.ones(3) for _ in range(2)), "mixed dtypes": lambda: [gd.ones(3), gd.arange(3)],
        "mixed shapes": lambda: [gd.ones(3), gd.ones(4)], "0-d": lambda: [gd.array(1.0), gd.array(2.0)],
        "many": lambda: [gd.ones(1)] * 3000, "emptied while iterated": lambda: ListMutatingIter([gd.ones(2)] * 3),
        "numpy arrays": lambda: [np.ones(2), np.ones(2)], "set": lambda: {gd.ones(2)},
    },
    "number": {
        "float mutates": lambda: FloatMutates([], 2), "np.float32": lambda: np.float32(3.5),
        "np.int64": lambda: np.int64(-7), "big int": lambda: 2**62, "-0.0": lambda: -0.0,
    },
    "count": {"huge": lambda: 2**40},  # repeats, which max_duration bounds
    "warmup": {},  # warm-up calls run as many as asked (as in CuPy's benchmark): no huge counts
    "gpu index": {"64": lambda: 64, "np int": lambda: np.int64(1), "np bool": lambda: np.bool_(True)},
    "index": {
        "mutating": lambda: (IndexMutates([], 0),), "slice raises": lambda: slice(IndexRaises()),
        "slice huge": lambda: slice(2**63, None), "slice step 0": lambda: slice(None, None, 0),
        "two Ellipsis": lambda: (Ellipsis, Ellipsis), "many None": lambda: (None,) * 70, "65 zeros": lambda: (0,) * 65,
        "bool array": lambda: np.array([True]), "int list": lambda: [0, 1], "tuple of lists": lambda: ([0], [0]),
        "negative": lambda: -(2**63), "str": lambda: "a",
    },
    "flag": {"bool mutates": lambda: BoolMutates([]), "np.bool_": lambda: np.bool_(False), "str": lambda: "no"},
    "path": {"nul": lambda: "a\x00b", "too long": lambda: "a" * 5000, "a folder": lambda: "/", "missing": lambda: "/nonexistent/x.npy"},
    "callable": {"raises": lambda: _raise_boom, "not callable": lambda: 3},
    "producer": {
        "raises": RaisingProducer, "bad device tuple": lambda: LyingProducer("cpu", lambda: None),
        "unknown device": lambda: LyingProducer((99, 0), lambda: None),
        "missing gpu": lambda: LyingProducer((2, 40), lambda: None),
        "not a capsule": lambda: LyingProducer((1, 0), lambda: 42),
        "used capsule": lambda: LyingProducer((1, 0), _used_capsule),
        "device lies": lambda: LyingProducer((2, 0), lambda: np.arange(3.0).__dlpack__()),
        "uint64 data": lambda: np.arange(3, dtype=np.uint64), "strided": lambda: np.arange(6.0)[::2],
        "read-only": lambda: np.frombuffer(b"\0" * 16), "complex": lambda: np.ones(2, np.complex64),
    },
    "memo": {"list": lambda: [], "dict": lambda: {}},
    "format spec": {"not a str": lambda: 3, "bad spec": lambda: "zz", "float spec": lambda: ".3f"},
    "any": {},
}
# kinds whose parameter is a count of repetitions: ints past 2**40 are valid and never end
NO_GENERIC = {"count": {"2**63", "2**64", "10**100", "1e300", "inf", "index mutates"}}
NO_GENERIC["warmup"] = NO_GENERIC["count"]


def _raise_boom(*args, **kwargs):
    raise Boom("callable")


def hostile_values(kind: str) -> dict[str, Factory]:
    skip = NO_GENERIC.get(kind, set())
    values = {k: v for k, v in GENERIC.items() if k not in skip}
    values.update({f"{kind}: {k}": v for k, v in BY_KIND[kind].items()})
    return values


# ---------------------------------------------------------------------------------------------
# signatures: each public callable's parameters, by kind, with a good value
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class P:
    """One parameter: its name, kind and good value; how it may be passed."""

    name: str
    kind: str
    good: Factory
    how: str = "any"  # "any", "positional" (only), "keyword" (only), "varargs"


def arr(*shape: int, dtype=gd.float32) -> Factory:
    return lambda: gd.array(np.arange(math.prod(shape), dtype=np.float64).reshape(shape) + 1, dtype=dtype)


def tmp_path(name: str) -> Factory:
    return lambda: f"{_TMP.name}/{name}"


_TMP = tempfile.TemporaryDirectory(prefix="gpudev-fuzz-")
_SAVED = f"{_TMP.name}/saved.npy"
np.save(_SAVED, np.arange(4.0))

SHAPE = P("shape", "shape", lambda: (2, 3))
DTYPE = P("dtype", "dtype", lambda: None)
DEVICE = P("device", "device", lambda: None)
ONE = P("a", "array", arr(2, 3), "positional")
TWO = (P("a", "array", arr(2, 3), "positional"), P("b", "array", arr(3), "positional"))
REDUCE = (P("axis", "axis", lambda: 0), P("keepdims", "flag", lambda: False))

SIGNATURES: dict[str, tuple[P, ...]] = {
    # creation and conversion
    "zeros": (SHAPE, DTYPE, DEVICE), "ones": (SHAPE, DTYPE, DEVICE), "empty": (SHAPE, DTYPE, DEVICE),
    "full": (SHAPE, P("fill_value", "number", lambda: 1.5), DTYPE, DEVICE),
    "arange": (P("start", "number", lambda: 0), P("stop", "number", lambda: 5), P("step", "number", lambda: 1),
               DTYPE, DEVICE),
    "rand": (P("shape", "dim", lambda: 3, "varargs"), P("dtype", "dtype", lambda: None, "keyword"),
             P("device", "device", lambda: None, "keyword")),
    "array": (P("obj", "any", lambda: [[1, 2], [3, 4]]), DTYPE, DEVICE, P("copy", "flag", lambda: True)),
    "from_dlpack": (P("x", "producer", lambda: np.arange(3.0), "positional"), P("device", "device", lambda: None, "keyword"),
                    P("copy", "flag", lambda: None, "keyword")),
    # elementwise, reductions, products, joins
    "allclose": TWO + (P("rtol", "number", lambda: 1e-5), P("atol", "number", lambda: 1e-8)),
    "matmul": (P("a", "array", arr(2, 3), "positional"), P("b", "array", arr(3, 2), "positional")),
    "norm": (P("a", "array", arr(2, 3)),) + REDUCE,
    "any": (P("a", "array", arr(2, 3)),) + REDUCE, "isnan": (ONE,),
    "softmax": (P("x", "array", arr(2, 3)), P("axis", "axis", lambda: -1)),
    "zeros_like": (P("a", "array", arr(2, 3)), DTYPE, DEVICE),
    "full_like": (P("a", "array", arr(2, 3)), P("fill_value", "number", lambda: 1.5), DTYPE, DEVICE),
    "concatenate": (P("arrays", "arrays", lambda: [gd.ones((2, 3)), gd.zeros((2, 3))]), P("axis", "axis", lambda: 0)),
    # devices, threads, seeds, synchronization, memory
    "cpu": (), "gpu": (P("i", "gpu index", lambda: 0),), "try_all_gpus": (), "num_gpus": (), "cuda_available": (),
    "Device": (P("type", "device", lambda: "cuda"), P("index", "gpu index", lambda: 1)),
    "synchronize": (DEVICE,), "manual_seed": (P("seed", "any", lambda: 0, "positional"),),
    "set_num_threads": (P("n", "any", lambda: 1, "positional"),), "get_num_threads": (),
    "memory_stats": (DEVICE,), "empty_cache": (DEVICE,), "build_info": (), "set_tf32": (P("enabled", "flag", lambda: False),),
    # files, timing, tracing
    "save": (P("obj", "any", arr(2, 2)), P("path", "path", tmp_path("out.npy"))),
    "load": (P("path", "path", lambda: _SAVED), DEVICE, P("map_location", "device", lambda: None)),
    "benchmark": (P("fn", "callable", lambda: (lambda: None), "positional"), P("n_warmup", "warmup", lambda: 1, "keyword"),
                  P("n_repeat", "count", lambda: 2, "keyword"), P("max_duration", "number", lambda: 0.01, "keyword"),
                  P("devices", "device", lambda: None, "keyword")),
    "Timer": (P("sync", "flag", lambda: True, "keyword"), P("devices", "device", lambda: None, "keyword")),
    "map_location": (P("device", "device", lambda: "cpu", "positional"),),
    "device_label": (P("device", "device", lambda: "cuda:0", "positional"), P("emulated", "any", lambda: None)),
    "strict": (P("mode", "any", lambda: "sync"), P("action", "any", lambda: "warn"),
               P("explicit", "flag", lambda: True, "keyword"), P("allow", "any", lambda: (), "keyword")),
    "trace": (), "Trace": (), "is_grad_enabled": (), "no_grad": (), "enable_grad": (),
    "set_grad_enabled": (P("mode", "flag", lambda: True),), "Array": (P("x", "any", lambda: [1.0], "positional"),),
    "BenchmarkResult": tuple(P(n, "any", lambda: 1) for n in (
        "name", "n", "n_warmup", "median", "mean", "std", "min", "max", "clock", "times", "cpu_times", "gpu_times")),
    "latency_table": (P("device", "device", lambda: "cpu"), P("quick", "flag", lambda: True, "keyword"),
                      P("repeats", "count", lambda: 1, "keyword")),
    "compile": (P("model", "callable", lambda: (lambda: None)),),
    # NumPy's own scalar types, exported as gd.float32 and friends
    "float32": (P("x", "any", lambda: 1.5, "positional"),),
}
for _same, _as in [("stack", "concatenate"), ("randn", "rand"), ("try_gpu", "gpu"), ("asarray", "array"),
                   ("float64", "float32"), ("int64", "float32"), ("int32", "float32"), ("bool", "float32"),
                   ("bool_", "float32"),
                   ("all", "any"), ("isfinite", "isnan"), ("ones_like", "zeros_like"), ("empty_like", "zeros_like"),
                   ("tensor", "array"), ("log_softmax", "softmax")]:
    SIGNATURES[_same] = SIGNATURES[_as]
# selection
SIGNATURES["where"] = (P("condition", "array", arr(2, 3)), P("x", "array", arr(2, 3)), P("y", "array", arr(3)))
SIGNATURES["argmax"] = SIGNATURES["argmin"] = (P("a", "array", arr(2, 3)),) + REDUCE
for _exc in ("GpudevError", "CudaError", "DeviceMismatchError", "DeviceUnavailableError", "OutOfMemoryError",
             "StrictModeError", "StrictModeWarning"):
    SIGNATURES[_exc] = (P("message", "any", lambda: "message", "positional"),)

OTHER = (P("other", "array", arr(2, 3), "positional"),)
METHODS: dict[str, tuple[P, ...]] = {
    "to": (P("device", "device", lambda: "cpu"), P("copy", "flag", lambda: False),
           P("non_blocking", "flag", lambda: False)), "cpu": (),
    "cuda": (P("i", "gpu index", lambda: 0),), "numpy": (), "item": (), "tolist": (), "copy": (), "__copy__": (),
    "__deepcopy__": (P("memo", "memo", lambda: {}, "positional"),),
    "__format__": (P("format_spec", "format spec", lambda: "", "positional"),),
    "__reduce_ex__": (P("protocol", "count", lambda: 5, "positional"),),
    "__array__": (P("dtype", "dtype", lambda: None), P("copy", "flag", lambda: None)),
    "astype": (P("dtype", "dtype", lambda: gd.float64), P("copy", "flag", lambda: True)),
    "reshape": (P("shape", "dim", lambda: -1, "varargs"),),
    "transpose": (P("axes", "axis", lambda: None, "varargs"),),
    "mean": REDUCE,
    "__dlpack__": (P("stream", "any", lambda: None, "keyword"), P("max_version", "any", lambda: (1, 0), "keyword"),
                   P("dl_device", "any", lambda: None, "keyword"), P("copy", "flag", lambda: None, "keyword")),
    "__dlpack_device__": (), "detach": (), "requires_grad_": (P("requires_grad", "flag", lambda: True),),
    "backward": (P("gradient", "array", lambda: None), P("retain_graph", "flag", lambda: False)),
    "__getitem__": (P("key", "index", lambda: 0, "positional"),),
    "__setitem__": (P("key", "index", lambda: 0, "positional"), P("value", "array", lambda: 2.0, "positional")),
    "__delitem__": (P("key", "index", lambda: 0, "positional"),),
    "__pow__": (P("other", "array", lambda: 2, "positional"), P("mod", "any", lambda: None, "positional")),
    "__new__": (P("cls", "any", lambda: gd.Array, "positional"),),
}
for _name in ("add", "sub", "mul", "truediv", "matmul", "and", "or", "xor"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        if _form.format(_name) != "__imatmul__":
            METHODS[_form.format(_name)] = OTHER
for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    METHODS[_name] = OTHER
METHODS["any"] = METHODS["all"] = REDUCE
# the methods of the reduction list (csrc/tables.h), from its rows
for _red in gd._C._reductions:
    if _red.method:
        METHODS[_red.name] = REDUCE
METHODS["permute"] = METHODS["transpose"]
METHODS["swapaxes"] = (P("axis1", "axis", lambda: 0, "positional"), P("axis2", "axis", lambda: -1, "positional"))
METHODS["__array_function__"] = (P("func", "any", lambda: np.sum, "positional"), P("types", "any", lambda: (gd.Array,), "positional"),
                                 P("args", "any", lambda: (), "positional"), P("kwargs", "any", lambda: {}, "positional"))
METHODS["__rpow__"] = METHODS["__pow__"]
METHODS["__ipow__"] = OTHER
METHODS["argmax"] = METHODS["argmin"] = REDUCE  # selection
for _name in ("__len__", "__bool__", "__float__", "__int__", "__index__", "__neg__", "__pos__", "__abs__",
              "__repr__", "__str__", "__invert__", "__hash__", "contiguous", "is_contiguous", "ravel",
              "is_pinned", "pin_memory"):
    METHODS[_name] = ()
# sigmoid, floor division and remainder, powers, clip
SIGNATURES.update({
    "clip": (ONE, P("min", "array", lambda: 0.5), P("max", "array", arr(3)), P("a_min", "array", lambda: None, "keyword"),
             P("a_max", "array", lambda: None, "keyword")),
    "clamp": (ONE, P("min", "array", lambda: 0.5), P("max", "array", lambda: None)),
})
for _name in ("floordiv", "mod", "divmod"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        if _form.format(_name) != "__idivmod__":
            METHODS[_form.format(_name)] = OTHER
METHODS.update({
    "clip": (P("min", "array", lambda: 0.5), P("max", "array", lambda: 2.0)),
    "clamp": (P("min", "array", lambda: 0.5), P("max", "array", lambda: None)),
})

# the elementwise functions and methods: one per row of the op lists (csrc/tables.h); integer
# rows take integer arrays
INT_ONE = P("a", "array", arr(2, 3, dtype=gd.int64), "positional")
INT_TWO = (INT_ONE, P("b", "array", arr(3, dtype=gd.int64), "positional"))
for _op in gd._C._ops:
    _ints = _op.types in ("BITWISE", "INT")
    for _name in (_op.name, *_op.aliases) if _op.function else ():
        SIGNATURES[_name] = ((INT_ONE,) if _ints else (ONE,)) if _op.arity == 1 else (INT_TWO if _ints else TWO)
    if _op.method:
        METHODS[_op.name] = () if _op.arity == 1 else OTHER
# the elementwise composites, from their declarations (gpudev/_api)
for _decl in composites():
    _ints = _decl.types in ("BITWISE", "INT")
    SIGNATURES[_decl.name] = ((INT_ONE,) if _ints else (ONE,)) if _decl.arity == 1 else (INT_TWO if _ints else TWO)

# PyTorch's names: functions, and Array methods (in place, dtypes, shapes)
SIGNATURES.update({
    "normal": (P("mean", "number", lambda: 0.0), P("std", "number", lambda: 1.0), P("size", "shape", lambda: (2, 3)),
               P("dtype", "dtype", lambda: None, "keyword"), P("device", "device", lambda: None, "keyword"),
               P("requires_grad", "flag", lambda: False, "keyword")),
    "randint": (P("low", "number", lambda: 0), P("high", "number", lambda: 5), P("size", "shape", lambda: (2, 3)),
                P("dtype", "dtype", lambda: None, "keyword"), P("device", "device", lambda: None, "keyword")),
    "from_numpy": (P("a", "producer", lambda: np.arange(3.0), "positional"),),
    "cat": (P("tensors", "arrays", lambda: [gd.ones((2, 3)), gd.zeros((2, 3))]), P("dim", "axis", lambda: 0)),
    "bmm": (P("a", "array", arr(2, 3, 4)), P("b", "array", arr(2, 4, 5))),
    "mm": (P("input", "array", arr(3, 4)), P("mat2", "array", arr(4, 5))),
    "max": (P("a", "array", arr(2, 3)), P("other", "array", lambda: None), P("axis", "axis", lambda: None, "keyword"),
            P("keepdims", "flag", lambda: False, "keyword")),
})
SIGNATURES["min"] = SIGNATURES["max"]
SIGNATURES["device"] = SIGNATURES["Device"]
NUMBER = (P("value", "number", lambda: 2.0, "positional"),)
METHODS.update({
    "zero_": (), "fill_": NUMBER, "add_": (P("other", "array", lambda: 1.0), P("alpha", "number", lambda: 1)),
    "mul_": (P("other", "array", lambda: 2.0),), "div_": (P("other", "array", lambda: 2.0),),
    "normal_": (P("mean", "number", lambda: 0.0), P("std", "number", lambda: 1.0)),
    "uniform_": (P("a", "number", lambda: 0.0), P("b", "number", lambda: 1.0)),
    "clamp_": (P("min", "array", lambda: 0.5), P("max", "array", lambda: None)),
    "copy_": (P("src", "array", arr(2, 3)),), "float": (), "double": (), "long": (), "bool": (), "int": (),
    "type": (P("dtype", "dtype", lambda: None),), "t": (), "numel": (), "dim": (), "clone": (), "abs": (),
    "pow": (P("exponent", "array", lambda: 2.0),), "mm": (P("mat2", "array", arr(3, 2)),),
    "squeeze": (P("dim", "axis", lambda: None),), "unsqueeze": (P("dim", "axis", lambda: 0),),
    "view": (P("shape", "dim", lambda: -1, "varargs"),), "expand": (P("sizes", "dim", lambda: -1, "varargs"),),
    "repeat": (P("sizes", "dim", lambda: 1, "varargs"),),
    "flatten": (P("start_dim", "axis", lambda: 0), P("end_dim", "axis", lambda: -1)),
    "var": (P("axis", "axis", lambda: None), P("correction", "number", lambda: None, "keyword"),
            P("keepdims", "flag", lambda: False, "keyword")),
})
METHODS["sub_"] = METHODS["add_"]
METHODS["std"] = METHODS["var"]

# the array API standard's names (the family modules of gpudev/_api: creation, shape,
# reduce, sort, index, elementwise, devices, linalg)
X = P("x", "array", arr(2, 3), "positional")
X1X2 = (P("x1", "array", arr(2, 3), "positional"), P("x2", "array", arr(3), "positional"))
INTS = P("x", "array", lambda: gd.arange(6).reshape(2, 3), "positional")
AXIS_KW = P("axis", "axis", lambda: None, "keyword")
KEEPDIMS_KW = P("keepdims", "flag", lambda: False, "keyword")
DTYPE_KW, DEVICE_KW = P("dtype", "dtype", lambda: None, "keyword"), P("device", "device", lambda: None, "keyword")
SORT = (X, P("axis", "axis", lambda: -1, "keyword"), P("descending", "flag", lambda: False, "keyword"),
        P("stable", "flag", lambda: True, "keyword"))
SCAN = (X, P("axis", "axis", lambda: 1, "keyword"), DTYPE_KW, P("include_initial", "flag", lambda: False, "keyword"))
for _name in ("add", "subtract", "multiply", "divide", "equal", "not_equal", "less", "less_equal", "greater",
              "greater_equal", "logical_and", "logical_or", "logical_xor"):
    SIGNATURES[_name] = X1X2
for _name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"):
    SIGNATURES[_name] = (P("x1", "array", lambda: gd.arange(6).reshape(2, 3), "positional"),
                         P("x2", "array", lambda: gd.arange(3), "positional"))
for _name in ("negative", "positive", "logical_not", "isinf", "conj", "real", "imag", "matrix_transpose", "unique_values",
              "unique_counts", "unique_inverse", "unique_all"):
    SIGNATURES[_name] = (X,)
SIGNATURES["bitwise_invert"] = (INTS,)
SIGNATURES.update({
    "astype": (X, P("dtype", "dtype", lambda: gd.float64, "positional"), P("copy", "flag", lambda: True, "keyword"),
               DEVICE_KW),
    "finfo": (P("type", "dtype", lambda: gd.float32, "positional"),),
    "iinfo": (P("type", "dtype", lambda: gd.int64, "positional"),),
    "isdtype": (P("dtype", "dtype", lambda: gd.float32), P("kind", "any", lambda: "real floating")),
    "result_type": (P("arrays_and_dtypes", "dtype", lambda: gd.float32, "varargs"),),
    "can_cast": (P("from_", "dtype", lambda: gd.int64, "positional"), P("to", "dtype", lambda: gd.float64, "positional")),
    "eye": (P("n_rows", "dim", lambda: 3, "positional"), P("n_cols", "dim", lambda: None, "positional"),
            P("k", "number", lambda: 0, "keyword"), DTYPE_KW, DEVICE_KW),
    "linspace": (P("start", "number", lambda: 0.0, "positional"), P("stop", "number", lambda: 1.0, "positional"),
                 P("num", "dim", lambda: 5), DTYPE_KW, DEVICE_KW, P("endpoint", "flag", lambda: True, "keyword")),
    "meshgrid": (P("arrays", "array", arr(3), "varargs"), P("indexing", "any", lambda: "xy", "keyword")),
    "tril": (X, P("k", "number", lambda: 0, "keyword")),
    "reshape": (X, P("shape", "shape", lambda: (3, 2)), P("copy", "flag", lambda: None, "keyword")),
    "permute_dims": (X, P("axes", "axis", lambda: (1, 0))),
    "concat": (P("arrays", "arrays", lambda: [gd.ones((2, 3)), gd.zeros((2, 3))], "positional"),
               P("axis", "axis", lambda: 0, "keyword")),
    "broadcast_to": (X, P("shape", "shape", lambda: (4, 2, 3))),
    "broadcast_arrays": (P("arrays", "array", arr(2, 3), "varargs"),),
    "expand_dims": (X, P("axis", "axis", lambda: 0)),
    "squeeze": (P("x", "array", arr(2, 1), "positional"), P("axis", "axis", lambda: 1)),
    "flip": (X, AXIS_KW),
    "moveaxis": (X, P("source", "axis", lambda: 0, "positional"), P("destination", "axis", lambda: -1, "positional")),
    "roll": (X, P("shift", "dim", lambda: 1), AXIS_KW),
    "tile": (X, P("repetitions", "shape", lambda: (2, 1), "positional")),
    "repeat": (X, P("repeats", "array", lambda: 2, "positional"), AXIS_KW),
    "unstack": (X, P("axis", "axis", lambda: 0, "keyword")),
    "mean": (X, AXIS_KW, KEEPDIMS_KW),
    "var": (X, AXIS_KW, P("correction", "number", lambda: 0.0, "keyword"), KEEPDIMS_KW),
    "count_nonzero": (X, AXIS_KW, KEEPDIMS_KW),
    "cumulative_sum": SCAN,
    "diff": (X, P("axis", "axis", lambda: -1, "keyword"), P("n", "dim", lambda: 1, "keyword"),
             P("prepend", "array", lambda: None, "keyword"), P("append", "array", lambda: None, "keyword")),
    "take": (X, P("indices", "array", lambda: gd.asarray([0, 2, 1]), "positional"), P("axis", "axis", lambda: 1, "keyword")),
    "take_along_axis": (X, P("indices", "array", lambda: gd.asarray([[0], [1]]), "positional"),
                        P("axis", "axis", lambda: -1, "keyword")),
    "searchsorted": (P("x1", "array", arr(5), "positional"), P("x2", "array", arr(2, 2), "positional"),
                     P("side", "any", lambda: "left", "keyword"), P("sorter", "array", lambda: None, "keyword")),
    "argsort": SORT, "sort": SORT,
    "vecdot": X1X2 + (P("axis", "axis", lambda: -1, "keyword"),),
    "tensordot": (P("x1", "array", arr(2, 3), "positional"), P("x2", "array", arr(3, 2), "positional"),
                  P("axes", "axis", lambda: 1, "keyword")),
})
SIGNATURES["triu"] = SIGNATURES["tril"]
# the module functions of the reduction list (csrc/tables.h), from its rows; gd.max and gd.min
# (PyTorch's and NumPy's forms) are above
for _red in gd._C._reductions:
    if _red.method and _red.name not in SIGNATURES:
        SIGNATURES[_red.name] = (X, AXIS_KW, DTYPE_KW, KEEPDIMS_KW) if _red.dtype else (X, AXIS_KW, KEEPDIMS_KW)
SIGNATURES["std"] = SIGNATURES["var"]
SIGNATURES["cumulative_prod"] = SIGNATURES["cumulative_sum"]
METHODS.update({
    "__array_namespace__": (P("api_version", "any", lambda: None, "keyword"),),
    "to_device": (P("device", "device", lambda: "cpu", "positional"), P("stream", "any", lambda: None, "keyword")),
    "__complex__": (),
})
for _name in ("lshift", "rshift"):
    for _form in ("__{}__", "__r{}__", "__i{}__"):
        METHODS[_form.format(_name)] = (P("other", "array", lambda: gd.arange(3), "positional"),)

# indexing that copies: gd.nonzero, Array.nonzero, and masks and index arrays as keys
SIGNATURES["nonzero"] = (ONE,)
METHODS["nonzero"] = ()
BY_KIND["index"].update({
    "bool list": lambda: [True, False], "out of range": lambda: [0, 2**40], "below range": lambda: np.array([-(2**62)]),
    "2-D ints": lambda: np.array([[0], [-1]]), "gd mask": lambda: gd.array([True, False]), "float list": lambda: [0.5],
    "ragged": lambda: [[0], [1, 2]], "int and list": lambda: (0, [0]), "mask and slice": lambda: ([True], slice(1)),
    "0-d mask": lambda: gd.array(True), "empty list": lambda: [], "uint64 array": lambda: np.array([1], np.uint64),
})

# The arrays each method is called on: one per dtype, 0-d, empty, a view.
RECEIVERS: dict[str, Factory] = {
    "float32 (2, 3)": arr(2, 3), "int64 (4,)": arr(4, dtype=gd.int64), "float64 0-d": lambda: gd.array(2.0, dtype=gd.float64),
    "float32 (0, 3)": lambda: gd.zeros((0, 3)), "float32 view": lambda: arr(3, 3)()[1:],
}

# Beyond the documented kinds: files raise OSError, attribute reads AttributeError.
# backward() of an array outside any graph raises RuntimeError, as in PyTorch.
EXTRA_ALLOWED: dict[str, tuple[type[BaseException], ...]] = {
    "save": (OSError,), "load": (OSError,), "backward": (RuntimeError,),
    "compile": (NotImplementedError,),  # gpudev runs eagerly: compile always says so
}
# Messages that may quote an argument in full: Python's OSError quotes the path; gd.float32
# and friends are NumPy's own scalar types, with NumPy's messages.
VERBATIM: dict[str, tuple[type[BaseException], ...]] = {
    "save": (OSError,), "load": (OSError,), "float32": (ValueError,), "float64": (ValueError,), "int64": (ValueError,),
}

# ---------------------------------------------------------------------------------------------
# the sweep
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Case:
    target: str
    params: tuple[P, ...]
    hostile: dict[int, tuple[str, Factory]]  # parameter position -> (label, value)
    by_keyword: bool


def public_functions() -> dict[str, Any]:
    return {n: getattr(gd, n) for n in dir(gd) if not n.startswith("_") and callable(getattr(gd, n))}


def array_methods() -> set[str]:
    # the public and dunder members; a private C method (_to) is swept through the one calling it
    return {n for n, v in vars(gd.Array).items() if callable(getattr(gd.Array, n, None)) and n != "__array_ufunc__"
            and not (n.startswith("_") and not n.endswith("__"))}


def cases(table: dict[str, tuple[P, ...]], pairs: int, rng: random.Random) -> list[Case]:
    """Every (parameter, hostile value) of every callable in `table`, passed by position and
    (where allowed) by keyword; then `pairs` random cases with two hostile arguments."""
    out = []
    for target, params in table.items():
        for i, p in enumerate(params):
            for label, make in hostile_values(p.kind).items():
                out.append(Case(target, params, {i: (label, make)}, False))
                if p.how == "any":
                    out.append(Case(target, params, {i: (label, make)}, True))
    multi = [(t, ps) for t, ps in table.items() if len(ps) >= 2]
    for _ in range(pairs):
        target, params = rng.choice(multi)
        i, j = rng.sample(range(len(params)), 2)
        vi, vj = (rng.choice(list(hostile_values(params[k].kind).items())) for k in (i, j))
        out.append(Case(target, params, {i: vi, j: vj}, rng.random() < 0.5))
    return out


def build_call(case: Case, fn: Callable[..., Any]) -> tuple[Callable[[], Any], list]:
    """The call of `case` on `fn`, and the gpudev arrays it was given (to check afterwards)."""
    args, kwargs, arrays = [], {}, []
    for i, p in enumerate(case.params):
        value = case.hostile[i][1]() if i in case.hostile else p.good()
        if isinstance(value, gd.Array):
            arrays.append(value)
        if p.how == "varargs":
            args.append(value)
        elif p.how == "keyword" or (case.by_keyword and p.how == "any" and i in case.hostile):
            kwargs[p.name] = value
        elif kwargs and p.how != "positional":  # after a keyword, the rest by keyword too
            kwargs[p.name] = value
        else:
            args.append(value)
    return (lambda: fn(*args, **kwargs)), arrays


def snapshot(arrays: list) -> list:
    return [(a, np.array(a.cpu().numpy(), copy=True)) for a in arrays]


def unchanged(saved: list) -> bool:
    return all(np.array_equal(a.cpu().numpy(), before, equal_nan=True) for a, before in saved)


def run_cases(selected: list[Case], resolve: Callable[[Case], Callable[..., Any]]) -> tuple[int, list[str]]:
    """Run the cases; return how many ran and the contract breaks."""
    threads = gd.get_num_threads()
    failures = []
    with hang_watchdog():
        for case in selected:
            call, arrays = build_call(case, resolve(case))
            saved = snapshot(arrays)
            allowed = (*EXTRA_ALLOWED.get(case.target, ()), *ALLOWED)
            verdict = judge(call, allowed, VERBATIM.get(case.target, ()))
            labels = ", ".join(f"{case.params[i].name}={label}" for i, (label, _) in case.hostile.items())
            where = f"{case.target}({labels}{', by keyword' if case.by_keyword else ''})"
            if not verdict.ok:
                failures.append(f"{where}: {verdict.why}")
            elif verdict.outcome != "returned" and not unchanged(saved):
                failures.append(f"{where}: raised {verdict.outcome} but changed an array it was given")
            gd.set_num_threads(threads)
    return len(selected), failures


def select(all_cases: list[Case], rng: random.Random) -> list[Case]:
    """The long profile runs every case; the short one a random sample with every callable in it."""
    if len(all_cases) <= PROFILE.calls:
        return all_cases
    by_target: dict[str, list[Case]] = {}
    for c in all_cases:
        by_target.setdefault(c.target, []).append(c)
    chosen = [rng.choice(cs) for cs in by_target.values()]
    return chosen + rng.sample(all_cases, PROFILE.calls - len(chosen))


@pytest.fixture(autouse=True)
def _in_scratch_folder(tmp_path, monkeypatch):
    # hostile paths are relative ("x", ""): files a call writes land in a folder of its own
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _tf32_as_it_was():
    # a hostile but truthy flag to set_tf32 turns TF32 on: later tests expect float32 products
    from gpudev._info import _cuda_module

    cuda = _cuda_module()
    before = cuda.get_tf32() if cuda else None
    yield
    if cuda is not None:
        cuda.set_tf32(before)


def test_every_public_callable_is_swept():
    missing = sorted(set(public_functions()) - set(SIGNATURES))
    assert not missing, f"add these public callables to SIGNATURES (with their parameters' kinds): {missing}"
    methods = sorted(array_methods() - set(METHODS))
    assert not methods, f"add these Array methods to METHODS (with their parameters' kinds): {methods}"
    assert not set(SIGNATURES) - set(public_functions()), "SIGNATURES names callables gpudev no longer has"


def test_hostile_arguments_to_every_function():
    rng = random.Random(f"functions-{PROFILE.name}-{PROFILE.seed}")
    functions = public_functions()
    selected = select(cases(SIGNATURES, 4000 if PROFILE.name == "long" else 0, rng), rng)
    count, failures = run_cases(selected, lambda case: functions[case.target])
    TALLY.calls["function calls"] = count
    assert not failures, f"{len(failures)} of {count} hostile calls broke the contract:\n" + "\n".join(failures[:40])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("receiver", RECEIVERS)
def test_hostile_arguments_to_every_method(receiver, device):
    rng = random.Random(f"methods-{receiver}-{PROFILE.name}-{PROFILE.seed}")
    make = RECEIVERS[receiver]

    def resolve(case: Case) -> Callable[..., Any]:
        if case.target == "__new__":
            return gd.Array.__new__
        return getattr(make().to(device), case.target)

    all_cases = cases(METHODS, 2000 if PROFILE.name == "long" else 0, rng)
    if PROFILE.name == "long":
        selected = select(all_cases, rng)
    else:
        selected = rng.sample(all_cases, min(len(all_cases), PROFILE.calls // 3))
    count, failures = run_cases(selected, resolve)
    TALLY.calls[f"method calls on {receiver}"] = count
    assert not failures, f"{len(failures)} of {count} hostile calls broke the contract:\n" + "\n".join(failures[:40])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("receiver", RECEIVERS)
def test_every_attribute_reads(receiver, device):
    a = RECEIVERS[receiver]().to(device)
    for name, value in vars(gd.Array).items():
        if not callable(getattr(gd.Array, name, None)):
            allowed = (AttributeError,) if name == "__cuda_array_interface__" else ()
            verdict = judge(lambda: getattr(a, name), (*allowed, *ALLOWED))
            assert verdict.ok, f"{receiver}.{name}: {verdict.why}"


def test_two_hostile_arguments_at_once_never_crash():
    # every pair of kinds of one call, a sample of values each: the orders in which a function
    # checks its arguments differ, and each order must still end in a clear error
    rng = random.Random(f"pairs-{PROFILE.name}-{PROFILE.seed}")
    functions = public_functions()
    pairs = []
    for target, params in SIGNATURES.items():
        for i, j in itertools.combinations(range(len(params)), 2):
            vi, vj = (rng.choice(list(hostile_values(params[k].kind).items())) for k in (i, j))
            pairs.append(Case(target, params, {i: vi, j: vj}, False))
    count, failures = run_cases(pairs, lambda case: functions[case.target])
    TALLY.calls["pair calls"] = count
    assert not failures, "\n".join(failures[:40])
