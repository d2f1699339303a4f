"""Write gpudev/_C.pyi, the type stubs of the core, from the signatures the core declares.

The parameters (names, kinds, defaults) of every function, method and slot come from the
built extension through inspect.signature, that is from the one text signature each function
declares in csrc/core (args.h, "Signatures, declared once"); this file only adds types, by
parameter name (TYPES, with per-function exceptions in TYPES_OF) and by function (RETURNS).

The stub is a build product, never committed: setup.py's build_ext runs this after building
the extensions and writes the stub next to the built gpudev._C (in place for `make build`, so
editors read it from a source checkout; into the build folder for a wheel, which then carries
it). A new function thus gets its stub from the build; tests/test_stubs.py fails while the
stub beside the imported extension differs from what this writes, and runs mypy's stubtest.

    python tools/make_stubs.py                 # write the stub next to the imported gpudev._C
    python tools/make_stubs.py --check         # exit 1 if that stub is out of date
    python tools/make_stubs.py --ext-dir DIR   # gpudev's Python files from this source tree,
                                               # its extension modules from DIR (setup.py)
"""

from __future__ import annotations

import inspect
import re
import sys
import types
from pathlib import Path

SOURCE_PACKAGE = Path(__file__).resolve().parent.parent / "gpudev"


def _package_with_extensions_from(ext_dir: Path) -> None:
    """Import gpudev from this source tree with its extension modules found in ext_dir first:
    a build folder holds the freshly built gpudev._C (and _build_info.py) but, for
    `setup.py build_ext` alone, none of the package's Python files."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gpudev", SOURCE_PACKAGE / "__init__.py", submodule_search_locations=[str(ext_dir), str(SOURCE_PACKAGE)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpudev"] = module
    spec.loader.exec_module(module)


# the extension has to be imported before the tables below, which read its op list
if __name__ == "__main__" and "--ext-dir" in sys.argv:
    _package_with_extensions_from(Path(sys.argv[sys.argv.index("--ext-dir") + 1]).resolve())

import gpudev._C as C  # noqa: E402

# where the stub belongs: beside the extension it describes (PEP 561 finds it there)
STUB = Path(C.__file__).with_name("_C.pyi")

HEADER = '''"""Type stubs of gpudev._C, written by tools/make_stubs.py when the extension is built, from
the signatures declared in csrc/core; not kept in git, and rewritten by every build."""

import builtins
import typing
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
from typing import final

_Scalar = builtins.bool | int | float
_Operand = Array | _Scalar
_DeviceLike = Device | str
_DTypeLike = np.dtype[np.generic] | type | str
_Shape = int | Sequence[int]
_Axis = int | Sequence[int]
'''

# parameter name -> type; `| None` is added where the default is None
TYPES = {
    "a": "Array", "b": "_Operand", "x": "_Operand", "y": "_Operand", "condition": "_Operand",
    "obj": "object", "shape": "_Shape", "dims": "_Shape", "axes": "_Shape", "fill_value": "_Scalar",
    "start": "_Scalar", "stop": "_Scalar", "step": "_Scalar", "dtype": "_DTypeLike", "device": "_DeviceLike",
    "requires_grad": "builtins.bool", "pin_memory": "builtins.bool", "non_blocking": "builtins.bool",
    "copy": "builtins.bool", "keepdims": "builtins.bool", "axis": "_Axis",
    "arrays": "Sequence[Array]", "i": "int", "seed": "int", "n": "int", "gradient": "Array",
    "retain_graph": "builtins.bool", "rtol": "float", "atol": "float", "memo": "dict[int, object]",
    "stream": "int", "max_version": "tuple[int, int]", "dl_device": "tuple[int, int]", "type": "_DeviceLike",
    "index": "int", "axis1": "int", "axis2": "int", "value": "_Operand", "mod": "None", "key": "object",
    "min": "_Operand", "max": "_Operand", "ufunc": "np.ufunc", "method": "str", "inputs": "object",
    "kwargs": "object", "func": "Callable[..., object]", "types": "tuple[type, ...]", "args": "tuple[object, ...]",
    "other": "_Operand", "alpha": "_Scalar", "mean": "float", "std": "float", "src": "_Operand", "dim": "int",
    "sizes": "int", "size": "_Shape", "start_dim": "int | str", "end_dim": "int", "correction": "float", "unbiased": "builtins.bool", "exponent": "_Operand",
    "api_version": "str", "format_spec": "str", "protocol": "typing.SupportsIndex", "input": "Array", "mat2": "Array",
}
# (callable, parameter) -> type, where a name means something else there
TYPES_OF = {
    # a binary operation needs one array among its operands
    ("allclose", "a"): "_Operand",
    **{(f, "a"): "_Operand" for op in C._ops if op.arity == 2 for f in (op.name, *op.aliases)},
    ("matmul", "b"): "Array",
    ("from_dlpack", "x"): "object", ("stack", "axis"): "int", ("concatenate", "axis"): "int",
    ("argmax", "axis"): "int", ("argmin", "axis"): "int", ("Array.argmax", "axis"): "int",
    ("Array.argmin", "axis"): "int", ("Array.to", "device"): "_DeviceLike", ("Array.__setitem__", "value"): "_Operand",
    ("Array.__array_function__", "kwargs"): "dict[str, object]", ("Array.permute", "dims"): "int",
    ("Array.__eq__", "value"): "object", ("Array.__ne__", "value"): "object",
    ("Device.__eq__", "value"): "object", ("Device.__ne__", "value"): "object",
    ("Device.__lt__", "value"): "Device", ("Device.__le__", "value"): "Device",
    ("Device.__gt__", "value"): "Device", ("Device.__ge__", "value"): "Device",
    ("Array.uniform_", "a"): "float", ("Array.uniform_", "b"): "float", ("Array.to", "args"): "object",
    ("Array.fill_", "value"): "_Scalar", ("Array.squeeze", "dim"): "int | Sequence[int]",
    ("Array.view", "shape"): "int | Sequence[int]",
}
RETURNS = {
    "allclose": "builtins.bool", "nonzero": "tuple[Array, ...]", "cpu": "Device", "gpu": "Device",
    "try_gpu": "Device", "try_all_gpus": "list[Device]", "num_gpus": "int", "cuda_available": "builtins.bool",
    "synchronize": "None", "manual_seed": "None", "get_num_threads": "int", "set_num_threads": "None",
    "Array.item": "builtins.bool | int | float", "Array.tolist": "object",
    "Array.numpy": "npt.NDArray[np.generic]", "Array.__array__": "npt.NDArray[np.generic]",
    "Array.is_contiguous": "builtins.bool", "Array.__dlpack__": "object", "Array.__dlpack_device__": "tuple[int, int]",
    "Array.backward": "None", "Array.nonzero": "tuple[Array, ...]", "Array.__array_function__": "object",
    "Array.__array_ufunc__": "object", "Array.__setitem__": "None", "Array.__delitem__": "None",
    "Array.__bool__": "builtins.bool", "Array.__len__": "int", "Array.__float__": "float", "Array.__int__": "int",
    "Array.__index__": "int", "Array.__repr__": "str", "Array.__str__": "str", "Array.__hash__": "int",
    "Array.__format__": "str", "Array.__reduce_ex__": "str | tuple[typing.Any, ...]",
    "Array.__divmod__": "tuple[Array, Array]", "Array.__rdivmod__": "tuple[Array, Array]",
    "Device.info": "dict[str, object]", "Device.__reduce__": "tuple[type[Device], tuple[str]]",
    "Device.__repr__": "str", "Device.__str__": "str", "Device.__hash__": "int",
    "Device.__eq__": "builtins.bool", "Device.__ne__": "builtins.bool", "Device.__lt__": "builtins.bool",
    "Device.__le__": "builtins.bool", "Device.__gt__": "builtins.bool", "Device.__ge__": "builtins.bool",
    "Array.numel": "int", "Array.dim": "int", "Array.type": "Array | str",
    "Array.__array_namespace__": "object", "Array.__complex__": "complex",
}
# attributes (getset descriptors) -> type
ATTRIBUTES = {
    "Array.shape": "tuple[int, ...]", "Array.ndim": "int", "Array.size": "int", "Array.dtype": "np.dtype[np.generic]",
    "Array.itemsize": "int", "Array.nbytes": "int", "Array.device": "Device", "Array.strides": "tuple[int, ...]",
    "Array.T": "Array", "Array.mT": "Array", "Array.data": "Array", "Array.grad": "Array | None",
    "Array.grad_fn": "object", "Array.is_leaf": "builtins.bool", "Array.requires_grad": "builtins.bool",
    "Array.__cuda_array_interface__": "dict[str, object]", "Device.type": "str", "Device.index": "int | None",
    "Device.emulated": "builtins.bool",
}
# what mypy would object to, and why it is right: comparisons return arrays, not object's bool;
# CPython's __ipow__ slot takes no modulo argument where __pow__ takes one
IGNORES = {"Array.__eq__": "override", "Array.__ne__": "override", "Array.__ipow__": "misc"}
SLOT_TYPES = (types.WrapperDescriptorType, types.MethodDescriptorType, types.FunctionType)


def annotation(where: str, p: inspect.Parameter) -> str:
    t = TYPES_OF.get((where, p.name)) or TYPES_OF.get((where.rpartition(".")[2], p.name)) or TYPES.get(p.name)
    if t is None:
        raise SystemExit(f"make_stubs: no type for parameter {p.name!r} of {where}; add it to TYPES")
    if p.default is None and "None" not in t.split(" | "):
        t += " | None"
    return t


def parameters(where: str, sig: inspect.Signature, method: bool) -> str:
    out, slash, star = [], False, False
    params = list(sig.parameters.values())
    for k, p in enumerate(params):
        if method and k == 0:  # self, or the name a Python function attached to the class gives it
            out.append(p.name)
            if len(params) == 1 or params[1].kind is not inspect.Parameter.POSITIONAL_ONLY:
                if p.kind is inspect.Parameter.POSITIONAL_ONLY:
                    out.append("/")
                    slash = True
            continue
        if p.kind is not inspect.Parameter.POSITIONAL_ONLY and not slash and any(
            q.kind is inspect.Parameter.POSITIONAL_ONLY for q in params[:k]
        ):
            out.append("/")
            slash = True
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not star:
            out.append("*")
            star = True
        text = f"{p.name}: {annotation(where, p)}"
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            text, star = "*" + text, True
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            text = "**" + text
        elif p.default is not p.empty:
            text += f" = {p.default!r}"
        out.append(text)
    if not slash and params and all(p.kind is inspect.Parameter.POSITIONAL_ONLY for p in params):
        out.append("/")
    return ", ".join(out)


def function(where: str, name: str, obj: object, indent: str, method: bool) -> str:
    sig = inspect.signature(obj)  # the declared text signature; an undeclared one raises here
    ret = RETURNS.get(where, "Array")
    ignore = f"  # type: ignore[{IGNORES[where]}]" if where in IGNORES else ""
    return f"{indent}def {name}({parameters(where, sig, method)}) -> {ret}: ...{ignore}\n"


def class_stub(cls: type) -> str:
    name = cls.__name__
    lines = [f"@final\nclass {name}:\n"]  # neither can be subclassed
    if name == "Device":
        sig = inspect.signature(cls)
        cls_param = inspect.Parameter("cls", inspect.Parameter.POSITIONAL_ONLY)
        params = parameters("Device", sig.replace(parameters=[cls_param, *sig.parameters.values()]), True)
        lines.append(f"    def __new__({params}) -> Device: ...\n")
    for attr, value in sorted(vars(cls).items()):
        where = f"{name}.{attr}"
        if isinstance(value, (types.GetSetDescriptorType, property)):  # size is a Python property
            if attr.startswith("_") and not attr.endswith("__"):
                continue
            lines.append(f"    @property\n    def {attr}(self) -> {ATTRIBUTES[where]}: ...\n")
            if attr in ("grad", "requires_grad", "data"):
                lines.append(f"    @{attr}.setter\n    def {attr}(self, value: {ATTRIBUTES[where]}) -> None: ...\n")
        elif isinstance(value, SLOT_TYPES) and attr not in ("__new__", "__init__"):
            if attr.startswith("_") and not attr.endswith("__"):
                continue
            if attr == "__hash__" and name == "Array":
                continue
            lines.append(function(where, attr, value, "    ", True))
    # Array has methods named int, float and bool (PyTorch's casts), which shadow the types
    # inside the class body: spell the types through builtins there
    return re.sub(r"(?<![.\w])(int|float)\b(?!\()", r"builtins.\1", "".join(lines))


def stub() -> str:
    out = [HEADER]
    for name, obj in sorted(vars(C).items()):
        if name.startswith("_"):
            continue
        if isinstance(obj, type) and issubclass(obj, BaseException):
            bases = ", ".join(b.__name__ for b in obj.__bases__)
            out.append(f"\nclass {name}({bases}): ...\n")
        elif isinstance(obj, type) and obj.__module__ == "numpy":
            out.append(f"\n{name}: type[np.{obj.__name__}]\n")
        elif isinstance(obj, type):
            out.append("\n" + class_stub(obj))
        elif isinstance(obj, types.BuiltinFunctionType):
            out.append("\n" + function(name, name, obj, "", False))
    return "".join(out)


def main() -> int:
    text = stub()
    if "--check" in sys.argv[1:]:
        if not STUB.is_file() or STUB.read_text() != text:
            print(f"{STUB} is missing or out of date: rebuild (make build), which rewrites it", file=sys.stderr)
            return 1
        return 0
    STUB.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
