"""Keep secrets out of everything a run writes: error texts, manifests, logs.

``redact`` replaces what looks like a key, a token or an Authorization header (and a given
secret) by ``[redacted]``; ``redact_url`` drops a URL's ``user:password@`` and the values of
query parameters that carry credentials; ``redact_urls`` does that to every URL inside a text
(a LiteLLM model string such as ``litellm:huggingface/https://user:pw@host/x`` carries one);
``redact_value`` applies them to every text of a JSON-like value (settings, a run's
configuration).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["redact", "redact_url", "redact_urls", "redact_value"]

_SECRET_PATTERNS = (
    re.compile(r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(bearer\s+)?[^\s\"',}]+"),
    re.compile(r"(?i)bearer\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)((api[-_]?key|token|secret|password)[\"']?\s*[:=]\s*[\"']?)[^\s\"'&,}]+"),
)


def redact(text: str, secret: str | None = None) -> str:
    """``text`` with anything that looks like a key, a token or an Authorization header (and
    ``secret`` itself) replaced by ``[redacted]``: error texts end up in results files."""
    if secret:
        text = text.replace(secret, "[redacted]")
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(
            lambda m: (m.group(1) if m.re.groups and m.group(1) else "") + "[redacted]", text
        )
    return text


#: A URL inside a text: a scheme (any case), ``://`` and what follows up to a space or a quote.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]*")

_SENSITIVE = re.compile(r"(?i)(key|token|secret|password|passwd|auth|signature|sig|credential)")


def redact_url(url: str) -> str:
    """``url`` without ``user:password@`` and with credential-like query values redacted."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    netloc = parts.netloc.rsplit("@", 1)[-1] if "@" in parts.netloc else parts.netloc
    written = url[: len(parts.scheme)]  # the scheme as written (urlsplit lowers it)
    scheme = written if written.lower() == parts.scheme else parts.scheme
    query = urlencode(
        [
            (k, "[redacted]" if _SENSITIVE.search(k) else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="[]",
    )
    return urlunsplit((scheme, netloc, parts.path, query, parts.fragment))


def redact_urls(text: str) -> str:
    """``text`` with every URL in it (``scheme://...``, anywhere) redacted by ``redact_url``,
    then the whole by ``redact``: ``litellm:oobabooga/http://user:pw@host:5000`` keeps its
    model string and loses the credentials."""
    return redact(_URL.sub(lambda m: redact_url(m.group(0)), text))


def redact_value(value: Any) -> Any:
    """``value`` with every text redacted (``redact_urls``: the URLs in it by ``redact_url``,
    the rest by ``redact``), inside tables and lists too (tuples become lists); other values
    unchanged."""
    if isinstance(value, str):
        return redact_urls(value)
    if isinstance(value, dict):
        return {str(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value
