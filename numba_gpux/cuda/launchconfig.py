"""numba.cuda's ``launchconfig``: the launch configuration that a compile started by a
launch can read (``current_launch_config()``), for code whose result depends on it.

Such code also calls ``config.dispatcher.mark_launch_config_sensitive()``: launches
with another configuration then compile the kernel again, for theirs.  Outside a
compile that a launch started there is no configuration (None).
"""

from __future__ import annotations

import contextlib

from ..launch import current_launch

__all__ = ["current_launch_config", "ensure_current_launch_config", "capture_compile_config"]


class LaunchConfiguration:
    """numba.cuda's view of the launch under way: ``dispatcher``, ``griddim`` and
    ``blockdim`` (3-tuples), ``stream``, ``sharedmem`` (dynamic shared bytes) and
    ``args`` (the arguments as the launch was given them)."""

    __slots__ = ("_launch",)

    def __init__(self, launch):
        self._launch = launch

    dispatcher = property(lambda self: self._launch.dispatcher)
    griddim = property(lambda self: self._launch.griddim)
    blockdim = property(lambda self: self._launch.blockdim)
    stream = property(lambda self: self._launch.queue)
    sharedmem = property(lambda self: self._launch.shared_bytes)
    args = property(lambda self: self._launch.args)

    def __repr__(self):
        return (f"<launch configuration of {self.dispatcher.__name__}: griddim "
                f"{self.griddim}, blockdim {self.blockdim}, sharedmem {self.sharedmem}>")


def current_launch_config() -> LaunchConfiguration | None:
    """The configuration of the launch whose compile runs on this thread, else None."""
    launch = current_launch()
    return None if launch is None else LaunchConfiguration(launch)


def ensure_current_launch_config() -> LaunchConfiguration:
    """:func:`current_launch_config`, or RuntimeError outside a launch's compile."""
    cfg = current_launch_config()
    if cfg is None:
        raise RuntimeError("No launch config set for this thread: the launch configuration "
                           "is only known while a kernel launch compiles the kernel")
    return cfg


@contextlib.contextmanager
def capture_compile_config(dispatcher):
    """In the block, record in ``captured["config"]`` the configuration of a launch of
    *dispatcher* that compiles it (it stays None when nothing compiles)."""
    if dispatcher is None:
        raise TypeError("capture_compile_config() needs the kernel (dispatcher) to watch")
    captured = {"config": None}
    had_own = "_compile_for_args" in vars(dispatcher)
    before = vars(dispatcher).get("_compile_for_args")
    compile_for_args = dispatcher._compile_for_args

    def recording(*args, **kws):
        captured["config"] = current_launch_config()
        return compile_for_args(*args, **kws)

    dispatcher._compile_for_args = recording
    try:
        yield captured
    finally:
        if had_own:
            dispatcher._compile_for_args = before
        else:
            del dispatcher._compile_for_args
