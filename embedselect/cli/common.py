"""What every command group of the CLI shares: the data / model / output options, parsing of metric options and
weights, the paths a run reads and writes, and writing results (the plain text of a ranking is
:mod:`embedselect.cli.format`)."""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Sequence

from embedselect.config import DEFAULT_MAX_MODEL_BYTES, LoadPolicy, RankConfig, Runtime
from embedselect.errors import ConfigError


# --- shared options ---------------------------------------------------------------------------------
def add_data_args(p: argparse.ArgumentParser, *, labels: bool = True, labels_required: bool = False,
                  seed: bool = True) -> None:
    """The reference data: file or folder, column, (label column), sub-sampling, error rule, (seed)."""
    input_option(p.add_argument("data", help="data file (.csv .tsv .jsonl .json .parquet .txt), image folder"),
                 name="the data")
    p.add_argument("--column", "-c", help="text column of a table file")
    p.add_argument("--id-column", metavar="NAME",
                   help="column of a table file whose values are the items' ids (default: the 1-based row numbers): "
                        "the ids that ask's questions, --answers, --queries' relevant items, search results and the "
                        "load report use")
    if labels:
        input_option(p.add_argument(
            "--labels",
            required=labels_required,
            help="label column; for an image folder 'folder' (PHOTOS/cat/1.jpg is a 'cat') or a CSV file of path,label "
            "rows: used only to validate the label-free ranking (held-out probe accuracy)",
        ), name="the labels file")
    p.add_argument("--max-items", type=int, help="seeded sub-sample of at most this many items (default: all)")
    p.add_argument("--on-error", choices=["fail", "skip"], default="fail", help="undecodable items: fail (default) or skip")
    if seed:
        p.add_argument("--seed", type=int, default=0, help="root seed (sampling, baselines, metrics; default 0)")


def add_cache_dir_arg(p: argparse.ArgumentParser) -> None:
    """``--cache-dir``: the cache root of a command that reads or writes the cache."""
    p.add_argument("--cache-dir", help="cache root (default: $EMBEDSELECT_CACHE_DIR or the user cache dir)")


def add_load_args(p: argparse.ArgumentParser) -> None:
    """Where and how models load: cache, device, batch size, the safety options, progress and logging."""
    add_cache_dir_arg(p)
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1 (default: auto)")
    p.add_argument("--batch-size", type=int, help="items per forward pass or API request (default: each backend's own)")
    p.add_argument("--allow-pickle", action="store_true", help="allow non-safetensors (pickle) weights")
    p.add_argument("--trust-remote-code", action="store_true", help="allow model repos that ship Python code")
    p.add_argument("--allow-gated", action="store_true", help="try gated hub repos (needs HF_TOKEN with access)")
    p.add_argument(
        "--allow-model", action="append", default=[], metavar="ID", help="lift every safety check for this model id"
    )
    p.add_argument(
        "--max-model-bytes",
        type=byte_size,
        default=DEFAULT_MAX_MODEL_BYTES,
        metavar="SIZE",
        help="refuse hub models whose weight files are larger (e.g. 500MB, 8GB, 'none'; default 5GiB)",
    )
    add_log_args(p)


def add_log_args(p: argparse.ArgumentParser, *, quiet: str = "no progress bars; on stderr warnings only") -> None:
    """``--quiet`` (what it leaves out, ``quiet``) and ``--verbose`` of a command."""
    p.add_argument("--quiet", "-q", action="store_true", help=quiet)
    p.add_argument("--verbose", "-v", action="store_true",
                   help="log what is done (INFO lines on stderr), and print the traceback of an error")


class JoinModels(argparse.Action):
    """``--models`` / ``-m`` given more than once: the lists are joined (``-m a -m b,c`` = ``-m a,b,c``), where the
    last one alone used to be kept and the others silently dropped."""

    def __call__(self, parser, namespace, values, option_string=None):
        prev = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, f"{prev},{values}" if prev else values)


def add_model_args(p: argparse.ArgumentParser) -> None:
    """The candidates (--models) and how they load."""
    input_option(p.add_argument(
        "--models",
        "-m",
        required=True,
        action=JoinModels,
        help="comma-separated candidates (the option may be repeated): hub ids (org/name[@rev]), local dirs, "
        "baselines (tfidf-svd, random-projection, pixel-pca), catalog:text / catalog:image; name one with "
        "NAME=SPEC, e.g. 'minilm=./model,minilm-cls=./model?backend=transformers&pooling=cls'; precomputed "
        "vectors as NAME=vectors:PATH (a .npy whose rows follow the data file's rows, or a .parquet file with "
        "'id' and 'vector' columns)",
    ), name="a candidate's input (a model folder or vectors file)", models=True)
    add_load_args(p)


def add_output_args(p: argparse.ArgumentParser, *, reports: bool = True) -> None:
    """--json, --out, --overwrite, --strict; with ``reports`` (the commands that print a ranking table: rank,
    validate, demo) also --html, --markdown and --wide."""
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    output_option(p.add_argument("--out", "-o", type=Path, help="also write the JSON result to this file"))
    if reports:
        output_option(p.add_argument("--html", type=Path, help="also write a self-contained HTML report to this file"))
        output_option(p.add_argument("--markdown", type=Path, help="also write a Markdown leaderboard to this file"))
        p.add_argument("--wide", action="store_true",
                       help="print every column of the table on a terminal too (a narrow terminal otherwise gets the "
                            "columns that fit, and a line naming the others); pipes and files always get them all")
    add_overwrite_arg(p)
    p.add_argument("--strict", action="store_true", help="exit 8 if any candidate failed")


def add_overwrite_arg(p: argparse.ArgumentParser) -> None:
    """``--overwrite``: let the output options replace an existing file that embedselect did not write."""
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing output file that embedselect did not write (a file it wrote, a new "
                        "path, /dev/null or a named pipe need none)")


BYTES_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*$", re.IGNORECASE)


def byte_size(text: str) -> int | None:
    """``"500MB"``, ``"8GB"``, ``"2GiB"``, ``"1000000"`` → bytes; ``"none"`` → no cap (None)."""
    if str(text).strip().lower() in ("none", "unlimited"):
        return None
    m = BYTES_RE.match(str(text))
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 500MB, 8GB, 2GiB, none)")
    base = 1024 if m.group(3) else 1000
    return int(float(m.group(1)) * base ** "_kmgt".index(m.group(2).lower() or "_"))


def load_policy(args: argparse.Namespace) -> LoadPolicy:
    """The :class:`~embedselect.config.LoadPolicy` of the model options (:func:`add_load_args`)."""
    return LoadPolicy(
        allow_pickle=args.allow_pickle,
        trust_remote_code=args.trust_remote_code,
        allow_gated=args.allow_gated,
        max_bytes=args.max_model_bytes,
        allow_models=frozenset(args.allow_model),
    )


def rank_config(args: argparse.Namespace) -> RankConfig:
    """The :class:`~embedselect.config.RankConfig` of a command's flags, the one way every verb builds it: the data
    options (:func:`add_data_args`), the load policy (:func:`add_load_args`) and, where the verb has them, the metric
    options (``--metrics``, ``--weight``, ``--option``, ``--bootstrap``, ``--drop-duplicates``). A flag the verb
    lacks keeps the default."""
    get = functools.partial(getattr, args)
    metrics = get("metrics", None)
    return RankConfig(
        metrics=[m.strip() for m in metrics.split(",") if m.strip()] if metrics is not None else None,  # type: ignore[arg-type]
        weights=parse_weights(get("weight", None) or []),
        metric_options=parse_metric_options(get("option", None) or []),
        max_items=get("max_items", None),
        seed=get("seed", None) or 0,
        bootstrap=get("bootstrap", 0),
        on_error=get("on_error", "fail"),
        drop_duplicates=get("drop_duplicates", None),
        column=get("column", None),
        id_column=get("id_column", None),
        labels=get("labels", None),
        policy=load_policy(args) if hasattr(args, "allow_pickle") else LoadPolicy(),
    )


def runtime(args: argparse.Namespace, *, save: bool = True) -> Runtime:
    """The :class:`~embedselect.config.Runtime` of a command's flags (``--cache-dir``, ``--device``,
    ``--batch-size``, ``--quiet``); the token comes from ``HF_TOKEN`` where it is needed, never from a flag."""
    return Runtime(cache_dir=getattr(args, "cache_dir", None), device=getattr(args, "device", None),
                   batch_size=getattr(args, "batch_size", None), progress=not getattr(args, "quiet", False),
                   save=save)


def parse_weights(pairs: Sequence[str]) -> dict[str, float] | None:
    """Parse ``METRIC=W`` weights for the combined rank."""
    out: dict[str, float] = {}
    for item in pairs:
        name, eq, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"--weight {item!r}: expected METRIC=NUMBER, e.g. sufficiency=0.5") from None
        if not eq or not name.strip():
            raise ConfigError(f"--weight {item!r}: expected METRIC=NUMBER, e.g. sufficiency=0.5")
    return out or None


def parse_metric_options(pairs: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Parse ``metric.key=value`` options (values parsed as JSON when possible)."""
    out: dict[str, dict[str, Any]] = {}
    for item in pairs:
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ConfigError(f"--option {item!r}: expected METRIC.KEY=VALUE, e.g. task_prior.tau=0.1")
        lhs, value = item.split("=", 1)
        metric, key = lhs.split(".", 1)
        try:
            parsed: Any = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        out.setdefault(metric, {})[key] = parsed
    return out


def read_text_input(path: Path | str, *, option: str, max_bytes: int = 16 << 20) -> str:
    """Read a text file the user named (``card --card README.md``): a regular file of at most ``max_bytes`` (a
    folder, ``/dev/zero`` or a FIFO would fail with a traceback, read forever or block), decoded as UTF-8.

    Raises:
        ConfigError: missing, not a regular file, too large, or not UTF-8 text; the file is left as it is.
    """
    import stat

    p = Path(path)
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{option} {p} is not a regular file (a folder, a device or a pipe); name the file")
        if st.st_size > max_bytes:
            raise ConfigError(f"{option} {p} is {st.st_size} bytes; a text file of at most {max_bytes} is expected")
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{option} {p} does not exist") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{option} {p} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"{option} {p} cannot be read: {exc.strerror or exc}") from None


# --- paths a run reads and writes -------------------------------------------------------------------------
ROLE = "embedselect_path"
"""Attribute set on an argparse action that names a path: ``"output"`` (:func:`output_option`) or ``"input"``
(:func:`input_option`). :func:`annotate` collects them per command; :func:`check_run_paths` checks them."""


def output_option(action: argparse.Action, *, folder: bool = False, updatable: Any = None) -> argparse.Action:
    """Tag ``action`` (an option naming a file the command writes) for :func:`check_run_paths`: ``folder`` an output
    folder (checked by its own writer, here only against what the run reads), ``updatable(path, args)`` whether an
    existing file there is updated rather than replaced (a model card)."""
    setattr(action, ROLE, "output")
    action.embedselect_folder = folder  # type: ignore[attr-defined]
    action.embedselect_updatable = updatable  # type: ignore[attr-defined]
    return action


def input_option(action: argparse.Action, *, name: str | None = None, updated_by: str | None = None,
                 models: bool = False) -> argparse.Action:
    """Tag ``action`` (an argument naming a file or folder the command reads: the data, labels, a card, queries)
    for :func:`check_run_paths`; ``name`` is how a message calls it, ``updated_by`` the dest of the one output that
    may name the same file because it updates it in place (``card --card README.md --out README.md``), ``models``
    a list of candidate specs whose local folders are read."""
    setattr(action, ROLE, "input")
    action.embedselect_name = name or _flag(action)  # type: ignore[attr-defined]
    action.embedselect_updated_by = updated_by  # type: ignore[attr-defined]
    action.embedselect_models = models  # type: ignore[attr-defined]
    return action


def _flag(action: argparse.Action) -> str:
    return max(action.option_strings, key=len) if action.option_strings else action.dest


def path_options(parser: argparse.ArgumentParser) -> tuple[list[argparse.Action], list[argparse.Action]]:
    """The output and input actions of one command's parser (tagged by :func:`output_option` / :func:`input_option`)."""
    acts = parser._actions  # argparse keeps a parser's actions there; there is no public accessor
    return ([a for a in acts if getattr(a, ROLE, None) == "output"], [a for a in acts if getattr(a, ROLE, None) == "input"])


def annotate(parser: argparse.ArgumentParser) -> None:
    """Give every command's parser its path options as defaults (``_path_outputs``, ``_path_inputs``), so that
    :func:`check_run_paths` sees them in the parsed arguments."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sp in set(action.choices.values()):
                outs, ins = path_options(sp)
                sp.set_defaults(_path_outputs=tuple(outs), _path_inputs=tuple(ins))


def _values(v: Any) -> list[str]:
    if v is None or v is False:
        return []
    return [str(x) for x in v] if isinstance(v, (list, tuple)) else [str(v)]


def model_paths(specs: Any) -> list[str]:
    """The local paths among comma-separated candidate specs (``NAME=./model?opts``, ``NAME=vectors:PATH``): what
    loading them reads."""
    from embedselect.models.candidates import input_files

    out = [str(f) for value in _values(specs) for f in input_files(value)]  # NAME=vectors:PATH files
    for value in _values(specs):
        for spec in value.split(","):
            path = spec.split("=", 1)[1] if "=" in spec.split("?", 1)[0] else spec
            path = path.split("?", 1)[0].strip()
            if path and not path.startswith(("catalog:", "http:", "https:")) and Path(path).expanduser().exists():
                out.append(path)
    return out


def run_reads(args, *, skip: str | None = None) -> dict[str, list[str]]:
    """What the command in ``args`` reads, by how a message names it: every input option's existing paths (the
    data, labels, a card, queries, model folders); ``skip`` is an output's dest whose in-place input is left out."""
    reads: dict[str, list[str]] = {}
    for action in getattr(args, "_path_inputs", ()):
        if skip is not None and action.embedselect_updated_by == skip:
            continue
        value = getattr(args, action.dest, None)
        paths = model_paths(value) if action.embedselect_models else _values(value)
        paths = [v for v in paths if v and Path(v).expanduser().exists()]
        if paths:
            reads.setdefault(action.embedselect_name, []).extend(paths)
    return reads


def check_output_path(path: Path | str | None, *, option: str, cache_dir: Path | str | None = None,
                      reads: dict[str, list[str]] | None = None, overwrite: bool | None = False,
                      updatable: bool = False, folder: bool = False) -> str | None:
    """Refuse an output file that cannot or may not be written, before any work is done; returns what writing it
    will do (:func:`embedselect._fs.outfile.check_replace`: ``new``, ``ours``, ``overwrite``, ``update``,
    ``device``), None for no path.

    Raises:
        ConfigError: ``path`` is a link (never replaced nor written through), inside the cache (``cache_dir``,
            default the usual cache root), a file or inside a folder the run reads (``reads``), a directory, a
            block device or socket, an existing file the tool did not write (unless ``overwrite``; None: the
            command has no ``--overwrite``, and the message does not offer it; ``updatable``: the command updates
            it), its parent folder does not exist (it is not created silently), or the file or its folder is not
            writable.
    """
    if path is None or str(path) == "":
        if path is not None:
            raise ConfigError(f"{option} is empty: name a file")
        return None
    from embedselect._fs import guard as fsguard
    from embedselect._fs import outfile
    from embedselect.store import default_cache_dir

    outfile.check_not_read(path, reads or {}, what=option, folder=folder)
    if folder:
        return None  # an output folder: its writer checks what it may take over (guard.check_takeover)
    fsguard.check_output_file(path, what=option, inside_forbidden={"cache": cache_dir or default_cache_dir()})
    path = Path(path).expanduser()
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir() and not path.is_symlink():
        raise ConfigError(f"{option} {path} is a directory: give a file name, e.g. {path / 'result'}")
    state = outfile.check_replace(path, what=option, overwrite=overwrite, updatable=updatable)
    if state == "device":
        return state  # written into; its folder (/dev) need not be writable
    if not parent.is_dir():
        raise ConfigError(f"{option} {path}: the folder {parent} does not exist; create it first")
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{option} {path} is not writable: choose another file or fix its permissions")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {path}: the folder {parent} is not writable: choose another place")
    return state


def check_run_paths(args) -> dict[str, str]:
    """:func:`check_output_path` for every output option of the command in ``args`` (tagged by
    :func:`output_option`; :func:`annotate` put them there), against everything the run reads
    (:func:`run_reads`), the cache, and each other (two outputs never name one file). Runs before any work, for
    every command (:func:`embedselect.cli.main`). Returns dest -> what writing it will do."""
    done: dict[str, str] = {}
    seen: dict[Path, str] = {}
    outputs = [a for a in getattr(args, "_path_outputs", ()) if getattr(args, a.dest, None) is not None]
    if not outputs:
        return done
    from embedselect.store import default_cache_dir

    cache = getattr(args, "cache_dir", None) or default_cache_dir()
    for action in outputs:
        value = getattr(args, action.dest)
        flag = _flag(action)
        updatable = bool(action.embedselect_updatable and action.embedselect_updatable(Path(str(value)), args))
        reads = {**run_reads(args, skip=action.dest), "the cache": [str(cache)]}
        state = check_output_path(value, option=flag, cache_dir=cache, reads=reads,
                                  overwrite=getattr(args, "overwrite", None), updatable=updatable,
                                  folder=action.embedselect_folder)
        real = Path(os.path.realpath(Path(str(value)).expanduser()))
        if real in seen and state != "device":
            raise ConfigError(f"{flag} and {seen[real]} name the same file {value}; give each output its own file")
        seen[real] = flag
        done[action.dest] = state or "folder"
    return done


def check_output_args(args) -> None:
    """:func:`check_run_paths` (the ranking commands call it first; :func:`embedselect.cli.main` already did)."""
    check_run_paths(args)


def write_atomic(path: Path, text: str, *, kind: str = "text", what: str = "output") -> None:
    """Write an output file through :func:`embedselect._fs.outfile.write`: atomically under a unique temporary name
    (never a fixed ``<path>.tmp`` that could be a user's file), into a character device or a named pipe; with the
    generator mark of ``kind`` (``html``, ``markdown``); a new file follows the umask, an existing one keeps its
    mode. Raises :class:`~embedselect.errors.OutputWriteError` (disk full, ...) naming ``path``."""
    from embedselect._fs import outfile

    if not isinstance(text, str):
        raise TypeError(f"write_atomic needs a str, got {type(text).__name__}")
    outfile.write(Path(path), text, what=what, kind=kind)


def stderr_line(text: str) -> None:
    """Write ``text`` to stderr as one line a person reads (:func:`embedselect.publish.text.terminal_line`: line
    breaks and runs of spaces as one space, without terminal control sequences or bidirectional controls), pipe or
    not: a warning, note or message that may quote untrusted text (a hub model's id or error, a failure's reason, a
    pull request's URL), by the rule the log lines' formatter and the one-line error follow."""
    from embedselect.publish.text import terminal_line

    print(terminal_line(text), file=sys.stderr)


def emit(args, payload_json: str, text: str, ranking=None) -> None:
    if args.out:
        write_atomic(args.out, payload_json + "\n", kind="json", what="--out")
    if ranking is not None:
        from embedselect.publish import report

        if getattr(args, "html", None):
            write_atomic(args.html, report.to_html(ranking), kind="html", what="--html")
        if getattr(args, "markdown", None):
            write_atomic(args.markdown, report.to_markdown(ranking), kind="markdown", what="--markdown")
    print(payload_json if args.json else text)
    if args.json and ranking is not None:  # stdout is one JSON document; a person reading the run still sees why
        from embedselect.cli.format import note_lines

        for line in note_lines(ranking, failures=not getattr(args, "strict", False)):
            stderr_line(line)
