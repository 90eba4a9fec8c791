"""The kernel object's views of its compiled code: Numba's typed annotation, the
neutral LLVM IR and a target's readable code (mixed into ``dispatcher.GpuxFunction``)."""

from __future__ import annotations

import sys

from numba.core import sigutils

from .errors import GpuxUserError

__all__ = ["KernelInspection", "Overload"]


class Overload:
    """One compiled signature of a kernel or device function (what ``kernel.compile(sig)``
    returns and ``kernel.overloads`` holds, as numba.cuda's): its typed and lowered
    result's attributes (``fndesc``, ``library``, ...), its ``signature``, and the kernel's
    views of its code for this signature."""

    def __init__(self, dispatcher, result):
        self._dispatcher = dispatcher
        self._result = result

    def __getattr__(self, name):
        if name.startswith("_"):  # (before __init__, e.g. while copying: no recursion)
            raise AttributeError(name)
        return getattr(self._result, name)

    @property
    def argtypes(self) -> tuple:
        return self._result.argtypes

    @property
    def py_func(self):
        return self._dispatcher.py_func

    @property
    def signature(self):
        from numba.core import typing

        return typing.signature(self._result.return_type, *self._result.argtypes)

    @property
    def cooperative(self) -> bool:
        """Whether the code synchronizes its grid (``this_grid().sync()``): its launches
        are cooperative, of at most :meth:`max_cooperative_grid_blocks` blocks."""
        return bool(self._result.grid_sync)

    def max_cooperative_grid_blocks(self, blockdim, dynsmemsize: int = 0) -> int:
        """The most blocks of *blockdim* threads the current device runs at once for
        this signature (``GpuxFunction.max_cooperative_grid_blocks``)."""
        return self._dispatcher.max_cooperative_grid_blocks(blockdim, dynsmemsize,
                                                            signature=self.argtypes)

    def inspect_llvm(self) -> str:
        return self._dispatcher.inspect_llvm(self.signature)

    def inspect_asm(self, target=None) -> str:
        return self._dispatcher.inspect_asm(self.signature, target=target)

    def inspect_types(self, file=None, **kws) -> None:
        self._dispatcher.inspect_types(file=file, signature=self.signature, **kws)

    def __repr__(self) -> str:
        return f"<Overload of {self._dispatcher.__name__}{self._result.argtypes}>"


class KernelInspection:
    """``inspect_types``, ``inspect_llvm`` and ``inspect_asm`` (the kernel object
    provides ``signatures``, ``_neutral``, ``neutral``, ``kernel_ir``, ``code_for``,
    ``is_device`` and ``options``)."""

    def inspect_types(self, file=None, signature=None, pretty=False, style="default"):
        """Print Numba's typed annotation of each signature compiled (or of
        *signature*) to *file* (stdout), as Numba's dispatchers do."""
        if pretty:
            raise GpuxUserError("inspect_types(pretty=True) is not supported; use the text form")
        chosen = {tuple(a) for a, _ in self._inspected(signature)} if signature else None
        out = sys.stdout if file is None else file
        for args, res in dict((r.argtypes, r) for r in self._neutral.values()).items():
            if chosen is None or args in chosen:
                print(f"{self.__name__} {args}", "-" * 80, res.cres.type_annotation, "=" * 80,
                      sep="\n", file=out)

    #: the target :meth:`inspect_asm` compiles for when none is given: None (the
    #: default device's), or a callable returning a target spec (numba.cuda's
    #: facade: PTX for the current device's compute capability)
    inspect_target = None

    def _inspected(self, signature) -> list[tuple]:
        """(argument types, return type or None) for *signature* (a signature, a
        string or a tuple of types), or for every signature compiled so far."""
        if signature is None:
            return [(a, None) for a in self.signatures]
        if isinstance(signature, (tuple, list)):
            return [(tuple(signature), None)]
        args, ret = sigutils.normalize_signature(signature)
        return [(tuple(args), ret)]

    def inspect_llvm(self, signature=None):
        """The LLVM IR lowered for *signature* (target-neutral, before any target's
        optimizer; a kernel's with its entry wrapper), or ``{argtypes: IR}`` for every
        signature compiled so far.  ``numba_gpux.compile(...).llvm_ir`` is a target's
        optimized IR."""
        def ir_of(args, ret):
            if self.is_device:
                return self.neutral(args, ret).library.neutral_ir()
            return self.kernel_ir(args)[1]

        sigs = self._inspected(signature)
        return ir_of(*sigs[0]) if signature is not None else {a: ir_of(a, r) for a, r in sigs}

    def inspect_asm(self, signature=None, target=None):
        """The readable code (PTX, SPIR-V disassembly, MSL) compiled for *signature*
        for *target* (a name, Device or Target; default: :attr:`inspect_target`, else
        the default device's target), or ``{argtypes: text}`` for every signature
        compiled so far."""
        from .cache import compile_target
        from .devices import default_device, resolve_target

        if target is None:
            target = self.inspect_target() if self.inspect_target else default_device()
        tgt = resolve_target(target)

        def text_of(args, ret):
            if not self.is_device:
                return self.code_for(args, tgt).text
            res = self.neutral(args, ret)
            return compile_target(res.library.neutral_ir(), (), tgt, self.options,
                                  name=self.__name__, exports=(res.fndesc.llvm_func_name,)).text

        sigs = self._inspected(signature)
        return text_of(*sigs[0]) if signature is not None else {a: text_of(a, r) for a, r in sigs}
