"""NVIDIA NeMo's numba.cuda RNN-T loss kernels (``nemo/collections/asr/parts/numba/
rnnt_loss/utils/cuda_utils``: the log-softmax denominators by ``reduce_max`` and
``reduce_exp``, block reductions in shared memory finished by ``shfl_down_sync`` with
threads past the vocabulary's end holding no value; ``compute_alphas_kernel`` and
``compute_betas_kernel``, one block a sample and one thread a label, a barrier at each of
T + U - 1 anti-diagonals; ``compute_grad_kernel``) against the same library's NumPy
reference (``rnnt_numpy``: ``forward_pass``, ``backward_pass``, and its ``RNNTLoss``
with PyTorch's autograd for the gradient, as the library's own kernel tests compare).

The library's own tests of these kernels need PyTorch tensors on a CUDA GPU; this check
runs the same kernels on arrays made by ``cuda.to_device``, unchanged, with samples of
different lengths in one batch. SRC is a checkout of NeMo (the folder holding ``nemo/``);
only ``nemo/collections/asr/parts/numba`` is imported (its package initializers above it
import NeMo's whole training stack, which the loss does not use). Needs PyTorch (a CPU
build is enough):

    python -m numba_gpux.alias benchmarks/library_checks/check_rnnt.py SRC [B T U V [DTYPE]]

Prints the largest relative difference of each result (against max(1, |reference|)) and
exits 1 if one is above its tolerance: 1e-5 for the denominators, alphas, betas and
log-likelihoods, 1e-3 for the gradients (float32 kernels against a float64 reference;
each gradient is the exponential of a sum of T + U float32 log-probabilities: 4e-5 to
1e-4 here on the shapes tried). DTYPE float16 (the library's tests run float16 where
numba.cuda supports it) runs the kernels on float16 arrays: tolerances 1e-2 and 5e-2,
met at the library's own test shape (1 5 11 3: gradients 4e-3) and not by float16 itself
at larger ones (alphas near -100 are 0.06 apart in float16, so a gradient, their sum's
exponential, moves by several percent: 0.3 at 2 40 20 200).

numba-cuda's simulator cannot run these kernels: the threads past the vocabulary's end
read a variable they never assigned (``curr`` in ``_reduce_rows``), which compiled code
reads as an unused value and the simulator's Python raises UnboundLocalError on.
"""

from __future__ import annotations

import os
import sys
import time
import types

import numpy as np
from _report import report


def _import_rnnt(src: str):
    """NeMo's RNN-T loss modules, with empty stand-ins for the package initializers of
    ``nemo``, ``nemo.collections``, ``...asr`` and ``...asr.parts`` (their folders
    stay the packages' paths, so every module below them is NeMo's own file)."""
    root = os.path.join(src, "nemo")
    for name, sub in (("nemo", ""), ("nemo.collections", "collections"),
                      ("nemo.collections.asr", os.path.join("collections", "asr")),
                      ("nemo.collections.asr.parts", os.path.join("collections", "asr", "parts"))):
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = [os.path.join(root, sub)]
            sys.modules[name] = pkg
    from nemo.collections.asr.parts.numba.rnnt_loss import rnnt_numpy
    from nemo.collections.asr.parts.numba.rnnt_loss.utils.cuda_utils import (
        gpu_rnnt_kernel, reduce)

    return rnnt_numpy, gpu_rnnt_kernel, reduce


def _log_softmax(x):
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def _rel(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float((np.abs(got - want) / np.maximum(1.0, np.abs(want))).max())


def main(src: str, B: int = 3, T: int = 24, U: int = 12, V: int = 6,
         dtype: str = "float32") -> int:
    import torch
    from numba import cuda

    rnnt_numpy, kern, reduce = _import_rnnt(src)
    ft = np.dtype(dtype)
    tol, gtol = (1e-5, 1e-3) if ft.itemsize >= 4 else (1e-2, 5e-2)
    rng = np.random.RandomState(0)
    blank = 0
    x = rng.randn(B, T, U, V)
    labels = rng.randint(1, V, size=(B, U - 1)).astype(np.int64)
    xlen = np.array([T] + [int(rng.randint(T // 2, T + 1)) for _ in range(B - 1)], np.int64)
    ylen = np.array([U - 1] + [int(rng.randint(1, U)) for _ in range(B - 1)], np.int64)

    t0 = time.perf_counter()
    stream = cuda.stream()
    acts = cuda.to_device(x.astype(ft).ravel(), stream=stream)
    denom = cuda.to_device(np.zeros(B * T * U, ft), stream=stream)
    alphas = cuda.to_device(np.zeros(B * T * U, ft), stream=stream)
    betas = cuda.to_device(np.zeros(B * T * U, ft), stream=stream)
    ll_fwd = cuda.to_device(np.zeros(B, ft), stream=stream)
    ll_bwd = cuda.to_device(np.zeros(B, ft), stream=stream)
    grads = cuda.to_device(np.zeros(B * T * U * V, ft), stream=stream)
    d_xlen, d_ylen = cuda.to_device(xlen, stream=stream), cuda.to_device(ylen, stream=stream)
    d_labels = cuda.to_device(labels, stream=stream)
    reduce.reduce_max(acts, denom, rows=V, cols=B * T * U, minus=False, stream=stream)
    reduce.reduce_exp(acts, denom, rows=V, cols=B * T * U, minus=True, stream=stream)
    den = denom.copy_to_host(stream=stream)
    kern.compute_alphas_kernel[B, U, stream, 0](acts, denom, alphas, ll_fwd, d_xlen, d_ylen,
                                                d_labels, B, T, U, V, blank)
    kern.compute_betas_kernel[B, U, stream, 0](acts, denom, betas, ll_bwd, d_xlen, d_ylen,
                                               d_labels, B, T, U, V, blank)
    kern.compute_grad_kernel[B * T * U, kern.GPU_RNNT_THREAD_SIZE, stream, 0](
        grads, acts, denom, alphas, betas, ll_fwd, d_xlen, d_ylen, d_labels, B, T, U, V,
        blank, 0.0, 0.0)
    stream.synchronize()
    t1 = time.perf_counter()

    lp = _log_softmax(x)
    a_got = alphas.copy_to_host().reshape(B, T, U)
    b_got = betas.copy_to_host().reshape(B, T, U)
    lf_got, lb_got = ll_fwd.copy_to_host(), ll_bwd.copy_to_host()
    a_diff = b_diff = lf_diff = lb_diff = 0.0
    for b in range(B):
        t, u = int(xlen[b]), int(ylen[b]) + 1
        a_ref, lf_ref = rnnt_numpy.forward_pass(lp[b, :t, :u, :], labels[b, :u - 1], blank)
        b_ref, lb_ref = rnnt_numpy.backward_pass(lp[b, :t, :u, :], labels[b, :u - 1], blank)
        a_diff = max(a_diff, _rel(a_got[b, :t, :u], a_ref))
        b_diff = max(b_diff, _rel(b_got[b, :t, :u], b_ref))
        lf_diff = max(lf_diff, _rel(lf_got[b], lf_ref))
        lb_diff = max(lb_diff, _rel(lb_got[b], lb_ref))
    # the gradient of the summed loss with respect to the activations, as the library's
    # kernel test takes it: its NumPy loss under PyTorch's autograd
    xt = torch.from_numpy(x).requires_grad_(True)
    loss = rnnt_numpy.RNNTLoss(blank, fastemit_lambda=0.0, clamp=0.0)
    loss(xt, torch.from_numpy(labels), torch.from_numpy(xlen), torch.from_numpy(ylen)).sum().backward()
    g_ref = xt.grad.numpy()
    g_got = grads.copy_to_host().reshape(B, T, U, V)
    print(f"{ft}, B={B} T={T} U={U} V={V}, lengths {xlen.tolist()} x {(ylen + 1).tolist()}: "
          f"kernels {t1 - t0:.2f} s (with compilation)")
    den_ref = -(np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1)) + x.max(-1)).ravel()
    return report([("denominators (reduce_max, reduce_exp)", _rel(den, den_ref), tol),
                   ("alphas", a_diff, tol), ("betas", b_diff, tol),
                   ("forward log-likelihood", lf_diff, tol),
                   ("backward log-likelihood", lb_diff, tol),
                   ("gradients", _rel(g_got, g_ref), gtol)])


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    sys.exit(main(args[0], *(int(a) for a in args[1:5]), *args[5:6]))
