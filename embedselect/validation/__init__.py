"""The trust check against a user's labels: held-out probe accuracy (:mod:`.heldout`) and the label-free ranking
compared with it (:mod:`.check`)."""

__all__: list[str] = []
"""Nothing is re-exported here: import the modules of this package."""
