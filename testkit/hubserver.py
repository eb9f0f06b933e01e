"""A fake Hugging Face Hub on 127.0.0.1, speaking the endpoints the real ``huggingface_hub`` client uses.

Routes (everything else is refused with 400 and recorded in :attr:`FakeHub.unknown`):

- ``GET  /api/models`` — listing: ``filter`` (repeated; tags incl. library), ``author``, ``search``,
  ``pipeline_tag``, ``gated``, ``sort`` (trendingScore, downloads, likes, lastModified, createdAt; descending),
  ``limit`` (page size), ``expand`` (repeated; only those fields are returned), ``cursor``; ``Link`` pagination.
  Unknown query parameters or expand fields → 400.
- ``GET  /api/models/{owner}/{name}[/revision/{rev}]`` — model info (``blobs=true`` adds sizes and LFS info).
- ``GET  /api/models/{owner}/{name}/tree/{rev}[/{path}]`` — tree listing (``recursive``), ``Link`` pagination.
- ``HEAD|GET /{owner}/{name}/resolve/{rev}/{path}`` — file download with ``X-Repo-Commit`` and ``ETag``;
  LFS files (weights) answer 302 to ``http://localhost:{port}/cdn/{sha256}`` (another origin, like the real
  CDN, so the client drops the token) with ``X-Linked-Etag`` / ``X-Linked-Size``. ``Range`` is honoured.
- ``GET  /api/agent-harnesses`` — the (empty) registry huggingface_hub reads for its user agent
  (:attr:`FakeHub.agent_registry`: a test may serve any JSON there).
- Not found: 404 with ``X-Error-Code`` (RepoNotFound, RevisionNotFound, EntryNotFound); gated repos: 401/403
  with ``X-Error-Code: GatedRepo`` on file downloads unless the request carries a granted token.

Faults (:meth:`FakeHub.add_fault`): "status" (answer with a status + headers), "malformed" (a 200 whose JSON
body is cut off, ``Link`` kept), "truncate" (a file body shorter than the hub said, consistent
``Content-Length``), "drop" (full ``Content-Length`` announced, half sent, connection closed), "delay"
(sleep before answering, for timeouts), "trickle" (the whole answer, status line included, sent one byte every
``delay`` seconds).

A hostile listing: :attr:`FakeHub.listing_link` ``(cursor, size) -> URL or None`` replaces every listing page's
``Link: next`` (a page past the end wraps round to the start, so pages stay non-empty while there are repos).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".onnx", ".h5", ".msgpack")
EXPANDABLE = {
    "author", "cardData", "config", "createdAt", "disabled", "downloads", "downloadsAllTime", "gated", "gguf",
    "inference", "inferenceProviderMapping", "lastModified", "library_name", "likes", "mask_token",
    "model-index", "pipeline_tag", "private", "safetensors", "sha", "siblings", "spaces", "tags",
    "transformersInfo", "trendingScore", "widgetData", "resourceGroup",
}
LIST_PARAMS = {
    "filter", "author", "search", "pipeline_tag", "gated", "sort", "direction", "limit", "expand", "cursor",
    "full", "config", "cardData", "num_parameters",
}
SORT_KEYS = {"trendingScore", "downloads", "likes", "lastModified", "createdAt"}


def _git_blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def safetensors_param_count(data: bytes) -> dict[str, int]:
    """Parameter counts per dtype from a safetensors file's header (the hub's ``safetensors.parameters``)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    counts: dict[str, int] = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        k = 1
        for s in t["shape"]:
            k *= int(s)
        counts[t["dtype"]] = counts.get(t["dtype"], 0) + k
    return counts


@dataclass
class Repo:
    repo_id: str
    commits: dict[str, dict[str, bytes]]
    main: str
    library_name: str | None
    pipeline_tag: str | None
    tags: list[str]
    gated: str | bool = False
    allowed_tokens: set[str] = field(default_factory=set)
    downloads: int = 0
    likes: int = 0
    trending_score: float = 0.0
    created_at: str = "2024-01-01T00:00:00.000Z"
    last_modified: str = "2024-01-01T00:00:00.000Z"
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Fault:
    pattern: re.Pattern
    kind: str
    method: str | None
    status: int
    headers: dict[str, str]
    times: int
    delay: float
    hits: int = 0


class FakeHub:
    """The fake hub. ``start()`` serves on 127.0.0.1:<free port> from a daemon thread; :attr:`url` is its
    ``HF_ENDPOINT``. All state is guarded by a lock; :meth:`reset` clears repos, faults and logs."""

    def __init__(self, *, page_size: int = 1000) -> None:
        self.lock = threading.RLock()
        self.repos: dict[str, Repo] = {}
        self.faults: list[Fault] = []
        self.requests: list[dict[str, Any]] = []
        self.unknown: list[str] = []
        self.pull_requests: list[dict[str, Any]] = []
        self.page_size = page_size
        self.listing_link: Any = None
        self.agent_registry: Any = {"standardEnvVars": [], "harnesses": {}}
        self.server: ThreadingHTTPServer | None = None
        self.port = 0
        self._commit_counter = 0

    # --- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> "FakeHub":
        hub = self

        class Handler(_Handler):
            pass

        Handler.hub = hub
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, name="fake-hub", daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def reset(self) -> None:
        with self.lock:
            self.repos.clear()
            self.faults.clear()
            self.requests.clear()
            self.unknown.clear()
            self.pull_requests.clear()
            self.page_size = 1000
            self.listing_link = None
            self.agent_registry = {"standardEnvVars": [], "harnesses": {}}

    # --- content ---------------------------------------------------------------------------------------
    def publish(
        self,
        repo_id: str,
        local_dir: str | Path | None = None,
        *,
        files: dict[str, bytes] | None = None,
        library_name: str | None = None,
        pipeline_tag: str | None = None,
        tags: list[str] | tuple[str, ...] = (),
        gated: str | bool = False,
        allowed_tokens: set[str] | tuple[str, ...] = (),
        license: str | None = "apache-2.0",
        downloads: int = 0,
        likes: int = 0,
        trending_score: float = 0.0,
        created_at: str = "2024-01-01T00:00:00.000Z",
        last_modified: str | None = None,
        extra_files: dict[str, bytes] | None = None,
    ) -> str:
        """Publish (or push a new commit to) ``repo_id`` with the files of ``local_dir`` (recursively) and/or
        ``files``. Tags get the library, pipeline tag, ``license:...`` and ``safetensors`` added like the real
        hub does. Returns the new commit sha (40 hex)."""
        content: dict[str, bytes] = {}
        if local_dir is not None:
            root = Path(local_dir)
            for p in sorted(root.rglob("*")):
                if p.is_file():
                    content[str(p.relative_to(root)).replace("\\", "/")] = p.read_bytes()
        content.update(files or {})
        content.update(extra_files or {})
        content.setdefault(".gitattributes", b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n")
        with self.lock:
            self._commit_counter += 1
            h = hashlib.sha1(repo_id.encode() + b"%d" % self._commit_counter)
            for name in sorted(content):
                h.update(name.encode() + _git_blob_sha(content[name]).encode())
            sha = h.hexdigest()
            all_tags = list(tags)
            for t in (library_name, pipeline_tag):
                if t and t not in all_tags:
                    all_tags.append(t)
            if any(n.endswith(".safetensors") for n in content) and "safetensors" not in all_tags:
                all_tags.append("safetensors")
            if license:
                all_tags.append(f"license:{license}")
            modified = last_modified or datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            if repo_id in self.repos:
                repo = self.repos[repo_id]
                repo.commits[sha] = content
                repo.main = sha
                repo.last_modified = modified
            else:
                self.repos[repo_id] = Repo(
                    repo_id, {sha: content}, sha, library_name, pipeline_tag, all_tags, gated, set(allowed_tokens),
                    downloads, likes, trending_score, created_at, modified,
                )
        return sha

    def set_stats(self, repo_id: str, *, downloads: int | None = None, likes: int | None = None,
                  trending_score: float | None = None) -> None:
        """Change a repo's popularity numbers (as between two crawls)."""
        with self.lock:
            r = self.repos[repo_id]
            if downloads is not None:
                r.downloads = downloads
            if likes is not None:
                r.likes = likes
            if trending_score is not None:
                r.trending_score = trending_score

    def add_fault(self, pattern: str, kind: str = "status", *, status: int = 503, times: int = 1,
                  headers: dict[str, str] | None = None, delay: float = 0.0, method: str | None = None) -> Fault:
        """Inject a fault on requests whose path (with query) matches the regex ``pattern``, ``times`` times
        (-1 = always). Kinds: "status", "malformed", "truncate", "drop", "delay" (see module doc)."""
        assert kind in {"status", "malformed", "truncate", "drop", "delay", "trickle"}, kind
        f = Fault(re.compile(pattern), kind, method, status, dict(headers or {}), times, delay)
        with self.lock:
            self.faults.append(f)
        return f

    def take_fault(self, method: str, target: str) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if (f.method is None or f.method == method) and f.pattern.search(target) and f.times != 0:
                    f.times -= 1 if f.times > 0 else 0
                    f.hits += 1
                    return f
        return None

    def requests_to(self, pattern: str, method: str | None = None) -> list[dict[str, Any]]:
        """Logged requests whose path matches ``pattern``."""
        rx = re.compile(pattern)
        with self.lock:
            return [r for r in self.requests if rx.search(r["path"]) and (method is None or r["method"] == method)]

    # --- views -----------------------------------------------------------------------------------------
    def _files(self, repo: Repo, sha: str) -> dict[str, bytes]:
        return repo.commits[sha]

    def _resolve_rev(self, repo: Repo, rev: str) -> str | None:
        rev = unquote(rev)
        if rev in ("main", "HEAD"):
            return repo.main
        if rev in repo.commits:
            return rev
        return None

    def _safetensors(self, files: dict[str, bytes]) -> dict[str, Any] | None:
        counts: dict[str, int] = {}
        for name, data in files.items():
            if name.endswith(".safetensors") and "/" not in name:
                try:
                    for k, v in safetensors_param_count(data).items():
                        counts[k] = counts.get(k, 0) + v
                except Exception:  # noqa: BLE001 - a test may publish junk weights
                    continue
        return {"parameters": counts, "total": sum(counts.values())} if counts else None

    def _config(self, files: dict[str, bytes]) -> dict[str, Any] | None:
        if "config.json" not in files:
            return None
        try:
            cfg = json.loads(files["config.json"])
        except ValueError:
            return None
        return {k: cfg[k] for k in ("architectures", "model_type", "auto_map", "architecture") if k in cfg}

    def model_json(self, repo: Repo, sha: str, *, expand: list[str] | None = None, blobs: bool = False,
                   listing: bool = False) -> dict[str, Any]:
        files = self._files(repo, sha)
        full: dict[str, Any] = {
            "_id": hashlib.md5(repo.repo_id.encode()).hexdigest()[:24],
            "id": repo.repo_id,
            "modelId": repo.repo_id,
            "author": repo.repo_id.split("/")[0],
            "sha": sha,
            "lastModified": repo.last_modified,
            "createdAt": repo.created_at,
            "private": False,
            "gated": repo.gated,
            "disabled": False,
            "downloads": repo.downloads,
            "likes": repo.likes,
            "trendingScore": repo.trending_score,
            "library_name": repo.library_name,
            "pipeline_tag": repo.pipeline_tag,
            "tags": list(repo.tags),
            "config": self._config(files),
            "safetensors": self._safetensors(files),
            "siblings": [self._sibling(n, d, blobs) for n, d in sorted(files.items())],
        }
        full.update(repo.extra)  # tests override fields here (e.g. to serve a malformed entry)
        if full.get("safetensors") is None:
            del full["safetensors"]
        if full.get("config") is None:
            del full["config"]
        if expand:
            return {k: v for k, v in full.items() if k in ("_id", "id") or k in expand}
        if listing:
            keep = {"_id", "id", "modelId", "likes", "downloads", "trendingScore", "private", "library_name",
                    "pipeline_tag", "tags", "createdAt"}
            return {k: v for k, v in full.items() if k in keep}
        return full

    @staticmethod
    def _sibling(name: str, data: bytes, blobs: bool) -> dict[str, Any]:
        s: dict[str, Any] = {"rfilename": name}
        if blobs:
            s["size"] = len(data)
            s["blobId"] = _git_blob_sha(data)
            if name.endswith(LFS_SUFFIXES):
                s["lfs"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest(), "pointerSize": 134}
        return s


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub: FakeHub

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    # --- plumbing --------------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
              content_type: str = "application/json", length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD" and body:
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(obj).encode()
        if self._fault is not None and self._fault.kind == "malformed":
            body = body[: max(1, len(body) // 2)]
        self._send(status, body, headers)

    def _error(self, status: int, code: str | None, message: str, headers: dict[str, str] | None = None) -> None:
        h = dict(headers or {})
        if code:
            h["X-Error-Code"] = code
        h["X-Error-Message"] = message
        self._send(status, json.dumps({"error": message}).encode(), h)

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._refuse()

    do_DELETE = do_PATCH = do_PUT

    def _refuse(self) -> None:
        with self.hub.lock:
            self.hub.unknown.append(f"{self.command} {self.path}")
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        self._send(400, json.dumps({"error": f"fake hub: unknown route {self.command} {self.path}"}).encode())

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query, keep_blank_values=True)
        with self.hub.lock:
            self.hub.requests.append(
                {"method": self.command, "path": path, "query": query,
                 "headers": {k.lower(): v for k, v in self.headers.items()}}
            )
        self._fault = self.hub.take_fault(self.command, self.path)
        f = self._fault
        if f is not None and f.kind == "trickle":
            return self._trickle(path, query, f.delay)
        if f is not None:
            if f.kind == "delay":
                time.sleep(f.delay)
            elif f.kind == "status":
                self._error(f.status, None, f"injected fault {f.status}", f.headers)
                return
        try:
            self._route(path, query)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _trickle(self, path: str, query: dict[str, list[str]], delay: float) -> None:
        """Answer as usual, but send the bytes one at a time, ``delay`` seconds apart, until the client leaves."""
        import io

        real, self.wfile = self.wfile, io.BytesIO()
        try:
            self._route(path, query)
            data = self.wfile.getvalue()
        finally:
            self.wfile = real
        try:
            for i in range(len(data)):
                real.write(data[i : i + 1])
                real.flush()
                time.sleep(delay)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _route(self, path: str, query: dict[str, list[str]]) -> None:
        if path == "/api/agent-harnesses" and self.command == "GET":  # the client's user-agent registry
            return self._json(200, self.hub.agent_registry)
        m = re.fullmatch(r"/api/models", path)
        if m and self.command == "GET":
            return self._list(query)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([^/]+)(/.*)?", path)
        if m and self.command == "GET":
            return self._tree(m.group(1), m.group(2), (m.group(3) or "").lstrip("/"), query)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)(?:/revision/([^/]+))?", path)
        if m and self.command == "GET":
            return self._info(m.group(1), m.group(2), query)
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if m and self.command in ("GET", "HEAD") and not path.startswith("/api/"):
            return self._resolve(m.group(1), m.group(2), unquote(m.group(3)))
        if path == "/api/validate-yaml" and self.command == "POST":  # the client checks README.md metadata
            return self._validate_yaml()
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/preupload/([^/]+)", path)
        if m and self.command == "POST":
            return self._preupload(m.group(1))
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/commit/([^/]+)", path)
        if m and self.command == "POST":
            return self._commit(m.group(1), unquote(m.group(2)), query)
        m = re.fullmatch(r"/cdn/([0-9a-f]{64})", path)
        if m and self.command in ("GET", "HEAD"):
            return self._cdn(m.group(1))
        self._refuse()

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _validate_yaml(self) -> None:
        """Accept front matter that parses as a YAML mapping (the real hub also checks its schema)."""
        import yaml

        body = json.loads(self._body() or b"{}")
        content = str(body.get("content", ""))
        m = re.match(r"---\n(.*?)\n---", content, re.S)
        try:
            ok = m is None or isinstance(yaml.safe_load(m.group(1)) or {}, dict)
        except yaml.YAMLError:
            ok = False
        if not ok:
            return self._error(400, None, "Invalid metadata in README.md.")
        return self._json(200, {"errors": [], "warnings": []})

    def _preupload(self, repo_id: str) -> None:
        """Every file is a small regular (non-LFS) upload."""
        body = json.loads(self._body() or b"{}")
        if self._repo(repo_id) is None:
            return self._error(404, "RepoNotFound", "Repository not found")
        files = [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None}
                 for f in body.get("files", [])]
        return self._json(200, {"files": files, "commitOid": None})

    def _commit(self, repo_id: str, revision: str, query: dict[str, list[str]]) -> None:
        """A commit (ndjson: header + base64 files). Only pull requests (``create_pr=1``) are accepted: they are
        recorded in :attr:`FakeHub.pull_requests` and never change the repository's main branch."""
        data = self._body()
        repo = self._repo(repo_id)
        if repo is None:
            return self._error(404, "RepoNotFound", "Repository not found")
        if query.get("create_pr") != ["1"]:
            return self._error(403, None, "fake hub: direct commits are refused; open a pull request")
        header, files = {}, {}
        for line in data.splitlines():
            item = json.loads(line)
            if item["key"] == "header":
                header = item["value"]
            elif item["key"] == "file":
                files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
        with self.hub.lock:
            num = len(self.hub.pull_requests) + 1
            self.hub.pull_requests.append({"repo_id": repo_id, "revision": revision, "num": num, "files": files,
                                           "summary": header.get("summary"), "authorization": self.headers.get("Authorization")})
        sha = hashlib.sha1(data).hexdigest()
        return self._json(200, {"commitUrl": f"{self.hub.url}/{repo_id}/commit/{sha}", "commitOid": sha,
                                "pullRequestUrl": f"{self.hub.url}/{repo_id}/discussions/{num}"})

    def _repo(self, repo_id: str) -> Repo | None:
        with self.hub.lock:
            repo = self.hub.repos.get(unquote(repo_id))
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
        return repo

    # --- listing ---------------------------------------------------------------------------------------
    def _list(self, q: dict[str, list[str]]) -> None:
        expand = q.get("expand", []) + q.get("expand[]", [])
        unknown = [k for k in q if k not in LIST_PARAMS and k != "expand[]"]
        bad = [e for e in expand if e not in EXPANDABLE]
        if unknown or bad:
            return self._error(400, None, f"unknown parameters {unknown} or expand fields {bad}")
        sort = q.get("sort", [None])[0]
        if sort is not None and sort not in SORT_KEYS:
            return self._error(400, None, f"invalid sort {sort!r}")
        with self.hub.lock:
            repos = list(self.hub.repos.values())
            page_size = self.hub.page_size
            listing_link = self.hub.listing_link
        out = []
        for r in repos:
            tags = set(r.tags)
            if any(f not in tags for f in q.get("filter", [])):
                continue
            if "author" in q and r.repo_id.split("/")[0] != q["author"][0]:
                continue
            if "search" in q and q["search"][0].lower() not in r.repo_id.lower():
                continue
            if "pipeline_tag" in q and r.pipeline_tag != q["pipeline_tag"][0]:
                continue
            if "gated" in q and bool(r.gated) != (q["gated"][0].lower() == "true"):
                continue
            out.append(r)
        key = {"trendingScore": lambda r: r.trending_score, "downloads": lambda r: r.downloads,
               "likes": lambda r: r.likes, "lastModified": lambda r: r.last_modified,
               "createdAt": lambda r: r.created_at}.get(sort or "")
        out.sort(key=lambda r: r.repo_id)
        if key is not None:
            out.sort(key=key, reverse=True)
        try:
            limit = int(q.get("limit", ["1000"])[0])
            cursor = int(q.get("cursor", ["0"])[0])
        except ValueError:
            return self._error(400, None, "bad limit or cursor")
        size = max(1, min(limit, page_size, 1000))
        page = out[cursor % len(out) :][:size] if listing_link is not None and out else out[cursor : cursor + size]
        headers = {}
        if listing_link is not None:
            link = listing_link(cursor, size)
            if link is not None:
                headers["Link"] = f'<{link}>; rel="next"'
        elif cursor + size < len(out):
            nq = [(k, v) for k, vs in q.items() if k != "cursor" for v in vs] + [("cursor", str(cursor + size))]
            headers["Link"] = f'<{self.hub.url}/api/models?{urlencode(nq)}>; rel="next"'
        body = [self.hub.model_json(r, r.main, expand=expand or None, listing=True) for r in page]
        self._json(200, body, headers)

    # --- model info / tree -----------------------------------------------------------------------------
    def _info(self, repo_id: str, rev: str | None, q: dict[str, list[str]]) -> None:
        repo = self._repo(repo_id)
        if repo is None:
            return
        sha = self.hub._resolve_rev(repo, rev or "main")
        if sha is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        blobs = q.get("blobs", ["false"])[0].lower() == "true"
        expand = q.get("expand", []) or None
        self._json(200, self.hub.model_json(repo, sha, expand=expand, blobs=blobs))

    def _tree(self, repo_id: str, rev: str, sub: str, q: dict[str, list[str]]) -> None:
        repo = self._repo(repo_id)
        if repo is None:
            return
        sha = self.hub._resolve_rev(repo, rev)
        if sha is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        recursive = q.get("recursive", ["false"])[0].lower() == "true"
        files = self.hub._files(repo, sha)
        prefix = sub.rstrip("/") + "/" if sub else ""
        entries: list[dict[str, Any]] = []
        dirs: set[str] = set()
        for name, data in sorted(files.items()):
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix):]
            if "/" in rest and not recursive:
                dirs.add(prefix + rest.split("/")[0])
                continue
            if recursive:
                parts = rest.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    dirs.add(prefix + "/".join(parts[:i]))
            e: dict[str, Any] = {"type": "file", "oid": _git_blob_sha(data), "size": len(data), "path": name}
            if name.endswith(LFS_SUFFIXES):
                e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            entries.append(e)
        entries += [{"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0, "path": d}
                    for d in sorted(dirs)]
        self._json(200, entries)

    # --- files -----------------------------------------------------------------------------------------
    def _token(self) -> str | None:
        auth = self.headers.get("Authorization") or ""
        return auth[7:] if auth.startswith("Bearer ") else None

    def _resolve(self, repo_id: str, rev: str, filename: str) -> None:
        repo = self._repo(repo_id)
        if repo is None:
            return
        sha = self.hub._resolve_rev(repo, rev)
        if sha is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
        files = self.hub._files(repo, sha)
        if filename not in files:
            return self._error(404, "EntryNotFound", f"{filename} does not exist", {"X-Repo-Commit": sha})
        if repo.gated and self._token() not in repo.allowed_tokens:
            status = 401 if self._token() is None else 403
            return self._error(status, "GatedRepo", f"Access to model {repo.repo_id} is restricted.",
                               {"X-Repo-Commit": sha})
        data = files[filename]
        if filename.endswith(LFS_SUFFIXES):
            digest = hashlib.sha256(data).hexdigest()
            with self.hub.lock:
                self.hub.cdn = getattr(self.hub, "cdn", {})
                self.hub.cdn[digest] = data
            headers = {
                "X-Repo-Commit": sha,
                "ETag": f'"{_git_blob_sha(data)}"',
                "X-Linked-Etag": f'"{digest}"',
                "X-Linked-Size": str(len(data)),
                "Location": f"http://localhost:{self.hub.port}/cdn/{digest}",
            }
            return self._send(302, b"", headers)
        self._file(data, {"X-Repo-Commit": sha, "ETag": f'"{_git_blob_sha(data)}"'})

    def _cdn(self, digest: str) -> None:
        with self.hub.lock:
            data = getattr(self.hub, "cdn", {}).get(digest)
        if data is None:
            return self._error(404, None, "no such object")
        self._file(data, {"ETag": f'"{digest}"'})

    def _file(self, data: bytes, headers: dict[str, str]) -> None:
        status = 200
        rng = self.headers.get("Range")
        if rng and self.command == "GET":
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if m:
                start = int(m.group(1))
                end = int(m.group(2)) if m.group(2) else len(data) - 1
                headers = {**headers, "Content-Range": f"bytes {start}-{end}/{len(data)}"}
                data = data[start : end + 1]
                status = 206
        f = self._fault
        if f is not None and self.command == "GET":
            if f.kind == "truncate":
                return self._send(status, data[: len(data) // 2], headers, "application/octet-stream")
            if f.kind == "drop":
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
        self._send(status, data, headers, "application/octet-stream")


__all__ = ["FakeHub", "Repo", "Fault", "safetensors_param_count", "quote"]
