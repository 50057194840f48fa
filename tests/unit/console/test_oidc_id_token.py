"""The ID token checks of single sign-on (issue 38) against tokens signed here and a discovery document and
JWKS served here, for what a real provider will not produce: a wrong audience or issuer, an expired or
stale token, a bad signature, a nonce of another sign-in, and a key rotation (a new `kid` fetches the keys
again)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from modelport.console.oidc_provider import OidcProvider, ProviderRefused
from modelport.settings import OidcSettings

CLIENT = "modelport-console"
NONCE = "nonce-of-this-sign-in"


class Idp:
    """Discovery and JWKS on a local port; `keys` is what the JWKS publishes now."""

    def __init__(self) -> None:
        self.keys: list[RSAKey] = [RSAKey.generate_key(2048, parameters={"kid": "k1", "use": "sig"})]
        self.jwks_fetches = 0
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body: dict[str, Any] = {
                        "issuer": idp.issuer,
                        "authorization_endpoint": idp.issuer + "/authorize",
                        "token_endpoint": idp.issuer + "/token",
                        "jwks_uri": idp.issuer + "/jwks",
                        "id_token_signing_alg_values_supported": ["RS256"],
                    }
                elif self.path == "/jwks":
                    idp.jwks_fetches += 1
                    body = dict(KeySet(list[Any](idp.keys)).as_dict(private=False))
                else:
                    self.send_error(404)
                    return
                raw = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: object) -> None:
                del format, args

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.server.server_address[1]}"

    def token(self, key: RSAKey | None = None, **claims: Any) -> dict[str, str]:
        now = int(time.time())
        values = {"iss": self.issuer, "sub": "sub-1", "aud": CLIENT, "iat": now, "exp": now + 300, "nonce": NONCE}
        values.update(claims)
        signer = key or self.keys[0]
        signed = jwt.encode(
            {"alg": "RS256", "kid": signer.kid}, {k: v for k, v in values.items() if v is not None}, signer
        )
        return {"id_token": signed, "access_token": "at-1", "token_type": "Bearer"}


@pytest.fixture
def idp() -> Iterator[Idp]:
    served = Idp()
    thread = threading.Thread(target=served.server.serve_forever, daemon=True)
    thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()
    thread.join(5)


def provider(idp: Idp) -> OidcProvider:
    settings = OidcSettings(issuer=idp.issuer, client_id=CLIENT, display_name="Acme SSO")
    return OidcProvider(settings, "http://127.0.0.1:1/console/oidc/callback")


async def reason(client: OidcProvider, token: dict[str, str], nonce: str = NONCE) -> tuple[str, str]:
    with pytest.raises(ProviderRefused) as caught:
        await client.check_id_token(token, nonce)
    assert not token.get("id_token") or token["id_token"] not in caught.value.message
    return caught.value.reason, caught.value.message


async def test_a_good_token_gives_its_claims(idp: Idp) -> None:
    claims = await provider(idp).check_id_token(idp.token(email="a@acme.test", aud=[CLIENT]), NONCE)
    assert claims["sub"] == "sub-1" and claims["email"] == "a@acme.test"


async def test_a_wrong_audience_or_issuer_is_refused(idp: Idp) -> None:
    client = provider(idp)
    got = await reason(client, idp.token(aud="another-app"))
    assert got == (
        "claim_aud",
        "Acme SSO's answer was meant for another application (check MODELPORT_OIDC__CLIENT_ID).",
    )
    assert (await reason(client, idp.token(iss="https://evil.example")))[0] == "claim_iss"
    assert (await reason(client, idp.token(aud=None)))[0] == "claim_aud"


async def test_an_expired_or_stale_token_is_refused(idp: Idp) -> None:
    client = provider(idp)
    now = int(time.time())
    got = await reason(client, idp.token(iat=now - 900, exp=now - 600))
    assert got == ("expired", "Acme SSO's answer had expired: check this server's clock.")
    assert (await reason(client, idp.token(iat=now - 3600, exp=now + 3600)))[0] == "claim_iat"  # issued long ago
    assert (await reason(client, idp.token(iat=now + 3600, exp=now + 7200)))[0] == "claim_iat"  # in the future
    assert (await reason(client, idp.token(exp=None)))[0] == "claim_exp"


async def test_a_bad_signature_is_refused(idp: Idp) -> None:
    forger = RSAKey.generate_key(2048, parameters={"kid": "k1"})  # the provider's kid, another key
    assert await reason(provider(idp), idp.token(key=forger)) == (
        "signature",
        "Acme SSO's answer was not signed with its keys.",
    )


async def test_a_nonce_of_another_sign_in_is_refused(idp: Idp) -> None:
    client = provider(idp)
    assert (await reason(client, idp.token(), nonce="the-nonce-this-browser-sent"))[0] == "claim_nonce"
    assert (await reason(client, idp.token(nonce=None)))[0] == "claim_nonce"


async def test_a_rotated_key_is_fetched_once_its_kid_appears(idp: Idp) -> None:
    client = provider(idp)
    await client.check_id_token(idp.token(), NONCE)
    assert idp.jwks_fetches == 1
    await client.check_id_token(idp.token(), NONCE)
    assert idp.jwks_fetches == 1  # cached
    rotated = RSAKey.generate_key(2048, parameters={"kid": "k2", "use": "sig"})
    idp.keys = [rotated]
    claims = await client.check_id_token(idp.token(key=rotated), NONCE)
    assert claims["sub"] == "sub-1" and idp.jwks_fetches == 2
    unknown = RSAKey.generate_key(2048, parameters={"kid": "k9"})  # a kid the provider never published
    assert (await reason(client, idp.token(key=unknown)))[0] == "signature"


async def test_no_id_token_is_refused(idp: Idp) -> None:
    client = provider(idp)
    assert (await reason(client, {"access_token": "x"}))[0] == "no_id_token"
    assert (await reason(client, {"id_token": "not-a-jwt", "access_token": "x"}))[0] == "id_token"
