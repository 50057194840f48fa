"""Embedded models render in a child process of the serving process, which exits after idling."""
