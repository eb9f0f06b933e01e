"""Fetch a hub model: pin the revision to a commit sha once, download only what the backend needs into the
shared Hugging Face cache, and work offline from that cache (``HF_HUB_OFFLINE``)."""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from embedselect.errors import (AdapterOnlyError, CandidateError, ConfigError, HubError, ModelFileError,
                                UnsafeModelError)
from embedselect.models.hub.files import (adapter_alone, check_explicit_weights, check_policy, infer_backend,
                                          layout_files, select_files)
from embedselect.models.hub.http import (
    SHA_RE,
    RetryPolicy,
    install_deadlines,
    map_error,
    not_retried_by_hf,
    offline,
    silent_tqdm,
    with_retries,
)
from embedselect._util.kinds import BACKENDS
from embedselect.models.layout import module_types, read_json
from embedselect.models.policy import ADAPTER_CONFIG, LoadPolicy, remote_code_reason

if TYPE_CHECKING:
    from huggingface_hub import ModelInfo

log = logging.getLogger("embedselect.models.hub")




_REV_CHARS_RE = re.compile(r"^[A-Za-z0-9_.\-/]{1,200}$")


def check_repo_id(repo_id: str) -> str:
    """Return ``repo_id`` if it is a hub model id ``owner/name`` the hub accepts (huggingface_hub's own rule:
    letters, digits, ``-``, ``_``, ``.``, at most 96 characters), else raise :class:`CandidateError`: a permanent
    failure, never a hub fault retried night after night (a crawled id with markup or escape sequences was one)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if not isinstance(repo_id, str) or repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise CandidateError(f"{repo_id!r} is not a hub model id; expected 'owner/name'.")
    try:
        validate_repo_id(repo_id)
    except HFValidationError:  # its message repeats the id unescaped
        raise CandidateError(f"{repo_id!r} is not a hub model id; expected 'owner/name' of letters, digits, '-', "
                             "'_' and '.', neither starting nor ending with '-' or '.', at most 96 characters") from None
    return repo_id


def check_revision(revision: str) -> str:
    """Return ``revision`` if it is a safe branch, tag or commit name, else raise :class:`CandidateError`.

    The one rule for revision names (user specs, catalog files and crawl results all pass through it). A
    revision becomes a file name under the Hugging Face cache's ``refs/`` folder, so besides git's ref-name
    rules (no ``..``, no empty, ``.``-leading or ``.lock`` components, no leading or trailing ``/``) it may
    only contain letters, digits and ``_ . - /``.
    """
    parts = revision.split("/") if isinstance(revision, str) else []
    if (
        not isinstance(revision, str)
        or not _REV_CHARS_RE.match(revision)
        or ".." in revision
        or revision.startswith("-")
        or any(not p or p.startswith(".") or p.endswith(".lock") for p in parts)
    ):
        raise CandidateError(
            f"bad revision {revision!r}: use a branch, tag or 40-hex commit sha (letters, digits, '_', '.', '-', "
            "'/'; no '..', no empty or '.'-leading path parts)"
        )
    return revision


def _ref_file(storage: Path, revision: str) -> Path:
    """The cache's ``refs/<revision>`` file for a checked revision, guaranteed to lie inside ``storage/refs``."""
    refs = (storage / "refs").resolve()
    ref = (refs / check_revision(revision)).resolve()
    if not ref.is_relative_to(refs):
        raise CandidateError(f"bad revision {revision!r}: it points outside the cache's refs folder")
    return ref


def _read_ref(ref: Path) -> str | None:
    """The sha stored in a ref file, or None when the file is missing or does not hold a 40-hex sha (a damaged
    or foreign file is never trusted as a commit id)."""
    try:
        sha = ref.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return sha if SHA_RE.match(sha) else None


@dataclass(frozen=True)
class FetchedModel:
    """A model pinned to one commit and present in the local HF cache.

    Attributes:
        repo_id: ``owner/name``.
        revision: the commit sha (40 hex chars) the files come from; use it in every cache key.
        local_dir: the snapshot folder (``.../models--owner--name/snapshots/<sha>``) to load from.
        library: the hub's ``library_name`` (offline: inferred from the files), or None.
        pipeline_tag: the hub's pipeline tag (None offline).
        files: the repo-relative paths that were fetched, sorted.
        backend: the backend the files were selected for ("sentence-transformers", "timm", "transformers").
    """

    repo_id: str
    revision: str
    local_dir: Path
    library: str | None
    pipeline_tag: str | None
    files: tuple[str, ...]
    backend: str = "transformers"


def _verify_sizes(repo_id: str, sha: str, local_dir: Path, files: Sequence[str], sizes: dict[str, int | None]) -> None:
    for f in files:
        p = local_dir / f
        if not p.is_file():
            raise HubError(f"{repo_id}@{sha}: {f} is missing from the downloaded snapshot. Try again.", repo_id=repo_id)
        want = sizes.get(f)
        if want is not None and p.stat().st_size != want:
            raise HubError(
                f"{repo_id}@{sha}: {f} has {p.stat().st_size} bytes, the hub lists {want}: truncated download. "
                "Delete it from the HF cache and try again.", repo_id=repo_id,
            )


def fetch_model(
    repo_id: str,
    *,
    revision: str | None = None,
    backend: str | None = None,
    policy: LoadPolicy = LoadPolicy(),
    token: str | None = None,
    retry: RetryPolicy | None = None,
    progress: bool = False,
) -> FetchedModel:
    """Resolve ``repo_id`` to a commit, check it against ``policy`` and download the files ``backend`` needs.

    Steps: one ``model_info`` request (with file sizes) pins the revision to a commit sha, and the policy is
    applied to what it says (gated, the ``custom_code`` tag; ``policy.for_model(repo_id)``, so a per-model opt-in
    lifts every check); the small layout files (:func:`layout_files`: ``config.json``, ``modules.json``, the
    ``router_config.json`` files) are downloaded and checked for remote code (``auto_map``, custom module types, a
    Router's ``router_config.json`` types) and ``transformers_weights``; the files are chosen from them with
    :func:`select_files` (a sentence-transformers model's module folders:
    :func:`~embedselect.models.layout.module_types`) and the policy applied to them (pickle-only, size cap); then
    they are downloaded with ``huggingface_hub.snapshot_download(revision=sha, allow_patterns=files)``, reusing the
    HF cache, and every file's size is checked against the hub's listing.

    With ``HF_HUB_OFFLINE=1`` nothing is requested: the sha comes from the cache's refs (or ``revision`` if it
    is a sha), the files and backend from the cached snapshot.

    Args:
        repo_id: ``owner/name`` on the hub.
        revision: branch, tag or commit sha; default the repo's default branch.
        backend: "sentence-transformers", "timm" or "transformers"; None = infer from library_name / tags.
        policy: the safety policy (:class:`~embedselect.models.policy.LoadPolicy`).
        token: hub token; default huggingface_hub's (``HF_TOKEN`` / saved login). Never logged or stored.
        retry: retry/backoff settings for transient failures (:class:`RetryPolicy`).
        progress: show huggingface_hub's download progress bars (default: silent, logging only).

    Returns:
        :class:`FetchedModel` with ``revision`` = the 40-hex commit sha and ``local_dir`` = snapshot folder.

    Raises:
        UnsafeModelError: ``reason`` in {"remote_code", "pickle_only", "too_large", "gated"}.
        CandidateError: repo or revision not found, backend unknown, not cached while offline.
        HubError: network failures, 429/5xx after retries, malformed answers, truncated downloads.
        ConfigError: an unknown ``backend``.
    """
    check_repo_id(repo_id)
    if backend is not None and backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; use one of: {', '.join(BACKENDS)}")
    if revision is not None:
        check_revision(revision)
    policy = policy.for_model(repo_id)
    retry = retry or RetryPolicy()
    if offline():
        return _fetch_offline(repo_id, revision, backend, policy)

    install_deadlines()  # every request below (info, tree, files) must be answered in full by a deadline
    info, sha, sizes, tags, chosen = _pin_and_check(repo_id, revision, backend, policy, token, retry)
    local, files = _download_checked(repo_id, revision, sha, chosen, sizes, tags, policy, token, retry, progress)
    log.info("fetched %s@%s (%s, %d files)", repo_id, sha[:12], chosen, len(files))
    return FetchedModel(
        repo_id=repo_id,
        revision=sha,
        local_dir=local,
        library=info.library_name,
        pipeline_tag=info.pipeline_tag,
        files=tuple(files),
        backend=chosen,
    )


MAX_ADAPTER_CONFIG_BYTES = 1 << 20
"""The largest ``adapter_config.json`` read to name an adapter's base model (a few hundred bytes in practice)."""


def _adapter_only(repo_id: str, config: Any) -> AdapterOnlyError:
    """The error for a repo that is a PEFT adapter alone (:func:`~embedselect.models.hub.files.adapter_alone`), naming
    the base model its ``adapter_config.json`` (``config``, parsed; None when absent, damaged or too large) records
    in ``base_model_name_or_path``: untrusted text, shown as it is only when it is a hub model id
    (:func:`check_repo_id`, the one rule), else quoted with its escapes (``repr``, cut to 100 characters) as
    :func:`check_repo_id` quotes an id it refuses."""
    raw = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    try:
        base = check_repo_id(raw) if isinstance(raw, str) else None
    except CandidateError:
        base = None
    if base is not None:
        named = f"Its adapter_config.json names the base model {base}: rank {base} instead, or"
    elif isinstance(raw, str) and raw:
        named = (f"Its adapter_config.json names the base model {raw[:100]!r}, which is not a hub model id (a "
                 "folder of whoever trained it?): rank that model from the hub instead, or")
    else:
        named = "Its adapter_config.json names no base model (base_model_name_or_path): rank the model it adapts, or"
    return AdapterOnlyError(
        f"{repo_id} is a PEFT adapter ({ADAPTER_CONFIG}) without the weights of the model it adapts; embedselect "
        f"ranks whole models and does not fetch a model by the name an adapter records. {named} merge the adapter "
        "into that model (peft's merge_and_unload, then save_pretrained) and rank the merged folder, or upload it and "
        "rank that repo. (A local folder that holds an adapter beside its model's own weights is ranked with the "
        "adapter applied when peft is installed.)",
        base_model=base,
    )


def _download(repo_id: str, sha: str, patterns: list[str], token: str | None, retry: RetryPolicy, what: str,
              progress: bool = False) -> Path:
    """``patterns`` of ``repo_id`` at ``sha`` in the HF cache (``snapshot_download``), retried only for the faults
    huggingface_hub does not retry itself (:func:`not_retried_by_hf`); the snapshot folder."""
    from huggingface_hub import snapshot_download

    return with_retries(
        lambda: Path(snapshot_download(repo_id, revision=sha, allow_patterns=patterns, token=token,
                                       library_name="embedselect", tqdm_class=None if progress else silent_tqdm())),
        retry, f"{what} of {repo_id}", retryable=not_retried_by_hf,
    )


def _pin_and_check(repo_id: str, revision: str | None, backend: str | None, policy: LoadPolicy, token: str | None,
                   retry: RetryPolicy) -> tuple[ModelInfo, str, dict[str, int | None], list[str], str]:
    """The one ``model_info`` request, its commit sha checked, the backend chosen and the policy applied to what the
    listing says (gated, the ``custom_code`` tag, the ``auto_map`` of the config the hub shows): (info, sha, file
    sizes, tags, backend). A refusal names the commit."""
    from huggingface_hub import HfApi

    api = HfApi(library_name="embedselect")
    try:
        info = with_retries(
            lambda: api.model_info(repo_id, revision=revision, files_metadata=True, timeout=retry.timeout, token=token),
            retry,
            f"model info for {repo_id}",
        )
    except Exception as exc:  # noqa: BLE001 - mapped to typed errors
        raise map_error(exc, repo_id, revision, token) from None
    sha = info.sha
    if not isinstance(sha, str) or not SHA_RE.match(sha):
        raise HubError(f"{repo_id}: the hub's model info has no valid commit sha ({sha!r}); cannot pin a revision.",
                       repo_id=repo_id)
    if info.siblings is None:
        raise HubError(f"{repo_id}@{sha}: the hub's model info lists no files.", repo_id=repo_id)
    sizes: dict[str, int | None] = {
        s.rfilename: (s.lfs.size if s.lfs is not None else s.size) for s in info.siblings
    }
    tags = list(info.tags or [])
    try:
        check_policy(repo_id, policy, gated=info.gated, weights=(), sizes=sizes,
                     remote_reason=remote_code_reason(tags, info.config if isinstance(info.config, dict) else None))
    except UnsafeModelError as exc:
        exc.revision = sha  # a refusal is of this commit: recorded per revision, a new commit is looked at again
        raise
    if adapter_alone(sizes):  # said before the backend: an adapter repo's library_name is "peft"
        small = (sizes.get(ADAPTER_CONFIG) or 0) <= MAX_ADAPTER_CONFIG_BYTES
        try:
            local = _download(repo_id, sha, [ADAPTER_CONFIG], token, retry, "adapter config") if small else None
            config = read_json(local / ADAPTER_CONFIG) if local is not None else None
        except ModelFileError:  # damaged: it is still an adapter, whose base model is not known
            config = None
        except (HubError, CandidateError):
            raise
        except Exception as exc:  # noqa: BLE001 - mapped to typed errors
            raise map_error(exc, repo_id, revision, token) from None
        raise _adapter_only(repo_id, config)
    chosen = backend or infer_backend(info.library_name, tags, sizes)
    if chosen is None:
        raise CandidateError(
            f"cannot tell which backend loads {repo_id} (library_name={info.library_name!r}); pass "
            f"backend= one of {', '.join(repr(b) for b in BACKENDS)}."
        )
    return info, sha, sizes, tags, chosen


def _choose(repo_id: str, backend: str, present: Sequence[str], read: Callable[[str], Any], tags: Sequence[str],
            policy: LoadPolicy, sizes: Mapping[str, int | None]) -> tuple[list[str], list[str]]:
    """Which of the repo's files ``present`` to fetch and which of them are weights (:func:`select_files`), from its
    layout files already at hand (``read``: the JSON at a repo path, None when absent; :func:`layout_files`), with the
    policy applied to them: remote code (``auto_map``, ``modules.json``'s and every Router's module types),
    ``transformers_weights``, pickle-only weights and the size cap. A sentence-transformers model's module folders are
    :func:`~embedselect.models.layout.module_types` of them."""
    modules = module_types(read) if backend == "sentence-transformers" else None
    config = read("config.json")
    routers = [f"{m}/router_config.json" for m in modules if m] if modules is not None else []
    remote = remote_code_reason(tags, config, read("modules.json") if modules is not None else None)
    remote = remote or remote_code_reason(router=read("router_config.json") if modules is not None else None)
    for path in routers:  # a nested Router's file named by its path in the repo: untrusted text, quoted (repr)
        remote = remote or remote_code_reason(router=read(path), router_file=repr(path))
    check_policy(repo_id, policy, gated=None, remote_reason=remote, weights=(), sizes={})
    check_explicit_weights(repo_id, backend, config, policy)
    files, weights = select_files(repo_id, backend, present, allow_pickle=policy.allow_pickle, modules=modules)
    check_policy(repo_id, policy, gated=None, remote_reason=None, weights=weights, sizes=sizes)
    return files, weights


def _download_checked(repo_id: str, revision: str | None, sha: str, backend: str, sizes: dict[str, int | None],
                      tags: list[str], policy: LoadPolicy, token: str | None, retry: RetryPolicy,
                      progress: bool) -> tuple[Path, list[str]]:
    """Download the layout files first (:func:`layout_files`: ``config.json``, then a sentence-transformers model's
    ``modules.json`` and ``router_config.json`` files, those of the folders ``modules.json`` names too), choose the
    files from them with the policy applied (:func:`_choose`), then download those at ``sha``; sizes verified against
    the listing and the ref remembered. Returns (the snapshot folder, the files fetched)."""
    def fetch(patterns: list[str], what: str) -> Path:  # huggingface_hub retries most download faults itself
        return _download(repo_id, sha, patterns, token, retry, what, progress)

    try:
        layout = layout_files(backend, sizes)
        local = fetch(layout, "config") if layout else None
        read = (lambda rel: read_json(local / rel)) if local is not None else (lambda rel: None)
        if backend == "sentence-transformers":  # a Router below the root: its router_config.json in its folder
            deeper = [f for f in layout_files(backend, sizes, module_types(read)) if f not in layout]
            local = fetch(layout + deeper, "config") if deeper else local
        files, _ = _choose(repo_id, backend, list(sizes), read, tags, policy, sizes)
        local = fetch(files, "files")
        _verify_sizes(repo_id, sha, local, files, sizes)
        _remember_ref(local, revision, sha)
    except UnsafeModelError as exc:
        exc.revision = sha
        raise
    except (HubError, CandidateError):
        raise
    except Exception as exc:  # noqa: BLE001 - mapped to typed errors
        raise map_error(exc, repo_id, revision, token) from None
    return local, files


def _remember_ref(snapshot: Path, revision: str | None, sha: str) -> None:
    """Write ``refs/<revision>`` = sha in the HF cache (the layout huggingface_hub uses), so that an offline
    fetch of the branch or tag finds the pinned commit. Downloads by sha do not write it themselves, and
    huggingface_hub's only public writer (``HfApi.resolve_revision``) would cost a second request per fetch on top
    of the ``model_info`` that already pinned the sha; reading goes through :func:`_cached_commit`."""
    from huggingface_hub import constants

    rev = revision or constants.DEFAULT_REVISION
    if SHA_RE.match(rev) or not SHA_RE.match(sha):
        return
    ref = _ref_file(snapshot.parent.parent, rev)
    try:
        if _read_ref(ref) == sha:
            return
        from embedselect._fs import guard as fsguard
        from embedselect.errors import ConfigError

        ref.parent.mkdir(parents=True, exist_ok=True)
        fsguard.write_text(ref, sha)  # atomic, under a unique temporary name, never through a link
    except (OSError, ConfigError) as exc:  # the download itself succeeded; only offline look-ups by branch lose
        log.warning("could not record %s -> %s in the HF cache: %s", rev, sha[:12], exc)


def _cached_commit(repo_id: str, revision: str) -> str | None:
    """The commit sha that the HF cache records for ``revision`` (huggingface_hub's ``resolve_revision`` with
    ``local_files_only``), or None when it records none, or records something that is not a 40-hex sha: a damaged
    or foreign ref file is never trusted as a commit id (huggingface_hub would join it into a path)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RevisionResolutionError

    if SHA_RE.match(check_revision(revision)):
        return revision
    try:
        resolved = HfApi(library_name="embedselect").resolve_revision(repo_id, revision=revision, local_files_only=True)
    except (RevisionResolutionError, OSError, UnicodeDecodeError):
        return None
    return resolved.resolved if SHA_RE.match(resolved.resolved) else None


def _fetch_offline(repo_id: str, revision: str | None, backend: str | None, policy: LoadPolicy) -> FetchedModel:
    """:func:`fetch_model` from the local HF cache alone (``HF_HUB_OFFLINE=1``)."""
    from huggingface_hub import constants, snapshot_download

    not_cached = CandidateError(
        f"{repo_id}@{revision or 'main'} is not in the local Hugging Face cache ({constants.HF_HUB_CACHE}) and "
        "HF_HUB_OFFLINE is set. Fetch it once online (unset HF_HUB_OFFLINE) or point HF_HOME / HF_HUB_CACHE at a "
        "cache that has it."
    )
    sha = _cached_commit(repo_id, revision or constants.DEFAULT_REVISION)
    if sha is None:
        raise not_cached
    try:  # the commit's snapshot folder, if cached; which files the backend needs follows from what is in it
        snap = Path(snapshot_download(repo_id, revision=sha, local_files_only=True, allow_patterns=[]))
    except Exception as exc:  # LocalEntryNotFoundError and kin: not (usably) cached
        raise not_cached from exc
    present = sorted(str(p.relative_to(snap)).replace(os.sep, "/") for p in snap.rglob("*") if p.is_file())
    if adapter_alone(present):
        small = (snap / ADAPTER_CONFIG).stat().st_size <= MAX_ADAPTER_CONFIG_BYTES
        try:
            config = read_json(snap / ADAPTER_CONFIG) if small else None
        except ModelFileError:
            config = None
        raise _adapter_only(repo_id, config)
    chosen = backend or infer_backend(None, (), present)
    if chosen is None:
        raise CandidateError(
            f"cannot tell which backend loads the cached {repo_id}@{sha[:12]}; pass backend= explicitly."
        )
    sizes: dict[str, int | None] = {f: (snap / f).stat().st_size for f in present}
    try:
        files, _ = _choose(repo_id, chosen, present, lambda rel: read_json(snap / rel), (), policy, sizes)
    except (UnsafeModelError, ConfigError, ModelFileError):  # a damaged cached config is named, not "not cached"
        raise
    except CandidateError:
        raise not_cached from None
    try:
        local = Path(snapshot_download(repo_id, revision=sha, allow_patterns=files, local_files_only=True))
    except Exception as exc:  # noqa: BLE001
        raise not_cached from exc
    library = chosen if chosen != "transformers" else ("transformers" if "config.json" in present else None)
    return FetchedModel(
        repo_id=repo_id, revision=sha, local_dir=local, library=library, pipeline_tag=None, files=tuple(files),
        backend=chosen,
    )
