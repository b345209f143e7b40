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

A topmost header that cannot be read (only a comment, an authserv-id that is no RFC 2045 token or quoted string,
an unclosed comment or quote, an SPF, DKIM or DMARC result that cannot be parsed) is still the topmost header:
every verdict is `unverified`, never the next header's, which a sender may have written.

A verdict speaks of the From people see, or of nothing. The From domains are those of every address of the From
header as parsed (never an address a display name holds: that one is named as a From domain too, so a display
name showing an address at another organisation leaves nothing verified). They must all have one organisational
domain (DMARC's, the registrable domain from the Public Suffix List: `mail.shop.co.uk` → `shop.co.uk`, compared
lower case, without a trailing dot, punycode labels decoded); From addresses at several organisations, or none,
are vouched for by nothing. A result vouches only for that organisational domain: DMARC by its `header.from`
(a `dmarc=pass` without one, or naming another organisation, counts for nothing: `authentication.dmarc` then
shows the other results, or `unverified`), DKIM by its signing domain (`header.d`, else the domain of
`header.i`: DMARC's relaxed alignment), SPF by `smtp.mailfrom` (else `smtp.helo`). A sender is `verified` when
a result that passed vouches so; `False` when the trusted server judged and nothing vouches; `None` when no
trusted verdict exists.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser
from email.policy import compat32

from pydantic import BaseModel, Field

from .fence import SenderLine
from .lookalikes import ascii_domain, registrable, unicode_domain

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
#: an authserv-id or a version as RFC 8601 writes them: an RFC 2045 token, or a quoted string
_VALUE = re.compile(r'[!#$%&\'*+\-.0-9A-Za-z^_`{|}~]+|"(?:[^"\\]|\\.)*"')
#: the methods whose results make a verdict: a statement of one that cannot be read makes its header unreadable
VERDICT_METHODS = frozenset({"spf", "dkim", "dmarc"})


class DkimVerdict(BaseModel):
    result: str = Field(description="pass, fail, none, neutral, policy, temperror, permerror, or unverified.")
    domain: SenderLine | None = Field(
        description="The signing domain (header.d) the trusted server reported; the signer chose it, so it is fenced."
    )
    aligned: bool | None = Field(
        description="Whether the signing domain aligns with the From domain (the same organisational domain; "
        "false when the From addresses are at several organisations); null when there is no signing domain."
    )


class Authentication(BaseModel):
    """What the receiving server said about the sender; only from a trusted `Authentication-Results`."""

    spf: str = Field(
        description="SPF result: pass, fail, softfail, neutral, none, temperror, permerror, or unverified."
    )
    dkim: DkimVerdict
    dmarc: str = Field(
        description="DMARC result about the From shown: pass (only when its header.from is the From's organisation), "
        "fail, none, temperror, permerror, or unverified (no trusted verdict, or a pass about another domain)."
    )
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
    """One `Authentication-Results` header; `authserv_id` None: it could not be read (no verdict comes from it,
    nor from any header below it)."""

    authserv_id: str | None
    methods: tuple[Method, ...] = ()


#: a header that could not be read: it stands where it stood, trusted by no one
UNREADABLE = ResultsHeader(None)


def _without_comments(value: str) -> str | None:
    """`value` with RFC 5322 comments (nested parentheses, outside quoted strings) removed; None when a comment or
    a quoted string is never closed."""
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
    return None if depth or quoted else "".join(out)


def _unquoted(token: str) -> str:
    return re.sub(r"\\(.)", r"\1", token[1:-1]) if token.startswith('"') else token


def parse_results(value: str) -> ResultsHeader:
    """One `Authentication-Results` value; `UNREADABLE` when it cannot be read: no authserv-id (only a comment,
    an `=` first), one that is no token or quoted string, anything but a version after it, a comment or quoted
    string never closed, or an SPF, DKIM or DMARC statement that is no `method=result`."""
    text = _without_comments(value)
    if text is None:
        return UNREADABLE
    statements: list[list[str]] = [[]]
    for token in _TOKEN.findall(text):
        if token == ";":
            statements.append([])
        else:
            statements[-1].append(token)
    head = statements[0]
    if not 1 <= len(head) <= 2 or not _VALUE.fullmatch(head[0]) or (len(head) == 2 and not head[1].isdigit()):
        return UNREADABLE
    methods: list[Method] = []
    for statement in statements[1:]:
        method = _method(statement)
        if method is not None:
            methods.append(method)
        elif statement and statement[0].split("/")[0].lower() in VERDICT_METHODS:
            return UNREADABLE
    return ResultsHeader(_unquoted(head[0]).lower(), tuple(methods))


def _method(tokens: list[str]) -> Method | None:
    """`method[/version] = result [reason=…] ptype.property=value …` from its tokens (spaces around `=` allowed)."""
    pairs: list[tuple[str, str]] = []
    position = 0
    while position + 2 < len(tokens) and tokens[position + 1] == "=":
        pairs.append((tokens[position].lower(), _unquoted(tokens[position + 2])))
        position += 3
    if not pairs:
        return None
    (method, result), properties = pairs[0], pairs[1:]
    return Method(method.split("/")[0], result.lower(), tuple((k, v.lower()) for k, v in properties))


def results_headers(raw: bytes) -> list[ResultsHeader]:
    """The `Authentication-Results` headers in `raw` (header lines, top first), at most `MAX_HEADERS`; one that
    cannot be read stays in its place as `UNREADABLE`."""
    text = raw.decode("utf-8", "replace")
    values = HeaderParser(policy=compat32).parsestr(text).get_all("Authentication-Results") or []
    return [parse_results(" ".join(str(v).split())) for v in values[:MAX_HEADERS]]


def trusted_methods(headers: Sequence[ResultsHeader], trusted: Iterable[str]) -> tuple[str | None, list[Method]]:
    """(the trusted authserv-id, the methods of the topmost header) when the topmost header is the trusted
    server's; (None, []) when it is another's or unreadable (everything below it is ignored), or there is none."""
    ids = {t.lower() for t in trusted}
    top = headers[0] if headers else UNREADABLE
    if top.authserv_id is None or top.authserv_id not in ids:
        return None, []
    return top.authserv_id, list(top.methods)


def _domain(value: str | None) -> str | None:
    """A domain from a property (`header.d`, or the part after @ of `header.i`/`smtp.mailfrom`) or an address, in
    ASCII (punycode), lower case, without a trailing dot; None if it is none."""
    if not value:
        return None
    domain = ascii_domain(value.rsplit("@", 1)[-1].strip().strip("."))
    return domain if len(domain) <= 253 and _DOMAIN.fullmatch(domain) else None


def organisational(value: str | None) -> str | None:
    """The organisational domain of a domain or address (DMARC's: the registrable domain, `mail.shop.co.uk` →
    `shop.co.uk`), as one spelling (punycode labels decoded); None when it names no domain."""
    domain = _domain(value)
    return registrable(unicode_domain(domain)) if domain else None


def from_organisation(from_domains: list[str | None]) -> str | None:
    """The one organisational domain of the From domains; None when there is none, one is no domain, or they
    belong to several organisations (no verdict vouches for all of them)."""
    found = {organisational(domain) for domain in from_domains}
    if len(found) != 1 or None in found:
        return None
    return found.pop()


def _signer(method: Method) -> str | None:
    return _domain(method.property("header.d") or method.property("header.i"))


def vouches_for(method: Method, organisation: str | None) -> bool:
    """Whether `method` speaks of `organisation` (the From's): DMARC by every `header.from` it names (none: of
    nothing), DKIM by its signing domain, SPF by `smtp.mailfrom` (else `smtp.helo`)."""
    if organisation is None:
        return False
    if method.name == "dmarc":
        named = [value for key, value in method.properties if key == "header.from"]
        return bool(named) and all(organisational(value) == organisation for value in named)
    if method.name == "dkim":
        return organisational(_signer(method)) == organisation
    if method.name == "spf":
        return organisational(method.property("smtp.mailfrom") or method.property("smtp.helo")) == organisation
    return False


def _known(result: str) -> str:
    return result if result in RESULTS else "unknown"


def _verdict(methods: list[Method], name: str) -> str:
    results = [m.result for m in methods if m.name == name]
    if not results:
        return "none"
    return "pass" if "pass" in results else _known(results[0])


def _dmarc(methods: list[Method], organisation: str | None) -> str:
    """The DMARC result for the From: a pass only when it vouches for its organisation; otherwise the results
    that are no pass, or `unverified` when every result was a pass about something else."""
    found = [m for m in methods if m.name == "dmarc"]
    if not found:
        return "none"
    if any(m.result == "pass" and vouches_for(m, organisation) for m in found):
        return "pass"
    others = [m.result for m in found if m.result != "pass"]
    return _known(others[0]) if others else UNVERIFIED


def aligned(domain: str | None, organisation: str | None) -> bool | None:
    """DMARC's relaxed alignment: `domain` has the From's organisational domain; None without a domain."""
    if not domain:
        return None
    return organisation is not None and organisational(domain) == organisation


def _dkim(methods: list[Method], organisation: str | None) -> DkimVerdict:
    signatures = [m for m in methods if m.name == "dkim"]
    if not signatures:
        return DkimVerdict(result="none", domain=None, aligned=None)

    def rank(method: Method) -> tuple[bool, bool]:
        return method.result == "pass", bool(aligned(_signer(method), organisation))

    best = max(signatures, key=rank)
    domain = _signer(best)
    return DkimVerdict(result=_known(best.result), domain=domain, aligned=aligned(domain, organisation))


UNVERIFIED_AUTHENTICATION = Authentication(
    spf=UNVERIFIED,
    dkim=DkimVerdict(result=UNVERIFIED, domain=None, aligned=None),
    dmarc=UNVERIFIED,
    authserv_id=None,
    trusted=False,
)


def authentication(
    headers: Sequence[ResultsHeader], trusted: Iterable[str], from_domains: list[str | None]
) -> Authentication:
    """The verdicts of the trusted header at the top of `headers` about the From domains (see the module
    docstring)."""
    authserv_id, methods = trusted_methods(headers, trusted)
    if authserv_id is None:
        return UNVERIFIED_AUTHENTICATION
    organisation = from_organisation(from_domains)
    return Authentication(
        spf=_verdict(methods, "spf"),
        dkim=_dkim(methods, organisation),
        dmarc=_dmarc(methods, organisation),
        authserv_id=authserv_id,
        trusted=True,
    )


def sender_verified(
    headers: Sequence[ResultsHeader], trusted: Iterable[str], from_domains: list[str | None]
) -> bool | None:
    """True: the trusted server vouches for the From's one organisational domain (DMARC naming it, or a DKIM
    signature or SPF aligned with it, passed); False: it judged and nothing vouches; None: no trusted verdict."""
    authserv_id, methods = trusted_methods(headers, trusted)
    if authserv_id is None:
        return None
    organisation = from_organisation(from_domains)
    return any(method.result == "pass" and vouches_for(method, organisation) for method in methods)
