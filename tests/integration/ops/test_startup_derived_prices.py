"""The start-up log names each model whose cache prices are derived from its input rate (issue 35): the
models with an `anthropic` deployment that leave a cache price unset, from the catalog as stored."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from modelport.process.bootstrap import prepare
from modelport.settings import Settings
from modelport.storage.db import create_engine

CATALOG = """
[[text_models]]
id = "anthropic/derived"
prices = { input = "3", output = "15" }
deployments = [{ kind = "anthropic", base_url = "http://127.0.0.1:9", model = "m" }]

[[text_models]]
id = "anthropic/stated"
prices = { input = "3", output = "15", cache_read = "0.3", cache_write = "3.75", cache_write_1h = "6" }
deployments = [{ kind = "anthropic", base_url = "http://127.0.0.1:9", model = "m" }]

[[text_models]]
id = "openai/unset"
prices = { input = "1", output = "2" }
deployments = [{ kind = "openai_chat", base_url = "http://127.0.0.1:9/v1", model = "m" }]
"""


def test_start_up_names_the_models_with_derived_cache_prices(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    catalog = tmp_path / "catalog.toml"
    catalog.write_text(CATALOG)
    url = f"sqlite+aiosqlite:///{tmp_path / 'start.db'}"
    settings = Settings(data_dir=tmp_path, database_url=url, catalog=catalog)

    async def start() -> None:
        engine = create_engine(url)
        try:
            await prepare(engine, settings, demo=False)
        finally:
            await engine.dispose()

    with caplog.at_level(logging.INFO, logger="modelport.billing"):
        asyncio.run(start())
    derived = [r.getMessage() for r in caplog.records if "cache prices derived" in r.getMessage()]
    assert len(derived) == 1
    assert derived[0].endswith(": anthropic/derived")
