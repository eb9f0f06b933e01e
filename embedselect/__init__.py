"""embedselect: rank embedding models on your own data, label-free."""

from __future__ import annotations

__version__ = "0.1.0"
