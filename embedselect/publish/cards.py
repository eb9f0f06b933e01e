"""Write a ranking result into a model card (README.md with YAML front matter) through huggingface_hub's
``ModelCard`` / ``ModelCardData`` / ``EvalResult`` API.

What is written, for one candidate of one ranking:

* in the metadata, ``model-index`` entries (via ``EvalResult``): one per metric score of the candidate plus
  its rank, with ``dataset_type`` ``embedselect/<fingerprint[:16]>`` (the data fingerprint), ``dataset_revision``
  the full fingerprint, and ``source_name`` "embedselect" with the ranking id. Earlier embedselect results
  for the same fingerprint are replaced; every other result and every other metadata key is kept.
* in the body, the badge Markdown between ``<!-- embedselect:start -->`` and ``<!-- embedselect:end -->``
  (replaced when present, else appended as a short section); the rest of the body is untouched.

Local files only here; nothing is sent anywhere.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from embedselect.errors import ConfigError
from embedselect.publish.badges import badge_for
from embedselect.ranking import Ranking

SOURCE_NAME = "embedselect"
START, END = "<!-- embedselect:start -->", "<!-- embedselect:end -->"
_BLOCK = re.compile(re.escape(START) + r".*?" + re.escape(END), re.S)


def eval_results(ranking: Ranking, candidate: str):
    """``EvalResult`` objects for ``candidate``: each metric's score (higher is better) and the combined rank."""
    from huggingface_hub import EvalResult

    try:
        c = ranking[candidate]
    except KeyError:
        names = [x.name for x in ranking.ok]
        raise ConfigError(f"no candidate {candidate!r} in ranking {ranking.ranking_id[:12]}; ranked: {names}") from None
    if not c.ok:
        raise ConfigError(f"candidate {candidate!r} failed in this ranking ({c.error_type}); nothing to publish")
    fp = str(ranking.dataset.get("fingerprint", ""))
    common = dict(
        task_type="feature-extraction", task_name="label-free embedding ranking",
        dataset_type=f"embedselect/{fp[:16]}", dataset_name=Path(str(ranking.dataset.get("source") or fp)).name,
        dataset_revision=fp, source_name=SOURCE_NAME, source_url=f"embedselect:ranking/{ranking.ranking_id}",
    )  # fmt: skip
    out = [EvalResult(metric_type=m, metric_name=m, metric_value=float(v), **common) for m, v in c.scores.items()]
    out.append(EvalResult(metric_type="embedselect_rank", metric_name=f"rank of {len(ranking.ok)}",
                          metric_value=int(c.rank), **common))  # fmt: skip
    return out


def update_card(card_text: str | None, ranking: Ranking, candidate: str, *, model_name: str | None = None,
                image_url: str | None = None) -> str:  # fmt: skip
    """The card text with this ranking's result for ``candidate`` added (see module doc). ``card_text`` None:
    start an empty card."""
    from huggingface_hub import ModelCard, ModelCardData

    card = ModelCard(card_text) if card_text else ModelCard("---\n---\n")
    data = card.data if card.data is not None else ModelCardData()
    new = eval_results(ranking, candidate)
    fp = new[0].dataset_revision
    kept = [r for r in (data.eval_results or []) if not (r.source_name == SOURCE_NAME and r.dataset_revision == fp)]
    data.eval_results = kept + new
    if not data.model_name:
        data.model_name = model_name or ranking[candidate].model_id or candidate
    card.data = data
    badge = badge_for(ranking, candidate)
    block = f"{START}\n{badge.markdown(image_url)}\n\nRanked by [embedselect](https://pypi.org/project/embedselect/) on " \
            f"data fingerprint `{fp[:12]}` (ranking `{ranking.ranking_id[:12]}`).\n{END}"  # fmt: skip
    body = card.text
    body = _BLOCK.sub(lambda _: block, body) if _BLOCK.search(body) else body.rstrip("\n") + "\n\n" + block + "\n"
    card.text = body
    return str(card.content)


def write_card(path: str | Path, ranking: Ranking, candidate: str, **kw) -> Path:
    """Update (or create) the local model card at ``path`` atomically; returns the path."""
    p = Path(path)
    if p.is_dir():
        p = p / "README.md"
    text = p.read_text(encoding="utf-8") if p.exists() else None
    out = update_card(text, ranking, candidate, **kw)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(out, encoding="utf-8")
    os.replace(tmp, p)
    return p
