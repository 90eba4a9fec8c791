"""ptxas accepts the PTX of every kernel in kernels.py and of every conformance
kernel (``CONFORMANCE_KERNELS`` lists in tests/conformance/), for sm_70, sm_80, sm_90."""

from __future__ import annotations

import importlib.util
import os

import pytest

import numba_gpux as gpux

_spec = importlib.util.spec_from_file_location(
    "gpux_cuda_test_kernels", os.path.join(os.path.dirname(__file__), "kernels.py"))
K = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(K)

CASES = K.collect()
CCS = [(7, 0), (8, 0), (9, 0)]

pytestmark = pytest.mark.ptxas


@pytest.mark.parametrize("cc", CCS, ids=[f"sm_{a}{b}" for a, b in CCS])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_ptxas_accepts(case, cc, ptxas):
    from numba_gpux.targets.cuda import toolkit

    if not toolkit.ptxas_supports(cc):
        pytest.skip(f"no installed ptxas ({', '.join(toolkit.all_ptxas())}) assembles "
                    f"sm_{cc[0]}{cc[1]} (CUDA 13 dropped sm_70 and older; the test extra "
                    f"installs CUDA 12's, nvidia-cuda-nvcc-cu12)")
    _, kernel, sig = case
    art = gpux.compile(kernel, sig, target="cuda", cc=cc, cubin=False)
    ok, messages = toolkit.ptxas_check(art.text, cc)
    assert ok, f"ptxas rejected the PTX for sm_{cc[0]}{cc[1]}:\n{messages}\n{art.text[:3000]}"


def test_ptxas_reports_resources(ptxas):
    from numba_gpux.targets.cuda import toolkit

    art = gpux.compile(K.math_unary, "void(float64[::1], float64[:, ::1])", target="cuda",
                       cc=(9, 0), cubin=False)
    res = toolkit.ptxas_resources(art.text, (9, 0))
    assert list(res) == list(art.kernels)
    r = res[art.kernels[0]]
    assert 0 < r["registers"] <= 255
    assert r["spill_stores"] == 0 and r["spill_loads"] == 0


def test_ptxas_rejects_bad_ptx(ptxas):
    from numba_gpux.targets.cuda import toolkit

    ok, messages = toolkit.ptxas_check(".version 7.0\n.target sm_80\n.address_size 64\n"
                                       ".visible .entry k() { bogus; }\n", (8, 0))
    assert not ok and messages
