"""Importing the facade registers no lowering of Numba's own modules (numba.cuda's rule:
those install implementations in shared registries that other targets then see)."""

from __future__ import annotations

import json
import subprocess
import sys

IMPLEMENTATIONS = ("numba.cpython.mathimpl", "numba.cpython.cmathimpl",
                   "numba.cpython.printimpl", "numba.cpython.hashing", "numba.cpython.heapq",
                   "numba.np.linalg", "numba.np.polynomial", "numba.np.arraymath",
                   "numba.np.npyimpl")


def test_importing_the_facade_and_its_cg_namespace_loads_no_implementation_module():
    code = ("import json, sys\nimport numba_gpux.cuda as cuda\ncuda.cg\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('numba.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    assert "numba.core.typing" in loaded  # the check sees Numba's modules at all
    assert not loaded & set(IMPLEMENTATIONS), sorted(loaded & set(IMPLEMENTATIONS))
