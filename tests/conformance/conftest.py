"""The conformance suite's frame.  The ``device`` fixture (tests/conftest.py) runs each
test on every available device; ``@pytest.mark.feature(...)`` consults the per-target
skip list (skiplist.py) and ``@pytest.mark.needs(...)`` the device's own capabilities
(``Device.target_features``).  Both marks are handled in tests/conftest.py so that
every suite parameterized over devices (cuda_compat, algorithms) can use them."""
