"""The nightly job: keep a ranking of trending hub models fresh on a fixed reference dataset.

``embedselect nightly --config nightly.yaml`` or :func:`run_night` (see docs/nightly.md)::

    from embedselect.nightly import load_config, run_night
    summary = run_night(load_config("nightly.yaml"))
"""

from embedselect.nightly.config import NightlyConfig, load_config, parse_config
from embedselect.nightly.run import run_night

__all__ = ["NightlyConfig", "load_config", "parse_config", "run_night"]
