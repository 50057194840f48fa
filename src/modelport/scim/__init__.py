"""SCIM 2.0 provisioning over HTTP (RFC 7643/7644) at `/scim/v2/` on the media host: its own small app,
mounted only when `MODELPORT_SCIM__TOKEN_ENV` is set, with SCIM's error schema and media type. Storage is
`accounts.scim`; docs/api/scim.md."""
