"""The ranking: the typed result (:mod:`.result`; a candidate's outcome in :mod:`.candidate`, the warnings and their
codes in :mod:`.warning_codes`), its JSON form (:mod:`.form`) and how its values are written and read (:mod:`.io`), the
one tie rule (:mod:`.ties`), combining metrics into one rank (:mod:`.combine`) and how sure it is (:mod:`.bootstrap`)."""

__all__: list[str] = []
"""Nothing is re-exported here: import the modules of this package."""
