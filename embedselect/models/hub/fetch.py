"""Fetch a hub model: pin the revision to a commit sha once, download only what the backend needs into the
shared Hugging Face cache, and work offline from that cache (``HF_HUB_OFFLINE``)."""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from embedselect.errors import CandidateError, ConfigError, HubError, UnsafeModelError
from embedselect.models.hub.files import check_explicit_weights, check_policy, infer_backend, select_files
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
from embedselect.models.layout import read_json
from embedselect.models.policy import LoadPolicy, remote_code_reason

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

    Steps: one ``model_info`` request (with file sizes) pins the revision to a commit sha; the files are
    chosen with :func:`select_files`; the policy is applied (gated, remote code, pickle-only, size cap —
    ``policy.for_model(repo_id)`` so a per-model opt-in lifts all of them); the small config files are
    downloaded and checked for remote code (``auto_map``, custom module types, a Router's ``router_config.json``
    types); then the rest is downloaded
    with ``huggingface_hub.snapshot_download(revision=sha, allow_patterns=files)``, reusing the HF cache, and
    every file's size is checked against the hub's listing.

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
    info, sha, sizes, tags, chosen, files = _pin_and_check(repo_id, revision, backend, policy, token, retry)
    local = _download_checked(repo_id, revision, sha, chosen, files, sizes, tags, policy, token, retry, progress)
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


def _pin_and_check(repo_id: str, revision: str | None, backend: str | None, policy: LoadPolicy, token: str | None,
                   retry: RetryPolicy) -> tuple[ModelInfo, str, dict[str, int | None], list[str], str, list[str]]:
    """The one ``model_info`` request, its commit sha checked, the backend and files chosen and the policy applied
    to what the listing says: (info, sha, file sizes, tags, backend, files). A refusal names the commit."""
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
    chosen = backend or infer_backend(info.library_name, tags, sizes)
    if chosen is None:
        raise CandidateError(
            f"cannot tell which backend loads {repo_id} (library_name={info.library_name!r}); pass "
            f"backend= one of {', '.join(repr(b) for b in BACKENDS)}."
        )
    try:
        files, weights = select_files(repo_id, chosen, sizes, allow_pickle=policy.allow_pickle)
        check_policy(
            repo_id,
            policy,
            gated=info.gated,
            remote_reason=remote_code_reason(tags, info.config if isinstance(info.config, dict) else None, None),
            weights=weights,
            sizes=sizes,
        )
    except UnsafeModelError as exc:
        exc.revision = sha  # a refusal is of this commit: recorded per revision, a new commit is looked at again
        raise
    return info, sha, sizes, tags, chosen, files


def _download_checked(repo_id: str, revision: str | None, sha: str, backend: str, files: list[str],
                      sizes: dict[str, int | None], tags: list[str], policy: LoadPolicy, token: str | None,
                      retry: RetryPolicy, progress: bool) -> Path:
    """Download the config files first (remote code and ``backend``'s ``transformers_weights`` checked in them,
    :func:`check_explicit_weights`), then ``files`` at ``sha``; sizes verified against the listing and the ref
    remembered. Returns the snapshot folder."""
    from huggingface_hub import snapshot_download

    def download(patterns: list[str]) -> Path:
        return Path(
            snapshot_download(
                repo_id,
                revision=sha,
                allow_patterns=patterns,
                token=token,
                library_name="embedselect",
                tqdm_class=None if progress else silent_tqdm(),
            )
        )

    small = [f for f in files if f in ("config.json", "modules.json", "router_config.json")]
    try:  # huggingface_hub retries most download faults itself: only what it does not is retried here
        local = with_retries(lambda: download(small), retry, f"config of {repo_id}",
                             retryable=not_retried_by_hf) if small else None
        if local is not None:
            config = read_json(local / "config.json")
            remote = remote_code_reason(tags, config, read_json(local / "modules.json"),
                                        read_json(local / "router_config.json"))
            check_policy(repo_id, policy, gated=None, remote_reason=remote, weights=(), sizes={})
            check_explicit_weights(repo_id, backend, config, policy)
        local = with_retries(lambda: download(files), retry, f"files of {repo_id}", retryable=not_retried_by_hf)
        _verify_sizes(repo_id, sha, local, files, sizes)
        _remember_ref(local, revision, sha)
    except UnsafeModelError as exc:
        exc.revision = sha
        raise
    except (HubError, CandidateError):
        raise
    except Exception as exc:  # noqa: BLE001 - mapped to typed errors
        raise map_error(exc, repo_id, revision, token) from None
    return local


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
    chosen = backend or infer_backend(None, (), present)
    if chosen is None:
        raise CandidateError(
            f"cannot tell which backend loads the cached {repo_id}@{sha[:12]}; pass backend= explicitly."
        )
    try:
        files, weights = select_files(repo_id, chosen, present, allow_pickle=policy.allow_pickle)
    except (UnsafeModelError, ConfigError):
        raise
    except CandidateError:
        raise not_cached from None
    sizes = {f: (snap / f).stat().st_size for f in files}
    config = read_json(snap / "config.json")
    remote = remote_code_reason((), config, read_json(snap / "modules.json"), read_json(snap / "router_config.json"))
    check_policy(repo_id, policy, gated=None, remote_reason=remote, weights=weights, sizes=sizes)
    check_explicit_weights(repo_id, chosen, config, policy)
    try:
        local = Path(snapshot_download(repo_id, revision=sha, allow_patterns=files, local_files_only=True))
    except Exception as exc:  # noqa: BLE001
        raise not_cached from exc
    library = chosen if chosen != "transformers" else ("transformers" if "config.json" in present else None)
    return FetchedModel(
        repo_id=repo_id, revision=sha, local_dir=local, library=library, pipeline_tag=None, files=tuple(files),
        backend=chosen,
    )
