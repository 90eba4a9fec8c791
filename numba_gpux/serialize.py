"""How kernels, device functions, launch configurations and devices pickle.

A jitted function travels as *what to compile*, never as compiled code: the
unpickling process compiles it again for its own device (or loads the
finished code from the disk cache when the kernel was declared with
``cache=True``).  Two forms:

- **by reference** -- a function reachable as ``module.qualname`` in an
  importable module (not ``__main__``) pickles as that name, with ``pickle``
  and ``cloudpickle`` alike; the unpickling process imports the module.
- **by value** -- anything else (``__main__``, closures, functions made
  inside functions, modules registered with ``cloudpickle.register_pickle_by_value``)
  pickles its Python function with Numba's copy of cloudpickle, code,
  closure cells and referenced globals included, also under plain ``pickle``.

Unpickling runs what the pickle says (a by-value function's code comes with
it, and ``pickle`` itself can call anything): a process that unpickles a kernel
trusts whoever made the pickle, as with any pickle.  No compiled code travels
this way; what the receiving process then loads from its disk cache is checked
with its own key (``cachefile.py``, docs/caching.md "Trust").

Each jitted function carries a random id; unpickling one that this process
already has (it made it, or unpickled it before) returns that object, so its
compiled code is reused instead of compiled again per task.
"""

from __future__ import annotations

import collections
import importlib
import sys
import threading
import uuid as _uuid
import weakref

from .errors import GpuxUserError

__all__ = ["reduce_function", "rebuild_by_name", "rebuild_by_value", "function_id"]

#: id -> jitted function, for every function pickled or unpickled in this process
_memo: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()
#: the functions unpickled most recently stay alive between tasks that each unpickle them
_recent: "collections.OrderedDict[str, object]" = collections.OrderedDict()
_RECENT_MAX = 128
_lock = threading.Lock()


def function_id(fn) -> str:
    """The random id that identifies *fn* across processes (made on first use)."""
    fid = fn.__dict__.get("_gpux_uuid")
    if fid is None:
        with _lock:
            fid = fn.__dict__.get("_gpux_uuid")
            if fid is None:
                fid = fn.__dict__["_gpux_uuid"] = _uuid.uuid4().hex
                _memo[fid] = fn
    return fid


def _lookup(module: str, qualname: str):
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _by_value_module(module: str) -> bool:
    """Whether cloudpickle was told to pickle *module*'s functions by value."""
    for name in ("cloudpickle.cloudpickle", "numba.cloudpickle.cloudpickle"):
        cp = sys.modules.get(name)
        check = getattr(cp, "_is_registered_pickle_by_value", None) if cp else None
        if check is not None:
            try:
                if check(sys.modules[module]):
                    return True
            except Exception:  # a private helper of cloudpickle: never fail a pickle on it
                pass
    return False


def _reachable(fn) -> tuple[str, str] | None:
    """(module, qualname) under which *fn* itself can be imported, else None."""
    py = fn.py_func
    module = getattr(py, "__module__", None)
    qualname = getattr(py, "__qualname__", None)
    if not module or not qualname or module == "__main__" or "<locals>" in qualname:
        return None
    if module not in sys.modules or _by_value_module(module):
        return None
    try:
        found = _lookup(module, qualname)
    except Exception:
        return None
    return (module, qualname) if found is fn else None


def reduce_function(fn, state: dict) -> tuple:
    """``__reduce__`` of a jitted function *fn*; *state* is what its class's
    ``_from_pickle(py_func, state)`` needs to build it again (by value)."""
    where = _reachable(fn)
    if where is not None:
        return rebuild_by_name, where
    from numba.core import serialize

    try:
        payload = serialize.dumps(fn.py_func)
    except Exception as e:
        raise GpuxUserError(f"cannot pickle {fn!r}: its Python function does not pickle "
                            f"({type(e).__name__}: {e})") from None
    return rebuild_by_value, (type(fn), function_id(fn), payload, state)


def rebuild_by_name(module: str, qualname: str):
    """The jitted function ``module.qualname`` (importing *module*)."""
    try:
        return _lookup(module, qualname)
    except (ImportError, AttributeError) as e:
        raise GpuxUserError(f"cannot unpickle the kernel {module}.{qualname}: {e}; the module "
                            f"that defines it must be importable in this process") from None


def rebuild_by_value(cls, fid: str, payload: bytes, state: dict):
    """The jitted function *fid*: this process's copy if it has one, else a new one."""
    fn = _memo.get(fid)
    if fn is None:
        import pickle

        py_func = pickle.loads(payload)
        with _lock:
            fn = _memo.get(fid)
            if fn is None:
                fn = cls._from_pickle(py_func, state)
                fn.__dict__["_gpux_uuid"] = fid
                _memo[fid] = fn
    with _lock:
        _recent[fid] = fn
        _recent.move_to_end(fid)
        if len(_recent) > _RECENT_MAX:
            _recent.popitem(last=False)
    return fn
