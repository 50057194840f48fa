"""Every outbound webhook event, whatever its source (a task, a team notification, an operator alert):
the registry of event types (`registry.py`), delivery states (`states.py`), the outbox (`outbox.py`:
enqueue in the caller's transaction, claim, record), the sender (`sender.py`), Standard Webhooks signing
(`signing.py`) and the teams' signing secrets (`secrets.py`, stored encrypted by `secret_box.py`).

It sits below every feature that emits events, so each can enqueue in the transaction of its change; each
source builds its own events, and HTTP routes stay on their host (`media/webhooks_api.py`).
"""
