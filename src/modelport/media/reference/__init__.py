"""The API reference on the media host: `/docs` (both hosts' OpenAPI documents in Swagger UI, and the guides)."""
