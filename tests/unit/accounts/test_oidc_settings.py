"""The OpenID Connect settings (issue 38): environment names, defaults, and the start-up refusals that say
what is wrong."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from modelport.settings import OIDC_SCOPES_DEFAULT, OidcSettings, RoleMapping, Settings

ISSUER = "https://idp.example.com/realms/acme"
MAPPINGS = '{"ai-team": [{"team": "acme", "role": "developer"}], "platform": [{"operator_role": "operator"}]}'


def from_env(monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    for name, value in env.items():
        monkeypatch.setenv("MODELPORT_OIDC__" + name, value)
    return Settings()


def refusal(**fields: object) -> str:
    with pytest.raises(ValidationError) as caught:
        OidcSettings(**fields)
    return str(caught.value)


def test_unset_is_off_and_the_defaults_are_the_issue_s(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    assert not settings.oidc.enabled and settings.oidc.scopes == OIDC_SCOPES_DEFAULT == "openid email profile"
    assert settings.oidc.groups_claim == "groups" and settings.oidc.auto_create_users is False
    assert settings.oidc.require_sso is False and settings.oidc.role_mappings == {}


def test_every_setting_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDP_SECRET", "s3cret")
    settings = from_env(
        monkeypatch,
        ISSUER=ISSUER,
        CLIENT_ID="modelport",
        CLIENT_SECRET_ENV="IDP_SECRET",
        SCOPES="openid email",
        DISPLAY_NAME="Acme SSO",
        ALLOWED_EMAIL_DOMAINS="Acme.com, *.corp.example",
        AUTO_CREATE_USERS="true",
        GROUPS_CLAIM="roles",
        ROLE_MAPPINGS=MAPPINGS,
        REQUIRE_SSO="true",
    )
    oidc = settings.oidc
    assert oidc.enabled and oidc.client_id == "modelport" and oidc.client_secret() == "s3cret"
    assert oidc.allowed_email_domains == ["acme.com", "*.corp.example"] and oidc.display_name == "Acme SSO"
    assert oidc.role_mappings == {
        "ai-team": [RoleMapping(team="acme", role="developer")],
        "platform": [RoleMapping(operator_role="operator")],
    }
    assert oidc.auto_create_users and oidc.require_sso and oidc.groups_claim == "roles"
    assert ISSUER not in str(settings.oidc.client_secret())


def test_domains_match_exactly_or_as_subdomains() -> None:
    oidc = OidcSettings(allowed_email_domains=["acme.com", "*.corp.example"])
    assert oidc.domain_allowed("ada@acme.com") and oidc.domain_allowed("ada@ACME.COM")
    assert not oidc.domain_allowed("ada@sub.acme.com") and not oidc.domain_allowed("ada@evilacme.com")
    assert oidc.domain_allowed("ada@eu.corp.example") and oidc.domain_allowed("ada@a.b.corp.example")
    assert not oidc.domain_allowed("ada@corp.example") and not oidc.domain_allowed("ada@xcorp.example")


def test_start_up_refusals_say_what_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    assert "CLIENT_ID is needed" in refusal(issuer=ISSUER)
    assert "NOT_SET_ANYWHERE, which is not set" in refusal(
        issuer=ISSUER, client_id="c", client_secret_env="NOT_SET_ANYWHERE"
    )
    assert "must include openid" in refusal(issuer=ISSUER, client_id="c", scopes="email profile")
    assert "needs MODELPORT_OIDC__ALLOWED_EMAIL_DOMAINS" in refusal(
        issuer=ISSUER, client_id="c", auto_create_users=True
    )
    assert "needs MODELPORT_OIDC__ALLOWED_EMAIL_DOMAINS" in refusal(issuer=ISSUER, client_id="c", require_sso=True)
    assert "issuer URL" in refusal(issuer="idp.example.com")
    assert "is not a domain" in refusal(allowed_email_domains=["ex ample.com"])
    assert "is not a domain" in refusal(allowed_email_domains=["@acme.com"])
    assert "needs both" in refusal(role_mappings={"g": [{"team": "acme"}]})
    assert "operator_role" in refusal(
        role_mappings={"g": [{"team": "acme", "role": "developer", "operator_role": "operator"}]}
    )
    assert "role" in refusal(role_mappings={"g": [{"team": "acme", "role": "superuser"}]})
    assert "extra" in refusal(role_mappings={"g": [{"teams": "acme", "role": "viewer"}]}).lower()


def test_a_bad_role_mapping_from_the_environment_stops_the_start(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError):
        from_env(monkeypatch, ROLE_MAPPINGS='{"g": [{"operator_role": "root"}]}')
    with pytest.raises(ValidationError):
        from_env(monkeypatch, ROLE_MAPPINGS="not json")
    assert "must be a JSON object" in refusal(role_mappings="[1")
