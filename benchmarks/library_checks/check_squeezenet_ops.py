"""The numba.cuda operations of a SqueezeNet written from scratch in numba.cuda
(``src/cuda_ops``, from its public repository: 2-D convolutions with and without a
shared-memory tile over a 3-D grid, max and global-average pooling, ReLU, softmax;
kernels defined as closures with ``cache=True``) against NumPy formulas.

The operations need nothing of the repository's other requirements (PyTorch is for its
training loop). Run with ``numba.cuda`` played by numba_gpux.cuda (the import alias),
SRC being a checkout of the repository:

    python -m numba_gpux.alias benchmarks/library_checks/check_squeezenet_ops.py SRC

Prints the largest difference of each operation and exits 1 if one is off.
"""

from __future__ import annotations

import os
import sys

import numpy as np
from _report import report


def _conv(x, w, b, pad, stride):
    batch, _, h, _ = x.shape
    f, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho = (h + 2 * pad - k) // stride + 1
    out = np.zeros((batch, f, ho, ho))
    for ky in range(k):
        for kx in range(k):
            patch = xp[:, :, ky:ky + stride * ho:stride, kx:kx + stride * ho:stride]
            out += np.einsum("bchw,fc->bfhw", patch, w[:, :, ky, kx])
    return out + b[None, :, None, None]


def main(src: str) -> int:
    sys.path.insert(0, os.path.join(src, "src"))
    from cuda_ops import conv, pool, relu, softmax

    rng = np.random.default_rng(0)
    checks = []
    for (batch, c, h, f, k, pad, stride) in ((2, 3, 37, 4, 3, 2, 2), (1, 5, 20, 3, 5, 1, 1)):
        x = rng.standard_normal((batch, c, h, h)).astype(np.float32)
        w = rng.standard_normal((f, c, k, k)).astype(np.float32)
        b = rng.standard_normal(f).astype(np.float32)
        want = _conv(x.astype(np.float64), w.astype(np.float64), b, pad, stride)
        got = conv.run_conv2d_cuda(x, w, b, P=pad, S=stride).copy_to_host()
        checks.append((f"convolution {k}x{k} stride {stride}", np.abs(got - want).max(), 1e-4))
        got = conv.run_conv2d_cuda_shared_2(x, w, b, P=pad, S=stride).copy_to_host()
        checks.append((f"tiled convolution {k}x{k} stride {stride}", np.abs(got - want).max(),
                       1e-4))
    x = rng.standard_normal((2, 6, 27, 27)).astype(np.float32)
    got = pool.run_maxpool2d_cuda(x).copy_to_host()
    want = np.max([x[:, :, i:i + 26:2, j:j + 26:2] for i in range(3) for j in range(3)], axis=0)
    checks.append(("max pooling 3x3 stride 2", np.abs(got - want).max(), 0))
    got = pool.run_global_average_Cuda(x).copy_to_host()[:, :, 0, 0]
    checks.append(("global average pooling", np.abs(got - x.mean(axis=(2, 3))).max(), 1e-5))
    got = relu.run_Relu_Cuda(x).copy_to_host()
    checks.append(("relu", np.abs(got - np.maximum(x, 0)).max(), 0))
    z = rng.standard_normal((8, 10, 1, 1)).astype(np.float32)
    got = softmax.run_softmax_cuda(z).copy_to_host()
    e = np.exp(z[:, :, 0, 0].astype(np.float64))
    checks.append(("softmax", np.abs(got - e / e.sum(axis=1, keepdims=True)).max(), 1e-6))
    return report(checks)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
