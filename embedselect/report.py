"""Compatibility alias: the report code lives in :mod:`embedselect.publish.report`."""

from embedselect.publish.report import to_html, to_markdown  # noqa: F401

__all__ = ["to_html", "to_markdown"]
