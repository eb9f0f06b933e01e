"""Model cards: write a ranking's result into a model's README.md through huggingface_hub's card API.

:func:`update_card` adds (or replaces) embedselect's evaluation results in the card's ``model-index``
metadata — one entry per metric, with the reference data's fingerprint as the dataset revision and
embedselect as the source — and a short section with the badge between two HTML comments, so that running it
again replaces that section instead of adding another. Every other metadata key, evaluation result and
section is kept. :func:`push_card` opens a pull request with the new card on the hub (never a direct commit).

The hub's newer ``.eval_results/*.yaml`` format needs a benchmark *dataset id on the hub*; a user's private
reference data has none, so it is written only when ``hub_dataset`` names one (:func:`eval_results_yaml`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
from pathlib import Path
from typing import Any, Iterator

from embedselect.errors import ConfigError
from embedselect.publish.badges import badge_for, place, tied_leader
from embedselect.publish.text import clean, md, num
from embedselect.ranking.result import Ranking

START = "<!-- embedselect:start -->"
END = "<!-- embedselect:end -->"
SOURCE = "embedselect"
TASK = "feature-extraction"
_FRONT_MATTER = re.compile(r"^(\s*---[\r\n]+)([\S\s]*?)([\r\n]+---(\r\n|\n|$))")  # huggingface_hub's own


def _parse_card(card_text: str | None):
    """``huggingface_hub.ModelCard`` of ``card_text`` (a leading UTF-8 byte-order mark dropped, so that the
    authors' front matter is found and kept rather than a second one added).

    Raises:
        ConfigError: the front matter is not valid YAML, is not a mapping, or is not closed by a ``---`` line.
    """
    import yaml
    from huggingface_hub import ModelCard

    text = (card_text or "").removeprefix("\ufeff")
    if not text.strip():
        return ModelCard("---\n{}\n---\n")  # empty metadata; "---\n---\n" was taken as text (a stray pair)
    block = _FRONT_MATTER.match(text)
    if text.lstrip().startswith("---") and block is None:
        raise ConfigError("the model card starts a YAML front matter (---) that is never closed by a --- line; fix "
                          "the card first (it was not changed)")
    try:
        meta = yaml.safe_load(block.group(2)) if block else None
    except yaml.YAMLError as exc:
        raise ConfigError(f"the model card's YAML front matter is not valid YAML ({' '.join(str(exc).split())}); "
                          "fix it first (the card was not changed)") from None
    if meta is not None and not isinstance(meta, dict):
        raise ConfigError(f"the model card's YAML front matter is a {type(meta).__name__}, not a mapping of keys; "
                          "fix it first (the card was not changed)")
    try:
        if block is None:  # no front matter: expected, and the card gets one; huggingface_hub would warn twice
            with _no_metadata_warning():
                return ModelCard(text)
        return ModelCard(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise ConfigError(f"the model card's metadata cannot be read ({' '.join(str(exc).split())}); fix it first "
                          "(the card was not changed)") from None


_NO_METADATA = "Repo card metadata block was not found"


class _DropNoMetadata(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(_NO_METADATA)


@contextlib.contextmanager
def _no_metadata_warning() -> Iterator[None]:
    """huggingface_hub's "Repo card metadata block was not found. Setting CardData to empty." left out while a card
    known to have no front matter is parsed (the card this module writes gets one); every other record of that logger,
    and every record of embedselect's own, still shows."""
    logger = logging.getLogger("huggingface_hub.repocard")
    drop = _DropNoMetadata()
    logger.addFilter(drop)
    try:
        yield
    finally:
        logger.removeFilter(drop)


def _candidate(ranking: Ranking, candidate: str):
    try:
        c = ranking[candidate]
    except KeyError:
        raise ConfigError(
            f"candidate {candidate!r} is not in the ranking ({ranking.short_id}); it has: "
            + ", ".join(x.name for x in ranking.candidates)
        ) from None
    if not c.ok:
        raise ConfigError(f"candidate {candidate!r} failed in this ranking ({c.error_type}); no result to publish")
    return c


def _dataset_name(ranking: Ranking, dataset: str | None) -> str:
    return clean(dataset or Path(str(ranking.dataset.get("source", "reference data"))).name or "reference data")


def eval_results(ranking: Ranking, candidate: str, *, dataset: str | None = None) -> list[Any]:
    """``huggingface_hub.EvalResult`` entries (legacy ``model-index``) for one candidate: its combined rank and
    each metric's headline score, on the reference data identified by its fingerprint; a metric that did not score it
    (NaN: RankMe left out, a degenerate candidate) has no entry, as the card's sentence shows it ``-``."""
    from huggingface_hub import EvalResult

    c = _candidate(ranking, candidate)
    name = _dataset_name(ranking, dataset)
    common: dict[str, Any] = dict(
        task_type=TASK, task_name="label-free embedding ranking", dataset_type="embedselect/reference-data",
        dataset_name=name, dataset_revision=str(ranking.dataset.get("fingerprint", "")), source_name=SOURCE,
        source_url="https://pypi.org/project/embedselect/",
    )
    out = [EvalResult(metric_type="embedselect/rank", metric_name=f"rank of {len(ranking.ok)}",
                      metric_value=c.rank, **common)]
    for m in ranking.metrics:
        if c.scores.get(m) is not None and math.isfinite(float(c.scores[m])):  # a metric that did not score it: none
            out.append(EvalResult(metric_type=f"embedselect/{m}", metric_name=m, metric_value=float(c.scores[m]), **common))
    return out


def _section(ranking: Ranking, candidate: str, *, dataset: str | None, base_url: str | None) -> str:
    c = _candidate(ranking, candidate)
    badge = badge_for(ranking, c, dataset=dataset)
    scores = ", ".join(f"{md(m)} {num(c.scores.get(m))}" for m in ranking.metrics)
    lines = [
        START,
        badge.markdown(base_url),
        "",
        f"Ranked **{place(ranking, c)}**{f' (#{c.rank} by combined score)' if tied_leader(ranking, c) and c.rank != 1 else ''}"
        " by [embedselect](https://pypi.org/project/embedselect/) on "
        f"{md(_dataset_name(ranking, dataset))} ({ranking.dataset.get('n', '?')} items, fingerprint "
        f"`{str(ranking.dataset.get('fingerprint', ''))[:12]}`), label-free: {scores}. "
        f"Ranking {f'`{ranking.short_id}`' if ranking.ranking_id else 'not stored,'} of {md(ranking.created_at)}.",
    ]
    if not ranking.decided:
        lines.append(f"The leading candidates ({md(', '.join(ranking.leaders))}) could not be told apart: "
                     f"{md('; '.join(ranking.undecided_reasons))}.")
    lines.append(END)
    return "\n".join(lines)


def update_card(card_text: str | None, ranking: Ranking, candidate: str, *, dataset: str | None = None,
                base_url: str | None = None) -> str:
    """The model card ``card_text`` (README.md with YAML front matter; None or empty = a new card) with
    embedselect's result for ``candidate``: evaluation results in ``model-index`` (earlier embedselect entries
    for the same reference data replaced, everything else kept) and the badge section (replaced if present).

    Raises:
        ConfigError: the candidate is not ranked (or failed) in ``ranking``; the card's front matter is not valid
            YAML (the card is refused, not overwritten).
    """
    c = _candidate(ranking, candidate)
    card = _parse_card(card_text)
    data: Any = card.data  # a ModelCardData (huggingface_hub types it as the CardData base)
    fingerprint = str(ranking.dataset.get("fingerprint", ""))
    kept = [e for e in (data.eval_results or [])
            if not (e.source_name == SOURCE and e.dataset_revision == fingerprint)]
    data.eval_results = kept + eval_results(ranking, candidate, dataset=dataset)
    if not data.model_name:
        data.model_name = clean(c.model_id if c.model_id and "/" in c.model_id else c.name)
    section = _section(ranking, candidate, dataset=dataset, base_url=base_url)
    text = card.text
    end = text.find(END)
    start = text.rfind(START, 0, end) if end >= 0 else -1  # the start marker nearest before the end: a stray
    if start >= 0:  # (unterminated) marker earlier in the authors' text stays theirs
        text = text[:start] + section + text[end + len(END):]
    else:
        text = text.rstrip("\n") + ("\n\n" if text.strip() else "") + section + "\n"
    card.text = text
    return str(card.content)


def eval_results_yaml(ranking: Ranking, candidate: str, *, hub_dataset: str, task_id: str = "embedselect") -> str:
    """The hub's ``.eval_results/*.yaml`` content for ``candidate`` on a benchmark dataset that exists on the hub
    (``hub_dataset``, e.g. ``org/name``): one entry, the candidate's headline score of the first metric."""
    import yaml
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    c = _candidate(ranking, candidate)
    metric = ranking.metrics[0]
    entry = EvalResultEntry(dataset_id=hub_dataset, task_id=task_id, value=float(c.scores[metric]),
                            source_url="https://pypi.org/project/embedselect/", source_name=SOURCE,
                            notes=f"{metric}, label-free; data fingerprint {ranking.dataset.get('fingerprint', '')}")
    return yaml.safe_dump(eval_result_entries_to_yaml([entry]), sort_keys=False)


def push_card(repo_id: str, card_text: str, *, token: str | None = None, endpoint: str | None = None,
              message: str = "Add embedselect evaluation results") -> str:
    """Open a pull request on ``repo_id`` that replaces README.md with ``card_text`` (never a direct commit).
    Returns the pull request's URL. The token goes to the client only; it is never logged or stored."""
    from huggingface_hub import HfApi

    from embedselect.errors import HubError
    from embedselect._util.redaction import redact

    api = HfApi(endpoint=endpoint, token=token, library_name="embedselect")
    try:
        info = api.upload_file(path_or_fileobj=card_text.encode("utf-8"), path_in_repo="README.md", repo_id=repo_id,
                               repo_type="model", commit_message=message, create_pr=True)
    except Exception as exc:  # noqa: BLE001 - mapped to a typed, token-free error
        raise HubError(f"could not open a pull request on {repo_id}: {redact(str(exc), token)}", repo_id=repo_id,
                       status_code=getattr(getattr(exc, "response", None), "status_code", None),
                       request_id=getattr(exc, "request_id", None)) from None
    return str(getattr(info, "pr_url", None) or info)
