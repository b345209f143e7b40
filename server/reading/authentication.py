"""Senders judged by the receiving server, never by the sender: `Authentication-Results` (RFC 8601).

The receiving mail server checks SPF, DKIM and DMARC and writes its verdicts at the top of the
message, in an `Authentication-Results` header naming itself (the authserv-id). Anyone can write
such a header into a message they send, naming any server, so only the operator can say which
headers to believe: `IMAP_TRUSTED_AUTHSERV_ID` names the receiving server(s).

Verdicts come from the topmost `Authentication-Results` header alone, when its authserv-id is trusted.
A header with another id above it means another hop wrote after the trusted server, so whatever
stands below was there before that hop: a trusted id there was written by someone else, and is
ignored. A trusted header right below the topmost one is ignored too: a sender can write one into
the message, and a receiving server that does not remove it (RFC 8601 section 5 asks it to) leaves it
there, next to its own. Without the setting, or when the topmost header is not the trusted
server's, each verdict is `unverified` and `trusted` false. A server that writes its verdicts in
several headers (one per milter) is read from its topmost one only; the methods of the others show
as `none`.

DKIM names the signing domain (`header.d`, else the domain of `header.i`) and whether it aligns with
the From domain (DMARC's relaxed alignment: the same registrable domain). A sender is `verified`
when the trusted verdicts say DMARC passed, or a DKIM signature or SPF (`smtp.mailfrom`) passed for
a domain aligned with From; `False` when the trusted server judged and nothing of that passed;
`None` when no trusted verdict exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser
from email.policy import compat32

from pydantic import BaseModel, Field

from .lookalikes import registrable

#: the header fields of the verdicts, and how many of their bytes are read (the trusted ones are at the top)
AUTHENTICATION_FIELD = "AUTHENTICATION-RESULTS"
AUTHENTICATION_BYTES = 16 * 1024
#: at most this many headers from the top are read
MAX_HEADERS = 20
UNVERIFIED = "unverified"
#: RFC 8601's result words (SPF, DKIM, DMARC); anything else is reported as "unknown"
RESULTS = frozenset(
    {"pass", "fail", "softfail", "neutral", "none", "temperror", "permerror", "policy", "hardfail", "bestguesspass"}
)
_DOMAIN = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?)*")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[^\s;=]+|=|;')


class DkimVerdict(BaseModel):
    result: str = Field(description="pass, fail, none, neutral, policy, temperror, permerror, or unverified.")
    domain: str | None = Field(description="The signing domain (header.d) the trusted server reported.")
    aligned: bool | None = Field(
        description="Whether the signing domain aligns with the From domain (same registrable domain); null "
        "when there is no signing domain."
    )


class Authentication(BaseModel):
    """What the receiving server said about the sender; only from a trusted `Authentication-Results`."""

    spf: str = Field(
        description="SPF result: pass, fail, softfail, neutral, none, temperror, permerror, or unverified."
    )
    dkim: DkimVerdict
    dmarc: str = Field(description="DMARC result: pass, fail, none, temperror, permerror, or unverified.")
    authserv_id: str | None = Field(description="The trusted receiving server whose header gave these verdicts.")
    trusted: bool = Field(
        description="True when the verdicts come from a header of a server named in IMAP_TRUSTED_AUTHSERV_ID at "
        "the top of the message; false: every verdict is unverified (a sender can write any such header)."
    )


@dataclass(frozen=True)
class Method:
    """One result of a header: `dkim=pass header.d=example.com`."""

    name: str
    result: str
    properties: tuple[tuple[str, str], ...] = ()

    def property(self, *names: str) -> str | None:
        return next((value for key, value in self.properties if key in names), None)


@dataclass(frozen=True)
class ResultsHeader:
    authserv_id: str
    methods: tuple[Method, ...]


def _without_comments(value: str) -> str:
    """`value` with RFC 5322 comments (nested parentheses, outside quoted strings) removed."""
    out: list[str] = []
    depth, quoted, escaped = 0, False, False
    for char in value:
        if escaped:
            escaped = False
            if depth == 0:
                out.append(char)
            continue
        if char == "\\" and (quoted or depth):
            escaped = True
            if depth == 0:
                out.append(char)
            continue
        if quoted:
            quoted = char != '"'
            out.append(char)
        elif char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
        elif depth == 0:
            quoted = char == '"'
            out.append(char)
    return "".join(out)


def _unquoted(token: str) -> str:
    return re.sub(r"\\(.)", r"\1", token[1:-1]) if token.startswith('"') else token


def parse_results(value: str) -> ResultsHeader | None:
    """One `Authentication-Results` value; None when it names no authserv-id."""
    tokens = _TOKEN.findall(_without_comments(value))
    statements: list[list[str]] = [[]]
    for token in tokens:
        if token == ";":
            statements.append([])
        else:
            statements[-1].append(token)
    head = statements[0]
    if not head or head[0] == "=":
        return None
    return ResultsHeader(_unquoted(head[0]).lower(), tuple(m for s in statements[1:] if (m := _method(s))))


def _method(tokens: list[str]) -> Method | None:
    """`method[/version] = result [reason=…] ptype.property=value …` from its tokens (spaces around `=` allowed)."""
    pairs: list[tuple[str, str]] = []
    position = 0
    while position + 2 < len(tokens) + 0 and tokens[position + 1] == "=":
        pairs.append((tokens[position].lower(), _unquoted(tokens[position + 2])))
        position += 3
    if not pairs:
        return None
    (method, result), properties = pairs[0], pairs[1:]
    return Method(method.split("/")[0], result.lower(), tuple((k, v.lower()) for k, v in properties))


def results_headers(raw: bytes) -> list[ResultsHeader]:
    """The `Authentication-Results` headers in `raw` (header lines, top first), at most `MAX_HEADERS`."""
    text = raw.decode("utf-8", "replace")
    values = HeaderParser(policy=compat32).parsestr(text).get_all("Authentication-Results") or []
    parsed = (parse_results(" ".join(str(v).split())) for v in values[:MAX_HEADERS])
    return [header for header in parsed if header is not None]


def trusted_methods(headers: Sequence[ResultsHeader], trusted: Iterable[str]) -> tuple[str | None, list[Method]]:
    """(the trusted authserv-id, the methods of the topmost header) when the topmost header is the trusted
    server's; (None, []) when it is another's (everything below it is ignored), or there is none."""
    ids = {t.lower() for t in trusted}
    if not headers or headers[0].authserv_id not in ids:
        return None, []
    return headers[0].authserv_id, list(headers[0].methods)


def _verdict(methods: list[Method], name: str) -> str:
    results = [m.result for m in methods if m.name == name]
    if not results:
        return "none"
    result = "pass" if "pass" in results else results[0]
    return result if result in RESULTS else "unknown"


def _domain(value: str | None) -> str | None:
    """A domain from a property (`header.d`, or the part after @ of `header.i`/`smtp.mailfrom`); None if it is none."""
    if not value:
        return None
    domain = value.rsplit("@", 1)[-1].strip(".").lower()
    return domain if len(domain) <= 253 and _DOMAIN.fullmatch(domain) else None


def aligned(domain: str | None, from_domain: str | None) -> bool | None:
    """DMARC's relaxed alignment: both domains have the same registrable domain; None without a domain."""
    if not domain:
        return None
    if not from_domain:
        return False
    return domain == from_domain or registrable(domain) == registrable(from_domain.lower())


def _dkim(methods: list[Method], from_domain: str | None) -> DkimVerdict:
    signatures = [m for m in methods if m.name == "dkim"]
    if not signatures:
        return DkimVerdict(result="none", domain=None, aligned=None)

    def rank(method: Method) -> tuple[bool, bool]:
        domain = _domain(method.property("header.d") or method.property("header.i"))
        return method.result == "pass", bool(aligned(domain, from_domain))

    best = max(signatures, key=rank)
    domain = _domain(best.property("header.d") or best.property("header.i"))
    result = best.result if best.result in RESULTS else "unknown"
    return DkimVerdict(result=result, domain=domain, aligned=aligned(domain, from_domain))


UNVERIFIED_AUTHENTICATION = Authentication(
    spf=UNVERIFIED,
    dkim=DkimVerdict(result=UNVERIFIED, domain=None, aligned=None),
    dmarc=UNVERIFIED,
    authserv_id=None,
    trusted=False,
)


def authentication(headers: Sequence[ResultsHeader], trusted: Iterable[str], from_domain: str | None) -> Authentication:
    """The verdicts of the trusted headers at the top of `headers` (see the module docstring)."""
    authserv_id, methods = trusted_methods(headers, trusted)
    if authserv_id is None:
        return UNVERIFIED_AUTHENTICATION
    return Authentication(
        spf=_verdict(methods, "spf"),
        dkim=_dkim(methods, from_domain),
        dmarc=_verdict(methods, "dmarc"),
        authserv_id=authserv_id,
        trusted=True,
    )


def sender_verified(headers: Sequence[ResultsHeader], trusted: Iterable[str], from_domain: str | None) -> bool | None:
    """True: the trusted server vouches for the From domain (DMARC, or aligned DKIM or SPF passed); False: it
    judged and nothing vouches; None: no trusted verdict."""
    authserv_id, methods = trusted_methods(headers, trusted)
    if authserv_id is None:
        return None
    for method in methods:
        if method.result != "pass":
            continue
        if method.name == "dmarc":
            return True
        if method.name == "dkim" and aligned(
            _domain(method.property("header.d") or method.property("header.i")), from_domain
        ):
            return True
        if method.name == "spf" and aligned(
            _domain(method.property("smtp.mailfrom") or method.property("smtp.helo")), from_domain
        ):
            return True
    return False
