"""Password rules and hashing (argon2id), and the second factor's codes (TOTP, recovery codes)."""

from __future__ import annotations

import pyotp
import pytest
from argon2 import extract_parameters

from modelport.accounts import passwords, totp
from modelport.accounts.passwords import check_new_password, hash_password, verify_password
from modelport.errors import InvalidParameters


@pytest.mark.parametrize(
    ("password", "rule"),
    [
        ("short-pass1", "at least 12"),
        ("x" * 257, "at most 256"),
        ("password1234", "too common"),
        ("PassWord1234", "too common"),  # compared lower-cased
        ("aaaaaaaaaaaaaaa", "too common"),
        ("ababababababab", "too common"),
        ("me@example.com", "the email"),
    ],
)
def test_new_passwords_that_break_a_rule_are_refused(password: str, rule: str) -> None:
    with pytest.raises(InvalidParameters) as refused:
        check_new_password(password, email="me@example.com")
    assert rule in refused.value.detail


def test_a_good_password_is_accepted_and_hashed_with_argon2id() -> None:
    check_new_password("correct horse battery", email="me@example.com")
    stored = hash_password("correct horse battery")
    assert stored.startswith("$argon2id$")
    assert verify_password(stored, "correct horse battery")
    assert not verify_password(stored, "correct horse batterz")
    assert not verify_password(None, "anything at all")  # no password set: refused, same work
    assert not verify_password("not a hash", "anything at all")


def test_the_absent_accounts_hash_costs_what_a_new_hash_costs() -> None:
    # A sign-in for an unknown email verifies against the fixed hash: as slow as a real one only while its
    # parameters are the hasher's (an argon2-cffi release that changes its defaults must change it too).
    assert extract_parameters(passwords._ABSENT) == extract_parameters(hash_password("any password at all"))
    assert verify_password(None, "no account has this email address") is False
    assert passwords._HASHER.verify(passwords._ABSENT, "no account has this email address")


def test_totp_codes_and_single_use_recovery_codes() -> None:
    secret = totp.new_secret()
    assert totp.code_valid(secret, pyotp.TOTP(secret).now())
    assert not totp.code_valid(secret, "12345")
    assert not totp.code_valid(secret, "abcdef")
    codes = totp.new_recovery_codes()
    assert len(codes) == 10 and len(set(codes)) == 10
    stored = [totp.recovery_digest(c) for c in codes]
    assert codes[0] not in stored  # only digests are kept
    assert totp.matching_recovery(stored, codes[3].upper()) == stored[3]
    assert totp.matching_recovery(stored, "00000-00000") is None
    assert totp.provisioning_uri(secret, "me@example.com").startswith("otpauth://totp/modelport:me%40example.com")


def test_a_code_names_its_step_within_one_step_of_drift() -> None:
    secret = totp.new_secret()
    otp = pyotp.TOTP(secret)
    at = 1_800_000_000.0
    step = int(at // 30)
    assert totp.code_step(secret, otp.at(at), at=at) == step
    assert totp.code_step(secret, otp.at(at - 30), at=at) == step - 1
    assert totp.code_step(secret, otp.at(at + 30), at=at) == step + 1
    assert totp.code_step(secret, otp.at(at - 90), at=at) is None
