"""The module paths numba.cuda code imports resolve under ``numba_gpux.cuda`` (the same
dotted names), and where numba.cuda only vendored a piece of Numba they are Numba's own."""

import importlib
import pickle

import numba
import numba.core.errors
import numba.core.typeconv.castgraph
import numba.core.typeconv.rules
import numba.core.typing.templates
import numba.core.typing.typeof
import numba.core.utils
import numba.misc.special
import numba.np.numpy_support
import numpy as np
import pytest

from numba_gpux import cuda


@pytest.mark.parametrize("path", [
    "types", "core", "core.errors", "core.config", "np", "np.numpy_support", "args",
    "cudadrv", "cudadrv.devicearray", "cudadrv.driver", "cudadrv.error", "cudadrv.nvvm",
    "cudadrv.devices", "cudadrv.runtime", "cudadrv.linkable_code", "libdevice",
    "vector_types", "typeconv", "typeconv.castgraph", "typeconv.rules", "typeconv.typeconv",
    "kernels", "kernels.reduction", "kernels.transpose", "extending", "random", "fp16",
    "typing", "typing.typeof", "typing.templates", "utils", "misc", "misc.special",
    "core.imputils",
])
def test_dotted_path_imports(path):
    mod = importlib.import_module(f"numba_gpux.cuda.{path}")
    assert importlib.util.find_spec(f"numba_gpux.cuda.{path}") is not None
    parent, _, last = f"numba_gpux.cuda.{path}".rpartition(".")
    assert getattr(importlib.import_module(parent), last) is mod


def test_vendored_modules_are_numbas_own():
    from numba_gpux.cuda.core import errors
    from numba_gpux.cuda.np import numpy_support
    from numba_gpux.cuda.typeconv import Conversion, castgraph, rules

    assert errors is numba.core.errors
    assert numpy_support is numba.np.numpy_support
    assert rules is numba.core.typeconv.rules and castgraph is numba.core.typeconv.castgraph
    assert Conversion is numba.core.typeconv.Conversion
    from numba_gpux.cuda import utils
    from numba_gpux.cuda.misc import special
    from numba_gpux.cuda.typing import signature, templates, typeof

    assert typeof is numba.core.typing.typeof and templates is numba.core.typing.templates
    assert signature is numba.core.typing.signature
    assert utils is numba.core.utils and utils.PYVERSION == numba.core.utils.PYVERSION
    assert special is numba.misc.special
    from numba_gpux.cuda.core.errors import TypingError
    assert TypingError is numba.core.errors.TypingError


def test_types_with_short_aliases():
    from numba_gpux.cuda.types import b1, c8, c16, f2, f4, f8, i1, i2, i4, i8, u1, u2, u4, u8

    assert (f2, f4, f8) == (numba.core.types.float16, numba.float32, numba.float64)
    assert (i1, i2, i4, i8, u1, u2, u4, u8) == (numba.int8, numba.int16, numba.int32,
                                                 numba.int64, numba.uint8, numba.uint16,
                                                 numba.uint32, numba.uint64)
    assert (b1, c8, c16) == (numba.boolean, numba.complex64, numba.complex128)
    assert cuda.types.float32 is numba.float32


def test_top_level_names():
    assert cuda.HAS_NUMBA is True
    assert cuda.config.ENABLE_CUDASIM is False
    assert cuda.config.DISABLE_PERFORMANCE_WARNINGS == numba.core.config.DISABLE_PERFORMANCE_WARNINGS
    with pytest.raises(AttributeError, match="NO_SUCH_SETTING"):
        cuda.config.NO_SUCH_SETTING
    # numba.cuda's default; code that turns it on (and back) for allocations in kernels
    # reads and writes it
    assert cuda.config.CUDA_ENABLE_NRT is False
    assert cuda.libdevice.sin is importlib.import_module("numba_gpux.cuda.libdevice").sin
    assert cuda.CUSource("int f() { return 0; }", name="f.cu").name == "f.cu"
    assert cuda.PTXSource(b"").name == "<unnamed-ptx>"
    assert cuda.nvvm.is_available() is False
    assert cuda.devicearray is importlib.import_module("numba_gpux.cuda.cudadrv.devicearray")
    assert cuda.devicearray.DeviceNDArray is cuda.DeviceNDArray
    with pytest.raises(cuda.cudadrv.error.NvvmSupportError, match="NVPTX"):
        cuda.nvvm.NVVM()


def test_args_wrap_arg():
    from numba_gpux.cuda.args import In, InOut, Out, wrap_arg

    a = np.zeros(3)
    wrapped = wrap_arg(a)
    assert isinstance(wrapped, InOut) and wrapped.ary is a
    hint = In(a)
    assert wrap_arg(hint) is hint
    assert isinstance(wrap_arg(a, default=Out), Out)
    assert cuda.In is In


def test_cudadrv_names(device):
    from numba_gpux.cuda.cudadrv import devicearray, devices, driver, error

    d = cuda.to_device(np.arange(4.0))
    assert isinstance(d, devicearray.DeviceNDArray) and devicearray.is_cuda_ndarray(d)
    assert not devicearray.is_cuda_ndarray(np.zeros(2))
    dev, copied = devicearray.auto_device(np.ones(3))
    assert copied and isinstance(dev, cuda.DeviceNDArray)
    assert devicearray.auto_device(d) == (d, False)
    with pytest.raises(ValueError, match="non-contiguous"):
        devicearray.auto_device(np.arange(10.0)[:-1:2])    # interleaved
    dev, _ = devicearray.auto_device(np.broadcast_to(np.arange(3.0), (4, 3)))
    np.testing.assert_equal(dev.copy_to_host(), np.broadcast_to(np.arange(3.0), (4, 3)))
    assert driver.driver.get_device_count() == len(cuda.gpus) >= 1
    assert driver.driver.is_available
    assert devices.get_context() is cuda.current_context()
    assert issubclass(driver.CudaAPIError, error.CudaDriverError)
    assert error.CudaSupportError is cuda.CudaSupportError
    with pytest.raises(cuda.CudaSupportError, match="no device"):
        driver._raise_driver_not_found()  # STUMPY's no-GPU path calls it
    with pytest.raises(TypeError, match="abstract"):  # the plug-in interface itself
        driver.set_memory_manager(driver.BaseCUDAMemoryManager)
    host = np.zeros(4)
    driver.device_to_host(host, d, d.nbytes)
    np.testing.assert_array_equal(host, np.arange(4.0))
    driver.host_to_device(d, np.full(4, 7.0), 16)
    np.testing.assert_array_equal(d.copy_to_host(), [7, 7, 2, 3])
    driver.device_memset(d, 0, d.nbytes)
    assert not d.copy_to_host().any()


def test_kernels_transpose_and_reduce(device):
    from numba_gpux.cuda.kernels.reduction import Reduce
    from numba_gpux.cuda.kernels.transpose import transpose

    a = np.arange(35, dtype=np.float32).reshape(5, 7)
    out = transpose(cuda.to_device(a))
    np.testing.assert_array_equal(out.copy_to_host(), a.T)
    assert Reduce is cuda.Reduce


def test_extending_overload_reaches_kernels(device):
    from numba_gpux.cuda.extending import overload

    def triple(x):
        raise NotImplementedError

    @overload(triple, target="cuda")
    def triple_impl(x):
        return lambda x: 3 * x

    @cuda.jit
    def k(out):
        out[0] = triple(out[0])

    d = cuda.to_device(np.array([2.0]))
    k[1, 1](d)
    assert d.copy_to_host()[0] == 6.0


def test_linkable_code_pickles():
    src = cuda.CUSource("x", name="a.cu")
    assert pickle.loads(pickle.dumps(src)).name == "a.cu"


def test_star_import_does_not_shadow_numpy_or_typing():
    ns = {}
    exec("import numpy as np\nimport typing\nfrom numba_gpux.cuda import *", ns)
    assert ns["np"] is np and ns["typing"].__name__ == "typing"
    assert ns["vectorize"] is cuda.vectorize and ns["HAS_NUMBA"] is True


def test_the_driver_modules_are_attributes_of_the_cuda_module():
    # numba.cuda's api imports cudadrv's devices and driver, and its star import
    # exposes them: cuda.devices.gpus, cuda.driver.Device(0)
    from numba_gpux.cuda.cudadrv import devices, driver

    assert cuda.devices is devices and cuda.driver is driver
    assert [g.name for g in cuda.devices.gpus] == [g.name for g in cuda.gpus]


def test_a_driver_device_made_from_its_number():
    from numba_gpux.cuda.cudadrv import driver

    d = driver.Device(0)
    assert d.id == 0 and d.name == cuda.gpus[0].name
    assert d.compute_capability == cuda.gpus[0].compute_capability
    last = len(cuda.gpus) - 1  # by keyword too, as numba.cuda's Device(devnum)
    k = driver.Device(devnum=last)
    assert k.id == last and k.name == cuda.gpus[last].name
    with pytest.raises(driver.CudaSupportError, match="no device number"):
        driver.Device(len(cuda.gpus))
