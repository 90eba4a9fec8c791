"""The package version, at the bottom layer: modules that need it (the disk cache's
key) read it here instead of importing the package, which imports nearly everything.
``setup.cfg`` carries the same string (a test checks that they agree)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
