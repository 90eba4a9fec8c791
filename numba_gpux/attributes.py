"""What a device's driver reports of a compiled kernel, and numba.cuda's ``get_*``
methods that read it (mixed into the kernel object, ``dispatcher.GpuxFunction``)."""

from __future__ import annotations

from .devices import default_device, lookup_device
from .errors import NotReportedError

__all__ = ["KernelAttributes"]


class KernelAttributes:
    """The kernel object's attribute queries (it provides ``signatures``, ``_eager``,
    ``_specialized``, ``_shims`` and ``kernel_ir``)."""

    def kernel_attributes(self, signature=None, device=None) -> dict:
        """What *device* (default: the current one) reports of this kernel compiled
        for *signature* (argument types or a signature; the kernel's only one if
        omitted), compiling and loading it if needed: ``max_threads_per_block``,
        ``shared_mem_per_block`` (static shared bytes, at least those of the kernel's
        static shared arrays), ``local_mem_per_thread``
        (private bytes per work-item), ``const_mem_size`` (bytes of constant memory;
        where the driver does not say, the kernel's constant arrays) and, where the
        driver reports it, ``regs_per_thread``."""
        from .launch import shim_of
        from .language.memory import constant_bytes

        if signature is None:
            signature = self._only_signature()
            if signature is None:
                raise TypeError(f"kernel {self.__name__} has {len(self.signatures)} "
                                f"signatures; say which")
        argtypes = tuple(getattr(signature, "args", signature))
        dev = lookup_device(device) if device is not None else default_device()
        shim = shim_of(self, argtypes, dev)
        attrs = dict(dev.runtime.kernel_attributes(shim.kernel))
        # a driver may count only what its own compiler placed (Intel's OpenCL CPU
        # driver reports 0 bytes for a kernel's static __local arrays): the kernel's
        # static shared arrays are a floor
        attrs["shared_mem_per_block"] = max(int(attrs.get("shared_mem_per_block", 0)),
                                            shim.static_shared)
        attrs.setdefault("const_mem_size", constant_bytes(self.kernel_ir(argtypes)[1]))
        return attrs

    def max_cooperative_grid_blocks(self, blockdim, dynsmemsize: int = 0, signature=None,
                                    device=None) -> int:
        """The most blocks of *blockdim* threads (an int or a tuple of 1 to 3), with
        *dynsmemsize* bytes of dynamic shared memory, that *device* (default: the
        current one) runs at once for this kernel compiled for *signature* (the
        kernel's only one if omitted): the largest grid of a launch of a kernel that
        synchronizes its grid (``this_grid().sync()``), as numba.cuda's.  On CUDA the
        driver's occupancy times the multiprocessors; elsewhere what the device
        surely runs at once (``Runtime.cooperative_groups``)."""
        from .errors import LaunchError
        from .launch import cooperative_blocks, shim_of

        dims = tuple(blockdim) if isinstance(blockdim, (tuple, list)) else (blockdim,)
        if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d > 0 for d in dims):
            raise LaunchError(f"blockdim must be a positive int or a tuple of 1 to 3 of them, "
                              f"not {blockdim!r}")
        if not isinstance(dynsmemsize, int) or dynsmemsize < 0:
            raise LaunchError(f"dynsmemsize must be a non-negative int, not {dynsmemsize!r}")
        if signature is None:
            signature = self._only_signature()
            if signature is None and len(self.signatures) == 1:
                signature = self.signatures[0]
            if signature is None:
                raise TypeError(f"kernel {self.__name__} has {len(self.signatures)} "
                                f"signatures; say which")
        argtypes = tuple(getattr(signature, "args", signature))
        dev = lookup_device(device) if device is not None else default_device()
        return cooperative_blocks(shim_of(self, argtypes, dev), dims + (1,) * (3 - len(dims)),
                                  dynsmemsize)

    def _only_signature(self):
        if getattr(self, "_specialized", None) is not None:
            return tuple(self._specialized)
        if len(self._eager) == 1:
            return self._eager[0]
        return None

    def _kernel_attribute(self, name: str, signature, what: str):
        """numba.cuda's ``get_*`` methods: the value for *signature*, for the only one,
        else a dict by argument types of every signature compiled."""
        if signature is None and self._only_signature() is None:
            return {args: self._kernel_attribute(name, args, what) for args in self.signatures}
        attrs = self.kernel_attributes(signature)
        if name not in attrs:
            raise NotReportedError(f"{default_device().spec}: the driver does not report {what}")
        return attrs[name]

    def get_regs_per_thread(self, signature=None):
        return self._kernel_attribute("regs_per_thread", signature, "register counts")

    def get_shared_mem_per_block(self, signature=None):
        return self._kernel_attribute("shared_mem_per_block", signature, "shared memory sizes")

    def get_local_mem_per_thread(self, signature=None):
        return self._kernel_attribute("local_mem_per_thread", signature, "local memory sizes")

    def get_const_mem_size(self, signature=None):
        return self._kernel_attribute("const_mem_size", signature, "constant memory sizes")

    def get_max_threads_per_block(self, signature=None):
        return self._kernel_attribute("max_threads_per_block", signature, "block size limits")
