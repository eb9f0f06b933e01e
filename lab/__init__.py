"""Exploratory scripts (lab/README.md): no current number in the docs depends on them, CI does not import them."""
