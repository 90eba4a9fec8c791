"""``numba_gpux.cuda.cudadrv.linkable_code``: numba.cuda's containers of code to link.

Given to ``cuda.jit(link=...)`` or ``cuda.declare_device(link=...)``, their code is
linked with the kernel on the CUDA target, as a file of their kind would be
(``numba_gpux.cuda.foreign``); a setup or teardown callback is an UnsupportedError
(nothing runs it).
"""

from __future__ import annotations

__all__ = ["LinkableCode", "PTXSource", "CUSource", "Fatbin", "Cubin", "Archive", "Object",
           "LTOIR"]


class LinkableCode:
    """Code (bytes or text) to be linked with a kernel, with an optional name."""

    kind = "linkable code"

    def __init__(self, data, name=None, setup_callback=None, teardown_callback=None):
        if setup_callback is not None and not callable(setup_callback):
            raise TypeError("setup_callback must be callable")
        if teardown_callback is not None and not callable(teardown_callback):
            raise TypeError("teardown_callback must be callable")
        self.data = data
        self._name = name
        self.setup_callback = setup_callback
        self.teardown_callback = teardown_callback

    @property
    def name(self) -> str:
        return self._name or f"<unnamed-{self.kind}>"

    @classmethod
    def from_path(cls, path: str) -> "LinkableCode":
        with open(path, "rb") as f:
            data = f.read()
        return cls(data, name=path)


class PTXSource(LinkableCode):
    kind = "ptx"


class CUSource(LinkableCode):
    kind = "cu"


class Fatbin(LinkableCode):
    kind = "fatbin"


class Cubin(LinkableCode):
    kind = "cubin"


class Archive(LinkableCode):
    kind = "archive"


class Object(LinkableCode):
    kind = "object"


class LTOIR(LinkableCode):
    kind = "ltoir"
