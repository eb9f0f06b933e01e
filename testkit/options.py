"""Metric options the tests share: small estimates, for tests that check what surrounds a metric (what it prints,
which pairs run where, how its results are combined or cached), not its values."""

from __future__ import annotations

FAST_SUFFICIENCY = {"max_steps": 120, "eval_every": 20, "patience": 2, "batch_size": 128, "hidden": 32,
                    "n_components": 4}
"""Small sufficiency estimates (its default averages up to five estimates of up to 1 500 steps each); a test that
needs one estimate, or smaller ones still, says so as ``{**FAST_SUFFICIENCY, "max_repeats": 1}``."""
