"""Every command's --help says what the command does and what each option is (new-user audit: `hub`, `demo`,
`badge`, `card`, `leaderboard`, `report` and the `cache` commands had no description; `--batch-size`, `--seed`,
`--cache-dir`, `--device`, `--quiet`, `hub ls`'s filters and others had no help line)."""

from __future__ import annotations

import argparse

import pytest

from embedselect.cli import build_parser


def _commands(parser: argparse.ArgumentParser, prefix: str = "embedselect"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, p in action.choices.items():
                if p.prog.split()[-1] != name:  # an alias (neighbors)
                    continue
                yield f"{prefix} {name}", p
                yield from _commands(p, f"{prefix} {name}")


@pytest.mark.fault
def test_every_command_has_a_description_and_every_option_a_help_line():
    missing = []
    for cmd, p in _commands(build_parser()):
        if not p.description:
            missing.append(f"{cmd}: no description")
        for a in p._actions:
            if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not a.help or a.help == argparse.SUPPRESS:
                missing.append(f"{cmd} {'/'.join(a.option_strings) or a.dest}: no help")
    assert missing == [], "\n".join(missing)
