"""The ranking: the typed result (:mod:`.result`), combining metrics into one rank (:mod:`.combine`) and how sure it
is (:mod:`.bootstrap`)."""
