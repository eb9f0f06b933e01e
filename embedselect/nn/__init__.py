"""Nearest neighbours with FAISS: the k-NN primitives (:mod:`.knn`) and where FAISS runs (:mod:`.device`)."""
