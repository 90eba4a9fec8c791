"""Waiting for a device without losing Ctrl-C.

A driver's blocking wait (``clFinish``, a blocking read, ``cuStreamSynchronize``)
runs in C for as long as the device works, and Python handles a signal only
when it regains control, so Ctrl-C during a long kernel waited for the kernel.
Runtimes therefore wait through :func:`wait_blocking`: on the main thread (the
one signals are delivered to) the blocking call runs on a helper thread while
the main thread waits on a lock, which a signal interrupts, so Ctrl-C raises
KeyboardInterrupt at once.  The device work itself goes on (no driver can
cancel a running kernel); the helper finishes the call on its own, keeping
what it uses (a host buffer being copied into) alive until then.

Polling the driver's completion status instead was measured far slower on the
Intel OpenCL CPU runtime (each status query takes about as long as the wait);
the hand-over to a helper thread costs some tens of microseconds per wait.
Other threads call the driver directly.  At exit, calls left running by an
interrupted wait are waited for (a thread inside a driver while the process
tears the driver down can crash it); a runtime with exit work of its own that
must come after them calls :func:`wait_for_abandoned` first.
"""

from __future__ import annotations

import atexit
import queue
import sys
import threading

__all__ = ["wait_blocking", "wait_for_abandoned"]

_idle: list = []  # helper threads waiting for work
_abandoned: list = []  # jobs whose caller was interrupted, until they finish


class _Job:
    __slots__ = ("fn", "done", "lock", "result", "error", "finished", "abandoned")

    def __init__(self, fn):
        self.fn = fn
        self.done = threading.Lock()
        self.done.acquire()
        self.lock = threading.Lock()
        self.result = self.error = None
        self.finished = self.abandoned = False


class _Helper:
    def __init__(self):
        self.jobs = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="numba-gpux-wait", daemon=True).start()

    def _loop(self):
        while True:
            job = self.jobs.get()
            try:
                job.result = job.fn()
            except BaseException as e:  # handed to the waiting thread
                job.error = e
            job.fn = None
            with job.lock:
                job.finished = True
                abandoned = job.abandoned
            job.done.release()
            if abandoned:  # the caller was interrupted: this helper is free again only now
                try:
                    _abandoned.remove(job)
                except ValueError:
                    pass
                _idle.append(self)


def wait_blocking(fn):
    """``fn()`` (a blocking driver call), such that a signal such as Ctrl-C raises in
    the calling (main) thread at once instead of when ``fn`` returns."""
    if threading.current_thread() is not threading.main_thread():
        return fn()
    try:
        helper = _idle.pop()
    except IndexError:
        helper = _Helper()
    job = _Job(fn)
    helper.jobs.put(job)
    try:
        job.done.acquire()  # interruptible by signals (POSIX)
    except BaseException:
        with job.lock:
            job.abandoned = not job.finished
            back = job.finished
            if job.abandoned:
                _abandoned.append(job)
        if back:
            _idle.append(helper)
        raise
    _idle.append(helper)
    if job.error is not None:
        raise job.error
    return job.result


@atexit.register
def wait_for_abandoned() -> None:
    """Wait for the driver calls that interrupted waits left running (at exit; also
    for a runtime's own exit handler that must run after them)."""
    jobs = [j for j in list(_abandoned) if not j.finished]
    if not jobs:
        return
    print(f"numba_gpux: waiting for {len(jobs)} device command(s) an interrupted wait left "
          f"running (a running kernel cannot be cancelled)", file=sys.stderr)
    for job in jobs:
        job.done.acquire()
        job.done.release()  # finished: a later call does not wait for it again
