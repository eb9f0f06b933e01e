"""Ray executor (optional extra ``embedselect[ray]``): embedding and sufficiency pairs as Ray tasks.

What runs where:

- **driver** (the ``embedselect nightly`` process): crawl, plan, budget, the one DuckDB store (the only writer),
  ranking and publishing. It puts the reference data into Ray's object store once.
- **"embed one candidate" task** (``num_cpus=cpus_per_task``, ``num_gpus=gpus_per_model``): reads the reference
  data from the object store, downloads the model into the worker's HF cache, embeds, and sends the (n, d)
  float32 matrix and its provenance back. It writes nothing shared (its scratch store is a temporary folder).
- **"estimate a batch of sufficiency pairs" task**: gets the embeddings of its pairs from the object store,
  estimates each directed pair (same per-pair seeds as :func:`embedselect.select`), sends the values back; the driver
  puts them into the pair cache ``select()`` reads (the store's; a write the cache refuses is a saving, carried in
  memory: :mod:`embedselect.pipeline.savings`), and ``select()`` then only reads them. The pairs are those ``select()`` will
  read and the store lacks (:func:`~embedselect.metrics.sufficiency.score.missing_pairs`: with the metric's ``pairs``
  default, only those its scores read).

Connect to an existing cluster with ``executor: {kind: ray, address: auto}`` (or ``ray://head:10001``); with no
address a local Ray is started (``num_cpus`` of this machine). Workers need embedselect installed and the same
``HF_ENDPOINT``; the hub token travels as a task argument, never in the runtime environment or logs.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from embedselect.errors import MetricError
from embedselect.nightly.executors.base import EmbedJob, Executor, UnitOutcome, hand_on
from embedselect._util.extras import require
from embedselect._util.kinds import PAIR_KEY_PREFIX

log = logging.getLogger(__name__)

_ENV_FORWARD = ("HF_ENDPOINT", "HF_HOME", "HF_HUB_OFFLINE", "EMBEDSELECT_CACHE_DIR", "PYTHONPATH")


def _embed_unit(ref: Any, cand: Any, job: EmbedJob) -> dict[str, Any]:
    """Worker side of "embed one candidate": returns the outcome (with vectors), the run record, and the failure
    / refusal rows of its scratch store."""
    import tempfile

    from embedselect.models.policy import configured_by
    from embedselect.pipeline.embedding import embed_reference
    from embedselect.store import Store

    with tempfile.TemporaryDirectory(prefix="embedselect-worker-") as d, configured_by("nightly"):
        store = Store.open(d)
        (o,) = embed_reference(ref, [cand], store=store, config=job.config, runtime=job.runtime, keep_vectors=True)
        rec = store.get_run(o.result.run_key) if o.result.ok and o.result.run_key else None
        if o.vectors is not None:  # a memory map of the scratch store's file: into memory before the folder goes
            o.vectors = np.array(o.vectors)
        from embedselect.store import hub_models

        failures = [(f["stage"], f["error_type"], f["message"]) for f in store.failure_rows()]
        refusals = [tuple(r) for r in hub_models.refusals(store)[["repo_id", "revision", "reason", "message"]]
                    .itertuples(index=False, name=None)]
        models = [(m["model_id"], m["revision"], m["backend"], m["modality"], m["spec"]) for m in store.model_rows()]
    return {"outcome": o, "record": rec, "failures": failures, "refusals": refusals, "models": models,
            "where": f"{socket.gethostname()}:{os.getpid()}"}


def _pairs_unit(pairs: list[tuple[str, str]], run_keys: dict[str, str], seed: int, options: dict, device: str,
                *arrays: Any) -> dict[str, Any]:
    """Worker side of "estimate a batch of sufficiency pairs": the directed pairs (source, target) ``pairs`` (and
    the marginals of both candidates of each), with the same keys and seeds as inside ``select()``, in one estimate
    (the batch's pairs trained together, as ``select()`` trains its own); ``arrays``: the embeddings of the
    candidates of ``pairs``, in sorted name order. A degenerate candidate is left out (its pairs are not returned)."""
    from embedselect.metrics.base import MemoryPairCache
    from embedselect.metrics.sufficiency.score import information_sufficiency

    names = sorted({x for p in pairs for x in p})
    wanted = {(s, t) for s, t in pairs}
    cache = MemoryPairCache()
    try:  # one estimate for the batch: its pairs are trained together (a pair's value does not depend on its batch)
        information_sufficiency(dict(zip(names, arrays)), seed=seed, run_keys={n: run_keys[n] for n in names},
                                pair_cache=cache, device=device, only=lambda _usable: wanted, **options)
    except MetricError:  # fewer than two usable candidates (degenerate ones): select() leaves them out, says why
        pass
    return cache.new


class RayExecutor(Executor):
    """Runs units as Ray tasks; the driver stores results as they arrive.

    Args:
        address: Ray cluster address ("auto", "ray://head:10001", ...); None starts a local Ray.
        num_cpus: CPUs of a locally started Ray (None = all).
        gpus_per_model: GPUs each embedding task requests (``num_gpus``; fractions share a GPU).
        cpus_per_task: CPUs each task requests.
    """

    name = "ray"
    computes_pairs = True

    def __init__(self, address: str | None = None, num_cpus: int | None = None, gpus_per_model: float = 0.0,
                 cpus_per_task: float = 1.0) -> None:
        ray: Any = require("ray", extra="ray", purpose="the ray executor")
        self.ray = ray
        self.gpus_per_model = gpus_per_model
        self.cpus_per_task = cpus_per_task
        self._owns = False
        if not ray.is_initialized():
            kw: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is None:
                env = {k: os.environ[k] for k in _ENV_FORWARD if k in os.environ}
                kw.update(num_cpus=num_cpus, runtime_env={"env_vars": env})
            else:
                kw["address"] = address
            ray.init(**kw)
            self._owns = True

    def _slots(self) -> int:
        cpus = float(self.ray.cluster_resources().get("CPU", 1))
        return max(1, int(cpus // self.cpus_per_task))

    def embed(
        self,
        ref: Any,
        candidates: Sequence[Any],
        *,
        store: Any,
        job: EmbedJob,
        should_stop: Callable[[], bool],
        on_done: Callable[[UnitOutcome], None] | None = None,
    ) -> tuple[list[UnitOutcome], list[Any]]:
        ray = self.ray
        store.record_dataset(fingerprint=ref.fingerprint, modality=ref.modality, n_items=len(ref), source=ref.source,
                             summary=ref.to_dict())
        remote = ray.remote(num_cpus=self.cpus_per_task, num_gpus=self.gpus_per_model, max_retries=0)(_embed_unit)
        ref_obj = ray.put(ref)  # the reference data goes to the object store once
        queue = list(candidates)
        pending: dict[Any, tuple[Any, float]] = {}
        done: list[UnitOutcome] = []
        left: list[Any] = []
        slots = self._slots()
        while queue or pending:
            while queue and len(pending) < slots:
                if should_stop():
                    left, queue = queue, []
                    break
                cand = queue.pop(0)
                pending[remote.remote(ref_obj, cand, job)] = (cand, time.monotonic())
            if not pending:
                break
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            for obj in ready:
                cand, _t = pending.pop(obj)
                try:
                    unit = self._store_result(ray.get(obj), cand, store, ref.fingerprint)
                except Exception as exc:  # noqa: BLE001 - a crashed worker (OOM kill...) fails one model only
                    unit = self._failed(cand, self._task_error(exc), store, ref.fingerprint, job.token)
                done.append(unit)
                log.info("nightly: %s %s on %s", cand.name, "embedded" if unit.outcome.result.ok else "failed",
                         unit.where)
                if on_done is not None:
                    on_done(unit)
            if job.timeout_s:
                now = time.monotonic()
                for obj, (cand, t0) in list(pending.items()):
                    if now - t0 > job.timeout_s:
                        ray.cancel(obj, force=True)
                        del pending[obj]
                        from embedselect.errors import ModelTimeoutError

                        late = ModelTimeoutError(f"{cand.name} took longer than the per-model limit of "
                                                 f"{job.timeout_s:.0f} s")
                        done.append(self._failed(cand, late, store, ref.fingerprint, job.token))
        return done, left

    def _task_error(self, exc: Exception) -> Exception:
        """What a failed task is reported as: the worker's own exception when the task raised (Ray wraps it in a
        ``RayTaskError`` whose text is the worker's coloured traceback), else the Ray error with its first line
        only (a crashed or killed worker)."""
        cause = getattr(exc, "cause", None)
        if isinstance(exc, self.ray.exceptions.RayTaskError) and isinstance(cause, Exception):
            return cause
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
        return RuntimeError(f"the Ray worker failed ({type(exc).__name__}): {first}" if first
                            else f"the Ray worker failed ({type(exc).__name__})")

    @staticmethod
    def _failed(cand: Any, exc: Exception, store: Any, fingerprint: str, token: str | None) -> UnitOutcome:
        from embedselect.nightly.executors.local import timed_out

        return UnitOutcome(timed_out(cand, exc, store=store, fingerprint=fingerprint, token=token), where="ray")

    @staticmethod
    def _store_result(res: dict[str, Any], cand: Any, store: Any, fingerprint: str) -> UnitOutcome:
        """Driver side: write what a worker sent into the one store."""
        from embedselect.store import hub_models
        from embedselect.store.failures import record_failure

        o, rec = res["outcome"], res["record"]
        r = o.result
        for model_id, revision, backend, modality, spec in res["models"]:
            store.record_model(model_id=model_id, revision=revision, backend=backend, modality=modality, spec=spec,
                               local_dir=None)
        if r.ok and rec is not None and o.vectors is not None:
            store.save_run(key=rec.run_key, vectors=o.vectors, model_id=rec.model_id, revision=rec.revision,
                           backend=rec.backend, settings=rec.settings, fingerprint=rec.fingerprint, device=rec.device,
                           seconds=rec.seconds)
        for stage, error_type, message in res["failures"]:  # recorded on the worker; here through the one place
            record_failure(store, spec=cand.spec, stage=stage, error=message, error_type=error_type,
                           model_id=r.model_id, revision=r.revision, fingerprint=fingerprint)
        for repo_id, revision, reason, message in res["refusals"]:
            hub_models.record_refusal(store, repo_id, revision, reason, message)
        return UnitOutcome(hand_on(o), where=res["where"])

    def precompute_pairs(self, embeddings: dict, run_keys: dict, *, seed: int, options: dict, pair_cache: Any,
                         device: str, references: frozenset[str] = frozenset(),
                         families: Mapping[str, str] | None = None) -> int:
        """Find the directed pairs ``select()`` will read that ``pair_cache`` lacks
        (:func:`~embedselect.metrics.sufficiency.score.missing_pairs` with the pool's ``references`` and
        ``families``) and estimate them on the workers, in batches (about two per worker slot; both directions of
        two candidates in one batch); returns the number of directed pairs computed."""
        from embedselect.metrics.sufficiency.score import estimator_options, missing_pairs

        ray = self.ray
        names = list(embeddings)
        order = {n: i for i, n in enumerate(names)}
        _, own = estimator_options(options)  # the estimator's own options (workers estimate pairs, not scores)
        n_items = len(next(iter(embeddings.values()))) if names else None
        missing = missing_pairs({n: run_keys[n] for n in names}, pair_cache, seed=seed, n_items=n_items,
                                references=references, families=families, **options)
        both: dict[tuple[str, str], list[tuple[str, str]]] = {}  # two candidates -> their directed pairs missing
        for p in missing:
            both.setdefault((min(p, key=order.__getitem__), max(p, key=order.__getitem__)), []).append(p)
        todo = sorted(both, key=lambda p: (order[p[0]], order[p[1]]))
        if not todo:
            return 0
        refs = {n: ray.put(embeddings[n]) for n in {x for p in todo for x in p}}
        remote = ray.remote(num_cpus=self.cpus_per_task, max_retries=1)(_pairs_unit)
        n_batches = min(len(todo), 2 * self._slots())
        size = math.ceil(len(todo) / n_batches)
        tasks = []
        for k in range(0, len(todo), size):
            batch = todo[k : k + size]
            used = sorted({x for p in batch for x in p})
            tasks.append(remote.remote([d for p in batch for d in both[p]], {n: run_keys[n] for n in used}, seed, own,
                                       device, *[refs[n] for n in used]))
        computed = 0
        for new in ray.get(tasks):
            pair_cache.put_many(new)
            computed += sum(1 for k in new if k.startswith(PAIR_KEY_PREFIX))
        return computed

    def close(self) -> None:
        if self._owns and self.ray.is_initialized():
            self.ray.shutdown()
