"""numba-cuda-mlir's five-item launch configuration ``kernel[grid, block, stream,
shared_bytes, cluster]``: a cluster of one block runs everywhere (for real on the
OpenCL device), a larger one is a LaunchError before anything runs where the device
cannot launch clusters; on a CUDA device of compute capability 9.0 the configuration
carries the cluster to the runtime, whose cuLaunchKernelEx configuration is built with
cuda-python here (no GPU launches it on this machine)."""

import numpy as np
import pytest

from numba_gpux import cuda
from numba_gpux.cuda.cluster import ClusterQueue, normalize_cluster
from numba_gpux.devices import Device
from numba_gpux.errors import LaunchError, LaunchTypeError


@cuda.jit
def _fill(out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = i + 1


@pytest.mark.parametrize("cluster", [1, (1,), (1, 1), (1, 1, 1), [1, 1, 1]])
def test_a_cluster_of_one_block_runs_everywhere(opencl_device, cluster):
    out = cuda.to_device(np.zeros(64, np.int32))
    _fill[2, 32, 0, 0, cluster](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(1, 65))


def test_a_cluster_of_one_keeps_the_stream_and_dynamic_shared_memory(opencl_device):
    @cuda.jit
    def k(out):
        buf = cuda.shared.array(0, np.float32)
        t = cuda.threadIdx.x
        buf[t] = t * 2.0
        cuda.syncthreads()
        out[t] = buf[31 - t]

    s = cuda.stream()
    out = cuda.to_device(np.zeros(32, np.float32), stream=s)
    cfg = k[1, 32, s, 32 * 4, (1, 1, 1)]
    assert cfg.queue is s and cfg.shared_bytes == 128
    cfg(out)
    s.synchronize()
    np.testing.assert_array_equal(out.copy_to_host(), 2.0 * np.arange(32)[::-1])


@pytest.mark.parametrize("cluster", [2, (2, 1, 1), (1, 2), (2, 2, 2)])
def test_a_real_cluster_off_cuda_sm90_is_an_error_before_anything_runs(opencl_device, cluster):
    out = cuda.to_device(np.zeros(64, np.int32))
    with pytest.raises(LaunchError, match=r"clusters of .*compute capability 9\.0") as info:
        _fill[4, 16, 0, 0, cluster](out)
    assert opencl_device.spec in str(info.value) and "cluster=1" in str(info.value)
    np.testing.assert_array_equal(out.copy_to_host(), 0)  # nothing ran


@pytest.mark.parametrize("bad, error", [
    (0, LaunchError), (-2, LaunchError), ((1, 0, 1), LaunchError), (1.5, LaunchTypeError),
    ((1, 1, 1, 1), LaunchTypeError), ((), LaunchTypeError), ("2", LaunchTypeError),
    (True, LaunchTypeError),
])
def test_bad_cluster_shapes_are_refused(bad, error):
    with pytest.raises(error, match="cluster"):
        normalize_cluster(bad)
    with pytest.raises(error, match="cluster"):
        _fill[1, 1, 0, 0, bad]


def test_cluster_shapes_normalize_to_three_dimensions():
    assert normalize_cluster(2) == (2, 1, 1)
    assert normalize_cluster((2, 4)) == (2, 4, 1)
    assert normalize_cluster([1, 2, 2]) == (1, 2, 2)


def test_six_items_are_refused():
    with pytest.raises(LaunchError, match="cluster"):
        _fill[1, 1, 0, 0, 1, 1]


def _cuda_sm(cc):
    """A CUDA device description of compute capability *cc*, with the CUDA target's
    own runtime object (never asked to launch: the checks come first)."""
    from numba_gpux.targets.cuda.launch import CUDARuntime

    limits = {"compute_capability": cc, "max_threads_per_block": 1024,
              "max_block_dims": (1024, 1024, 64), "max_grid_dims": (2**31 - 1, 65535, 65535)}
    return Device(target_name="cuda", index=0, name=f"sm_{cc[0]}{cc[1]} description",
                  kind="gpu", vendor="NVIDIA", runtime=CUDARuntime(0, None, limits),
                  limits=limits)


def test_the_cuda_runtime_launches_clusters_from_compute_capability_9():
    assert _cuda_sm((9, 0)).runtime.launches_clusters
    assert _cuda_sm((10, 0)).runtime.launches_clusters
    assert not _cuda_sm((8, 9)).runtime.launches_clusters


def test_an_sm89_device_refuses_clusters_at_configuration():
    with pytest.raises(LaunchError, match=r"compute capability 9\.0.*8\.9"):
        _fill[4, 32, _cuda_sm((8, 9)), 0, 2]


def test_an_sm90_configuration_carries_the_cluster_to_the_runtime():
    dev = _cuda_sm((9, 0))
    cfg = _fill[(4, 2), (32, 1), dev, 256, (2, 1)]
    assert cfg.device is dev and cfg.griddim == (4, 2, 1) and cfg.blockdim == (32, 1, 1)
    assert cfg.shared_bytes == 256
    assert isinstance(cfg.queue, ClusterQueue) and cfg.queue.gpux_cluster == (2, 1, 1)
    assert cfg.queue.gpux_device is dev and cfg.queue.gpux_queue is None
    # the runtime's stream of the launch: the default one, here
    assert dev.runtime._stream(cfg.queue) == 0


def test_the_grid_must_be_whole_clusters():
    with pytest.raises(LaunchError, match=r"griddim \(5, 1, 1\) is not a whole number of "
                                          r"clusters of \(2, 1, 1\)"):
        _fill[5, 32, _cuda_sm((9, 0)), 0, 2]
    with pytest.raises(LaunchError, match="whole number"):
        _fill[(4, 3), 32, _cuda_sm((9, 0)), 0, (2, 2)]


def test_a_cluster_queue_carries_the_given_streams_handle():
    class Carrier:  # what the facade's streams are: an object carrying .gpux_queue
        gpux_queue = 0x1234

    from numba_gpux.targets.cuda.launch import CUDARuntime

    q = ClusterQueue(Carrier(), None, (2, 1, 1))
    assert q.gpux_queue == 0x1234 and CUDARuntime._stream(q) == 0x1234
    assert CUDARuntime._stream(ClusterQueue(77, None, (2, 1, 1))) == 77


def test_the_cuLaunchKernelEx_configuration_has_the_cluster_attribute():
    drv = pytest.importorskip("cuda.bindings.driver")
    from numba_gpux.targets.cuda.launch import cluster_launch_config

    c = cluster_launch_config(drv, (8, 2, 1), (128, 1, 1), 1024, 0x55, (4, 2, 1))
    assert (c.gridDimX, c.gridDimY, c.gridDimZ) == (8, 2, 1)
    assert (c.blockDimX, c.blockDimY, c.blockDimZ) == (128, 1, 1)
    assert c.sharedMemBytes == 1024 and int(c.hStream) == 0x55
    assert c.numAttrs == 1
    attr = c.attrs[0]
    assert attr.id == drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    dim = attr.value.clusterDim
    assert (dim.x, dim.y, dim.z) == (4, 2, 1)
