"""``numba_gpux.cuda.dispatcher``: the facade's kernel object, :class:`CUDADispatcher`.

A :class:`numba_gpux.GpuxFunction` (same compiler, caches and launch path) with
what numba.cuda's kernels do beyond the portable ones, through the core's
extension points (``launch_variant``, ``prepare_launch``, ``keyed_launches``...):

- ``extensions``: objects whose ``prepare_args`` sees each argument before a launch;
- another library's arrays (``__cuda_array_interface__``) given to a launch: the
  stream their interface names is synchronized first (``CUDA_ARRAY_INTERFACE_SYNC``);
- ``bitcast_arrays``: a kernel given one signature launches with integer arrays of
  another type of the same width as a view of them;
- ``mark_launch_config_sensitive()``: code compiled for one launch configuration,
  compiled again for each other one (``launchconfig``);
- ``inspect_asm()`` shows PTX, and a launch that copies host arrays warns each time
  while ``config.CUDA_WARN_ON_IMPLICIT_COPY`` is set;
- ``kernel[griddim, blockdim]`` of fewer than 128 blocks warns while
  ``config.CUDA_LOW_OCCUPANCY_WARNINGS`` is set;
- ``kernel[griddim, blockdim, stream, shared_bytes, cluster]``: numba-cuda-mlir's
  five-item configuration (``cluster.py``);
- ``dumps``: the compile stages printed to stderr as they are made (``cuda.jit``'s
  ``dump*`` options).
"""

from __future__ import annotations

import sys

import numpy as np
from numba.core import types

from ..abi import NO_FACTS, LaunchFacts
from ..argtypes import argument_types
from ..dispatcher import GpuxFunction
from ..memory import DeviceArray, HostArg
from . import config as _cuda_config
from .compiled import CompiledKernel

__all__ = ["CUDADispatcher"]


class CUDADispatcher(GpuxFunction):
    """A kernel or device function made by ``cuda.jit``."""

    def __init__(self, py_func, **kwargs):
        self._extensions: list = []                  # see the extensions property
        self._config_variants: dict = {}             # see launch_variant
        self._assembly_shown: set = set()            # see code_for
        super().__init__(py_func, **kwargs)
        self.stats = CompileStats(self.stats, py_func)

    #: cache=True keeps the index and data files next to the source, in numba's layout
    #: (``cachesource.py``), where numba.cuda keeps them
    cache_beside_source: bool = True
    #: an integer array argument launches as the eager signature's array of another
    #: integer type of the same width (uint32 data as int32[:, :]: a bit-for-bit
    #: view), as numba.cuda launches a kernel given a single signature
    bitcast_arrays: bool = False
    #: marked by mark_launch_config_sensitive(): launches go to the kernel object
    #: compiled for their configuration (launch_variant)
    _config_sensitive: bool = False
    #: (griddim, blockdim, dynamic shared bytes) that this object's code was compiled for
    _compiled_config: tuple | None = None
    #: what is printed to stderr when compiled (:data:`DUMP_STAGES`): ``"numba_ir"`` at
    #: typing, ``"llvmir"`` (the neutral LLVM IR of a device function, the optimized IR of
    #: a kernel's target code), ``"asm"`` and ``"binary"`` with a kernel's target code
    dumps: frozenset = frozenset()
    #: a kernel's return type inferred, not given as void (compile_ptx() and friends
    #: infer it, and raise numba.cuda's TypeError when it is not void)
    infer_kernel_return: bool = False
    #: ``overloads[sig]`` and ``compile(sig)``: numba.cuda's compiled kernel
    overload_class = CompiledKernel

    # ------------------------------------------------------------ extensions
    @property
    def extensions(self) -> list:
        """Objects applied to each argument before a launch: for every argument in
        turn, ``value_type, value = ext.prepare_args(value_type, value, stream=stream,
        retr=retr)`` (the argument's Numba type and value; *stream* is the launch's
        queue, or None; *retr* a list of callables, run after the launch in order, e.g.
        to copy results back), the last added first.  What they return is launched.
        Kernels with extensions take the generic launch path on every launch."""
        # the list may be changed through what this returns: launches already known
        # by their argument types alone must not bypass it from now on
        self._launch_keys.clear()
        return self._extensions

    @extensions.setter
    def extensions(self, value) -> None:
        self._launch_keys.clear()
        self._extensions = list(value)

    @property
    def keyed_launches(self) -> bool:
        return not (self._config_sensitive or self._extensions)

    def prepare_launch(self, cfg, args: tuple):
        if not self._extensions:
            for a in args:
                if _foreign(a):
                    # another library's array (only launches on the generic path have
                    # them): its producer's stream is waited for, as numba.cuda does;
                    # the launch path views it
                    from ._memory_api import _interface_stream

                    _interface_stream(a.__cuda_array_interface__, True)
            return None
        retr: list = []
        prepared = []
        given = tuple(a.ary if isinstance(a, HostArg) else a for a in args)
        for a, ty in zip(args, argument_types(self, given)):
            for ext in reversed(self._extensions):  # the last added sees values first
                ty, a = ext.prepare_args(ty, a, stream=cfg.queue, retr=retr)
            prepared.append(a)
        return tuple(prepared), retr

    def _views_as(self, actual, formal) -> bool:
        return super()._views_as(actual, formal) or (
            self.bitcast_arrays and _same_width_view(actual, formal))

    # ------------------------------------------------- per-configuration code
    def mark_launch_config_sensitive(self) -> None:
        """Say that the code being compiled depends on the launch configuration
        (called while a launch compiles the kernel, by code that reads
        ``launchconfig.current_launch_config()``: a rewrite, an overload): from now on
        a launch with another griddim, blockdim or dynamic shared size compiles the
        kernel again, for its own, and this kernel is not kept in the disk cache's
        index."""
        from ..launch import current_launch

        if self._config_sensitive:
            return
        cur = current_launch()
        self._compiled_config = None if cur is None else (
            cur.griddim, cur.blockdim, cur.shared_bytes)
        self._config_sensitive = True
        self._launch_keys.clear()  # every launch now checks its configuration

    def launch_variant(self, cfg) -> CUDADispatcher:
        """The kernel object whose code is for *cfg*'s configuration: this one, unless
        marked with mark_launch_config_sensitive() and compiled under another one;
        then one made for *cfg*'s, kept."""
        if not self._config_sensitive:
            return self
        key = (cfg.griddim, cfg.blockdim, cfg.shared_bytes)
        if key == self._compiled_config:
            return self
        variants = self._config_variants
        k = variants.get(key)
        if k is None:
            with self._lock:
                k = variants.get(key)
                if k is None:
                    k = self._derive()
                    k._eager = self._eager
                    k._config_sensitive, k._compiled_config = True, key
                    variants[key] = k
        return k

    def _compile_neutral(self, argtypes: tuple, return_type):
        if not self.is_device and return_type is None and not self.infer_kernel_return:
            # typed as numba.cuda's launches type a kernel, returning void: one that
            # returns a value is Numba's TypingError ("No conversion from int32 to
            # none"), naming the line
            return_type = types.void
        res = super()._compile_neutral(argtypes, return_type)
        if self.cache and res.captured and not self.is_device:
            # numba.cuda cannot pickle such a kernel for its cache: the same error
            import pickle

            raise pickle.PicklingError(
                f"cannot cache {self.__name__} (cache=True): it reads global device arrays "
                f"from global or closure variables, whose contents are not part of the "
                f"code; pass them as arguments, or compile without cache=True")
        # marked before the compile ended: the code is for one configuration
        res.launch_config_sensitive = self._config_sensitive
        if "numba_ir" in self.dumps:
            _dump_header(f"Numba IR of {self._dump_name(argtypes)}")
            # the typed function's blocks, as Numba's FunctionIR.dump() prints them
            blocks = getattr(res.cres.type_annotation, "blocks", None) or {}
            for label, block in sorted(blocks.items()):
                print(f"label {label}:", file=sys.stderr)
                block.dump(file=sys.stderr)
            if not blocks:
                print("(Numba kept no IR of this compile)", file=sys.stderr)
        if "llvmir" in self.dumps and self.is_device:
            _dump_header(f"LLVM IR of {self._dump_name(argtypes)}")
            print(res.library.neutral_ir(), file=sys.stderr)
        return res

    def code_for(self, argtypes: tuple, target, facts: LaunchFacts = NO_FACTS):
        from numba.core import config as numba_config

        if not self.dumps and not numba_config.DUMP_ASSEMBLY:
            return super().code_for(argtypes, target, facts)
        made = self.stats["target_compiles"]
        art = super().code_for(argtypes, target, facts)
        if self.stats["target_compiles"] != made:  # compiled now, not found
            self._dump_code(argtypes, target, art)
        shown = (argtypes, getattr(target, "name", target))
        if numba_config.DUMP_ASSEMBLY and shown not in self._assembly_shown:
            # Numba's setting, printed to stdout as numba.cuda prints the PTX it makes
            # for a kernel: the code of this kernel for the target (PTX, SPIR-V
            # assembly, MSL), once, also when an earlier compile of the same code made it
            self._assembly_shown.add(shown)
            print(f"ASSEMBLY {self.__name__}".center(80, "-"))
            print(art.text if art.text is not None else f"({art.kind} has no text form here)")
            print("=" * 80)
        return art

    def _dump_name(self, argtypes) -> str:
        return f"{self.__name__}({', '.join(map(str, argtypes))})"

    def _dump_code(self, argtypes, target, art) -> None:
        """Print what :attr:`dumps` asks of *art*, the code just made for *target*."""
        name, where = self._dump_name(argtypes), getattr(target, "name", target)
        if "llvmir" in self.dumps:
            _dump_header(f"LLVM IR of {name} for {where} (optimized, before code generation)")
            print(art.llvm_ir if art.llvm_ir is not None else
                  "(the target keeps no LLVM IR)", file=sys.stderr)
        if "asm" in self.dumps:
            text = art.text
            if art.kind == "ptx":
                _dump_header(f"PTX of {name}")
            else:
                _dump_header(f"{art.kind} of {name} for {where} (the target makes no PTX)")
            print(text if text is not None else f"({art.kind} has no text form here)",
                  file=sys.stderr)
        if "binary" in self.dumps:
            _dump_header(f"binary of {name} for {where}")
            # the binary of PTX code is its cubin (made by ptxas where installed)
            binary = _BINARY_NAMES.get(art.kind, art.kind)
            print(f"no {binary}: the driver loads the {art.kind} text" if art.binary is None
                  else f"{binary}: {len(art.binary)} bytes, loaded as they are (not printed)",
                  file=sys.stderr)

    def _disk_indexed(self) -> bool:
        return super()._disk_indexed() and not self._config_sensitive

    # ------------------------------------------------------------ launching
    def __getitem__(self, config):
        cluster = None
        if isinstance(config, tuple) and len(config) == 5:  # numba-cuda-mlir's, with a cluster
            from .cluster import normalize_cluster

            config, cluster = config[:4], normalize_cluster(config[4])
        elif isinstance(config, tuple) and len(config) > 5:
            from ..errors import LaunchError

            raise LaunchError("launch configuration must be [griddim, blockdim], with "
                              "optionally a stream, dynamic shared bytes and a cluster shape "
                              "after them: at most 5 items")
        cfg = super().__getitem__(config)
        if cluster is not None:
            from .cluster import cluster_config

            cfg = cluster_config(self, cfg, cluster)
        if _cuda_config.CUDA_LOW_OCCUPANCY_WARNINGS:
            warn_if_low_occupancy(cfg.griddim, stacklevel=3)
        return cfg

    def configure(self, griddim, blockdim, stream=0, sharedmem=0):
        """``kernel[griddim, blockdim, stream, sharedmem]``, as a method (numba.cuda's
        older spelling, still in its dispatcher)."""
        return self[griddim, blockdim, stream, sharedmem]

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        """numba.cuda's ``forall``: a 1-D launch of *ntasks* threads, ``stream`` and
        ``sharedmem`` its names for the queue and the dynamic shared memory bytes."""
        return super().forall(ntasks, tpb, stream, sharedmem)

    # ------------------------------------------------------------ the rest
    def _derive(self, **kwargs) -> CUDADispatcher:
        k = super()._derive(**kwargs)
        k.bitcast_arrays = self.bitcast_arrays
        k.dumps = self.dumps
        if self._extensions:
            k.extensions = self._extensions
        return k

    def inspect_target(self):
        """What ``inspect_asm()`` shows, as in numba.cuda: PTX, for the current
        device's compute capability (the CUDA target's default off NVIDIA GPUs)."""
        from ..devices import default_device, resolve_target
        from ..errors import DeviceNotFoundError

        try:
            dev = default_device()
        except DeviceNotFoundError:  # PTX needs no device
            return resolve_target("cuda", cubin=False)
        if dev.target.name == "cuda":  # the code the kernel launches with
            return dev
        return resolve_target("cuda", cubin=False)

    def __repr__(self):
        # numba.cuda's (Numba's dispatcher repr), which its typing errors quote:
        # "resolving callee type: type(CUDADispatcher(<function f at 0x...>))"
        return f"{type(self).__name__}({self.py_func})"

    def host_copy_warning(self):
        """numba.cuda's warning for a launch that copies host arrays: at every such
        launch while ``config.CUDA_WARN_ON_IMPLICIT_COPY`` is set (its default)."""
        from . import config

        if config.CUDA_WARN_ON_IMPLICIT_COPY and not config.DISABLE_PERFORMANCE_WARNINGS:
            return ("Host array used in CUDA kernel will incur copy overhead to/from device "
                    "(the NumPy array is copied to the device and back at each launch; "
                    "cuda.to_device() keeps it there)")
        return None

    def _pickle_state(self) -> dict:
        state = super()._pickle_state()
        state.update(extensions=list(self._extensions), bitcast_arrays=self.bitcast_arrays,
                     dumps=self.dumps)
        return state

    @classmethod
    def _from_pickle(cls, py_func, state):
        fn = super()._from_pickle(py_func, state)
        if state.get("extensions"):
            fn.extensions = state["extensions"]
        fn.bitcast_arrays = bool(state.get("bitcast_arrays"))
        fn.dumps = frozenset(state.get("dumps", ()))
        return fn


class CompileStats(dict):
    """A kernel's compile counts (``neutral_compiles``, ``target_compiles``) with
    numba's ``stats`` attributes: ``cache_hits`` and ``cache_misses`` (Counters by
    argument types: lookups in the disk cache of a ``cache=True`` kernel) and
    ``cache_path`` (the folder its files are in, or None)."""

    def __init__(self, counts: dict, py_func):
        from collections import Counter

        super().__init__(counts)
        self.cache_hits: Counter = Counter()
        self.cache_misses: Counter = Counter()
        self._py_func = py_func

    @property
    def cache_path(self) -> str | None:
        from ..cachesource import SourceCache

        try:
            return SourceCache(self._py_func).cache_path
        except (RuntimeError, OSError, TypeError):
            return None


#: what a target's binary is called, by its code's kind, where the two differ
_BINARY_NAMES = {"ptx": "cubin"}


def _dump_header(what: str) -> None:
    print(f"{'-' * 20} {what} {'-' * 20}", file=sys.stderr)


#: numba.cuda's threshold: a grid of fewer blocks warns while
#: ``config.CUDA_LOW_OCCUPANCY_WARNINGS`` is set
LOW_OCCUPANCY_BLOCKS = 128


def warn_if_low_occupancy(griddim, stacklevel: int = 2) -> None:
    """numba.cuda's warning for a launch configuration of fewer than
    :data:`LOW_OCCUPANCY_BLOCKS` blocks while ``config.CUDA_LOW_OCCUPANCY_WARNINGS``
    is set and ``DISABLE_PERFORMANCE_WARNINGS`` is not (each ``kernel[...]``, and each
    ufunc launch, as numba.cuda's)."""
    if not _cuda_config.CUDA_LOW_OCCUPANCY_WARNINGS \
            or _cuda_config.DISABLE_PERFORMANCE_WARNINGS:
        return
    blocks = 1
    for g in griddim:
        blocks *= g
    if blocks < LOW_OCCUPANCY_BLOCKS:
        import warnings

        w = _LOW_OCCUPANCY.get(blocks)
        if w is None:
            from numba.core.errors import NumbaPerformanceWarning

            # (made once per grid size: Numba's warnings format their message when
            # made, a third of a small launch's time)
            w = _LOW_OCCUPANCY[blocks] = NumbaPerformanceWarning(
                f"Grid size {blocks} will likely result in GPU under-utilization due to "
                f"low occupancy.")
        warnings.warn(w, stacklevel=stacklevel)


#: numba.cuda's low-occupancy warning, by grid size
_LOW_OCCUPANCY: dict = {}


def _foreign(a) -> bool:
    """Whether the launch argument *a* is another library's GPU array (an object with
    ``__cuda_array_interface__`` that is not one of ours)."""
    return not isinstance(a, (DeviceArray, np.ndarray, HostArg, int, float, complex)) and \
        getattr(a, "__cuda_array_interface__", None) is not None


def _same_width_view(actual, formal) -> bool:
    """Whether an array of type *actual* can be viewed as *formal*: same ndim, a
    layout that converts, integer dtypes of one width."""
    if not (isinstance(actual, types.Array) and isinstance(formal, types.Array)):
        return False
    a, f = actual.dtype, formal.dtype
    if not (isinstance(a, types.Integer) and isinstance(f, types.Integer)
            and a.bitwidth == f.bitwidth and actual.ndim == formal.ndim):
        return False
    if formal.mutable and not actual.mutable:
        return False
    return formal.layout == "A" or formal.layout == actual.layout
