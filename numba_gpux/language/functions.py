"""Device functions as the kernel language sees them.

:class:`GpuxFunctionType` is the Numba type of a jitted kernel or device function
named in a kernel.  The kernel object itself (``dispatcher.GpuxFunction``) lives
above the typing context, which nevertheless meets such objects while typing
(a device function called from a kernel) and must make new ones (an
``@overload`` implementation, a ``@numba.jit`` function called from a kernel).
So the kernel-object module registers itself here when it is imported
(:func:`register_device_functions`), the way Numba's extension points work, and
the layers below call :func:`is_device_function` and :func:`make_device_function`
without importing it.
"""

from __future__ import annotations

from typing import Callable

from numba.core import types

__all__ = ["GpuxFunctionType", "register_device_functions", "is_device_function",
           "make_device_function"]


class GpuxFunctionType(types.Dispatcher):
    """The Numba type of a jitted device function referenced from a kernel."""

    def get_call_type(self, context, args, kws):
        # a call from code another target compiles (an @njit function on the CPU): a
        # typing error naming the function, as numba.cuda's (its CPU lowering has no
        # model of this type, and failed inside Numba)
        if not getattr(context, "types_device_code", False):
            from numba.core.errors import TypingError

            name = getattr(self.dispatcher, "__name__", "a device function")
            raise TypingError(f"{name} is a numba_gpux device function: it runs in GPU "
                              f"kernels and device functions, not in @njit code "
                              f"(compile the code for the CPU with numba.njit)")
        return super().get_call_type(context, args, kws)


#: the registered kernel-object class(es): ``isinstance`` against it tells them apart
_classes: tuple = ()
#: ``factory(py_func, inline)`` -> a device function object
_factory: Callable | None = None


def register_device_functions(cls: type, factory: Callable) -> None:
    """Called by the kernel-object module when it is imported: *cls* is the class of
    kernel and device function objects (each with a ``device_function``, the object
    a call from device code compiles, whose ``_numba_type_`` is a
    :class:`GpuxFunctionType`); ``factory(py_func, inline)`` makes a device function
    of a Python function, inlined into its callers where *inline* is true."""
    global _classes, _factory
    if cls not in _classes:
        _classes = _classes + (cls,)
    _factory = factory


def is_device_function(value) -> bool:
    """Whether *value* is a jitted kernel or device function object."""
    return isinstance(value, _classes)


def make_device_function(py_func, *, inline: bool = False):
    """A device function compiled from *py_func*'s Python source."""
    if _factory is None:
        raise RuntimeError("no kernel-object class is registered: numba_gpux.dispatcher "
                           "registers it when imported")
    return _factory(py_func, inline)
