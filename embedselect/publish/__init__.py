"""Publish a stored ranking where people look: badges, model cards, leaderboards with history, HTML reports.

Everything here reads :class:`~embedselect.ranking.result.Ranking` objects and the store; nothing recomputes a score.
"""

from embedselect.publish.badges import Badge, badge_for, write_badges
from embedselect.publish.cards import eval_results, eval_results_yaml, push_card, update_card
from embedselect.publish.leaderboard import leaderboard_rows, load_ranking, previous_ranking
from embedselect.publish.report import to_html, to_markdown

__all__ = [
    "Badge", "badge_for", "write_badges", "eval_results", "eval_results_yaml", "push_card", "update_card",
    "leaderboard_rows", "load_ranking", "previous_ranking", "to_html", "to_markdown",
]
