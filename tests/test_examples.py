"""examples/ (the nightly job as operators run it) holds files that work: the nightly YAML validates against the
config schema, the systemd units and the GitHub Actions workflow run real embedselect command lines, and the workflow
really publishes the site (Pages permissions, upload + deploy) after installing embedselect from the checkout."""

from __future__ import annotations

import configparser
import shlex
from pathlib import Path

import pytest
import yaml

from embedselect.cli import build_parser
from embedselect.nightly.config import load_config

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
WORKFLOW = EXAMPLES / "github-actions" / "nightly-pages.yml"


def _embedselect_commands(script: str) -> list[list[str]]:
    """The argument lists of every ``embedselect ...`` command in a shell script (redirections and what follows
    ``;``, ``&&``, ``||``, ``|`` cut off)."""
    found = []
    for line in script.splitlines():
        words = shlex.split(line, comments=True)
        for i, w in enumerate(words):
            if w.endswith("embedselect") and (i == 0 or words[i - 1] in (";", "&&", "||", "|")):
                args = []
                for a in words[i + 1:]:
                    if a in (";", "&&", "||", "|") or a.startswith((">", "<", "2>")):
                        break
                    args.append(a)
                found.append(args)
    return found


def _parses(args: list[str]) -> None:
    """``args`` parse with the real CLI: SystemExit(2) on an unknown command or flag (``--version`` exits 0)."""
    try:
        build_parser().parse_args(args)
    except SystemExit as exc:
        if exc.code != 0:
            raise


def test_the_example_nightly_config_validates_and_its_data_exists():
    raw = yaml.safe_load((EXAMPLES / "nightly.yaml").read_text(encoding="utf-8"))
    assert isinstance(raw, dict) and "data" in raw
    cfg = load_config(EXAMPLES / "nightly.yaml")  # the schema: unknown keys and bad values are ConfigErrors
    assert cfg.data_path.is_file(), cfg.data_path  # the bundled sample, from a checkout
    assert cfg.output_path.parent == EXAMPLES and cfg.crawl.max_params == 150_000_000


def test_the_systemd_units_run_a_real_command_on_a_timer():
    service = configparser.ConfigParser(strict=True, interpolation=None)
    service.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    service.read(EXAMPLES / "systemd" / "embedselect-nightly.service", encoding="utf-8")
    s = service["Service"]
    assert s["Type"] == "oneshot" and "9" in s["SuccessExitStatus"].split()  # locked is not a failure; 12 is
    exec_start = shlex.split(s["ExecStart"])
    assert exec_start[0].endswith("/bin/embedselect")
    _parses(exec_start[1:])
    assert exec_start[1] == "nightly" and "--config" in exec_start
    timer = configparser.ConfigParser(strict=True, interpolation=None)
    timer.optionxform = str  # type: ignore[assignment,method-assign]
    timer.read(EXAMPLES / "systemd" / "embedselect-nightly.timer", encoding="utf-8")
    assert timer["Timer"]["Unit"] == "embedselect-nightly.service" and timer["Timer"]["OnCalendar"]
    assert timer["Install"]["WantedBy"] == "timers.target"


def test_the_workflow_installs_from_the_checkout_and_deploys_to_pages():
    wf = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert wf["permissions"]["pages"] == "write" and wf["permissions"]["id-token"] == "write"
    steps = [s for job in wf["jobs"].values() for s in job["steps"]]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/upload-pages-artifact@") for u in uses)
    assert any(u.startswith("actions/deploy-pages@") for u in uses)
    deploy = wf["jobs"]["deploy"]
    assert deploy["needs"] == "night" and deploy["environment"]["name"] == "github-pages"
    scripts = [s["run"] for s in steps if "run" in s]
    installs = [line for sc in scripts for line in sc.splitlines() if "pip install" in line]
    assert any(line.split()[-1] == "." for line in installs), installs  # from the checkout
    for line in installs:  # never a name that is not published
        assert "embedselect" not in shlex.split(line)[3:], line
    commands = [c for sc in scripts for c in _embedselect_commands(sc)]
    assert ["nightly", "--config", "examples/nightly.yaml", "--json"] in commands
    for args in commands:
        _parses(args)
    assert (REPO / "examples" / "nightly.yaml").is_file()
    # the folder the workflow publishes is the config's output
    assert "examples/site" in " ".join(scripts) and load_config(EXAMPLES / "nightly.yaml").output == "./site"


def test_a_command_line_the_cli_does_not_know_is_caught():
    """The check above can fail: a flag the parser lacks is a SystemExit."""
    with pytest.raises(SystemExit):
        _parses(["nightly", "--config", "x.yaml", "--publish-to-pages"])
    assert _embedselect_commands("set +e\nembedselect nightly --config a.yaml --json > out.json; echo") == [
        ["nightly", "--config", "a.yaml", "--json"]]
