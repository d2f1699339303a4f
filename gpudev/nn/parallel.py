"""Data parallelism over several devices, as ``torch.nn.parallel``: :func:`scatter`,
:func:`gather`, :func:`replicate`, :func:`parallel_apply` and :class:`DataParallel`.

d2l's multiple-GPU chapters split a batch over the devices, run a copy of the model on each
and bring the results back:

    >>> import gpudev as gd
    >>> from gpudev import nn
    >>> devices = gd.try_all_gpus()
    >>> X = gd.arange(24.0).reshape(6, 4)
    >>> [x.shape for x in nn.parallel.scatter(X, devices)]  # on two GPUs
    [(3, 4), (3, 4)]
    >>> net = nn.DataParallel(nn.Linear(4, 2).to(devices[0]), device_ids=devices)
    >>> net(X.to(devices[0])).shape
    (6, 2)

Every copy is a gpudev operation that autograd records (``Array.to``, slicing,
concatenation), so the gradients of the replicas' parameters flow back into the original
parameters on the first device, summed, as PyTorch's ``Broadcast`` and ``Gather`` do.
"""

from __future__ import annotations

import copy
import reprlib
import threading
import traceback
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import gpudev as gd

from .._devices import as_device, device_label, require
from .._lazy import _Uninitialized
from .module import Module

__all__ = ["DataParallel", "gather", "parallel_apply", "replicate", "scatter"]


# ---------------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------------


def _one_device(device: Any, op: str) -> gd.Device:
    """A device as PyTorch's device_ids take one: an int is GPU i, -1 the CPU (gather's
    target), otherwise a gd.Device or a device string."""
    if isinstance(device, int) and not isinstance(device, bool):
        dev = gd.cpu() if device == -1 else as_device(f"cuda:{device}", op)
    else:
        dev = as_device(device, op)
    return require(dev, op, "use gd.try_all_gpus() for the devices this machine has")


def _device_list(devices: Any, op: str) -> list[gd.Device]:
    """A non-empty list of devices from a sequence of ints, Devices or device strings."""
    if isinstance(devices, (str, gd.Device, int)) or not isinstance(devices, Sequence):
        raise TypeError(f"{op}: devices must be a list of devices, got {reprlib.repr(devices)}; "
                        f"e.g. [gd.gpu(0), gd.gpu(1)] or gd.try_all_gpus()")
    if len(devices) == 0:
        raise ValueError(f"{op}: the device list is empty; pass at least one device, e.g. "
                         f"gd.try_all_gpus()")
    return [_one_device(d, op) for d in devices]


def _labels(devices: Sequence[gd.Device]) -> str:
    return "[" + ", ".join(device_label(d) for d in devices) + "]"


# ---------------------------------------------------------------------------------------------
# scatter and gather
# ---------------------------------------------------------------------------------------------


def _axis(x: gd.Array, dim: int, op: str) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{op}: dim must be an int, got {reprlib.repr(dim)}")
    if x.ndim == 0:
        raise ValueError(f"{op}: cannot split a 0-dimensional array (a scalar); reshape it to (1,) "
                         f"or pass it inside a batch")
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"{op}: dim {dim} is out of range for an array of shape {x.shape}; use a "
                         f"dim from {-x.ndim} to {x.ndim - 1}")
    return dim % x.ndim


def _split(x: gd.Array, devices: list[gd.Device], dim: int) -> tuple[gd.Array, ...]:
    """x in chunks of ceil(n / len(devices)) along dim, as ``Tensor.chunk`` cuts it (so fewer
    chunks than devices when the batch is small; an empty batch gives one empty chunk per
    device), the i-th copied to devices[i]."""
    axis = _axis(x, dim, "scatter")
    n = x.shape[axis]
    step = max(1, -(-n // len(devices)))
    starts = range(0, n, step) if n else [0] * len(devices)
    head = (slice(None),) * axis
    return tuple(x[head + (slice(s, s + step),)].to(dev) for s, dev in zip(starts, devices))


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_asdict") and hasattr(obj, "_fields")


def scatter(inputs: Any, target_gpus: Sequence[Any], dim: int = 0) -> Any:
    """Split `inputs` into nearly equal chunks along `dim`, one per device, each copied to its
    device, as ``torch.nn.parallel.scatter``.

    An Array gives a tuple of chunks of ``ceil(n / len(target_gpus))`` rows (the last one
    smaller; fewer chunks than devices when the batch has fewer rows than there are devices,
    as ``Tensor.chunk``). Tuples, lists, dicts and named tuples are split item by item and
    give one container per chunk; any other object is repeated once per device. The copies
    are recorded by autograd: a gradient flows back to the unsplit array. The devices may be
    GPUs (ints, ``gd.gpu(i)``, ``'cuda:i'``) or the CPU.

    Example:
        >>> X = gd.arange(20.0).reshape(4, 5)
        >>> shards = nn.parallel.scatter(X, [gd.gpu(0), gd.gpu(1)])
        >>> [(x.shape, x.device) for x in shards]
        [((2, 5), Device('cuda:0')), ((2, 5), Device('cuda:1'))]
    """
    devices = _device_list(target_gpus, "scatter")

    def scatter_map(obj: Any) -> Any:
        if isinstance(obj, gd.Array):
            return _split(obj, devices, dim)
        if _is_namedtuple(obj):
            return [type(obj)(*args) for args in zip(*map(scatter_map, obj))]
        if isinstance(obj, tuple) and obj:
            return list(zip(*map(scatter_map, obj)))
        if isinstance(obj, list) and obj:
            return [list(i) for i in zip(*map(scatter_map, obj))]
        if isinstance(obj, dict) and obj:
            return [type(obj)(i) for i in zip(*map(scatter_map, obj.items()))]
        return [obj for _ in devices]

    return scatter_map(inputs)


def _scatter_kwargs(inputs: tuple, kwargs: dict | None, devices: list[gd.Device],
                    dim: int) -> tuple[tuple, tuple]:
    """Positional and keyword arguments scattered, padded to the same number of chunks (as
    PyTorch's ``scatter_kwargs``)."""
    args = scatter(inputs, devices, dim) if inputs else []
    kws = scatter(kwargs, devices, dim) if kwargs else []
    args += [() for _ in range(len(kws) - len(args))]
    kws += [{} for _ in range(len(args) - len(kws))]
    return tuple(args), tuple(kws)


def _gather_arrays(arrays: Sequence[Any], target: gd.Device, dim: int) -> gd.Array:
    if not all(isinstance(a, gd.Array) for a in arrays):
        kinds = [type(a).__name__ for a in arrays]
        raise TypeError(f"gather: the outputs must all be Arrays or all containers, got {kinds}")
    if all(a.ndim == 0 for a in arrays):
        warnings.warn("gather: was asked to gather along dimension 0, but all outputs were "
                      "scalars; they are stacked into a vector instead (as PyTorch does)", stacklevel=3)
        arrays = [a.reshape(1) for a in arrays]
    axis = _axis(arrays[0], dim, "gather")
    shapes = [a.shape for a in arrays]
    if any(len(s) != len(shapes[0]) or s[:axis] + s[axis + 1:] != shapes[0][:axis] + shapes[0][axis + 1:]
           for s in shapes):
        raise ValueError(f"gather: the outputs' shapes {shapes} differ outside dim {dim}; every "
                         f"replica must return arrays that differ only in the batch dimension")
    return gd.concatenate([a.to(target) for a in arrays], axis=axis)


def gather(outputs: Sequence[Any], target_device: Any, dim: int = 0) -> Any:
    """Concatenate the per-device `outputs` along `dim` on `target_device`, as
    ``torch.nn.parallel.gather``: the inverse of :func:`scatter`.

    `outputs` holds one result per device: Arrays are joined (all 0-dimensional ones are
    stacked into a vector, with a warning, as in PyTorch); dicts, tuples, lists and named
    tuples are gathered item by item; None stays None. `target_device` is a device, a GPU
    index, or -1 or ``'cpu'`` for the CPU. Autograd records the copies: the gradient of the
    result is split back to each device.

    Example:
        >>> shards = nn.parallel.scatter(gd.ones((4, 3)), [gd.gpu(0), gd.gpu(1)])
        >>> nn.parallel.gather(shards, gd.gpu(0)).shape
        (4, 3)
    """
    target = _one_device(target_device, "gather")
    if isinstance(outputs, (gd.Array, str)) or not isinstance(outputs, Sequence) or not outputs:
        raise TypeError(f"gather: outputs must be a non-empty list with one result per device, got "
                        f"{reprlib.repr(outputs)}")

    def gather_map(outs: Sequence[Any]) -> Any:
        out = outs[0]
        if isinstance(out, gd.Array):
            return _gather_arrays(outs, target, dim)
        if out is None:
            return None
        if isinstance(out, dict):
            if not all(isinstance(d, dict) and len(d) == len(out) for d in outs):
                raise ValueError("gather: all dicts must have the same number of keys")
            return type(out)((k, gather_map([d[k] for d in outs])) for k in out)
        if _is_namedtuple(out):
            return type(out)._make(map(gather_map, zip(*outs, strict=True)))
        return type(out)(map(gather_map, zip(*outs, strict=True)))

    return gather_map(outputs)


# ---------------------------------------------------------------------------------------------
# replicate and parallel_apply
# ---------------------------------------------------------------------------------------------


def _copies(arrays: list[gd.Array], devices: list[gd.Device], detach: bool) -> list[list[gd.Array]]:
    """copies[j][i]: arrays[i] on devices[j]; recorded by autograd unless `detach` (an array
    already on devices[j] is itself, so the first device's replica shares it)."""
    with gd.set_grad_enabled(gd.is_grad_enabled() and not detach):
        return [[a.to(dev) for a in arrays] for dev in devices]


def _swap_children(replica: Module, mine: dict[int, Module]) -> None:
    """Point the replica's attributes (and the Modules inside its dicts, lists and tuples,
    such as Sequential's layers) at the replicas of the same device."""
    for name, value in list(vars(replica).items()):
        if isinstance(value, Module) and id(value) in mine:
            value = mine[id(value)]
        elif isinstance(value, dict) and any(isinstance(v, Module) for v in value.values()):
            value = type(value)((k, mine.get(id(v), v)) for k, v in value.items())
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Module) for v in value):
            value = type(value)(mine.get(id(v), v) for v in value)
        else:
            continue
        object.__setattr__(replica, name, value)


def replicate(network: Module, devices: Sequence[Any], detach: bool = False) -> list[Module]:
    """One copy of `network` per device, as ``torch.nn.parallel.replicate``.

    Each replica is a shallow copy of every module of the network whose parameters and
    buffers are copies on its device. The parameter copies are recorded by autograd (unless
    `detach`, or under ``gd.no_grad()``), so the gradients of all replicas flow back, summed,
    into the original parameters; they are not leaves, so a replica's ``parameters()`` lists
    only those it shares with the original (on the original's device), as in PyTorch. Buffers
    are copied without recording; the replica on the network's own device shares them, so
    its in-place updates (batch norm's running statistics) reach the network, and the other
    replicas' are lost. An empty device list gives an empty list, as in PyTorch.

    Example:
        >>> replicas = nn.parallel.replicate(nn.Linear(3, 2), [gd.cpu(), gd.gpu(0)])
        >>> replicas[1].weight.device
        Device('cuda:0')
    """
    if not isinstance(network, Module):
        raise TypeError(f"replicate: network must be an nn.Module, got {type(network).__name__}")
    if isinstance(devices, Sequence) and not isinstance(devices, str) and len(devices) == 0:
        return []
    devs = _device_list(devices, "replicate")
    owners = list(network._owners())
    lazy = [f"{type(m).__name__}.{name}" for m, name, a, _ in owners if isinstance(a, _Uninitialized)]
    if lazy:
        raise ValueError(f"replicate: the module has uninitialized (lazy) parameters or buffers {lazy}; run "
                         f"one forward on a batch on the first device before replicating it")
    # one copy per array and device (a shared parameter stays shared); an array that does not
    # require grad (a buffer) is copied without recording
    arrays = list({id(a): a for _, _, a, _ in owners}.values())
    index = {id(a): i for i, a in enumerate(arrays)}
    copies = _copies(arrays, devs, detach)
    modules = list(network.modules())
    replicas = []
    for j in range(len(devs)):
        mine = {id(m): copy.copy(m) for m in modules}
        for m in modules:
            replica = mine[id(m)]
            for names in ("_param_names", "_buffer_names"):  # the copies own their bookkeeping
                if names in vars(m):
                    object.__setattr__(replica, names, copy.copy(vars(m)[names]))
            _swap_children(replica, mine)
        for m, name, a, is_param in owners:
            object.__setattr__(mine[id(m)], name, copies[j][index[id(a)]])
        replicas.append(mine[id(network)])
    return replicas


def _first_array(obj: Any) -> gd.Array | None:
    """The first Array in obj (searching tuples, lists and dicts' values), as PyTorch's
    ``get_a_var``; None if there is none."""
    if isinstance(obj, gd.Array):
        return obj
    items = obj.values() if isinstance(obj, Mapping) else obj if isinstance(obj, (list, tuple)) else ()
    return next((a for a in map(_first_array, items) if a is not None), None)


class _Failure:
    """An exception a worker thread caught, to raise again in the caller's thread."""

    def __init__(self, exc: Exception, where: str, tb: str) -> None:
        self.exc, self.where, self.tb = exc, where, tb

    def reraise(self) -> None:
        """exc's type again, its message saying where it happened (PyTorch's
        ExceptionWrapper.reraise); RuntimeError when the type cannot take a message."""
        msg = f"Caught {type(self.exc).__name__} {self.where}.\nOriginal traceback:\n{self.tb}"
        try:
            new = type(self.exc)(msg)
        except Exception:
            raise RuntimeError(msg) from self.exc
        raise new from self.exc


def parallel_apply(modules: Sequence[Module], inputs: Sequence[Any],
                   kwargs_tup: Sequence[dict[str, Any]] | None = None,
                   devices: Sequence[Any] | None = None) -> list[Any]:
    """Run ``modules[i](*inputs[i], **kwargs_tup[i])`` for every i, one Python thread per
    module, and return their outputs in order, as ``torch.nn.parallel.parallel_apply``.

    An input that is not a tuple or list is the module's only argument. `devices` (one per
    module) only labels the threads' errors here, since gpudev runs each operation on its
    operands' device; by default each module's device is that of the first Array in its
    input. The caller's grad mode holds in every thread. An exception in a thread is raised
    again in the caller, of the same type, naming the replica and its device.

    Example:
        >>> devices = [gd.gpu(0), gd.gpu(1)]
        >>> replicas = nn.parallel.replicate(nn.Linear(3, 2).to(devices[0]), devices)
        >>> outs = nn.parallel.parallel_apply(replicas, nn.parallel.scatter(gd.ones((4, 3)), devices))
        >>> [o.device for o in outs]
        [Device('cuda:0'), Device('cuda:1')]
    """
    n = len(modules)
    for what, seq in (("inputs", inputs), ("kwargs_tup", kwargs_tup), ("devices", devices)):
        if seq is not None and len(seq) != n:
            raise ValueError(f"parallel_apply: {len(modules)} modules but {len(seq)} {what}; pass one "
                             f"per module (scatter the batch over the replicas' devices)")
    kwargs_tup = kwargs_tup if kwargs_tup is not None else [{} for _ in range(n)]
    devs = [None if d is None else _one_device(d, "parallel_apply") for d in (devices or [None] * n)]
    grad_enabled = gd.is_grad_enabled()
    results: dict[int, Any] = {}

    def worker(i: int) -> None:
        args = inputs[i] if isinstance(inputs[i], (list, tuple)) else (inputs[i],)
        dev = devs[i] or getattr(_first_array(inputs[i]), "device", None)
        where = f"in replica {i} on device {device_label(dev) if dev is not None else '(no Array in its input)'}"
        try:
            with gd.set_grad_enabled(grad_enabled):  # grad mode belongs to each thread
                results[i] = modules[i](*args, **kwargs_tup[i])
        except Exception as exc:  # raised again in the caller
            results[i] = _Failure(exc, where, traceback.format_exc())

    if n > 1:
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    elif n == 1:
        worker(0)
    outputs = [results[i] for i in range(n)]
    for out in outputs:
        if isinstance(out, _Failure):
            out.reraise()
    return outputs


# ---------------------------------------------------------------------------------------------
# DataParallel
# ---------------------------------------------------------------------------------------------


class DataParallel(Module):
    """Run `module` on several GPUs, each on a slice of the batch, as ``torch.nn.DataParallel``.

    Each call scatters the inputs along `dim` over ``device_ids``, replicates the module on
    them, runs the replicas at once (one thread per device) and gathers the outputs on
    `output_device` (``device_ids[0]`` by default). Backward then sums every replica's
    gradients into the module's own parameters, on the first device, so an optimizer built
    on ``net.parameters()`` trains it as one device would. The module's parameters and
    buffers must be on ``device_ids[0]`` (with a single device it is moved there, as PyTorch
    does); ``device_ids`` takes GPU indices, ``gd.Device`` objects or strings (``None``: every
    GPU) and is kept as the GPUs' indices. The wrapped module is ``.module``, so the wrapper's
    ``state_dict()`` names start with ``'module.'``.

    Without a GPU, or with ``device_ids`` naming only the CPU (``gd.try_all_gpus()`` on a
    machine without one), the wrapper just calls the module, as PyTorch's does.

    Batch norm, as in PyTorch: each replica normalizes with the statistics of its own slice
    of the batch (they are not synchronized across devices). The buffers are copied from
    ``device_ids[0]`` at every call; the replica there shares the module's buffers, so its
    running-statistics updates are kept, and the other replicas' updates are lost.

    Example:
        >>> devices = gd.try_all_gpus()
        >>> net = nn.DataParallel(nn.Linear(4, 2).to(devices[0]), device_ids=devices)
        >>> trainer = gd.optim.SGD(net.parameters(), lr=0.1)
        >>> X = gd.randn(8, 4).to(devices[0])
        >>> net(X).sum().backward(); trainer.step()
        >>> list(net.state_dict())
        ['module.weight', 'module.bias']
    """

    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: module must be an nn.Module, got {type(module).__name__}")
        self.module = module
        self.dim = dim
        self.device_ids: list[int] = []
        self.output_device: int | None = None
        if gd.num_gpus() == 0:  # as PyTorch without an accelerator: the module runs as it is
            return
        devs = _device_list(device_ids if device_ids is not None
                            else [gd.gpu(i) for i in range(gd.num_gpus())], "DataParallel")
        types = sorted({d.type for d in devs})
        if len(types) > 1:
            raise ValueError(f"DataParallel: device_ids {_labels(devs)} mix device types {types}; pass "
                             f"only GPUs, e.g. device_ids=gd.try_all_gpus()")
        if types == ["cpu"]:  # the CPU alone: nothing to split
            return
        self.device_ids = [d.index or 0 for d in devs]  # PyTorch keeps the GPUs' indices
        self.src_device_obj = devs[0]
        out = _one_device(devs[0] if output_device is None else output_device, "DataParallel")
        self.output_device = -1 if out.type == "cpu" else out.index or 0  # PyTorch's -1: the CPU
        if len(devs) == 1:
            module.to(devs[0])

    def _devices(self) -> list[gd.Device]:
        return [gd.gpu(i) for i in self.device_ids]

    def _check_module_device(self) -> None:
        src = self.src_device_obj
        for m, name, a, _ in self.module._owners():
            if not isinstance(a, _Uninitialized) and a.device != src:
                raise RuntimeError(
                    f"DataParallel: the module must have its parameters and buffers on device {src} "
                    f"(device_ids[0]) but {type(m).__name__}.{name} is on device {a.device}; move the "
                    f"module first: net.to({str(src)!r}) before wrapping it (then build the optimizer)")

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        self._check_module_device()
        devices = self._devices()
        args, kws = _scatter_kwargs(inputs, kwargs, devices, self.dim)
        if not args and not kws:
            args, kws = ((),), ({},)
        if len(devices) == 1:
            return self.module(*args[0], **kws[0])
        replicas = replicate(self.module, devices[:len(args)], not gd.is_grad_enabled())
        outputs = parallel_apply(replicas, args, kws, devices[:len(replicas)])
        return gather(outputs, self.output_device, self.dim)
