"""Hosted media providers that run media tasks (catalog entries with `upstream`)."""
