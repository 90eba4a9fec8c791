"""Built-in targets, installed as ``numba_gpux.targets``.  Each registers itself in
the ``numba_gpux.targets`` entry-point group, exactly as a third-party target would."""
