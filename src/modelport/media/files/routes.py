"""HTTP routes of team media files.

- `POST   /api/v1/media/files`            upload (multipart/form-data, form part `file`)
- `GET    /api/v1/media/files`            list the team's live files (`limit`, `offset`)
- `DELETE /api/v1/media/files/{file_id}`  delete one of the team's files
- `GET    /files/{file_id}?expires=&signature=`  public signed download (no API key), with Range support
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import AsyncIterator
from typing import IO, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from modelport.accounts.auth import AuthContext
from modelport.errors import NotFound, PayloadTooLarge
from modelport.media import idempotency
from modelport.media.files.form_print import FormPrint
from modelport.media.files.multipart import BODY_OVERHEAD_BYTES, FormFileReader, multipart_boundary
from modelport.media.files.ranges import parse_range
from modelport.media.files.repository import FileRecord
from modelport.media.files.service import FILES
from modelport.media.files.storage import ObjectMissing
from modelport.web.body import capped_chunks, counts_for_itself, declared_length
from modelport.web.deps import get_services, media_auth
from modelport.web.envelope import ok

log = logging.getLogger("modelport.media.files")
router = APIRouter(tags=["media files"])

_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {"file": {"type": "string", "format": "binary"}},
                }
            }
        },
    },
    "parameters": [
        {
            "name": "Idempotency-Key",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "minLength": 1, "maxLength": 255},
            "description": (
                "The same key with the same form (parts, names, file names, types and bytes; not the multipart"
                " boundary) within 24 h answers the first file again (`Idempotent-Replayed: true`, nothing stored"
                " twice); with another form, 409"
            ),
        }
    ],
}


@router.post("/api/v1/media/files", summary="Upload one image, video or audio file", openapi_extra=_UPLOAD_BODY)
async def upload_file(request: Request, auth: AuthContext = Depends(media_auth)) -> Response:
    services = get_services(request)
    service = services[FILES]
    boundary = multipart_boundary(request.headers.get("content-type"))
    max_body = service.settings.max_upload_bytes + BODY_OVERHEAD_BYTES
    counts_for_itself(request)  # the reader below counts the bytes as they arrive
    declared = declared_length(request.scope)
    if declared is not None and declared > max_body:
        # Certain to be over the limit: refuse before reading a byte.
        raise PayloadTooLarge(f"the upload exceeds the limit of {service.settings.max_upload_bytes} bytes")
    key = idempotency.key_of(request.headers.get(idempotency.HEADER))
    if key is None:
        reader = FormFileReader(request.stream(), boundary, field="file", max_body_bytes=max_body)
        return ok(await service.upload(auth.team_id, reader, lambda: reader.filename))
    # With a key, what the form says (not its framing: a retry has a new boundary) decides whether it is the
    # same request: the body is read (and its parts hashed) into a temporary file first, then stored from
    # there like any upload.
    with tempfile.TemporaryFile() as spool:
        digest = await _spool(request, spool, FormPrint(boundary), max_body, service.settings.max_upload_bytes)
        print_ = idempotency.fingerprint("POST", request.url.path, digest)

        async def upload() -> dict[str, Any]:
            reader = FormFileReader(_read_back(spool), boundary, field="file", max_body_bytes=max_body)
            return await service.upload(auth.team_id, reader, lambda: reader.filename)

        return await idempotency.once(services[idempotency.IDEMPOTENCY_KEYS], auth.team_id, key, print_, upload)


async def _spool(request: Request, spool: IO[bytes], form: FormPrint, max_body: int, max_upload: int) -> str:
    """Write the body to `spool` as it arrives; the hash of what the form says."""
    async for chunk in capped_chunks(
        request, max_body, PayloadTooLarge(f"the upload exceeds the limit of {max_upload} bytes")
    ):
        form.feed(chunk)
        await asyncio.to_thread(spool.write, chunk)
    return form.hexdigest()


async def _read_back(spool: IO[bytes]) -> AsyncIterator[bytes]:
    spool.seek(0)
    while chunk := await asyncio.to_thread(spool.read, 256 * 1024):
        yield chunk


@router.get("/api/v1/media/files", summary="List the team's files that have not expired, newest first")
async def list_files(
    request: Request, limit: int = 20, offset: int = 0, auth: AuthContext = Depends(media_auth)
) -> Response:
    service = get_services(request)[FILES]
    return ok(await service.list_page(auth.team_id, limit=limit, offset=offset))


@router.delete("/api/v1/media/files/{file_id}", summary="Delete one of the team's files")
async def delete_file(request: Request, file_id: str, auth: AuthContext = Depends(media_auth)) -> Response:
    service = get_services(request)[FILES]
    return ok(await service.delete(auth.team_id, file_id))


@router.api_route("/files/{file_id}", methods=["GET", "HEAD"], include_in_schema=False)
async def download_file(
    request: Request, file_id: str, expires: str | None = None, signature: str | None = None
) -> Response:
    service = get_services(request)[FILES]
    record = await service.find_signed(file_id, expires, signature)
    headers = _download_headers(record)
    if_range = request.headers.get("if-range")
    byte_range = None
    if if_range is None or if_range.strip() == headers["ETag"]:
        byte_range = parse_range(request.headers.get("range"), record.size_bytes)
    start, end, status = 0, record.size_bytes, 200
    if byte_range is not None:
        start, end, status = byte_range.start, byte_range.end, 206
        headers["Content-Range"] = byte_range.content_range(record.size_bytes)
    headers["Content-Length"] = str(end - start)
    if request.method == "HEAD":
        return Response(status_code=status, headers=headers, media_type=record.mime_type)
    try:
        chunks = await service.store.open_range(record.storage_key, start, end)
    except ObjectMissing as exc:
        log.error("media file %s has a record but no stored bytes", record.id)
        raise NotFound("the file does not exist or has expired") from exc
    return StreamingResponse(chunks, status_code=status, headers=headers, media_type=record.mime_type)


def _download_headers(record: FileRecord) -> dict[str, str]:
    return {
        "Accept-Ranges": "bytes",
        # Stored files never change, so the id is a strong validator.
        "ETag": f'"{record.id}"',
        "Cache-Control": "private, max-age=3600",
        "Content-Disposition": f"inline; filename*=UTF-8''{quote(record.name, safe='')}",
        # We serve what we detected; a browser must not second-guess it into something executable.
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "default-src 'none'; sandbox",
    }
