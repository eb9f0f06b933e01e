"""The ranking: the typed result (:mod:`.result`) and how its values are written and read (:mod:`.io`), the one tie
rule (:mod:`.ties`), combining metrics into one rank (:mod:`.combine`) and how sure it is (:mod:`.bootstrap`)."""

__all__: list[str] = []
"""Nothing is re-exported here: import the modules of this package."""
