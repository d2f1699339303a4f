"""gpudev's pytest plugin (``gpudev.testing``'s fixtures and options), registered as ``gpudev``
through the ``pytest11`` entry point wherever gpudev is installed (``-p no:gpudev`` turns it
off).

It lives outside the gpudev package so that loading it imports nothing of gpudev: a pytest
run that never asks for a ``gd_`` fixture pays nothing for it (importing gpudev loads
OpenBLAS and the CUDA libraries).

Fixtures:

- ``gd_device``: the test runs once per device present: ``cpu``, then ``cuda:0``,
  ``cuda:1``... (``cuda:0-emulated`` for the emulated GPUs of ``GPUDEV_EMULATE_GPUS``);
- ``gd_benchmark``: ``gd_benchmark(fn, *args, **kwargs)`` is ``gd.benchmark`` (it
  synchronizes, warms up, repeats to a time budget or a noise target, times GPUs with
  events) and records the result for ``--gd-benchmark-json``, in pytest-benchmark's layout.

Options: ``--gd-undecided=skip|xfail|fail`` (or the ``gd_undecided`` ini option) says what an
undecided ``gpudev.testing.assert_faster`` does; ``--gd-benchmark-json=PATH`` writes every
gd_benchmark result; ``--gd-benchmark-max-time=S`` sets their time budget (1 s).

After each test, failures and skips planted on emulated GPUs (``gd.emulation.fail_next``,
``skip_next``) and not used are forgotten, so they cannot fire in a later test. A failed run
whose emulated GPUs ran blocks in a shuffled order (``GPUDEV_EMULATE_BLOCK_ORDER``) ends with
the seed that runs them in the same order again.

The plugin defines no fixture or option without the ``gd_`` prefix, so it cannot collide with
a project's own.
"""

from __future__ import annotations

import datetime
import json
import platform
import sys
from typing import Any

import pytest

# Kept here, not in gpudev.testing (which reads it), so that configuring imports nothing.
UNDECIDED = ("skip", "xfail", "fail")
undecided_policy: str | None = None  # the run's policy; None outside pytest

_RESULTS = pytest.StashKey[list]()
_PREVIOUS = pytest.StashKey[object]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpudev", "gpudev: devices, benchmarks and A/B timing")
    group.addoption("--gd-undecided", choices=UNDECIDED, default=None,
                    help="what an undecided gd.testing.assert_faster does (default: the gd_undecided ini "
                         "option, else skip)")
    group.addoption("--gd-benchmark-json", metavar="PATH", default=None,
                    help="write every gd_benchmark result to PATH in pytest-benchmark's JSON layout")
    group.addoption("--gd-benchmark-max-time", metavar="SECONDS", type=float, default=None,
                    help="time budget of each gd_benchmark call (default 1 s)")
    parser.addini("gd_undecided", "what an undecided assert_faster does: skip, xfail or fail", default="skip")


def pytest_configure(config: pytest.Config) -> None:
    policy = config.getoption("--gd-undecided") or config.getini("gd_undecided")
    global undecided_policy
    if policy not in UNDECIDED:
        raise pytest.UsageError(f"gd_undecided must be skip, xfail or fail, got {policy!r}")
    config.stash[_PREVIOUS] = undecided_policy  # a pytest run inside a test (pytester)
    undecided_policy = policy
    config.stash[_RESULTS] = []


def pytest_unconfigure(config: pytest.Config) -> None:
    global undecided_policy
    undecided_policy = config.stash.get(_PREVIOUS, None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """Forget what the test planted on emulated GPUs and did not use (after its fixtures'
    teardown), where a test imported gpudev: a plant left armed fails a later, unrelated call."""
    yield
    emulation = getattr(sys.modules.get("gpudev"), "emulation", None)
    if emulation is not None and emulation.active():
        emulation.clear_planted()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """A failure may come from the order the emulated GPUs ran blocks in: name the seed that
    repeats it (gpudev drew it at import when the variable said only `shuffle`)."""
    emulation = getattr(sys.modules.get("gpudev"), "emulation", None)
    order = str(emulation.settings().get("block_order", "")) if emulation is not None else ""
    if exitstatus != 0 and order.startswith("shuffle:"):
        terminalreporter.write_line(f"gpudev: the emulated GPUs' blocks ran in a shuffled order; "
                                    f"GPUDEV_EMULATE_BLOCK_ORDER={order} runs them in the same order again")


# ---------------------------------------------------------------------------------------------
# gd_device
# ---------------------------------------------------------------------------------------------


def _devices() -> list[tuple[Any, str]]:
    import gpudev as gd

    emulated = gd.emulation.active()
    gpus = [(gd.gpu(i), f"cuda:{i}-emulated" if emulated else f"cuda:{i}") for i in range(gd.num_gpus())]
    return [(gd.cpu(), "cpu"), *gpus]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "gd_device" in metafunc.fixturenames:
        devices = _devices()
        metafunc.parametrize("gd_device", [d for d, _ in devices], ids=[i for _, i in devices], indirect=True)


@pytest.fixture
def gd_device(request: pytest.FixtureRequest) -> Any:
    """Each device present, in turn: the CPU, then every GPU (emulated ones too)."""
    return request.param


# ---------------------------------------------------------------------------------------------
# gd_benchmark
# ---------------------------------------------------------------------------------------------


class GdBenchmark:
    """``gd_benchmark(fn, *args, **kwargs)``: ``gd.benchmark`` with the run's time budget,
    recorded for ``--gd-benchmark-json``. Returns the BenchmarkResult (``.median``,
    ``.spread``, ``.stop_reason``...)."""

    def __init__(self, node: pytest.Item, results: list, max_time: float | None) -> None:
        self._node, self._results, self._max_time = node, results, max_time
        self.result = None

    def __call__(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        import gpudev as gd

        if self._max_time is not None:
            kwargs.setdefault("max_duration", self._max_time)
        self.result = gd.benchmark(fn, *args, **kwargs)
        self._results.append((self._node, self.result, kwargs))
        return self.result


@pytest.fixture
def gd_benchmark(request: pytest.FixtureRequest) -> GdBenchmark:
    """Time a callable with gd.benchmark and record it (see GdBenchmark)."""
    return GdBenchmark(request.node, request.config.stash[_RESULTS],
                       request.config.getoption("--gd-benchmark-max-time"))


def _entry(node: pytest.Item, r: Any, options: dict) -> dict[str, Any]:
    """One result in pytest-benchmark's layout ("benchmarks" entries of --benchmark-json)."""
    from gpudev import stats

    q1, q3 = stats.quartiles(r.times)
    iqr = q3 - q1
    inside = [t for t in r.times if q1 - 1.5 * iqr <= t <= q3 + 1.5 * iqr]
    callspec = getattr(node, "callspec", None)
    params = {k: str(v) for k, v in callspec.params.items()} if callspec else None
    return {
        "group": None,
        "name": node.name,
        "fullname": node.nodeid,
        "params": params,
        "param": callspec.id if callspec else None,
        "extra_info": {"clock": r.clock, "stop_reason": r.stop_reason, "spread": r.spread, "notes": r.notes,
                       "overhead": r.overhead, "gpu_times": r.gpu_times, "function": r.name},
        "options": {"timer": "gpudev.benchmark", "warmup": r.n_warmup,
                    "max_time": options.get("max_duration", 1.0), "min_rounds": 1},
        "stats": {
            "min": r.min, "max": r.max, "mean": r.mean, "stddev": r.std, "rounds": r.n, "median": r.median,
            "iqr": iqr, "q1": q1, "q3": q3, "iqr_outliers": len(r.times) - len(inside),
            "stddev_outliers": sum(abs(t - r.mean) > r.std for t in r.times),
            "outliers": f"{sum(abs(t - r.mean) > r.std for t in r.times)};{len(r.times) - len(inside)}",
            "ld15iqr": min(inside), "hd15iqr": max(inside), "ops": 1.0 / r.mean if r.mean > 0 else 0.0,
            "total": sum(r.times) * r.n_calls, "data": list(r.times), "iterations": r.n_calls,
        },
    }


def benchmark_json(results: list) -> dict[str, Any]:
    """The whole document, as pytest-benchmark's --benchmark-json writes it."""
    import gpudev as gd

    return {
        "machine_info": {"node": platform.node(), "processor": platform.processor(), "machine": platform.machine(),
                         "python_implementation": platform.python_implementation(),
                         "python_version": platform.python_version(), "system": platform.system(),
                         "release": platform.release(), "gpudev": gd.__version__,
                         "devices": [i for _, i in _devices()]},
        "commit_info": {},
        "benchmarks": [_entry(node, r, options) for node, r, options in results],
        "datetime": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "version": f"gpudev {gd.__version__}",
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--gd-benchmark-json")
    results = session.config.stash.get(_RESULTS, [])
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(benchmark_json(results), f, indent=2)
