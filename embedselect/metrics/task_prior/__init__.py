"""Task Prior statistics: the metric (:mod:`.score`), the closed-form moments (:mod:`.moments`), the priors
(:mod:`.priors`) and tasks sampled from a prior (:mod:`.sampling`)."""

__all__: list[str] = []
"""Nothing is re-exported here: import the modules of this package."""
