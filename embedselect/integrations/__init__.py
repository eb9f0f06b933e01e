"""Integrations with the tools pipelines log to. Each module imports its tool only when used (an optional extra)."""

__all__: list[str] = []  # nothing re-exported: import embedselect.integrations.mlflow
