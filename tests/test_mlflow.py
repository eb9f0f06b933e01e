"""embedselect.integrations.mlflow and `rank --mlflow` against a real local MLflow store under tmp_path (the file
store; no server), read back with mlflow.search_runs: params, every candidate's scores and ranks, the ranking JSON
and HTML report, the pick as a tag."""

from __future__ import annotations

import os
import sys

import mlflow  # the dev extra installs it (mlflow-skinny): these tests run wherever the suite runs
import pytest

from embedselect.cli import main
from embedselect.data import sample_path
from embedselect.errors import MissingExtraError
from embedselect.ranking.result import Ranking

SAMPLE = str(sample_path("texts"))


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A local MLflow file store (MLflow 3 asks for an opt-in to it; a server or SQLite needs more packages)."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = (tmp_path / "mlruns").as_uri()
    yield uri
    mlflow.set_tracking_uri(None)  # no later test logs here


def _run_of(uri: str, experiment: str):
    mlflow.set_tracking_uri(uri)
    runs = mlflow.search_runs(experiment_names=[experiment])
    assert len(runs) == 1
    return runs.iloc[0]


def test_rank_mlflow_logs_params_metrics_artifacts_and_the_pick(store, tmp_path, capsys):
    models = "tfidf-svd,random-projection,rp8=random-projection?dim=8"
    code = main(["rank", SAMPLE, "-c", "text", "-m", models, "--metrics", "task_prior", "--json", "-q",
                 "--cache-dir", str(tmp_path / "c"), "--mlflow", "--mlflow-uri", store,
                 "--mlflow-experiment", "es-test"])
    out, err = capsys.readouterr()
    assert code == 0, err
    r = Ranking.from_json(out)
    run = _run_of(store, "es-test")
    assert "logged to MLflow: run " + run["run_id"] in err
    assert "Creating a new experiment" not in err  # MLflow's INFO lines only with -v (the experiment was new)
    assert run["params.seed"] == "0" and run["params.metrics"] == "task_prior"
    assert run["params.data.fingerprint"] == r.dataset["fingerprint"]
    for c in r.ok:  # every candidate's scores and ranks as metrics
        key = c.name  # these names are MLflow keys already
        assert run[f"metrics.{key}.task_prior"] == pytest.approx(c.scores["task_prior"])
        assert run[f"metrics.{key}.task_prior.rank"] == c.ranks["task_prior"]
        assert run[f"metrics.{key}.rank"] == c.rank
    assert run["tags.embedselect.pick"] == (r.best.name if r.decided else "")
    assert run["tags.embedselect.decided"] == str(r.decided).lower()
    assert set(run["tags.embedselect.warnings"].split(",")) == {w.code for w in r.warnings}
    client = mlflow.MlflowClient(store)
    names = {a.path for a in client.list_artifacts(run["run_id"], "embedselect")}
    assert names == {"embedselect/ranking.json", "embedselect/report.html"}
    local = client.download_artifacts(run["run_id"], "embedselect/ranking.json", str(tmp_path / "dl"))
    assert Ranking.from_json(open(local, encoding="utf-8").read()) == r


def test_log_ranking_makes_odd_names_keys_and_logs_into_an_active_run(store, tmp_path):
    from embedselect.integrations.mlflow import log_ranking, metric_key
    from embedselect.pipeline import select

    r = select(SAMPLE, "tfidf-svd,random-projection,odd=random-projection?dim=8", column="text",
               metrics=["task_prior"], cache_dir=tmp_path / "c")
    r.candidates[0].name = "a?b=c&d (x)"  # what a hub id with options looks like
    assert metric_key("a?b=c&d (x)") == "a_b_c_d _x_"
    mlflow.set_tracking_uri(store)
    mlflow.set_experiment("es-active")
    with mlflow.start_run() as outer:
        assert log_ranking(r, html=False) == outer.info.run_id
    run = _run_of(store, "es-active")
    assert run["metrics.a_b_c_d _x_.rank"] == 1
    assert {a.path for a in mlflow.MlflowClient(store).list_artifacts(run["run_id"], "embedselect")} == {
        "embedselect/ranking.json"}


def test_an_unset_setting_is_left_out_of_the_params(store, tmp_path):
    """A setting that was not set (``max_items`` without a cap, ``batch_size`` left to the backend) was logged as the
    text "None", which MLflow cannot tell from a value and which compares as one across runs; it is left out of the
    params now, and a set one is logged as before."""
    from embedselect.integrations.mlflow import log_ranking, ranking_params
    from embedselect.pipeline import select

    r = select(SAMPLE, "tfidf-svd,random-projection,rp8=random-projection?dim=8", column="text",
               metrics=["task_prior"], cache_dir=tmp_path / "c")
    assert r.settings.get("max_items") is None  # the run's own record: unset
    mlflow.set_tracking_uri(store)
    mlflow.set_experiment("es-unset")
    run_id = log_ranking(r, html=False)
    params = mlflow.MlflowClient(store).get_run(run_id).data.params
    assert "max_items" not in params and "None" not in params.values(), params
    assert params["seed"] == "0" and params["metrics"] == "task_prior" and params == ranking_params(r)
    r.settings["max_items"] = 60
    assert ranking_params(r)["max_items"] == "60"


@pytest.mark.fault
def test_rank_mlflow_without_a_uri_or_without_mlflow_stops_before_any_work(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    argv = ["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd", "--cache-dir", str(tmp_path / "c"), "--mlflow"]
    assert main(argv) == 2
    assert "MLFLOW_TRACKING_URI" in capsys.readouterr().err
    # a store MLflow refuses (MLflow 3's file store without its opt-in): exit 2 before any work, not exit 1
    # ("unexpected MlflowException") after the whole ranking; the URI itself is not printed
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    store = (tmp_path / "secret-mlruns").as_uri()
    assert main([*argv, "--mlflow-uri", store]) == 2
    err = capsys.readouterr().err
    assert "MLflow cannot log to this tracking URI (file)" in err and "MLFLOW_ALLOW_FILE_STORE" in err, err
    assert "secret-mlruns" not in err and not (tmp_path / "c").exists()
    monkeypatch.setitem(sys.modules, "mlflow", None)
    assert main([*argv, "--mlflow-uri", "http://127.0.0.1:9"]) == 2
    assert "pip install 'embedselect[mlflow]'" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
    from embedselect.integrations.mlflow import log_ranking

    with pytest.raises(MissingExtraError):
        log_ranking(None)  # type: ignore[arg-type]  # mlflow is checked first


def test_an_undecided_ranking_tags_no_pick_and_a_failed_candidate_is_tagged(store):
    """``embedselect.pick`` named the first row of an undecided ranking, a built-in baseline the ranking itself calls
    "not a pick"; a failed candidate was named by no tag (only the warning code candidate-failed)."""
    from embedselect.integrations.mlflow import log_ranking
    from embedselect.ranking.result import CandidateResult

    cands = [CandidateResult(name=n, spec=n, scores={"task_prior": s}, ranks={"task_prior": k}, combined_score=s,
                             rank=k) for n, s, k in (("tfidf-svd", 0.9, 1), ("m", 0.2, 2))]
    cands.append(CandidateResult(name="broken", spec="broken", status="failed", error_type="ModelLoadError",
                                 error="16 weight tensor(s) missing"))
    r = Ranking(candidates=cands, metrics=["task_prior"], combine="mean-rank", dataset={"n": 240},
                settings={"seed": 0}, versions={}, ranking_id="f" * 32, decided=False, leaders=["tfidf-svd", "m"])
    mlflow.set_tracking_uri(store)
    mlflow.set_experiment("es-undecided")
    log_ranking(r, html=False)
    run = _run_of(store, "es-undecided")
    assert run["tags.embedselect.decided"] == "false" and run["tags.embedselect.leaders"] == "tfidf-svd,m"
    assert run["tags.embedselect.pick"] in ("", None)  # MLflow may read an empty tag back as missing
    assert run["tags.embedselect.failed"] == "broken"
    assert not any(k.startswith("metrics.broken") for k in run.index)
    decided = Ranking.from_dict({**r.to_dict(), "decided": True, "leaders": ["tfidf-svd"], "ranking_id": "e" * 32})
    mlflow.set_experiment("es-decided")
    log_ranking(decided, html=False)
    assert _run_of(store, "es-decided")["tags.embedselect.pick"] == "tfidf-svd"


class _Tracking:
    """The REST endpoints of an MLflow tracking server that `rank --mlflow` calls, on loopback; a run's artifacts go
    to a local folder (its artifact URI)."""

    def __init__(self, artifacts: str):
        self.artifacts, self.runs, self.calls = artifacts, {}, []

    def answer(self, path: str, query: dict, body: dict) -> tuple[int, dict]:
        import time
        import uuid

        self.calls.append(path)
        p = path.split("/api/2.0/mlflow/")[-1]
        if p == "runs/create":
            rid = uuid.uuid4().hex
            info = {"run_id": rid, "run_uuid": rid, "experiment_id": body.get("experiment_id", "0"),
                    "run_name": body.get("run_name", ""), "status": "RUNNING", "lifecycle_stage": "active",
                    "start_time": int(time.time() * 1000), "artifact_uri": f"{self.artifacts}/{rid}"}
            self.runs[rid] = {"info": info, "data": {"tags": body.get("tags", []), "params": [], "metrics": []}}
            return 200, {"run": self.runs[rid]}
        if p == "runs/get":
            return 200, {"run": self.runs[query["run_id"][0]]}
        if p == "runs/log-batch":
            for k in ("params", "metrics", "tags"):
                self.runs[body["run_id"]]["data"][k] += body.get(k, [])
            return 200, {}
        if p == "runs/update":
            info = self.runs[body["run_id"]]["info"]
            info["status"] = body.get("status", "FINISHED")
            return 200, {"run_info": info}
        return 404, {"error_code": "ENDPOINT_NOT_FOUND", "message": p}


@pytest.fixture
def tracking_server(tmp_path):
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlparse

    fake = _Tracking((tmp_path / "artifacts").as_uri())

    class Handler(BaseHTTPRequestHandler):
        def _reply(self):
            url = urlparse(self.path)
            n = int(self.headers.get("Content-Length") or 0)
            code, payload = fake.answer(url.path, parse_qs(url.query), json.loads(self.rfile.read(n)) if n else {})
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _reply

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield fake, server.server_address[1]
    server.shutdown()
    server.server_close()
    mlflow.set_tracking_uri(None)


@pytest.mark.fault
def test_rank_json_mlflow_to_a_tracking_server_keeps_stdout_json_and_prints_no_uri(tracking_server, tmp_path, capsys,
                                                                                  monkeypatch):
    """MLflow printed "🏃 View run … at: http://alice:s3cret@…" and "🧪 View experiment at: …" on stdout when the run
    ended: after --json's JSON, and with the password of the tracking URI that embedselect itself never prints."""
    fake, port = tracking_server
    monkeypatch.delenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", raising=False)
    code = main(["rank", SAMPLE, "-c", "text", "-m", "tfidf-svd,random-projection", "--metrics", "task_prior",
                 "--json", "-q", "--cache-dir", str(tmp_path / "c"), "--mlflow",
                 "--mlflow-uri", f"http://alice:s3cret@127.0.0.1:{port}"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert Ranking.from_json(out).ok  # stdout is the JSON and nothing else
    assert "s3cret" not in out + err and "View run" not in out + err
    (run,) = fake.runs.values()
    assert run["info"]["status"] == "FINISHED" and f"run {run['info']['run_id']}" in err
    assert "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT" not in os.environ  # the caller's setting is back
