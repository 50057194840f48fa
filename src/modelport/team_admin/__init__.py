"""A team admin's HTTP routes on the media host (keys with `role: admin`): the team's keys (`keys.py`), its
audit log (`audit.py`, with the operator's cross-team view) and its notifications (`notifications.py`)."""
