"""Small shared rules every layer may use: the vocabulary (:mod:`.kinds`), the one ``(n, d)`` validator
(:mod:`.arrays`), secret scrubbing (:mod:`.redaction`), the run's progress display (:mod:`.progress`) and the
torchvision import work-around (:mod:`.compat`)."""
