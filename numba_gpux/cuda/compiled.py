"""numba.cuda's compiled kernel, its code library and its loaded function.

``kernel.overloads[sig]`` and ``kernel.compile(sig)`` give a :class:`CompiledKernel`
(numba.cuda's ``_Kernel``): what the driver reports of the code (``regs_per_thread``,
``shared_mem_per_block``, ...), its views (``inspect_asm(cc)``, ``inspect_llvm()``,
``inspect_types()``), ``bind()`` and ``launch(...)``.  Its ``library``
(:class:`CodeLibrary`, also reachable as ``_codelibrary``, the name libraries use)
gives the LLVM IR and PTX, and ``get_cufunc()``: a :class:`Function`, the kernel
loaded on the current device, whose ``attrs`` and hints (``cache_config``,
``set_shared_memory_carveout``) numba.cuda's ``Function`` has, and which the
context's occupancy queries take (:meth:`Function.active_blocks_per_multiprocessor`,
:meth:`Function.max_potential_block_size`).  All of it goes through the portable kernel
object's queries (``attributes.py``) and the device's runtime, on every target.
"""

from __future__ import annotations

import operator
import sys
from collections import namedtuple

from ..inspection import Overload

__all__ = ["CompiledKernel", "CodeLibrary", "Function", "FuncAttr"]

#: numba.cuda's ``cudadrv.driver.FuncAttr``: registers per thread (None where the
#: driver reports no register count), static shared bytes per block, local bytes per
#: thread, constant bytes, the largest block the kernel launches with
FuncAttr = namedtuple("FuncAttr", ["regs", "shared", "local", "const", "maxthreads"])


def _current_gpux_device():
    from .api import get_current_device

    return get_current_device().gpux_device


class Function:
    """A kernel compiled for one signature, loaded on one device (numba.cuda's
    ``cudadrv.driver.Function``, from ``library.get_cufunc()``)."""

    def __init__(self, dispatcher, argtypes: tuple, gdev):
        from ..launch import shim_of

        self._dispatcher = dispatcher
        self._argtypes = tuple(argtypes)
        self._gdev = gdev
        self._shim = shim_of(dispatcher, self._argtypes, gdev)
        self.name = self._shim.name

    @property
    def device(self):
        """The facade's Device the function is loaded on."""
        from .api import _wrap

        return _wrap(self._gdev)

    @property
    def handle(self):
        """The driver's own object for the kernel (a ``CUfunction`` on CUDA, a
        ``pyopencl.Kernel`` on OpenCL): for code that calls the driver itself."""
        return self._gdev.runtime.native_handle(self._shim.kernel)

    @property
    def attrs(self) -> FuncAttr:
        """What the driver reports of the kernel (``kernel_attributes``)."""
        a = self._dispatcher.kernel_attributes(self._argtypes, device=self._gdev)
        return FuncAttr(regs=a.get("regs_per_thread"), shared=a["shared_mem_per_block"],
                        local=a["local_mem_per_thread"], const=a["const_mem_size"],
                        maxthreads=a["max_threads_per_block"])

    def cache_config(self, prefer_equal=False, prefer_cache=False, prefer_shared=False) -> None:
        """A hint, as numba.cuda's: the kernel prefers on-chip memory split evenly
        (*prefer_equal*, or both others), as cache, or as shared memory (none: no
        preference).  Taken on CUDA (``cuFuncSetCacheConfig``); other targets have no
        such choice."""
        prefer_equal = prefer_equal or (prefer_cache and prefer_shared)
        prefer = ("equal" if prefer_equal else "cache" if prefer_cache
                  else "shared" if prefer_shared else "none")
        self._gdev.runtime.set_cache_config(self._shim.kernel, prefer)

    def set_shared_memory_carveout(self, carveout) -> None:
        """A hint, as numba.cuda's: the percentage (0 to 100, or -1 for the driver's
        default) of on-chip memory the kernel prefers as shared memory; others are a
        ValueError.  Taken on CUDA (``cuFuncSetAttribute``); other targets have no such
        choice."""
        carveout = int(carveout)
        if not -1 <= carveout <= 100:
            raise ValueError("Carveout must be between -1 and 100")
        self._gdev.runtime.set_shared_memory_carveout(self._shim.kernel, carveout)

    def active_blocks_per_multiprocessor(self, blocksize, memsize, flags=None) -> int:
        """numba.cuda's ``Context.get_active_blocks_per_multiprocessor``: the blocks of
        *blocksize* threads with *memsize* bytes of dynamic shared memory per block that
        run at once on one multiprocessor (0 where such a block cannot run).  *flags*
        (CUDA's occupancy flags) change nothing here."""
        blocksize = _positive(blocksize, "blocksize")
        memsize = operator.index(memsize)
        if memsize < 0:
            raise ValueError(f"memsize must be non-negative, not {memsize}")
        return self._per_unit(blocksize, memsize)

    def max_potential_block_size(self, b2d_func, memsize, blocksizelimit, flags=None) -> tuple:
        """numba.cuda's ``Context.get_max_potential_block_size``, as CUDA's
        ``cuOccupancyMaxPotentialBlockSize`` answers it: ``(grid, block)``, the block
        size (a multiple of the warp size, at most *blocksizelimit* where that is
        positive, the kernel's own limit and the device's ``MAX_THREADS_PER_BLOCK``) that
        runs the most threads at once on a multiprocessor (the largest such block on a
        tie), and the fewest blocks that fill the device with it.  Dynamic shared memory
        per block is ``b2d_func(block)`` where *b2d_func* is a callable, else *memsize*
        (*b2d_func* 0 or None)."""
        if b2d_func is None or (isinstance(b2d_func, int) and b2d_func == 0):
            smem = lambda block: memsize  # noqa: E731
        elif callable(b2d_func):
            smem = b2d_func
        else:
            raise TypeError("b2d_func must be a Python callable (block size -> dynamic "
                            "shared bytes), or 0 or None for a constant memsize; the address "
                            "of a C function is not taken")
        dev = self.device
        limit = min(int(self.attrs.maxthreads), int(dev.MAX_THREADS_PER_BLOCK))
        blocksizelimit = operator.index(blocksizelimit)
        if blocksizelimit > 0:
            limit = min(limit, blocksizelimit)
        warp = max(1, int(dev.WARP_SIZE))
        best, best_threads, best_blocks = 0, -1, 0
        for block in range(warp, limit + 1, warp) if limit >= warp else [limit]:
            per_unit = self._per_unit(block, int(smem(block)))
            if per_unit > 0 and per_unit * block >= best_threads:  # a larger block wins a tie
                best, best_threads, best_blocks = block, per_unit * block, per_unit
        return best_blocks * max(1, int(dev.MULTIPROCESSOR_COUNT)), best

    def _per_unit(self, blocksize: int, memsize: int) -> int:
        """Blocks one multiprocessor (compute unit) runs at once: the blocks the device
        surely runs at once (``max_cooperative_grid_blocks``; on CUDA the driver's
        occupancy times the multiprocessors) over its units, rounded up (a device that
        runs fewer blocks than it has units still runs one on a unit)."""
        from ..launch import cooperative_blocks

        blocks = cooperative_blocks(self._shim, (blocksize, 1, 1), memsize)
        return -(-blocks // max(1, int(self.device.MULTIPROCESSOR_COUNT)))

    def __repr__(self):
        return f"<CUDA function {self.name}>"


def _positive(value, what: str) -> int:
    try:
        n = operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, not {type(value).__name__}") from None
    if n <= 0:
        raise ValueError(f"{what} must be positive, not {n}")
    return n


class CodeLibrary:
    """A compiled signature's code (numba.cuda's ``CUDACodeLibrary``)."""

    def __init__(self, compiled: "CompiledKernel"):
        self._compiled = compiled

    @property
    def name(self) -> str:
        return self._compiled._dispatcher.__name__

    def get_llvm_str(self) -> str:
        """The LLVM IR lowered for the signature (target-neutral)."""
        return self._compiled.inspect_llvm()

    def get_asm_str(self, cc=None) -> str:
        """The PTX for compute capability *cc* (default: the current device's)."""
        return self._compiled.inspect_asm(cc)

    def get_cufunc(self) -> Function:
        """The kernel loaded on the current device (compiled and loaded if needed)."""
        compiled = self._compiled
        if compiled._dispatcher.is_device:
            raise RuntimeError("Missing entry_name - are you trying to get the cufunc for "
                               "a device function?")
        return Function(compiled._dispatcher, compiled.argtypes, _current_gpux_device())


class CompiledKernel(Overload):
    """One compiled signature of a ``cuda.jit`` kernel or device function (numba.cuda's
    ``_Kernel``, or a device function's compile result)."""

    @property
    def library(self) -> CodeLibrary:
        return CodeLibrary(self)

    _codelibrary = library

    @property
    def argument_types(self) -> tuple:
        return tuple(self.argtypes)

    @property
    def entry_name(self) -> str:
        """The kernel's symbol in the code the current device runs."""
        return self._dispatcher.code_for(self.argtypes, _current_gpux_device().target).kernels[0]

    @property
    def type_annotation(self):
        """Numba's typing of the Python function (``typemap``: each variable's type)."""
        return self._result.cres.type_annotation

    _type_annotation = type_annotation  # (numba.cuda's attribute name, read by its users)

    def _attribute(self, name: str):
        """The kernel's ``get_<name>()`` for this signature (what the driver reports)."""
        if self._dispatcher.is_device:  # (an AttributeError, as numba.cuda's compile result)
            raise AttributeError(name)
        return getattr(self._dispatcher, f"get_{name}")(self.argtypes)

    regs_per_thread = property(lambda self: self._attribute("regs_per_thread"))
    const_mem_size = property(lambda self: self._attribute("const_mem_size"))
    shared_mem_per_block = property(lambda self: self._attribute("shared_mem_per_block"))
    max_threads_per_block = property(lambda self: self._attribute("max_threads_per_block"))
    local_mem_per_thread = property(lambda self: self._attribute("local_mem_per_thread"))

    def inspect_asm(self, cc=None, target=None) -> str:
        """The PTX for compute capability *cc* (a tuple; default: the current device's,
        as the dispatcher's ``inspect_asm``), or a target's code for *target*."""
        if cc is not None and target is None:
            if isinstance(cc, tuple):
                from ..devices import resolve_target

                target = resolve_target("cuda", cubin=False, cc=tuple(cc))
            else:
                target = cc
        return super().inspect_asm(target=target)

    def inspect_types(self, file=None, **kws) -> None:
        super().inspect_types(file=sys.stdout if file is None else file, **kws)

    def bind(self) -> None:
        """Load the kernel on the current device now (numba.cuda: bind it to the
        current context)."""
        self.library.get_cufunc()

    def launch(self, args, griddim, blockdim, stream=0, sharedmem=0) -> None:
        """Launch with *args* on *griddim* blocks of *blockdim* threads (no
        low-occupancy warning: numba.cuda's ``_Kernel.launch`` gives none)."""
        from ..dispatcher import LaunchConfig

        LaunchConfig(self._dispatcher, griddim, blockdim, stream, sharedmem)(*args)
