"""The one name of a device that people read: gd.device_label ('cuda:0 (emulated)' for an
emulated GPU) in reprs, tables, benchmark results, trace tables and error messages, the C
core's messages included, while str(device) stays the identifier 'cuda:0'. Also the one
wording of a missing GPU, said once, and the command line's usage line.

The emulated checks run a fresh Python with GPUDEV_EMULATE_GPUS set (it is read at import),
so they run in `make test` as well as in `make test-gpu-emu`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import gpudev as gd
from gpudev._devices import EMULATED_MARK, device_label, gpus_here, no_gpu_reason

emulation_built = pytest.mark.skipif(not gd.build_info()["cuda"]["emulation_built"],
                                     reason="built without emulated GPUs (GPUDEV_CUDA_EMU=0)")


def emulated(code: str, gpus: str = "2") -> list[str]:
    """The lines `code` prints in a Python with `gpus` emulated GPUs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDEV_EMULATE")}
    env.update(GPUDEV_EMULATE_GPUS=gpus, GPUDEV_EMULATE_GPU_MEMORY="8GiB")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_labels_from_a_report_name_each_device_of_a_pair():
    fake = {"cuda:0", "cuda:1"}
    assert device_label("cpu", fake) == "cpu"
    assert device_label("cuda:1", fake) == "cuda:1" + EMULATED_MARK
    assert device_label("cuda:0+cuda:1", fake) == "cuda:0 (emulated)+cuda:1 (emulated)"
    assert device_label("cuda:2", fake) == "cuda:2"
    assert device_label("not a device") == "not a device"


def test_a_real_device_is_named_by_its_identifier():
    assert gd.device_label(gd.cpu()) == str(gd.cpu()) == "cpu"
    assert gd.device_label("cuda:3") == "cuda:3" or gd.emulation.active()
    assert repr(gd.ones(2, dtype=gd.float64)) == "Array([1., 1.], dtype=float64)"


@emulation_built
def test_an_emulated_gpu_says_so_wherever_people_read_its_name():
    out = emulated("""
        import numpy as np
        import gpudev as gd
        d = gd.gpu(1)
        a = gd.ones(2, device=d)
        print(str(d), d == "cuda:1", gd.device_label(d))
        print(repr(a))
        r = gd.benchmark(a.sum, n_repeat=3, max_duration=0.5)
        print(str(r))
        print(repr(r))
        with gd.trace() as tr:
            a.sum().item()
        print(tr.table(events=True))
        for call in (lambda: a + gd.ones(2), lambda: np.asarray(a), lambda: a[gd.array([0], device="cuda:0")],
                     lambda: gd.concatenate([a, gd.ones(2)]), lambda: gd.nn.MSELoss()(a, gd.ones(2)),
                     lambda: memoryview(a), lambda: gd.zeros(2, device="cuda:5")):
            try:
                call()
            except Exception as exc:
                print("error:", exc)
    """)
    assert out[0] == "cuda:1 True cuda:1 (emulated)"  # str() is the identifier, as PyTorch's
    assert out[1] == "Array([1., 1.], device='cuda:1 (emulated)')"
    assert "gpu cuda:1 (emulated) " in out[2] and "note: timed on cuda:1 (emulated): an emulated GPU's times" in out[2]
    assert "timed on cuda:1 (emulated)" in out[3]  # the notes are in the repr too
    table = "\n".join(out[4:-7])
    assert "sum                  cuda:1 (emulated)" in table and "sync  item           cuda:1 (emulated)" in table
    errors = out[-7:]
    assert errors[0] == ("error: add: operands are on different devices, cuda:1 (emulated) and cpu; copy one of "
                         "them first, e.g. b.to('cuda:1')")
    assert errors[1].startswith("error: __array__: the array is on cuda:1 (emulated) and NumPy")
    assert errors[2].startswith("error: getitem: the index is on cuda:0 (emulated) but the array is on cuda:1 "
                                "(emulated);") and errors[2].endswith("idx.to('cuda:1')")
    assert "cuda:1 (emulated) (index 0) and cpu (index 1)" in errors[3] and errors[3].endswith(".to('cuda:1')")
    assert errors[4].startswith("error: MSELoss: pred is on cuda:1 (emulated) but target is on cpu")
    assert errors[5] == ("error: the array is on cuda:1 (emulated); only CPU arrays export their memory. Copy it "
                         "first with a.cpu()")
    # a GPU that is not there is no emulated one; the machine's GPUs are
    assert errors[6] == ("error: zeros: cuda:5 is not available: this machine has 2 emulated GPUs; use "
                         "gd.try_gpu(5) to fall back to the CPU")


@emulation_built
def test_info_and_python_m_help_name_every_device_and_command():
    out = emulated("""
        import gpudev as gd
        from gpudev.__main__ import info_text
        print(info_text(gd))
    """)
    rows = [line for line in out if line.startswith("| cuda:")]
    assert [r.split("|")[1].strip() for r in rows] == ["cuda:0 (emulated)", "cuda:1 (emulated)"]
    usage = subprocess.run([sys.executable, "-m", "gpudev", "--help"], capture_output=True, text=True, timeout=120)
    assert usage.returncode == 0
    assert usage.stdout.splitlines()[0] == "usage: python -m gpudev [-h] {info,bench,exercises,referee}"


@pytest.mark.skipif(gd.num_gpus() > 0, reason="the message of a machine without a GPU")
def test_no_gpu_is_worded_once_and_alike_in_c_and_python():
    reason = no_gpu_reason()
    assert reason.startswith("this machine has no usable GPU (") and reason == gpus_here()
    with pytest.raises(gd.DeviceUnavailableError) as c_side:
        gd.zeros(2, device="cuda:0")
    with pytest.raises(gd.DeviceUnavailableError) as python_side:
        gd.cuda.memory_allocated()
    assert str(c_side.value) == f"zeros: cuda:0 is not available: {reason}; use gd.try_gpu(0) to fall back to the CPU"
    assert str(python_side.value) == (f"cuda.memory_allocated: cuda:0 is not available: {reason}; check "
                                      f"gd.cuda.device_count() first")
    assert str(python_side.value).count("no usable GPU") == 1
