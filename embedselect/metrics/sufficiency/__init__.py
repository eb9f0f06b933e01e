"""Median information sufficiency: the metric (:mod:`.score`), its settings, inputs, the rows an estimate reads
(:mod:`.rows`) and result, the Gaussian estimate (:mod:`.gaussian`) and the KNIFE mixture estimators (:mod:`.knife`)."""

__all__: list[str] = []
"""Nothing is re-exported here: import the modules of this package."""
