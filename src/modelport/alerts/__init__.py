"""Operator alerts: signed webhook events to `MODELPORT_OPERATOR_WEBHOOK_URL` when a deployment goes down
or serves again, when queued media tasks wait too long, and when the data directory's disk runs low.

Each alert's last reported state lives in `operator_alert_state`; a change is a compare-and-set of that
row in the transaction that writes the event to the webhook outbox, so however many processes see the
change, one event is sent, signed and retried by the outbox's sender like a task webhook
(docs/alerts/README.md).
"""
