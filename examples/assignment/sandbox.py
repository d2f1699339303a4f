"""The grader's side of runner.py: a graded file in a process of its own.

``Graded(path, "the submission", timeout=60)`` starts ``python runner.py path`` in a new
process group and ``graded.train(seed, device, steps, lr)`` sends one request and returns the
reply; each call may take `timeout` seconds, the start (importing gpudev and the file, and the
first use of each device) at least START_TIMEOUT. What can go wrong in that process becomes a
``SubmissionError`` naming it, for the test that asked: an exception in ``train``, a file
that does not import, a process that ends (``os._exit``, a crash: the exit code or the
signal, and the end of its stderr) or does not answer in time (it is killed). A process that
ended is started again for the next request; a file that does not import is not tried again.

Between requests the process group is stopped (SIGSTOP), so a graded file cannot use the
machine while the other one is timed: no threads or child processes of its own left running.
"""

from __future__ import annotations

import json
import os
import pathlib
import select
import signal
import subprocess
import sys
import tempfile
import time

RUNNER = pathlib.Path(__file__).resolve().parent / "runner.py"
MAX_REPLY = 1 << 24  # bytes: a graded process cannot make the grader hold more
START_TIMEOUT = 60.0  # seconds, at least: a GPU's first use alone can take seconds


class SubmissionError(AssertionError):
    """What a graded file did wrong, worded for its grade."""


class _Ended(Exception):
    pass


class Graded:
    """A graded file (`path`) run by runner.py in a process of its own; `label` names it in
    messages ('the submission'); `timeout` bounds each call of train, in seconds."""

    def __init__(self, path: pathlib.Path, label: str, timeout: float) -> None:
        self.path, self.label, self.timeout = path, label, timeout
        self.proc: subprocess.Popen | None = None
        self.broken: str | None = None  # why the file cannot be graded at all (it did not import)
        self._ready = False  # the process said it imported the file
        self._pending = b""
        self._stderr = tempfile.TemporaryFile()

    # -- the process --------------------------------------------------------------------------

    def start(self) -> None:
        """Start the process (returns at once; the first request waits for it to be ready)."""
        if self.proc is not None or self.broken is not None:
            return
        if not self.path.is_file():
            self.broken = f"no file at {self.path}"
            return
        self._stderr.seek(0)
        self._stderr.truncate()
        self._pending = b""
        self.proc = subprocess.Popen([sys.executable, str(RUNNER), str(self.path)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True)
        self._ready = False

    def close(self) -> None:
        if self.proc is not None:
            self._signal(signal.SIGKILL)  # its children too, stopped or not
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
            self.proc = None

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:  # the group is gone: the process ended, the reply says how
            pass

    def _stderr_tail(self, lines: int = 6) -> str:
        self._stderr.seek(0)
        text = self._stderr.read().decode(errors="replace").strip().splitlines()[-lines:]
        return ("; its last output: " + " | ".join(text)) if text else ""

    def _how_it_ended(self, doing: str) -> str:
        try:
            code = self.proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:  # it closed its replies but goes on
            self._signal(signal.SIGKILL)
            code = self.proc.wait()
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        message = f"{self.label}'s process {how} during {doing}{self._stderr_tail()}"
        self.close()
        return message

    # -- the exchange -------------------------------------------------------------------------

    def _read_line(self, deadline: float) -> dict:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise _Ended
            self._pending += chunk
            if len(self._pending) > MAX_REPLY:
                raise SubmissionError(f"{self.label}'s process sent a reply of over {MAX_REPLY:,} bytes")
        line, _, self._pending = self._pending.partition(b"\n")
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise SubmissionError(f"{self.label}'s process sent something other than a reply: {line[:200]!r}")
        return reply

    def _exchange(self, request: dict | None, doing: str) -> dict:
        """Send `request` (None: only wait for the start's reply) and return the reply; the
        process runs only in between."""
        timeout = self.timeout if request is not None else max(self.timeout, START_TIMEOUT)
        self._signal(signal.SIGCONT)
        try:
            if request is not None:
                self.proc.stdin.write((json.dumps(request) + "\n").encode())
                self.proc.stdin.flush()
            reply = self._read_line(time.monotonic() + timeout)
        except (_Ended, BrokenPipeError):
            raise SubmissionError(self._how_it_ended(doing)) from None
        except TimeoutError:
            self.close()
            raise SubmissionError(f"{self.label} did not answer within {timeout:g} s during {doing}: "
                                  f"stopped{self._stderr_tail()}") from None
        except SubmissionError:  # not a reply: the exchange cannot go on with this process
            self.close()
            raise
        self._signal(signal.SIGSTOP)
        return reply

    def _ensure_ready(self) -> None:
        self.start()
        if self.broken is not None:
            raise SubmissionError(f"{self.label} cannot be graded: {self.broken}")
        if not self._ready:
            try:
                reply = self._exchange(None, f"the import of {self.path.name}")
            except SubmissionError as e:  # it would end the same way again
                self.broken = str(e)
                raise
            if "error" in reply:
                self.broken = reply["error"]
                self.close()
                raise SubmissionError(f"{self.label} cannot be graded: {self.broken}")
            self._ready = True

    def train(self, seed: int, device: str, steps: int, lr: float, *, events: bool = False) -> dict:
        """One call of the graded file's ``train`` on the problem of `seed` on `device`: the
        reply, ``{"losses": [...]}`` (with ``"events"``, the trace's syncs and copies, when
        asked). Raises SubmissionError for anything but an answer."""
        self._ensure_ready()
        try:
            reply = self._exchange({"seed": seed, "device": device, "steps": steps, "lr": lr, "events": events},
                                   "train")
        except SubmissionError:
            if self.proc is None and self.broken is None:
                self.start()  # the next request gets a fresh process
            raise
        if "error" in reply:
            raise SubmissionError(f"{self.label}: {reply['error']}")
        return reply
