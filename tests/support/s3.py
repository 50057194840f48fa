"""An S3-compatible store for tests: moto's server on 127.0.0.1 in a thread, one fresh bucket."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import botocore.session
from moto.server import ThreadedMotoServer


@contextmanager
def moto_s3(prefix: str = "mp-test-") -> Iterator[dict[str, str]]:
    """Yield the `MODELPORT_FILES__*` settings of a new bucket, plus a shared `MODELPORT_SECRET_KEY` (every
    machine of a scaled-out deployment signs download URLs with the same key)."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    bucket = prefix + secrets.token_hex(4)
    client: Any = botocore.session.get_session().create_client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s"
    )
    client.create_bucket(Bucket=bucket)
    try:
        yield {
            "MODELPORT_FILES__BACKEND": "s3",
            "MODELPORT_FILES__S3_BUCKET": bucket,
            "MODELPORT_FILES__S3_ENDPOINT_URL": endpoint,
            "MODELPORT_FILES__S3_ACCESS_KEY_ID": "k",
            "MODELPORT_FILES__S3_SECRET_ACCESS_KEY": "s",
            "MODELPORT_FILES__S3_ADDRESSING_STYLE": "path",
            "MODELPORT_SECRET_KEY": secrets.token_urlsafe(32),
        }
    finally:
        server.stop()
