"""The package's version: the one source (pyproject reads it; ``embedselect.__version__`` re-exports it). A module of
its own, imported by nothing else, so that the store, the API and the CLI can name the version without importing
the package's ``__init__`` (which imports them back)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
