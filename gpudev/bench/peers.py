"""The peers gpudev is timed against (NumPy, PyTorch, CuPy): importing them, giving each its
own copy of the same data on a device, and waiting for its queued device work.

    >>> ctx = Context(load_peers(["numpy"])[0], quick=True, peak_gflops=None, gpu_peak_tflops=None)
    >>> ctx.peers_on("cpu")
    ['numpy']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

import gpudev as gd

from .. import _C
from .model import Impl, Row

__all__ = ["PEERS", "Context", "RowBuilder", "host_randn", "load_peers", "per_peer"]

PEERS = ("numpy", "torch", "cupy")


class Context:
    """What the row builders share: peers, sizes, and one set of cached data at a time."""

    def __init__(self, peers: dict[str, Any], quick: bool, peak_gflops: float | None, gpu_peak_tflops: float | None):
        self.peers = peers  # name -> module, the selected and importable ones
        self.quick = quick
        self.peak_gflops = peak_gflops
        self.gpu_peak_tflops = gpu_peak_tflops
        self.bandwidths: dict[str, float] = {}
        self._cache: dict[Any, Any] = {}

    def shared(self, key: Any, factory: Callable[[], Any]) -> Any:
        """factory() cached under key; a new key drops the previous data to bound memory."""
        if key not in self._cache:
            self._cache.clear()
            self._cache[key] = factory()
        return self._cache[key]

    def release(self) -> None:
        self._cache.clear()

    # -- peers ----------------------------------------------------------------------------

    def peers_on(self, device: str) -> list[str]:
        """The selected peers that can run on `device` (NumPy is CPU only)."""
        out = []
        for name, mod in self.peers.items():
            if device == "cpu":
                if name != "cupy":
                    out.append(name)
            elif name == "torch" and mod.cuda.is_available() and _index(device) < mod.cuda.device_count():
                out.append(name)
            elif name == "cupy" and _cupy_has(mod, _index(device)):
                out.append(name)
        return out

    def convert(self, peer: str, host: np.ndarray, device: str, share: bool = False) -> Any:
        """`host` as `peer`'s array on `device`; with share=True a CPU peer may alias it."""
        if peer == "gpudev":
            return gd.array(host, device=device)
        if peer == "numpy":
            return host if share else host.copy()
        if peer == "torch":
            torch = self.peers["torch"]
            t = torch.from_numpy(host if share else host.copy())
            return t if device == "cpu" else t.to(device)
        cp = self.peers["cupy"]
        with cp.cuda.Device(_index(device)):
            return cp.asarray(host)

    def sync(self, peer: str, device: str) -> Callable[[], Any] | None:
        if device == "cpu":
            return None
        if peer == "gpudev":
            dev = [gd.Device(device)]
            return lambda: _C._sync("benchmark", dev)
        if peer == "torch":
            torch, index = self.peers["torch"], _index(device)
            return lambda: torch.cuda.synchronize(index)
        if peer == "cupy":
            cp = self.peers["cupy"]
            with cp.cuda.Device(_index(device)):
                return cp.cuda.get_current_stream().synchronize
        return None

    def prepare(self, peer: str, device: str) -> Callable[[], Any] | None:
        if peer == "cupy" and device != "cpu":
            return self.peers["cupy"].cuda.Device(_index(device)).use
        return None

    def impls(
        self,
        device: str,
        stmts: dict[str, str],
        arrays: Callable[[str], dict[str, Any]],
        setup: str = "pass",
        value: str | dict[str, str] | None = None,
    ) -> dict[str, Impl]:
        """One Impl per peer present on `device` that has a statement.

        arrays(peer) gives that peer's data as a namespace; `value` is an expression giving
        the row's result as a float (for the error column)."""
        out = {}
        for peer in ["gpudev"] + self.peers_on(device):
            if peer not in stmts:
                continue
            env = {"gd": gd, "np": np, **self.peers, **arrays(peer)}
            value_fn = None
            if value is not None:
                expr = value[peer] if isinstance(value, dict) else value
                value_fn = _evaluator(expr, env)
            out[peer] = Impl(
                stmt=stmts[peer],
                env=env,
                setup=setup,
                sync=self.sync(peer, device),
                value=value_fn,
                prepare=self.prepare(peer, device),
            )
        return out


def _evaluator(expr: str, env: dict[str, Any]) -> Callable[[], float]:
    code = compile(expr, "<bench value>", "eval")
    return lambda: float(eval(code, env))  # our own fixed expressions, never user input


def _index(device: str) -> int:
    return int(device.split(":")[1]) if ":" in device else 0


def _cupy_has(cp: Any, index: int) -> bool:
    try:
        return index < cp.cuda.runtime.getDeviceCount()
    except Exception:  # cupy raises its own CUDARuntimeError without a driver
        return False


def load_peers(names: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Import the requested peers; returns (modules, notes about the missing ones)."""
    peers, notes = {}, []
    for name in names:
        try:
            peers[name] = importlib.import_module(name)
        except Exception as exc:  # an installed-but-broken peer is skipped, not fatal
            if name == "numpy":
                raise
            notes.append(f"{name}: not available ({type(exc).__name__}: {exc})")
    return peers, notes


# ---------------------------------------------------------------------------------------------
# data shared by the row builders
# ---------------------------------------------------------------------------------------------

RowBuilder = Callable[[Context], Row]


def host_randn(shape: tuple[int, ...] | int) -> np.ndarray:
    """float32 randn + 1 made by gpudev, returned as a host NumPy array (same values for all)."""
    return gd.randn(*(shape if isinstance(shape, tuple) else (shape,))).numpy() + np.float32(1)


def per_peer(ctx: Context, device: str, host: dict[str, np.ndarray], share: bool = False) -> Callable[[str], dict]:
    """peer -> that peer's copy (or, with share=True on the CPU, view) of each host array."""
    return lambda peer: {name: ctx.convert(peer, h, device, share) for name, h in host.items()}
