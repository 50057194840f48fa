"""Mail for invitations and reset links, through aiosmtplib when `MODELPORT_SMTP__HOST` is set.

Sending is best effort and never blocks the change: the link is created (and shown once to whoever made
it) whether or not the mail goes out; a failure is logged, never raised to the caller.
"""

from __future__ import annotations

import logging
import os
from email.message import EmailMessage

from modelport.settings import SmtpSettings

log = logging.getLogger(__name__)


def mail_configured(smtp: SmtpSettings) -> bool:
    return smtp.host is not None


async def send_mail(smtp: SmtpSettings, to: str, subject: str, body: str) -> bool:
    """Send one plain-text mail; whether the server accepted it (False without SMTP settings)."""
    if smtp.host is None:
        return False
    message = EmailMessage()
    message["From"] = smtp.from_
    message["To"] = to
    message["Subject"] = subject
    message.set_content(body)
    import aiosmtplib  # only when mail is configured: no serving process pays its import otherwise

    password = os.environ.get(smtp.password_env) if smtp.password_env else None
    try:
        await aiosmtplib.send(
            message,
            hostname=smtp.host,
            port=smtp.port,
            username=smtp.username,
            password=password,
            start_tls=smtp.starttls,
            timeout=smtp.timeout_seconds,
        )
    except (aiosmtplib.SMTPException, OSError) as exc:
        log.warning("mail to %s not sent: %s", to.rpartition("@")[2], exc)
        return False
    return True


def invitation_mail(team_name: str, role: str, url: str, expires_at: int) -> tuple[str, str]:
    subject = f"You are invited to the team {team_name}"
    body = (
        f"You have been invited to join the team {team_name} as {role}.\n\n"
        f"Accept the invitation here (the link works once, until {expires_at} Unix time):\n{url}\n\n"
        "If you did not expect this, ignore this mail.\n"
    )
    return subject, body


def reset_mail(url: str) -> tuple[str, str]:
    body = (
        f"A password reset link was made for your account:\n{url}\n\n"
        "It works once. If you did not ask for it, tell your team's owner or the service's operator.\n"
    )
    return "Set a new password", body
