"""Nearest neighbours with FAISS: the k-NN primitives (:mod:`.knn`) and where FAISS runs (:mod:`.device`)."""

__all__: list[str] = []
"""Nothing is re-exported here: import the modules of this package."""
