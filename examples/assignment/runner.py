"""The process a graded file runs in: ``python runner.py FILE`` imports FILE (a student's
submission or the reference solution) and answers the grader's requests, one JSON line each
way, until its input ends:

    request  {"seed": 1234, "device": "cuda:0", "steps": 20, "lr": 0.05, "events": true}
    reply    {"losses": [...], "events": [[kind, name, device, ...], ...]}   or   {"error": "..."}

For each request it builds the problem of that seed on that device (the same weights and data
the grader's NumPy check starts from), calls ``train`` inside ``gd.trace()`` (every call, timed
ones included), waits for the device, and replies with the losses and, when asked, the
synchronizations and copies the trace recorded. Nothing of the grader runs here: whatever FILE
does (patching gpudev, ``os._exit``, a crash) stays in this process, and the grader reads only
JSON from it.
"""

from __future__ import annotations

import importlib.util
import json
import numbers
import os
import pathlib
import signal
import sys
import traceback

import numpy as np

SIZES, N = (10, 64, 10), 256  # an MLP 10 -> 64 -> 10 on 256 samples


def arrays(seed: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """The problem of `seed`, in NumPy: the starting weights (w1, b1, w2, b2) and the data X, Y."""
    rng = np.random.default_rng(seed)
    weights = [rng.normal(0, 0.3, (SIZES[1], SIZES[0])), rng.normal(0, 0.1, SIZES[1]),
               rng.normal(0, 0.3, (SIZES[2], SIZES[1])), rng.normal(0, 0.1, SIZES[2])]
    X = rng.normal(size=(N, SIZES[0]))
    Y = np.sin(X @ rng.normal(size=(SIZES[0], SIZES[2])))
    return [w.astype(np.float32) for w in weights], X.astype(np.float32), Y.astype(np.float32)


def _where(error: BaseException, path: str) -> str:
    """' (at FILE:LINE)' for the last frame of the traceback in the graded file."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
    return f" (at {pathlib.Path(path).name}:{frames[-1].lineno})" if frames else ""


def _describe(error: BaseException, path: str) -> str:
    return f"{type(error).__name__}: {error}{_where(error, path)}"


def _losses(value: object, steps: int) -> list[float]:
    if not isinstance(value, list) or len(value) != steps:
        raise TypeError(f"train must return a list of {steps} floats (one loss per step), got "
                        f"{type(value).__name__}{f' of length {len(value)}' if isinstance(value, list) else ''}")
    if not all(isinstance(x, numbers.Real) and not isinstance(x, bool) for x in value):
        bad = next(x for x in value if not isinstance(x, numbers.Real) or isinstance(x, bool))
        raise TypeError(f"train must return a list of floats, got an element of type {type(bad).__name__}")
    return [float(x) for x in value]


def _end_with_the_grader() -> None:
    """Linux: be killed when the grader ends, even while stopped (sandbox.py stops this
    process between requests, and a stopped process waits for ever)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the grader kills it when it closes
        pass


def main(path: str) -> int:
    _end_with_the_grader()
    # Replies go through a private copy of stdout; the graded file's prints go to stderr and
    # its reads of stdin find nothing, so neither can garble the exchange by accident.
    requests, replies = os.fdopen(os.dup(0), "r"), os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    sys.path[0] = str(pathlib.Path(path).parent)  # the graded file's folder, not the grader's

    def send(message: dict) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    import gpudev as gd
    from gpudev import nn

    # Bound before the graded file runs: rebinding gd.trace or gd.synchronize later changes
    # nothing here (what a graded file can still do in its own process: README, "For course
    # staff").
    trace, synchronize, Device, array, no_grad = gd.trace, gd.synchronize, gd.Device, gd.array, gd.no_grad
    Sequential, Linear, ReLU = nn.Sequential, nn.Linear, nn.ReLU
    for i in range(gd.num_gpus()):  # a GPU's first use (its context) belongs to the start, not to a call
        array(np.zeros(1, np.float32), device=gd.gpu(i)).tolist()

    def problem(seed: int, device: gd.Device) -> tuple:
        weights, X, Y = arrays(seed)
        model = Sequential(Linear(SIZES[0], SIZES[1], device=device), ReLU(), Linear(SIZES[1], SIZES[2], device=device))
        with no_grad():
            for p, w in zip(model.parameters(), weights):
                p[...] = array(w, device=device)
        return model, array(X, device=device), array(Y, device=device)

    def serve(request: dict, train) -> dict:
        model, X, Y = problem(request["seed"], Device(request["device"]))
        with trace() as tr:
            value = train(model, X, Y, steps=request["steps"], lr=request["lr"])
        reply: dict = {"losses": _losses(value, request["steps"])}
        synchronize()  # work still queued counts in this call's time
        if request.get("events"):
            reply["events"] = [list(e) for e in tr.events if e.kind != "op"]
        return reply

    try:
        spec = importlib.util.spec_from_file_location("submission", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["submission"] = module
        spec.loader.exec_module(module)
        train = module.train
    except BaseException as e:  # noqa: BLE001 - a graded file may raise anything, pytest.skip included
        send({"error": f"importing {pathlib.Path(path).name} raised {_describe(e, path)}"})
        return 1
    send({"ready": True})
    for line in requests:
        try:
            reply = serve(json.loads(line), train)
        except BaseException as e:  # noqa: BLE001 - SystemExit and pytest's outcomes too
            reply = {"error": f"train raised {_describe(e, path)}"}
        send(reply)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
