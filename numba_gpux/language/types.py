"""placeholder"""
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import Registry

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.x")
