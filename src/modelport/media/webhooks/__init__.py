"""Signed task webhooks (Standard Webhooks): per-team secrets, the outbox, the sender."""
