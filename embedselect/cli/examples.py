"""Examples shown at the end of every command's ``--help`` (issue 14: "every command has --help examples"), kept
in one place; tests/test_cli.py parses each one with the real parser, so an example cannot name a flag that does
not exist."""

from __future__ import annotations

import argparse

EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "rank": [
        ("rank three models on a CSV's text column",
         "embedselect rank tickets.csv --column text --models BAAI/bge-small-en-v1.5,tfidf-svd,random-projection"),
        ("name candidates, JSON for a pipeline, an HTML report",
         "embedselect rank tickets.csv -c text --models 'minilm=./model,minilm-cls=./model?backend=transformers&"
         "pooling=cls' --json --html report.html"),
        ("the curated text catalog's models, two metrics, 200 bootstrap resamples",
         "embedselect rank docs.parquet -c body --models catalog:text --metrics task_prior,sufficiency "
         "--bootstrap 200"),
        ("let your answers to `embedselect ask` decide between the leaders",
         "embedselect rank tickets.csv -c text --models catalog:text --answers questions.csv"),
    ],
    "embed": [
        ("compute and cache embeddings now, rank later",
         "embedselect embed tickets.csv -c text --models BAAI/bge-small-en-v1.5,tfidf-svd"),
        ("images on the GPU, skipping files that do not decode",
         "embedselect embed ./photos --models timm/resnet18.a1_in1k --device cuda --on-error skip"),
    ],
    "validate": [
        ("rank, then check the ranking against held-out probes on your labels",
         "embedselect validate tickets.csv -c text --labels label --models catalog:text"),
        ("JSON with a Markdown leaderboard",
         "embedselect validate tickets.csv -c text --labels label --models minilm=./model,tfidf-svd,random-projection "
         "--json --markdown leaderboard.md"),
        ("check the ranking against a few search queries (columns query, relevant: the ids of the rows to find)",
         "embedselect validate faq.csv -c answer --queries queries.csv --models catalog:text"),
    ],
    "ask": [
        ("40 questions that decide between the leaders, answered here one at a time",
         "embedselect ask tickets.csv -c text --models minilm=./model,tfidf-svd,random-projection --out questions.csv "
         "--interactive"),
        ("80 questions in a file to fill with a, b or skip (the answers given so far are kept)",
         "embedselect ask tickets.csv -c text --models catalog:text -n 80 --out questions.csv"),
    ],
    "metrics": [("list the metric names for --metrics", "embedselect metrics")],
    "demo": [
        ("rank five embedders on a bundled sample, offline", "embedselect demo"),
        ("the same as JSON, with an HTML report", "embedselect demo --json --html demo.html"),
    ],
    "cache": [
        ("what is cached, and how big", "embedselect cache ls"),
        ("remove one model's runs (its id, as cache ls shows it), then orphan files",
         "embedselect cache rm --model BAAI/bge-small-en-v1.5"),
        ("remove the runs of every model a pattern matches, listed, without asking", "embedselect cache rm --model "
         "'*MiniLM*' --yes"),
        ("remove one run by its run key (a prefix, as cache ls shows it)", "embedselect cache rm 8464b7d4e253"),
        ("empty the cache, without asking (without --yes: asked on a terminal, else refused)",
         "embedselect cache rm --all --yes"),
        ("remove vector files no run points at", "embedselect cache gc"),
        ("where the cache lives", "embedselect cache path"),
    ],
    "crawl": [
        ("record the 50 trending sentence-transformers models",
         "embedselect crawl --library sentence-transformers --sort trending --limit 50"),
        ("list small permissively licensed models as JSON without recording them",
         "embedselect crawl --max-params 150M --license apache-2.0 --license mit --no-record --json"),
    ],
    "hub": [
        ("text models recorded by crawl, new ones only", "embedselect hub ls --modality text --new"),
    ],
    "index": [
        ("a FAISS index of your data under the winner of rank",
         "embedselect index tickets.csv -c text --model BAAI/bge-small-en-v1.5 --out tickets.index"),
    ],
    "search": [
        ("the 5 nearest items to a query", "embedselect search tickets.index \"refund not received\" -k 5"),
    ],
    "neighbours": [
        ("nearest neighbours of 8 sample items under two candidates, side by side",
         "embedselect neighbours tickets.csv -c text --models minilm=./model,tfidf-svd --sample 8 --html nn.html"),
    ],
    "nightly": [
        ("what tonight's run would do, without doing it", "embedselect nightly --config nightly.yaml --dry-run"),
        ("one night: crawl, rank, publish", "embedselect nightly --config nightly.yaml --json"),
    ],
    "badge": [
        ("one SVG badge per ranked candidate of the latest ranking",
         "embedselect badge --out site/badges --dataset support-tickets"),
    ],
    "card": [
        ("write the ranking's result into a model card",
         "embedselect card --candidate org/model --card README.md --out README.md"),
    ],
    "leaderboard": [
        ("the latest ranking as an HTML leaderboard", "embedselect leaderboard --format html --out leaderboard.html"),
        ("the stored rankings", "embedselect leaderboard --list"),
    ],
    "report": [
        ("a self-contained HTML report of the latest ranking", "embedselect report --out report.html"),
    ],
}
"""Command -> (what it does, the command line); the command line starts with ``embedselect <command>``."""


class ExamplesFormatter(argparse.HelpFormatter):
    """The default help layout, except that text with line breaks (the examples epilog) keeps them."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)


def examples_epilog(command: str) -> str:
    """The ``examples:`` block of ``command``'s help."""
    lines = ["examples:"]
    for what, line in EXAMPLES[command]:
        lines += [f"  # {what}", f"  {line}"]
    return "\n".join(lines)


def add_examples(subparsers: argparse._SubParsersAction) -> None:
    """Give every registered command (and its aliases) its examples epilog; a command missing from
    :data:`EXAMPLES` gets none (tests/test_cli.py fails on it)."""
    for command in EXAMPLES:
        parser = subparsers.choices.get(command)
        if parser is not None:
            parser.epilog = examples_epilog(command)
            parser.formatter_class = ExamplesFormatter
