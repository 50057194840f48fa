"""Retention: the pruner that keeps the database bounded, the log archive and export (issue 23)."""
