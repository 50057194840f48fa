"""modelport: one key, one balance and one log for every text and media model a team uses."""

__version__ = "0.1.0"
