"""Timer and benchmark(): they synchronize, record what they should, and refuse bad input.

No assertion here depends on how fast this machine is: bounds come from time.sleep (which
sleeps at least as long as asked) or from counts, never from a guessed duration.
"""

from __future__ import annotations

import json
import re
import time

import pytest

import gpudev as gd
from gpudev import _C, timing
from gpudev._devices import gpus_here

# ---------------------------------------------------------------------------------------------
# Timer
# ---------------------------------------------------------------------------------------------


def test_timer_records_intervals_like_d2l():
    t = gd.Timer()
    time.sleep(0.01)
    first = t.stop()
    t.start()
    time.sleep(0.02)
    second = t.stop()
    assert t.times == [first, second]
    assert first >= 0.01 and second >= 0.02
    assert t.sum() == pytest.approx(first + second)
    assert t.avg() == pytest.approx((first + second) / 2)
    assert t.cumsum() == pytest.approx([first, first + second])


def test_timer_context_manager_times_the_block():
    with gd.Timer() as t:
        time.sleep(0.03)
    assert t.elapsed >= 0.03
    assert t.times == [t.elapsed]


def test_timer_times_a_cpu_matmul_to_its_end():
    a = gd.randn(600, 600)
    with gd.Timer() as t:
        b = a @ a
    # The product is finished when the timer stops: its result is readable without waiting.
    assert b.shape == (600, 600)
    assert t.elapsed > 0


def test_timer_synchronizes_at_start_and_stop():
    with gd.trace() as tr:
        t = gd.Timer()  # 1: the timer starts at once
        t.stop()  # 2
        t.start()  # 3
        t.stop()  # 4
    assert tr.count("sync", "Timer") == 4
    assert tr.count("sync") == 4
    assert {e.device for e in tr.syncs} == {"cpu"}


def test_timer_as_context_manager_syncs_on_enter_and_exit():
    with gd.trace() as tr:
        with gd.Timer():  # created (1), entered (2), exited (3)
            pass
    assert tr.count("sync", "Timer") == 3


def test_timer_without_sync_never_synchronizes():
    with gd.trace() as tr:
        t = gd.Timer(sync=False)
        t.stop()
        with gd.Timer(sync=False):
            pass
    assert tr.count("sync") == 0
    assert "wrong" in gd.Timer.__doc__


def test_timer_devices_names_what_to_synchronize():
    with gd.trace() as tr:
        t = gd.Timer(devices=["cpu", gd.cpu()])
        t.stop()
    assert tr.count("sync", "Timer", device="cpu") == 4  # two devices, start and stop
    assert t.devices == [gd.cpu(), gd.cpu()]


def test_timer_bad_input():
    with pytest.raises(ValueError, match="Timer.*'tpu'"):
        gd.Timer(devices=["tpu"])
    with pytest.raises(TypeError, match="Timer: devices must be"):
        gd.Timer(devices=3)
    with pytest.raises(ValueError, match=r"Timer.avg: no interval recorded yet; call stop\(\)"):
        gd.Timer().avg()
    assert gd.Timer().sum() == 0.0


def test_timer_repr():
    t = gd.Timer()
    assert repr(t) == "Timer(n=0, sync=True)"
    t.stop()
    assert repr(t).startswith("Timer(n=1, sum=")


@pytest.mark.gpu
def test_timer_on_gpu_waits_for_queued_work(cuda0):
    # what is still queued when each timer stops, not how long each measured (a benchmark's
    # question): Timer(sync=False) stops with the products queued, Timer() after them
    a = gd.randn(256, 256, device=cuda0)
    (a @ a).sum().item()  # warm up cuBLAS and the pool
    with gd.trace() as tr, gd.Timer(sync=False):
        for _ in range(20):
            b = a @ a
    assert tr.count("sync") == 0 and cuda0 in gd._C._pending_devices()
    with gd.Timer():
        for _ in range(20):
            b = a @ a
    assert cuda0 not in gd._C._pending_devices()
    if cuda0.emulated:  # an emulated queue runs only when waited for
        assert gd.emulation.pending_operations() == 0
    del b


@pytest.mark.gpu
def test_timer_syncs_the_gpu_with_queued_work(cuda0):
    a = gd.randn(256, 256, device=cuda0)
    gd.synchronize()
    with gd.trace() as tr:
        t = gd.Timer()  # nothing queued: one CPU sync point
        a @ a
        t.stop()  # cuda:0 has queued work
    syncs = [(e.name, e.device) for e in tr.syncs]
    assert syncs == [("Timer", "cpu"), ("Timer", "cuda:0")]


# ---------------------------------------------------------------------------------------------
# benchmark
# ---------------------------------------------------------------------------------------------


def test_benchmark_honours_n_repeat_and_n_warmup():
    calls = []

    def work(x, scale=1):
        calls.append((x, scale))
        return (x * scale).sum()

    a = gd.ones((64, 64))
    r = gd.benchmark(work, a, n_warmup=2, n_repeat=5, n_calls=1, scale=3)
    assert len(calls) == 7  # warm-up and repeats: the empty-call measurements do not call fn
    assert all(c[1] == 3 for c in calls)
    assert r.n == 5 and r.n_warmup == 2 and r.n_calls == 1
    assert len(r.cpu_times) == 5 and r.times == r.cpu_times
    assert r.clock == "host" and r.gpu_times == {}
    assert all(t > 0 for t in r.cpu_times)
    assert r.min <= r.median <= r.max
    assert r.min <= r.mean <= r.max
    assert r.std >= 0
    assert r.name == "work"


def test_benchmark_stats_of_a_known_duration():
    r = gd.benchmark(time.sleep, 0.01, n_warmup=0, n_repeat=3)
    assert r.n == 3
    assert min(r.cpu_times) >= 0.01
    assert r.median >= 0.01 and r.min >= 0.01


def test_benchmark_stops_at_max_duration():
    r = gd.benchmark(time.sleep, 0.01, n_warmup=0, max_duration=0.1)
    # every repeat sleeps >= 10 ms, and repeats stop once 0.1 s have passed
    assert 1 <= r.n <= 11


def test_benchmark_runs_at_least_once_past_max_duration():
    r = gd.benchmark(time.sleep, 0.02, n_warmup=0, max_duration=0.001)
    assert r.n == 1


def test_benchmark_synchronizes_after_warmup_and_each_repeat():
    a = gd.ones(10)
    with gd.trace() as tr:
        gd.benchmark(a.sum, n_warmup=3, n_repeat=4, n_calls=1)
    # after the warm-up, after each repeat, and after each measurement of an empty call
    assert tr.count("sync", "benchmark") == 1 + 4 + timing._OVERHEAD_REPEATS
    assert tr.count("op", "sum") == 3 + 4


def test_benchmark_result_str_and_dict():
    r = gd.benchmark(gd.matmul, gd.ones((32, 32)), gd.ones((32, 32)), n_repeat=7)
    line = str(r)
    assert "\n" not in line
    assert line.startswith("matmul  n=7  median ")
    assert "(min " in line and ", max " in line
    assert r.stop_reason == "n_repeat=7 repeats reached" and "stopped: n_repeat=7 repeats reached" in line
    d = r.to_dict()
    assert d["n"] == 7 and len(d["cpu_times"]) == 7
    json.dumps(d)


def test_benchmark_names_partials_and_lambdas():
    import functools

    assert gd.benchmark(functools.partial(time.sleep, 0), n_repeat=1).name == "sleep"
    assert gd.benchmark(lambda: None, n_repeat=1).name == "<lambda>"


def test_benchmark_bad_input():
    with pytest.raises(TypeError, match="benchmark: fn must be callable"):
        gd.benchmark(3)
    with pytest.raises(ValueError, match="benchmark: n_repeat must be an int >= 1 or None, got 0"):
        gd.benchmark(time.sleep, 0, n_repeat=0)
    with pytest.raises(ValueError, match="benchmark: n_warmup must be an int >= 0, got -1"):
        gd.benchmark(time.sleep, 0, n_warmup=-1)
    with pytest.raises(ValueError, match="benchmark: max_duration must be a number of seconds > 0"):
        gd.benchmark(time.sleep, 0, max_duration=0)
    with pytest.raises(ValueError, match="benchmark: bad entry 'gpu7'"):
        gd.benchmark(time.sleep, 0, devices=["gpu7"])


@pytest.mark.parametrize("value", [float("nan"), 0, -1.0, True, "1"])
def test_benchmark_refuses_a_bad_max_duration(value):
    with pytest.raises(ValueError, match="benchmark: max_duration must be a number of seconds > 0"):
        gd.benchmark(time.sleep, 0, max_duration=value)
    with pytest.raises(ValueError, match="benchmark: max_duration must be a number of seconds > 0"):
        gd.benchmark(time.sleep, 0, n_repeat=3, max_duration=value)


def test_benchmark_refuses_an_endless_run():
    calls = []
    with pytest.raises(ValueError, match=r"benchmark: max_duration=inf with n_repeat=None would never stop; "
                                         r"give a finite max_duration or an n_repeat"):
        gd.benchmark(calls.append, 1, max_duration=float("inf"))
    assert calls == []  # refused before the warm-up
    r = gd.benchmark(lambda: None, n_repeat=3, max_duration=float("inf"))  # n_repeat bounds it
    assert r.n == 3


def test_benchmark_bad_n_calls():
    for value in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=r"benchmark: n_calls must be an int >= 1 or None"):
            gd.benchmark(time.sleep, 0, n_calls=value)


class FakeClock:
    """perf_counter for benchmark(): time moves only when the timed function calls tick()."""

    def __init__(self, per_call: float) -> None:
        self.now, self.per_call, self.calls = 0.0, per_call, 0

    def __call__(self) -> float:
        return self.now

    def tick(self) -> None:
        self.now += self.per_call
        self.calls += 1


@pytest.fixture
def fake_clock(monkeypatch):
    clock = FakeClock(2.0**-19)  # about 1.9 us; powers of two keep the sums exact
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    return clock


def test_benchmark_batches_tiny_calls_like_autorange(fake_clock):
    r = gd.benchmark(fake_clock.tick, n_warmup=0, n_repeat=4)
    # 1, 2, 5, ... calls until a batch lasts _MIN_REPEAT_S = 1 ms: 500 calls take 0.95 ms,
    # 1000 take 1.9 ms; that batch is the first of the 4 repeats
    assert r.n_calls == 1000 and r.n == 4
    assert r.times == [2.0**-19] * 4 and r.median == 2.0**-19
    assert r.overhead == 0.0  # an empty call costs no fake time
    assert "1,000 calls per repeat" in str(r)
    assert fake_clock.calls == sum((1, 2, 5, 10, 20, 50, 100, 200, 500)) + 4 * 1000


def test_benchmark_n_repeat_and_max_duration_are_both_limits(fake_clock):
    fake_clock.per_call = 2.0**-9  # about 2 ms: one call is a whole repeat
    r = gd.benchmark(fake_clock.tick, n_warmup=0, n_repeat=10**9, max_duration=0.25)
    assert r.n_calls == 1 and r.n == 128  # 0.25 s / 2**-9 s: max_duration ended it, not n_repeat
    r = gd.benchmark(fake_clock.tick, n_warmup=0, n_repeat=5, max_duration=0.25)
    assert r.n == 5  # n_repeat ended it
    r = gd.benchmark(fake_clock.tick, n_warmup=0, n_calls=4, max_duration=0.25)
    assert r.n_calls == 4 and r.n == 32 and r.median == 2.0**-9


def test_benchmark_reports_the_empty_call_overhead():
    a = gd.ones((4, 4))
    r = gd.benchmark(a.sum, max_duration=0.05)
    assert r.overhead > 0 and r.n_calls >= 1
    assert "empty call" in str(r) and r.to_dict()["overhead"] == r.overhead


def test_benchmark_refuses_a_missing_gpu_before_running_anything():
    n = gd.num_gpus()
    calls = []
    with pytest.raises(gd.DeviceUnavailableError, match=re.escape(f"benchmark: cannot time cuda:{n}: {gpus_here()}")):
        gd.benchmark(calls.append, 1, n_warmup=3, n_repeat=1, devices=[f"cuda:{n}"])
    assert calls == []


def test_benchmark_with_cpu_device_uses_the_host_clock():
    r = gd.benchmark(time.sleep, 0, n_repeat=2, devices="cpu")
    assert r.clock == "host" and r.gpu_times == {}


@pytest.mark.gpu
def test_benchmark_times_the_gpu_with_events(cuda0):
    a = gd.randn(*(2 * [256 if cuda0.emulated else 1024]), device=cuda0)  # emulated: the CPU's speed
    r = gd.benchmark(gd.matmul, a, a, n_repeat=5)
    assert r.clock == "gpu"
    assert list(r.gpu_times) == ["cuda:0"]
    gpu = r.gpu_times["cuda:0"]
    assert len(gpu) == 5 and all(t > 0 for t in gpu)
    assert r.times == gpu
    assert "gpu cuda:0" in str(r)
    assert _C._pending_devices() == []


@pytest.mark.gpu
def test_benchmark_devices_argument_times_that_gpu(cuda0):
    a = gd.randn(256, 256, device=cuda0)
    r = gd.benchmark(gd.matmul, a, a, n_warmup=0, n_repeat=3, devices=[cuda0])
    assert list(r.gpu_times) == ["cuda:0"] and len(r.gpu_times["cuda:0"]) == 3


# ---------------------------------------------------------------------------------------------
# run_rounds: the loop behind benchmark(), assert_faster, the bench and the exercises
# ---------------------------------------------------------------------------------------------


class Ticks:
    """A clock passed to run_rounds: it moves only when a timed function says how long it took."""

    def __init__(self) -> None:
        self.now, self.log = 0.0, []

    def __call__(self) -> float:
        return self.now

    def work(self, name: str, seconds: float, **kwargs) -> timing.Work:
        def call() -> None:
            self.log.append(name)
            self.now += seconds
        return timing.Work(timing.calls_of(call), **kwargs)


def test_rounds_rotate_which_work_goes_first_and_report_per_call():
    clock = Ticks()
    works = [clock.work("a", 2.0**-10, n_calls=2), clock.work("b", 2.0**-8, n_calls=1), clock.work("c", 2.0**-9, n_calls=1)]
    r = timing.run_rounds(works, n_warmup=1, n_repeat=3, devices=[], clock=clock)
    assert clock.log[:3] == ["a", "b", "c"]  # the warm-up, one call each
    firsts = [clock.log[3:][i * 4] for i in range(3)]  # a round is 2 + 1 + 1 calls
    assert firsts == ["a", "b", "c"] and r.stop_reason == "n_repeat=3 repeats reached"
    assert r.n_calls == [2, 1, 1] and r.times == [[2.0**-10] * 3, [2.0**-8] * 3, [2.0**-9] * 3]
    assert r.host_times(0) == r.times[0] and r.gpu_times(0) == {}
    assert r.empty_call(0) == 0.0  # an empty call costs no time on this clock


def test_rounds_stop_on_the_budget_only_after_min_rounds():
    clock = Ticks()
    r = timing.run_rounds([clock.work("a", 1.0, n_calls=1)], n_repeat=10, max_duration=0.5, min_rounds=3,
                          devices=[], clock=clock)
    assert len(r.times[0]) == 3 and r.stop_reason == "max_duration=0.5 s spent"
    # a budget counted from an earlier reading of the clock is spent sooner
    clock.now = 10.0
    r = timing.run_rounds([clock.work("a", 1.0, n_calls=1)], n_repeat=10, max_duration=2.5, started=8.0,
                          devices=[], clock=clock)
    assert len(r.times[0]) == 1


def test_rounds_stop_when_until_gives_a_reason():
    clock = Ticks()
    seen = []

    def until(times: list[list[float]]) -> str | None:
        seen.append([len(t) for t in times])
        return "enough" if len(times[1]) == 4 else None

    r = timing.run_rounds([clock.work("a", 1e-3, n_calls=1), clock.work("b", 1e-3, n_calls=1)], until=until,
                          devices=[], clock=clock)
    assert r.stop_reason == "enough" and seen == [[1, 1], [2, 2], [3, 3], [4, 4]]


def test_rounds_size_batches_and_keep_the_sizing_batch_only_when_asked():
    clock = Ticks()
    sized = timing.run_rounds([clock.work("a", 2.0**-12)], n_repeat=2, keep_sizing=True, devices=[], clock=clock)
    dropped = timing.run_rounds([clock.work("a", 2.0**-12)], n_repeat=2, devices=[], clock=clock)
    # 1, 2, 5 calls until a batch lasts _MIN_REPEAT_S: 5 x 2**-12 s = 1.2 ms
    assert sized.n_calls == dropped.n_calls == [5]
    assert len(sized.samples[0]) == len(dropped.samples[0]) == 2
    assert clock.log.count("a") == 2 * (1 + 2 + 5) + 5 + 2 * 5  # kept sizing batch: one round fewer to run
    with pytest.raises(ValueError, match="keep_sizing counts the sizing batch as a round of one Work, got 2"):
        timing.run_rounds([clock.work("a", 1.0), clock.work("b", 1.0)], keep_sizing=True, devices=[])


def test_rounds_wait_with_each_works_own_sync_and_take_a_figure_found_another_way():
    clock, waits = Ticks(), []
    works = [clock.work("a", 1.0, n_calls=3, sync=lambda: waits.append("a")),
             timing.Work(timing.calls_of(lambda: None), n_calls=3, seconds=lambda n: 0.5 * n)]
    r = timing.run_rounds(works, n_repeat=2, devices=[], clock=clock)
    assert waits == ["a"] * 3  # after the warm-up and after each of its batches
    assert r.times == [[1.0, 1.0], [0.5, 0.5]]
