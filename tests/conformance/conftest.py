"""The conformance suite's frame: the ``device`` fixture (from tests/conftest.py)
runs each test on every available device; ``@pytest.mark.feature(...)`` consults
the per-target skip list (skiplist.py), ``@pytest.mark.needs(...)`` the device's
own capabilities (``Device.target_features``)."""

from __future__ import annotations

import importlib.util
import os

import pytest

_spec = importlib.util.spec_from_file_location(
    "gpux_conformance_skiplist", os.path.join(os.path.dirname(__file__), "skiplist.py"))
skiplist = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(skiplist)


def pytest_configure(config):
    config.addinivalue_line("markers", "feature(*names): conformance features a test exercises "
                                       "(tests/conformance/skiplist.py)")
    config.addinivalue_line("markers", "needs(*features): device capabilities a test needs "
                                       "(Device.target_features)")


@pytest.fixture(autouse=True)
def _conformance_skips(request):
    if "device" not in request.fixturenames:
        yield
        return
    dev = request.getfixturevalue("device")
    if dev is not None:
        feats = [a for m in request.node.iter_markers("feature") for a in m.args]
        reason = skiplist.reason_for(dev.target_name, feats)
        if reason is not None:
            pytest.skip(reason)
        for m in request.node.iter_markers("needs"):
            for need in m.args:
                if not dev.target.has(need):
                    pytest.skip(f"{dev.spec} lacks the device feature {need!r}")
    yield
