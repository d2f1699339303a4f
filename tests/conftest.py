"""Shared fixtures and helpers for gpudev's tests.

Every array test takes the `device` fixture and so runs once per entry of `DEVICES`: the CPU
always, then each GPU. Without a GPU one `cuda:0` entry is kept and skipped, so the GPU
variants show up as skipped in the summary instead of silently vanishing.

NumPy is the reference for every result; on a GPU the CPU backend is the oracle as well
(`check` runs the same gpudev call on both and compares them).

    >>> def test_add(device):
    ...     check(lambda a, b: a + b, np.ones(3), np.arange(3.0), device=device)
"""

from __future__ import annotations

import faulthandler
import os
from typing import Any, Callable

import numpy as np
import pytest

import gpudev as gd

# ---------------------------------------------------------------------------------------------
# devices
# ---------------------------------------------------------------------------------------------

NUM_GPUS: int = gd.num_gpus()
CPU = gd.cpu()
Array = type(gd.zeros(0))

NO_GPU = "no CUDA GPU"
NO_GPU2 = "needs two CUDA GPUs"
EMULATED = gd.emulation.active()  # GPUDEV_EMULATE_GPUS: cuda:i are CPU emulations


def _device_params() -> list:
    params = [pytest.param(CPU, id="cpu")]
    if NUM_GPUS == 0:
        params.append(
            pytest.param(gd.gpu(0), id="cuda:0", marks=[pytest.mark.gpu, pytest.mark.skip(reason=NO_GPU)])
        )
    for i in range(NUM_GPUS):
        params.append(
            pytest.param(
                gd.gpu(i),
                id=f"cuda:{i}",
                marks=[pytest.mark.gpu, pytest.mark.skipif(not gd.cuda_available(), reason=NO_GPU)],
            )
        )
    return params


DEVICES = _device_params()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "gpu2: needs two CUDA GPUs")
    config.addinivalue_line("markers", "hardware(reason): holds only on a real GPU, skipped on emulated ones")


# A test that takes one of these fixtures needs that many GPUs: it is marked so, whether or not
# its author wrote the marker, so `-m gpu` selects it and machines without GPUs skip it.
_GPU_FIXTURES = {"cuda0": "gpu", "cuda01": "gpu2"}


@pytest.hookimpl(tryfirst=True)  # before `-m` selects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `gpu` need one GPU, `gpu2` two: skip them, with the reason, when absent."""
    for item in items:
        for fixture, mark in _GPU_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(mark) is None:
                item.add_marker(getattr(pytest.mark, mark))
        if item.get_closest_marker("gpu2") is not None and NUM_GPUS < 2:
            item.add_marker(pytest.mark.skip(reason=NO_GPU2))
        elif item.get_closest_marker("gpu") is not None and NUM_GPUS < 1:
            item.add_marker(pytest.mark.skip(reason=NO_GPU))
        hardware = item.get_closest_marker("hardware")
        if hardware is not None and EMULATED and _on_gpu(item):
            why = hardware.args[0] if hardware.args else hardware.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason=f"real GPU only (emulated here): {why}"))


def _on_gpu(item: pytest.Item) -> bool:
    """Whether a test uses a GPU: a GPU fixture, a GPU marker or a cuda:i parameter."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec else ()
    return (item.get_closest_marker("gpu") is not None or item.get_closest_marker("gpu2") is not None
            or any(isinstance(p, gd.Device) and p.type == "cuda" for p in params))


# ---------------------------------------------------------------------------------------------
# per-test time limit without pytest-timeout
# ---------------------------------------------------------------------------------------------


def _time_limit(config: pytest.Config) -> float:
    """Seconds allowed per test from GPUDEV_TEST_TIMEOUT, unless pytest-timeout does the job."""
    if config.pluginmanager.hasplugin("timeout"):
        return 0.0
    try:
        return float(os.environ.get("GPUDEV_TEST_TIMEOUT", "0") or 0)
    except ValueError:
        raise pytest.UsageError("GPUDEV_TEST_TIMEOUT must be a number of seconds, e.g. 60") from None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    """With GPUDEV_TEST_TIMEOUT=s, a test (setup, call and teardown) that runs longer than s
    seconds ends the run: faulthandler writes every thread's stack, after the test's name, to
    GPUDEV_TEST_TIMEOUT_LOG (default: timeout.txt here) and exits. A hang inside a CUDA call
    cannot be interrupted from Python; this way the run still ends and says where it hung."""
    limit = _time_limit(item.config)
    if limit > 0:
        log = open(os.environ.get("GPUDEV_TEST_TIMEOUT_LOG", "timeout.txt"), "a")
        log.write(f"\n{item.nodeid}: over {limit:g} s; every thread's stack:\n")
        log.flush()
        faulthandler.dump_traceback_later(limit, exit=True, file=log)
    try:
        yield
    finally:
        if limit > 0:
            faulthandler.cancel_dump_traceback_later()
            log.close()


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> gd.Device:
    """Each device in turn: cpu, then every GPU (a skipped cuda:0 when there is none)."""
    return request.param


@pytest.fixture
def cuda0() -> gd.Device:
    """The first GPU; the test is skipped without one."""
    if NUM_GPUS < 1:
        pytest.skip(NO_GPU)
    return gd.gpu(0)


@pytest.fixture
def cuda01() -> tuple[gd.Device, gd.Device]:
    """The first two GPUs; the test is skipped with fewer than two."""
    if NUM_GPUS < 2:
        pytest.skip(NO_GPU2)
    return gd.gpu(0), gd.gpu(1)


def is_gpu(device: gd.Device) -> bool:
    return device.type == "cuda"


# ---------------------------------------------------------------------------------------------
# dtypes and tolerances
# ---------------------------------------------------------------------------------------------

DTYPES = [gd.float32, gd.float64, gd.int64, gd.int32]
FLOAT_DTYPES = [gd.float32, gd.float64]
DTYPE_IDS = ["float32", "float64", "int64", "int32"]
# int32's range and its edge values (the extremes and their neighbours, small values, and 46341,
# whose square passes the maximum), which each family's int32 tests run on
I32 = np.iinfo(np.int32)
INT32_EDGES = np.array([I32.min, I32.min + 1, -7, -1, 0, 1, 7, 46341, I32.max], np.int32)


def rtol_for(dtype: Any) -> float:
    """Relative tolerance for one elementwise step in `dtype`: a few units in the last place
    (float32 transcendental functions may be vectorised approximations); ints are exact."""
    dtype = np.dtype(dtype)
    if dtype == np.float32:
        return 1e-5
    if dtype == np.float64:
        return 1e-12
    return 0.0


def sample(shape: tuple[int, ...], dtype: Any, seed: int = 0, low: float = -10, high: float = 10) -> np.ndarray:
    """Deterministic test data of `shape` and `dtype`: uniform floats, or ints, in [low, high)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "i":
        return rng.integers(int(low), int(high), size=shape, dtype=dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
# comparing gpudev with NumPy and with the CPU backend
# ---------------------------------------------------------------------------------------------


def host(a: Any) -> np.ndarray:
    """The values of a gpudev Array as a NumPy array (a copy for GPU arrays)."""
    assert isinstance(a, Array), f"expected a gpudev Array, got {type(a).__name__}"
    return a.cpu().numpy()


def assert_array(
    got: Any,
    expected: Any,
    *,
    rtol: float | None = None,
    atol: float = 0.0,
    dtype: Any = None,
    device: gd.Device | None = None,
) -> None:
    """`got` is a gpudev Array with the shape, dtype (expected's unless given) and values of
    `expected`, on `device` when given. NaNs compare equal to NaNs, infs to infs."""
    assert isinstance(got, Array), f"expected a gpudev Array, got {type(got).__name__}"
    exp = np.asarray(expected)
    want_dtype = np.dtype(dtype) if dtype is not None else exp.dtype
    assert got.shape == exp.shape, f"shape {got.shape} != expected {exp.shape}"
    assert got.dtype == want_dtype, f"dtype {got.dtype} != expected {want_dtype}"
    if device is not None:
        assert got.device == device, f"result on {got.device}, expected {device}"
    values = host(got)
    if want_dtype.kind == "i":
        np.testing.assert_array_equal(values, exp)
    else:
        np.testing.assert_allclose(values, exp, rtol=rtol_for(want_dtype) if rtol is None else rtol, atol=atol)


def _to_gd(x: Any, device: gd.Device) -> Any:
    return gd.array(x, device=device) if isinstance(x, np.ndarray) else x


def _copy_np(x: Any) -> Any:
    return x.copy() if isinstance(x, np.ndarray) else x


def check(
    fn: Callable[..., Any],
    *inputs: Any,
    device: gd.Device,
    ref: Callable[..., Any] | None = None,
    rtol: float | None = None,
    atol: float = 0.0,
) -> Any:
    """Run `fn` on gpudev copies of the NumPy `inputs` on `device` and compare with NumPy.

    `ref` computes NumPy's answer from the inputs (default: `fn` itself, which works for
    operators and methods both libraries share). On a GPU the same `fn` also runs on the CPU
    backend and both results must agree. Non-array inputs (Python scalars) pass through.
    Returns the result on `device`.

    >>> check(lambda a, b: a * b, np.ones(3), 2.0, device=gd.cpu())
    """
    with np.errstate(all="ignore"):
        expected = (ref or fn)(*[_copy_np(x) for x in inputs])
    got = fn(*[_to_gd(x, device) for x in inputs])
    assert_array(got, expected, rtol=rtol, atol=atol, device=device)
    if is_gpu(device):
        on_cpu = fn(*[_to_gd(x, CPU) for x in inputs])
        assert_array(got, host(on_cpu), rtol=rtol, atol=atol, device=device)
    return got


# ---------------------------------------------------------------------------------------------
# hypothesis: bounded example counts (the sanitizer run is ~10x slower); optional package
# ---------------------------------------------------------------------------------------------

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # machines without a package registry may lack it; test_properties skips
    pass
else:
    _health = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("gpudev", max_examples=60, deadline=None, suppress_health_check=_health)
    settings.register_profile("sanitize", max_examples=10, deadline=None, suppress_health_check=_health)
    settings.load_profile("sanitize" if os.environ.get("GPUDEV_SANITIZE_RUN") == "1" else "gpudev")


# ---------------------------------------------------------------------------------------------
# output that fits a screen
# ---------------------------------------------------------------------------------------------

# Without -v, a passed or skipped test prints nothing of its own: thousands of device variants
# would fill a hundred lines with dots. One dot stands for every PROGRESS_EVERY tests instead,
# failures and errors still print their letter at once, and the skips are counted by reason at
# the end (pyproject's -rfE leaves them out of the short summary).
PROGRESS_EVERY = 100
_quiet_done = 0


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    global _quiet_done
    if config.option.verbose > 0 or not (report.passed or report.skipped) or hasattr(report, "wasxfail"):
        return None
    if report.skipped or report.when == "call":
        _quiet_done += 1
        mark = "." if _quiet_done % PROGRESS_EVERY == 0 else ""
        return ("skipped" if report.skipped else "passed"), mark, report.outcome.upper()
    return None


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """One line per skip reason with its count, most frequent first."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped or config.option.verbose > 0:
        return
    reasons: dict[str, int] = {}
    for rep in skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    terminalreporter.section(f"{len(skipped)} skipped, by reason", sep="-")
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.line(f"{n:6d}  {reason}")
