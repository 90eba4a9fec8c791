"""numba-cuda-mlir's five-item launch configuration,
``kernel[griddim, blockdim, stream, shared_bytes, cluster]``.

``cluster`` is the shape of a thread-block cluster: an int or a tuple of one to three
positive ints.  A cluster of one block (``1``, ``(1,)``, ``(1, 1, 1)``) is every
launch's, so it is the four-item configuration on every device.  A larger one needs a
device whose runtime launches clusters (``runtime.launches_clusters``: the CUDA
target's, on GPUs of compute capability 9.0 and newer); elsewhere ``kernel[...]`` is a
LaunchError before anything runs.  The grid must be a whole number of clusters in
each dimension.

The cluster travels to the runtime with the launch's queue: the configuration's queue
is a :class:`ClusterQueue`, which carries the stream given (``gpux_queue``), the
device checked (``gpux_device``: launches of the configuration go there) and the
cluster shape (``gpux_cluster``), which the CUDA runtime launches with
(``cuLaunchKernelEx`` with the cluster-dimension attribute).
"""

from __future__ import annotations

from ..errors import LaunchError, LaunchTypeError

__all__ = ["normalize_cluster", "ClusterQueue", "cluster_config"]


def normalize_cluster(value) -> tuple[int, int, int]:
    """*value* (an int or 1 to 3 ints) as a 3-tuple; a LaunchTypeError or LaunchError
    for anything else."""
    dims = value if isinstance(value, (tuple, list)) else (value,)
    if not 1 <= len(dims) <= 3 or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise LaunchTypeError(f"cluster must be an int or a tuple of 1 to 3 ints, "
                              f"not {value!r}")
    if any(d < 1 for d in dims):
        raise LaunchError(f"cluster dimensions must be positive, not {value!r}")
    return tuple(dims) + (1,) * (3 - len(dims))


class ClusterQueue:
    """A launch's queue with the cluster shape it launches in (module docstring)."""

    __slots__ = ("gpux_queue", "gpux_device", "gpux_cluster", "stream")

    def __init__(self, stream, device, cluster: tuple[int, int, int]):
        #: the stream as the configuration gave it (None: the default stream)
        self.stream = stream
        self.gpux_queue = getattr(stream, "gpux_queue", stream) if stream is not None else None
        self.gpux_device = device
        self.gpux_cluster = cluster

    def __repr__(self):
        return f"<stream {self.stream!r} in clusters of {self.gpux_cluster}>"


def _device_of(cfg):
    from ..devices import default_device

    return cfg.device if cfg.device is not None else default_device()


def cluster_config(dispatcher, cfg, cluster: tuple[int, int, int]):
    """The launch configuration of *cfg* (a four-item one of *dispatcher*) in clusters
    of *cluster* blocks: *cfg* itself for a cluster of one block."""
    if cluster == (1, 1, 1):
        return cfg
    device = _device_of(cfg)
    name = dispatcher.__name__
    if not getattr(device.runtime, "launches_clusters", False):
        from .capability import capability_of

        cc = capability_of(device)
        raise LaunchError(
            f"kernel {name}: a launch in thread-block clusters of {cluster} needs a CUDA "
            f"device of compute capability 9.0 or newer; {device.spec} ({device.name}, "
            f"capability {cc[0]}.{cc[1]} for numba.cuda code) launches clusters of one "
            f"block only (give cluster=1)")
    for g, c in zip(cfg.griddim, cluster):
        if g % c:
            raise LaunchError(f"kernel {name}: griddim {cfg.griddim} is not a whole number of "
                              f"clusters of {cluster} blocks in each dimension")
    from ..dispatcher import LaunchConfig

    return LaunchConfig(dispatcher, cfg.griddim[:cfg.ndim], cfg.blockdim[:cfg.ndim],
                        ClusterQueue(cfg.queue, device, cluster), cfg.shared_bytes)
