"""``numba_gpux.cuda``: a drop-in replacement for ``numba.cuda`` on every target.

Change one import::

    from numba_gpux import cuda      # instead of: from numba import cuda

and numba.cuda code runs on an NVIDIA GPU through the CUDA target, and
elsewhere through OpenCL (for example on a CPU with Intel's OpenCL driver).
This is a thin facade: ``cuda.jit`` is :func:`numba_gpux.jit`, the kernel
language names are numba_gpux's own, device arrays are numba_gpux's.
``docs/migration.md`` lists every numba.cuda name and how it is supported.
"""

from __future__ import annotations

from numba.core.types import *  # noqa: F401,F403 - numba.cuda re-exports the type names
from numba.core.types import f2, float16  # noqa: F401 - (not in numba.core.types.__all__)
from numba.core.errors import TypingError  # noqa: F401
from numba.misc.special import literal_unroll  # noqa: F401
from numba.np.numpy_support import carray, farray  # noqa: F401 - host-side, as numba's

from . import types  # noqa: F401
from .types import complex32  # noqa: F401 - numba-cuda-mlir's complex of two float16
from .types import bfloat16  # noqa: F401 - numba.cuda's cuda.bfloat16
from .decorators import jit, declare_device
from .intrinsics import (
    grid, gridsize, threadIdx, blockIdx, blockDim, gridDim, laneid, warpsize,
    shared, local, const, syncthreads, syncthreads_count, syncthreads_and, syncthreads_or,
    threadfence, threadfence_block, threadfence_system, syncwarp, atomic,
    shfl_sync, shfl_up_sync, shfl_down_sync, shfl_xor_sync, all_sync, any_sync, eq_sync,
    ballot_sync, activemask, lanemask_lt, match_any_sync, match_all_sync,
    popc, clz, ffs, brev, fma, cbrt, selp, nanosleep,
    ldca, ldcg, ldcs, ldlu, ldcv, stcg, stcs, stwb, stwt, cg,
)
from ._memory_api import (
    to_device, device_array, device_array_like, pinned_array, pinned_array_like,
    mapped_array, mapped_array_like, managed_array, pinned, mapped,
    is_cuda_array, as_cuda_array, from_cuda_array_interface,
)
from .api import (
    stream, default_stream, legacy_default_stream, per_thread_default_stream,
    external_stream, event, event_elapsed_time, synchronize,
    gpus, select_device, get_current_device, list_devices, current_context, require_context,
    close, detect, is_available, is_supported_version, cuda_error,
    is_float16_supported, is_bfloat16_supported, is_fp8_supported, defer_cleanup,
    profile_start, profile_stop, profiling, CudaSupportError, MemoryInfo,
)
from ..memory import In, Out, InOut
from ._arrays import DeviceNDArray
from . import _records  # noqa: F401 - one element of a record array is a DeviceRecord
from ._emm import (BaseCUDAMemoryManager, GetIpcHandleMixin, HostOnlyCUDAMemoryManager,
                   set_memory_manager)
from ._memory_pointers import MappedMemory, MemoryPointer, PinnedMemory
from .reduction import Reduce, reduce
from .compiler import (
    compile, compile_ptx, compile_for_current_device, compile_ptx_for_current_device,
    compile_all, compile_cubin, compile_for, compile_mlir,
)
from ..errors import LaunchError as KernelRuntimeError
from ._modules import install as _install_module_table  # noqa: E402

# numba.cuda's module paths without a file here (core.errors, typing.templates...:
# _modules.MODULES) import from now on: the modules above import none of them
_install_module_table()
del _install_module_table
from . import bf16, fp16, random  # noqa: E402,F401
from . import args, core, cudadrv, extending, misc, np, typeconv, typing, utils  # noqa: E402,F401
from . import config  # noqa: E402,F401
from .cudadrv import devicearray  # noqa: E402,F401 - numba.cuda.devicearray, as code reaches it
# numba.cuda.devices and numba.cuda.driver: the modules numba.cuda's api imports, which its
# star import exposes (`cuda.devices.gpus`, `cuda.driver.Device(0)`)
from .cudadrv import devices, driver  # noqa: E402,F401
from .cudadrv.linkable_code import (  # noqa: E402,F401
    LinkableCode, PTXSource, CUSource, Cubin, Fatbin, Archive, Object, LTOIR,
)
from .cudadrv import nvvm  # noqa: E402,F401
from .cudadrv.runtime import runtime  # noqa: E402,F401
from .api import reset  # noqa: E402,F401
from .vectorizers import vectorize, guvectorize  # noqa: E402,F401
from . import intrin  # noqa: E402,F401 - numba-cuda-mlir's NVIDIA-instruction intrinsics
from .intrin import inline_ptx  # noqa: E402,F401

#: numba.cuda's flag for "Numba's CPU target is installed": numba_gpux is built on it
HAS_NUMBA = True
#: numba-cuda-mlir's names for ``local.array`` and ``shared.array``
local_array = local.array
shared_array = shared.array
#: submodules loaded on first use (``cuda.libdevice.sin``, ``cuda.descriptor.cuda_target``);
#: ``vector`` and ``tensor_map`` are numba-cuda-mlir's, there to say why they are not
#: supported
_LAZY = ("libdevice", "vector_types", "kernels", "libdevicefuncs", "vector", "tensor_map",
         "experimental", "descriptor")
#: numba-cuda-mlir's top-level names that are another module's: ``cuda.consteval`` is
#: ``cuda.experimental.consteval`` (an AttributeError while there is no such module).
_FROM_MODULE = {"consteval": "experimental"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name in _FROM_MODULE:
        import importlib

        try:
            module = importlib.import_module(f"{__name__}.{_FROM_MODULE[name]}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{_FROM_MODULE[name]}":
                raise
        else:
            return getattr(module, name)
    if name[-1:] in ("1", "2", "3", "4"):  # a vector type: cuda.float32x4, cuda.float4
        from .vector_types import constructors

        if name in constructors:
            return constructors[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

from .intrinsics import _install as _install_registries

_install_registries()
del _install_registries


def _gcc_runtime_for_cpu_code():
    """Numba's CPU JIT leaves some operations to libgcc's helpers (``__powidf2`` for a
    float to an int32 power in code compiled with ``fastmath`` and ``debug``) and aborts the
    process ("LLVM ERROR: Symbol not found") where none is loaded.  Importing
    numba.cuda loads CUDA's libraries, which bring them, so numba.cuda programs' CPU
    code ran; the facade loads libgcc's runtime for the same code (Linux)."""
    import sys

    if sys.platform.startswith("linux"):
        import llvmlite.binding as ll

        try:
            ll.load_library_permanently("libgcc_s.so.1")
        except RuntimeError:  # (not there: a musl system, say)
            pass


_gcc_runtime_for_cpu_code()

implementation = "numba_gpux"

__all__ = [
    "jit", "declare_device", "types", "TypingError", "literal_unroll",
    "grid", "gridsize", "threadIdx", "blockIdx", "blockDim", "gridDim", "laneid", "warpsize",
    "shared", "local", "const", "syncthreads", "syncthreads_count", "syncthreads_and",
    "syncthreads_or", "threadfence", "threadfence_block", "threadfence_system", "syncwarp",
    "atomic", "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync",
    "any_sync", "eq_sync", "ballot_sync", "activemask", "lanemask_lt", "match_any_sync",
    "match_all_sync", "popc", "clz", "ffs", "brev", "fma", "cbrt", "selp", "nanosleep",
    "ldca", "ldcg", "ldcs", "ldlu", "ldcv", "stcg", "stcs", "stwb", "stwt", "cg",
    "to_device", "device_array", "device_array_like", "pinned_array", "pinned_array_like",
    "mapped_array", "mapped_array_like", "managed_array", "pinned", "mapped",
    "is_cuda_array", "as_cuda_array", "from_cuda_array_interface",
    "stream", "default_stream", "legacy_default_stream", "per_thread_default_stream",
    "external_stream", "event", "event_elapsed_time", "synchronize",
    "gpus", "select_device", "get_current_device", "list_devices", "current_context",
    "require_context", "close", "detect", "is_available", "is_supported_version", "cuda_error",
    "is_float16_supported", "is_bfloat16_supported", "is_fp8_supported", "defer_cleanup",
    "profile_start", "profile_stop", "profiling", "CudaSupportError", "MemoryInfo",
    "BaseCUDAMemoryManager", "HostOnlyCUDAMemoryManager", "GetIpcHandleMixin",
    "set_memory_manager", "MemoryPointer", "MappedMemory", "PinnedMemory",
    "In", "Out", "InOut", "DeviceNDArray", "Reduce", "reduce",
    "compile", "compile_ptx", "compile_for_current_device", "compile_ptx_for_current_device",
    "compile_all", "compile_cubin", "compile_for", "compile_mlir", "KernelRuntimeError",
    "fp16", "bf16", "bfloat16", "random", "implementation",
    # submodules such as np, typing, core are attributes but not star-exported (they
    # would shadow numpy or the standard library's typing in the importer)
    "HAS_NUMBA", "config", "cudadrv", "extending", "nvvm",
    "runtime", "reset", "LinkableCode", "PTXSource", "CUSource", "Cubin", "Fatbin", "Archive",
    "Object", "LTOIR", "libdevice", "vector_types", "kernels", "vectorize", "guvectorize",
    "intrin", "inline_ptx",
    # numba-cuda-mlir's names
    "local_array", "shared_array", "carray", "farray", "complex32", "libdevicefuncs",
    "vector", "tensor_map",
]
