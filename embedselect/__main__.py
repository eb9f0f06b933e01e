"""``python -m embedselect``: the command line."""

from embedselect.cli import main

raise SystemExit(main())
