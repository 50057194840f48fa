"""Stored Responses (issue 43): what `POST /v1/responses` with `store` true keeps per team, for
`previous_response_id` chains, `GET`/`DELETE /v1/responses/{id}` and its input items; pruned by retention."""
