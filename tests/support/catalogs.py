"""Catalog files for end-to-end tests."""

from __future__ import annotations

from pathlib import Path

import modelport


def shipped_with_fake_chat(upstream_base_url: str, *, key_env: str = "FAKE_KEY") -> str:
    """The catalog a fresh install ships (its media models included) plus `fake/chat`, an `openai_chat`
    deployment on a fake upstream priced 1 USD (input) and 2 USD (output) per million tokens."""
    shipped = (Path(modelport.__file__).parent / "default_catalog.toml").read_text()
    return (
        shipped
        + f"""
[[text_models]]
id = "fake/chat"
prices = {{ input = "1", output = "2" }}
deployments = [{{ kind = "openai_chat", base_url = "{upstream_base_url}/v1", model = "up", api_key_env = "{key_env}" }}]
"""
    )
