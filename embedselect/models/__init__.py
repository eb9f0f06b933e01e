"""The candidates and what loads them: candidate specs and revisions (:mod:`.candidates`), the embedding backends
(:mod:`.backends`), the Hugging Face Hub (:mod:`.hub`), the safety policy (:mod:`.policy`) and the model-folder
layout (:mod:`.layout`)."""

__all__: list[str] = []
"""Nothing is re-exported here: import the modules of this package."""
