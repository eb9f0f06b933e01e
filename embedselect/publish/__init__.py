"""Publishing a stored ranking where people look: badges, leaderboards with history, HTML report.

Layering: this package reads :class:`~embedselect.ranking.Ranking` objects and the store
(:mod:`embedselect.store.rankings`); it never recomputes a metric.
"""

from embedselect.publish.badges import Badge, badge_for, badges, safe_filename, write_badges
from embedselect.publish.leaderboard import leaderboard_rows, to_html as leaderboard_html
from embedselect.publish.leaderboard import to_json as leaderboard_json
from embedselect.publish.leaderboard import to_markdown as leaderboard_markdown
from embedselect.publish.report import to_html, to_markdown

__all__ = [
    "Badge", "badge_for", "badges", "safe_filename", "write_badges", "leaderboard_rows", "leaderboard_html",
    "leaderboard_json", "leaderboard_markdown", "to_html", "to_markdown",
]  # fmt: skip
