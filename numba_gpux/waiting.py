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

Polling the driver's completion status instead of waiting was measured far slower
on the Intel OpenCL CPU runtime (the polling thread takes a core from the driver's);
the hand-over to a helper thread costs some tens of microseconds per wait, so a
runtime that can ask whether the work is already done passes that query, and work
that is done is not handed over.
Other threads call the driver directly, and so does the main thread inside
:func:`short`, where the caller knows the work waited for is short.  At exit,
calls left running by an interrupted wait are waited for (a thread inside a
driver while the process tears the driver down can crash it); a runtime with
exit work of its own that must come after them calls :func:`wait_for_abandoned`
first.
"""

from __future__ import annotations

import atexit
import contextlib
import queue
import sys
import threading

__all__ = ["wait_blocking", "wait_for_abandoned", "short"]

_idle: list = []  # helper threads waiting for work
_abandoned: list = []  # jobs whose caller was interrupted, until they finish
_local = threading.local()  # .short: within short() on this thread


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


def wait_blocking(fn, done=None):
    """``fn()`` (a blocking driver call), such that a signal such as Ctrl-C raises in
    the calling (main) thread at once instead of when ``fn`` returns.

    *done*, where the driver has one, is a cheap query of whether the work ``fn`` waits
    for has already completed (an event's status): asked once, and where it says so,
    ``fn()`` returns at once and is called here, without the hand-over.  Short work is
    usually complete by the time its result is read, and the hand-over costs more than
    the work (about 45 us against a 0.2 us status query on Intel's OpenCL CPU runtime).
    It is asked once, not polled: a main thread spinning on the status takes a core
    from a CPU device's own threads."""
    if threading.current_thread() is not threading.main_thread() or \
            getattr(_local, "short", False):
        return fn()
    if done is not None:
        try:
            finished = done()
        except Exception:  # the wait below reports the driver's error, if any
            finished = False
        if finished:
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


@contextlib.contextmanager
def short(on: bool = True):
    """Within the block, waits on this thread call the driver directly, without the
    hand-over to a helper thread (tens of microseconds).  For callers that know the work
    they wait for ends soon: they found the device idle (``Runtime.idle``) and queued
    only work of bounded length (a whole-array reduce with a built-in operator), so a
    Ctrl-C is late by at most that long.  With *on* false the block changes nothing."""
    before = getattr(_local, "short", False)
    _local.short = before or on
    try:
        yield
    finally:
        _local.short = before


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
