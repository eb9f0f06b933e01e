"""The stages of one run behind :mod:`embedselect.api`: context, embedding, metrics, ranking, and the entry points."""
