"""Emulated GPUs that wait like a GPU: the bounded launch queue (a launch into a full queue
runs the oldest work first), Ctrl-C that stops a wait between blocks or product columns and
never half applies the work, blocks run in a seeded shuffled order, and work still queued at
exit reported on stderr.

Each check runs a fresh Python with emulated GPUs selected in its environment, as
tests/test_emulation.py does. The Ctrl-C checks decide by the exception and the values only:
the emulation's test hold (``_cuda_emu.hold_after_steps``) pauses the main thread's wait after
a number of blocks or columns, a thread sends SIGINT once it pauses, and the wait goes on only
when the signal has arrived, so it always lands inside the wait, however slow the machine.
"""

from __future__ import annotations

import re

import pytest

import gpudev as gd
from test_emulation import lines, run

pytestmark = pytest.mark.skipif(not gd.build_info()["cuda"]["emulation_built"],
                                reason="built without emulated GPUs (GPUDEV_CUDA_EMU=0)")
pytest_plugins = ["pytester"]

# ---------------------------------------------------------------------------------------------
# the bounded queue
# ---------------------------------------------------------------------------------------------

QUEUE_LOOP = """
    import gpudev as gd
    from gpudev import emulation
    a = gd.zeros(10_000, device="cuda:0")
    a.cpu()
    seen = []
    for _ in range(200):
        a = a + 1
        seen.append(emulation.pending_operations())   # sampled by the launching thread
    print(emulation.settings()["queue"], max(seen), seen[-1])
    print(a.cpu().numpy().min(), a.cpu().numpy().max(), emulation.pending_operations())
"""


def test_the_launching_loop_blocks_at_the_default_bound():
    # 200 launches without a wait, never more than 32 queued: the loop ran the rest itself
    assert lines(QUEUE_LOOP, GPUDEV_EMULATE_GPUS="1") == ["32 32 32", "200.0 200.0 0"]


@pytest.mark.parametrize("queue, expected", [("5", "5 5 5"), ("0", "0 200 200")])
def test_the_bound_is_a_setting(queue, expected):
    out = lines(QUEUE_LOOP, GPUDEV_EMULATE_GPUS="1", GPUDEV_EMULATE_GPU_QUEUE=queue)
    assert out == [expected, "200.0 200.0 0"]  # 0: no bound, everything waits for the read


# ---------------------------------------------------------------------------------------------
# Ctrl-C: stops the wait, never half applies the work
# ---------------------------------------------------------------------------------------------

# Python's own handler, as in a terminal: a test run started in the background inherits SIGINT
# ignored, and then a SIGINT would do nothing (tests/test_ingest.py does the same)
CTRL_C = """
    import signal, threading, time
    import numpy as np
    import gpudev as gd
    from gpudev import emulation, _cuda_emu
    signal.signal(signal.SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident

    def ctrl_c_after(steps):
        _cuda_emu.hold_after_steps(steps)   # the next wait pauses after `steps` blocks or columns

        def send():
            deadline = time.monotonic() + 120   # only so that a broken hold fails instead of hanging
            while not _cuda_emu.held() and time.monotonic() < deadline:
                time.sleep(0.001)
            signal.pthread_kill(main, signal.SIGINT)

        thread = threading.Thread(target=send, daemon=True)
        thread.start()
        return thread

    x = np.random.default_rng(0).standard_normal((96, 96)).astype(np.float32)
    a = gd.array(x, device="cuda:0")
"""


@pytest.mark.parametrize("wait", ["gd.synchronize()", "b[3, 5].item()", "b.cpu()"])
def test_ctrl_c_stops_a_wait_inside_a_product_and_the_next_wait_finishes_it(wait):
    out = lines(CTRL_C + f"""
    b = a @ a + 1                      # queued: a product of 96 columns, then a kernel
    sender = ctrl_c_after(10)          # Ctrl-C after 10 of the columns
    try:
        {wait}
        print("waited")
    except KeyboardInterrupt:
        print("interrupted, still queued:", emulation.pending_operations() > 0)
    sender.join()
    print(np.allclose(b.cpu().numpy(), x @ x + 1, rtol=1e-4, atol=1e-4), emulation.pending_operations())
    print(np.allclose((b * 2).cpu().numpy(), 2 * (x @ x + 1), rtol=1e-4, atol=1e-4))
    """, GPUDEV_EMULATE_GPUS="1")
    assert out == ["interrupted, still queued: True", "True 0", "True"]


def test_ctrl_c_stops_a_wait_between_the_blocks_of_a_kernel():
    out = lines(CTRL_C + """
    big = gd.arange(1_000_000.0, device="cuda:0")
    big.cpu()
    c = big * 3                         # one launch of many blocks, the only work queued
    sender = ctrl_c_after(3)
    try:
        gd.synchronize()
    except KeyboardInterrupt:
        print("interrupted", emulation.pending_operations())
    sender.join()
    print(np.array_equal(c.cpu().numpy(), np.arange(1_000_000.0, dtype=np.float32) * 3))
    """, GPUDEV_EMULATE_GPUS="1")
    assert out == ["interrupted 1", "True"]


def test_ctrl_c_stops_a_launch_blocked_on_the_full_queue_between_whole_operations():
    out = lines(CTRL_C + """
    ones = gd.ones((48, 48), device="cuda:0")
    acc = gd.zeros((48, 48), device="cuda:0")
    acc.cpu()
    done = 0
    sender = ctrl_c_after(200)         # the first waits are launches blocked on the queue of 4
    try:
        for _ in range(10_000):
            acc += ones @ ones
            done += 1
        print("never interrupted")
    except KeyboardInterrupt:          # queued over the bound: the launch returned at once
        print("interrupted, over the bound:", emulation.pending_operations() > emulation.settings()["queue"])
    sender.join()
    v = acc.cpu().numpy()
    # every element saw the same whole number of products: none was half applied
    print(bool(np.all(v == v.flat[0])), v.flat[0] / 48 in (done, done + 1), done > 0)
    """, GPUDEV_EMULATE_GPUS="1", GPUDEV_EMULATE_GPU_QUEUE="4")
    assert out == ["interrupted, over the bound: True", "True True True"]


def test_a_wait_with_sigint_ignored_is_not_interrupted():
    # SIGINT ignored (a background job): the wait neither pauses nor stops
    out = lines("""
    import signal
    import numpy as np
    import gpudev as gd
    from gpudev import emulation, _cuda_emu
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    a = gd.ones((32, 32), device="cuda:0")
    b = a @ a
    _cuda_emu.hold_after_steps(1)
    gd.synchronize()
    print(_cuda_emu.held(), emulation.pending_operations(), float(b.sum().item()))
    """, GPUDEV_EMULATE_GPUS="1")
    assert out == ["False 0 32768.0"]


# ---------------------------------------------------------------------------------------------
# blocks in any order
# ---------------------------------------------------------------------------------------------

BLOCK_ORDER = """
    import os
    import gpudev as gd
    from gpudev import _cuda_emu
    ran, chain = _cuda_emu.block_order_probe(64)   # block b continues block b - 1's chain, unordered
    print(gd.emulation.settings()["block_order"], os.environ.get("GPUDEV_EMULATE_BLOCK_ORDER"))
    print(sorted(ran) == list(range(64)), ran == list(range(64)), chain == list(range(1, 65)))
    print(ran)
"""


def test_a_kernel_that_depends_on_block_order_passes_in_index_order():
    out = lines(BLOCK_ORDER, GPUDEV_EMULATE_GPUS="1")
    assert out[:2] == ["index None", "True True True"]


def test_the_same_kernel_fails_under_the_shuffle_which_its_seed_repeats():
    first = lines(BLOCK_ORDER, GPUDEV_EMULATE_GPUS="1", GPUDEV_EMULATE_BLOCK_ORDER="shuffle:1234")
    again = lines(BLOCK_ORDER, GPUDEV_EMULATE_GPUS="1", GPUDEV_EMULATE_BLOCK_ORDER="shuffle:1234")
    other = lines(BLOCK_ORDER, GPUDEV_EMULATE_GPUS="1", GPUDEV_EMULATE_BLOCK_ORDER="shuffle:99")
    # every block ran once, not in index order, and the chain broke
    assert first[:2] == ["shuffle:1234 shuffle:1234", "True False False"]
    assert again == first and other[1] == "True False False" and other[2] != first[2]


def test_a_drawn_seed_is_reported_and_passed_on_to_child_processes():
    out = lines(BLOCK_ORDER, GPUDEV_EMULATE_GPUS="1", GPUDEV_EMULATE_BLOCK_ORDER="shuffle")
    m = re.fullmatch(r"(shuffle:\d+) (shuffle:\d+)", out[0])
    assert m and m.group(1) == m.group(2) and out[1] == "True False False"


def test_results_are_right_in_a_shuffled_order():
    out = lines("""
    import numpy as np
    import gpudev as gd
    x = np.random.default_rng(1).standard_normal((300, 500)).astype(np.float32)
    a = gd.array(x, device="cuda:0")
    print(np.allclose(a.sum(axis=1).cpu().numpy(), x.sum(axis=1), rtol=1e-4, atol=1e-3),
          np.allclose(a.sum(axis=0).cpu().numpy(), x.sum(axis=0), rtol=1e-4, atol=1e-3),
          int(a.argmax().item()) == int(x.argmax()), np.array_equal(a[a > 1].cpu().numpy(), x[x > 1]))
    """, GPUDEV_EMULATE_GPUS="1", GPUDEV_EMULATE_BLOCK_ORDER="shuffle:7", GPUDEV_EMULATE_GPU_MULTIPROCESSORS="132")
    assert out == ["True True True True"]


def test_the_pytest_plugin_prints_the_seed_of_a_failed_run(pytester, monkeypatch):
    monkeypatch.setenv("GPUDEV_EMULATE_GPUS", "1")
    monkeypatch.setenv("GPUDEV_EMULATE_BLOCK_ORDER", "shuffle:4321")
    pytester.makepyfile("""
        import gpudev as gd

        def test_fails():
            assert gd.ones(3, device="cuda:0").sum().item() == 4
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*blocks ran in a shuffled order*GPUDEV_EMULATE_BLOCK_ORDER=shuffle:4321*"])


# ---------------------------------------------------------------------------------------------
# work left at exit
# ---------------------------------------------------------------------------------------------

LEFT = """
    import gpudev as gd
    from gpudev import emulation
    a = gd.ones(1000, device="cuda:0")
    a.cpu()
    b = a + 1
    c = b * 2
    print(emulation.pending_operations())
"""


def test_work_still_queued_at_exit_is_reported_with_its_count():
    out = run(LEFT, GPUDEV_EMULATE_GPUS="1")
    n = int(out.stdout.split()[0])
    assert n > 0
    assert (f"cuda_emu: {n} operations (kernels, products, copies) still queued on emulated GPUs at exit never "
            "ran: nothing waited for them") in out.stderr


def test_nothing_is_reported_when_the_work_was_waited_for():
    out = run(LEFT + "    print(c.cpu().tolist()[:2])\n", GPUDEV_EMULATE_GPUS="1")
    assert out.stdout.split()[1:] == ["[4.0,", "4.0]"] and "cuda_emu" not in out.stderr
