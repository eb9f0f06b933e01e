"""Signals that compare candidates beside the two mission metrics: nearest-neighbour agreement (:mod:`.agreement`),
RankMe effective rank (:mod:`.spectral`) and the modularity of a candidate's own k-NN graph (:mod:`.modularity`)."""

__all__: list[str] = []
"""Nothing is re-exported here: import the modules of this package."""
