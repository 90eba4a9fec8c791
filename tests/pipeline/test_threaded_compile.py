"""Threads that compile kernels at the same moment all finish: the per-target stages take
their locks (LLVM's options, the kept target machines, emission) in one order."""

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import sys, threading
    import numba_gpux as gpux

    def make(c):
        @gpux.jit
        def k(a):
            i = gpux.grid(1)
            if i < a.size:
                a[i] = a[i] * c + i
        return k

    targets = sys.argv[1:]
    start = threading.Barrier(8)
    errors = []

    def work(j):
        try:
            start.wait()
            for r in range(6):  # a fresh kernel each time: every one is compiled
                k = make(float(r * 8 + j))
                art = gpux.compile(k, "void(float64[::1])", target=targets[(j + r) % 2])
                assert art.text
        except Exception as e:
            errors.append(repr(e))

    threads = [threading.Thread(target=work, args=(j,), daemon=True) for j in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        if t.is_alive():
            print("still compiling after 120 s: the threads wait for each other")
            sys.stdout.flush()
            import os
            os._exit(3)
    assert not errors, errors
    print("ok")
""")


def test_threads_compiling_at_once_all_finish():
    """Eight threads at a time compile different kernels for the SPIR-V and PTX targets
    (the SPIR-V back end's emission takes the kept machine; NVPTX's emits through it):
    every compile finishes (a child process, so that a hang fails the test instead of
    stopping the run)."""
    p = subprocess.run([sys.executable, "-c", CHILD, "opencl", "cuda"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), \
        (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
