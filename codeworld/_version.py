"""The package's version, in one place: the facade re-exports it and run records stamp it."""

__version__ = "0.1.0"
