"""Model-hub integration: crawl the Hugging Face Hub for candidate embedders, resolve and fetch them safely.

Everything goes through the real ``huggingface_hub`` client (its HTTP session, auth headers, error types,
``model_info`` and ``snapshot_download``), so ``HF_ENDPOINT``, ``HF_HOME`` / ``HF_HUB_CACHE``, ``HF_HUB_OFFLINE``
and ``HF_TOKEN`` behave exactly as they do for transformers and sentence-transformers.

Two entry points:

- :func:`crawl` lists models (one listing request per page, with ``expand`` fields so that no per-model
  request is needed) and returns a :class:`CrawlResult`: typed :class:`HubModel` rows plus per-page errors.
  A failing page never crashes the crawl.
- :func:`fetch_model` pins a repo to a commit sha once, decides the files the backend needs, applies the
  :class:`~embedselect.models.policy.LoadPolicy` (remote code, pickle-only weights, size cap, gated repos) and
  downloads only those files into the shared HF cache. It returns a :class:`FetchedModel`.

Retries live in one place, :class:`RetryPolicy`: 408/429/5xx answers, timeouts, dropped connections and
malformed or truncated bodies are retried with exponential backoff, honouring ``Retry-After`` (seconds).

Tokens: a token (argument, or ``HF_TOKEN`` read by huggingface_hub) is handed to the client only. It is never
logged, never part of an error message and never written to the store (:func:`redact` scrubs messages).
"""

from embedselect.models.hub.crawl import EXPAND_FIELDS, SORTS, CrawlResult, HubModel, crawl, infer_modality
from embedselect.models.hub.fetch import FetchedModel, check_revision, fetch_model
from embedselect.models.hub.files import infer_backend, select_files
from embedselect.models.hub.http import RetryPolicy
from embedselect.models.hub.pages import PageError
from embedselect._util.kinds import BACKENDS
from embedselect._util.redaction import redact

__all__ = [
    "BACKENDS",
    "CrawlResult",
    "EXPAND_FIELDS",
    "FetchedModel",
    "HubModel",
    "PageError",
    "RetryPolicy",
    "SORTS",
    "check_revision",
    "crawl",
    "fetch_model",
    "infer_backend",
    "infer_modality",
    "redact",
    "select_files",
]
