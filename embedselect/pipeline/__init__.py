"""The one orchestration path: reference data -> candidates -> cached embeddings -> metrics -> Ranking.

Used by the CLI, the nightly job and pipelines alike. Logs through :mod:`logging`; never prints. The stages live in
this package's modules (context, embedding, families, scoring, conclude, answers, run, questions, asking, hub_models); the names in ``__all__`` are
its entry points (the run's internal state, :class:`~embedselect.pipeline.context.RunContext`, stays in its module).
"""

from __future__ import annotations

from embedselect.metrics.base import DEFAULT_METRICS
from embedselect.pipeline.context import EmbedOutcome, load_reference_data
from embedselect.pipeline.embedding import embed, embed_reference
from embedselect.pipeline.hub_models import refresh_hub_models
from embedselect.pipeline.run import select, select_embedded
from embedselect.pipeline.asking import ask
from embedselect.config import LoadPolicy, RankConfig, Runtime
from embedselect.ranking.result import CandidateResult, Ranking

__all__ = [
    "DEFAULT_METRICS",
    "CandidateResult",
    "EmbedOutcome",
    "LoadPolicy",
    "Ranking",
    "RankConfig",
    "Runtime",
    "ask",
    "embed",
    "embed_reference",
    "load_reference_data",
    "refresh_hub_models",
    "select",
    "select_embedded",
]
