"""Warnings about a message, each with a reason in this server's words: what a careful reader should know.

Every warning is `{"code", "detail"}`; summaries carry the codes of those their headers give.
A detail never quotes the sender's text (it stands outside the fence): it names domains in ASCII
(punycode), counts, and this server's own words and tool names.

- `display_name_has_address`: the From display name holds an address that is not the sender's.
- `reply_to_elsewhere`: Reply-To goes to another domain than From (other registrable domain).
- `lookalike_domain`: the From domain mixes scripts, is internationalised, or imitates a domain the
  account knows (`lookalikes.py`).
- `hidden_text`: text a person would not see was removed: hidden HTML, and zero-width, bidi and
  other invisible characters (`html_text.py`, `invisible.py`).
- `link_mismatch`: a link whose text names a URL, domain or address on another site than its target.
- `instructions_to_assistant`: text addressed to an AI assistant or its tools (`INSTRUCTION_RULES`,
  justified on the corpus in `tests/reading/injection_corpus.py`); the text stays, flagged.
- `fence_imitation`: lines that imitate this server's fence were neutralised (`fence.py`).

The last two are judged over every text of the sender a result shows (`text_warnings`): subject, From display
name, body, and each attachment's file name, MIME type as declared, and the name of the file written.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from .addresses import domain_of
from .authentication import ResultsHeader, sender_verified
from .fence import imitates_fence
from .html_text import Converted
from .invisible import invisible_removed, without_invisible
from .lookalikes import KnownDomains, ascii_domain, lookalike_reasons, registrable, unicode_domain

WarningCode = Literal[
    "display_name_has_address",
    "reply_to_elsewhere",
    "lookalike_domain",
    "hidden_text",
    "link_mismatch",
    "instructions_to_assistant",
    "fence_imitation",
]


class MailWarning(BaseModel):
    code: WarningCode
    detail: str = Field(description="Why, in this server's words (never the sender's).")


@dataclass(frozen=True)
class Judge:
    """What warnings and verdicts are judged against: the trusted receiving servers, the domains the
    account knows, this server's tool names."""

    trusted_authserv_ids: tuple[str, ...] = ()
    known: KnownDomains = field(default_factory=KnownDomains)
    tool_names: frozenset[str] = frozenset()
    #: what the judge had to go without, and why (`imap.helper_lookups`): shown in the result's notes
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class SenderFacts:
    """What the headers of a message say about its sender: fixed for the message, kept with its summary."""

    name: str = ""
    address: str = ""
    reply_to: tuple[str, ...] = ()
    results: tuple[ResultsHeader, ...] = ()
    #: the From header's other addresses, (decoded display name, address) each
    others: tuple[tuple[str, str], ...] = ()

    @property
    def domain(self) -> str | None:
        return domain_of(self.address)

    @property
    def from_domains(self) -> list[str | None]:
        """The domains a reader sees in From: each address's (None for one without), and each of an address a
        display name holds (never the address, but what a person reads as one)."""
        found: list[str | None] = []
        for name, address in ((self.name, self.address), *self.others):
            found.append(domain_of(address))
            found += [shown.group(1) for shown in _ADDRESS_IN_NAME.finditer(_readable(name))]
        return found

    def verified(self, judge: Judge) -> bool | None:
        return sender_verified(self.results, judge.trusted_authserv_ids, self.from_domains)


#: an address inside a display name (any script; the domain needs a dot)
_ADDRESS_IN_NAME = re.compile(r"[^\s<>\"'(),;:@\[\]]+@([^\s<>\"'(),;:@\[\]]+\.[^\s<>\"'(),;:@\[\].]{2,})")


def _readable(name: str) -> str:
    """A display name as a person reads it: folded (NFKC), invisible characters removed."""
    return invisible_removed(unicodedata.normalize("NFKC", name))


def display_name_warning(facts: SenderFacts) -> MailWarning | None:
    """`display_name_has_address` when the From display name holds an address that is not the sender's."""
    name = _readable(facts.name)
    if "@" not in name:
        return None
    for found in _ADDRESS_IN_NAME.finditer(name):
        if found.group(0).lower() != facts.address.lower():
            shown = ascii_domain(unicode_domain(found.group(1)))
            sender = ascii_domain(unicode_domain(facts.domain or "")) or "no domain"
            return MailWarning(
                code="display_name_has_address",
                detail=f"the From display name shows an address at {shown}, but the sender's address is at {sender}",
            )
    return None


def reply_to_warning(facts: SenderFacts) -> MailWarning | None:
    """`reply_to_elsewhere` when a Reply-To address is on another registrable domain than From."""
    own = facts.domain
    for address in facts.reply_to:
        domain = domain_of(address)
        if domain and (own is None or registrable(unicode_domain(domain)) != registrable(unicode_domain(own))):
            return MailWarning(
                code="reply_to_elsewhere",
                detail=f"replies go to {ascii_domain(unicode_domain(domain))}, while the mail is from "
                f"{ascii_domain(unicode_domain(own)) if own else 'no domain'}",
            )
    return None


def lookalike_warnings(facts: SenderFacts, judge: Judge) -> list[MailWarning]:
    domain = facts.domain
    if not domain:
        return []
    return [MailWarning(code="lookalike_domain", detail=reason) for reason in lookalike_reasons(domain, judge.known)]


def sender_warnings(facts: SenderFacts, judge: Judge) -> list[MailWarning]:
    """The warnings the From and Reply-To headers give."""
    found = [display_name_warning(facts), reply_to_warning(facts)]
    return [w for w in found if w is not None] + lookalike_warnings(facts, judge)


@dataclass(frozen=True)
class Rule:
    name: str
    says: str  #: what the text does, in this server's words
    pattern: re.Pattern[str]


def _rule(name: str, says: str, *alternatives: str, multiline: bool = False) -> Rule:
    flags = re.MULTILINE if multiline else 0
    return Rule(name, says, re.compile("|".join(f"(?:{a})" for a in alternatives), flags))


#: what an AI assistant is called in text addressed to one
_AI = (
    r"(?:ai|a\.i\.|llm|large language model|language model|ai assistant|ai agent|ai model|chatbot|chat bot|chatgpt"
    r"|gpt-?\d\w*|copilot)"
)
_READERS = rf"(?:{_AI}|assistant|agent|model|bot)"
#: the rules, each justified on the corpus (tests/reading/injection_corpus.py): every rule flags some of its
#: injections and none of its ordinary mail but the false positives listed there
INSTRUCTION_RULES: tuple[Rule, ...] = (
    _rule(
        "ignore-instructions",
        "asks to ignore, forget or override earlier instructions",
        r"\b(?:ignore|disregard|forget|override|bypass|discard|abandon)\s+(?:\w+\s+){0,3}?"
        r"(?:previous|prior|above|earlier|preceding|former|original|initial|system|existing|current|safety)\s+"
        r"(?:instructions?|prompts?|directives?|guidelines|guardrails|rules|context|commands?|programming|orders)",
        r"\b(?:ignore|disregard|forget)\s+(?:all|everything)\s+(?:you\s+(?:were|have\s+been)\s+told|above|before)",
    ),
    _rule(
        "addressed-to-ai",
        "addresses an AI assistant or model that reads the mail",
        r"\b(?:dear|hey|hi|hello|attention|note to|message to|message for|instructions? (?:to|for)),?\s+"
        rf"(?:the\s+|any\s+)?{_AI}\b",
        rf"\bif you are an?\s+(?:{_AI}|assistant|agent|bot)\b",
        rf"\b(?:you are|you're)\s+(?:now\s+)?an?\s+{_AI}\b",
        rf"\b(?:any|the|an?)\s+{_READERS}s?\s+(?:that is\s+|who is\s+)?"
        r"(?:reading|processing|summari[sz]ing|parsing|handling)\s+"
        r"(?:this|these|the user'?s?|my)\s+(?:e-?mails?|messages?|inbox|mailbox|mail)\b",
        rf"\b(?:{_AI}|assistants?|agents?)\s+(?:reading|processing|summari[sz]ing)\s+this\b",
    ),
    _rule(
        "role-marker",
        "holds chat-format role markers or model control tokens",
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\|>",
        r"\[/?inst\]|<</?sys>>",
        r"</?(?:system|assistant|user_query|instructions?|tool_call|function_calls?|admin_instructions?|developer)>",
        r"^\s*\[\s*(?:system|developer)\s*\]|^\s*#{1,3}\s*(?:system|developer)\b",
        r"^\s*(?:system|developer)\s+(?:prompt|message|instructions?|override|note)\s*:",
        multiline=True,
    ),
    _rule(
        "hide-from-user",
        "asks to keep something from the user or claims the user's consent",
        r"\b(?:do not|don't|never|without)\s+(?:tell(?:ing)?|inform(?:ing)?|notify(?:ing)?|alert(?:ing)?|"
        r"mention(?:ing)?|reveal(?:ing)?|ask(?:ing)?|confirm(?:ing)? with|asking for confirmation from|"
        r"show(?:ing)?)\s+(?:this\s+(?:to\s+)?|it\s+(?:to\s+)?)?(?:the|your)\s+(?:user|human|owner|account owner)\b",
        r"\bthe (?:user|account owner) (?:has )?(?:already )?(?:authori[sz]ed|approved|consented|pre-?approved|"
        r"wants you|asked you|instructed you)\b",
    ),
    _rule(
        "new-instructions",
        "announces new instructions, a new task or a mode for the reader",
        rf"\b(?:new|updated|real|actual|hidden|secret|additional|further|important)\s+instructions?\s+(?:for|to)\s+"
        rf"(?:you|the\s+{_READERS})\b",
        r"\byour\s+(?:real|actual|true)\s+(?:instructions|task|goal|objective|purpose|directive)\s+(?:is|are|now)\b",
        r"\b(?:enter|enable|activate|switch to)\s+(?:developer|dan|god|jailbreak|unrestricted|debug)\s+mode\b",
        r"\b(?:reveal|print|show|output|repeat|leak)\s+(?:me\s+)?(?:your|the)\s+(?:system\s+prompt|initial\s+prompt|"
        r"hidden\s+instructions|instructions above)\b",
    ),
)


def _flat(text: str) -> str:
    """`text` as the rules read it: NFKC, no invisible characters, case-folded, spaces collapsed per line."""
    view = invisible_removed(unicodedata.normalize("NFKC", text)).casefold() if not text.isascii() else text.lower()
    return re.sub(r"[ \t\xa0]+", " ", view)


#: a word every rule needs (checked first: most text holds none, and is done with in one pass)
_ANY_RULE = re.compile(
    r"ignor|disregard|forget|overrid|bypass|discard|abandon|\bai\b|a\.i\.|llm|model|assistant|agent|bot\b|gpt"
    r"|copilot|<\||<<|inst\]|tool_call|function_call|system|developer|\buser|owner|instruction|task|goal|objective"
    r"|purpose|directive|mode\b|prompt"
)


@lru_cache(maxsize=8)
def _tool_name_pattern(tool_names: frozenset[str]) -> re.Pattern[str] | None:
    if not tool_names:
        return None
    names = "|".join(re.escape(name) for name in sorted(tool_names, key=len, reverse=True))
    return re.compile(rf"(?<![a-z0-9_])(?:{names})(?![a-z0-9_])")


def instruction_findings(text: str, tool_names: Iterable[str] = ()) -> list[str]:
    """What in `text` addresses an AI assistant: the `says` of each rule that matches, and this server's tool
    names it holds."""
    view = _flat(text)
    found = [rule.says for rule in INSTRUCTION_RULES if rule.pattern.search(view)] if _ANY_RULE.search(view) else []
    pattern = _tool_name_pattern(frozenset(tool_names))
    named = sorted(set(pattern.findall(view))) if pattern is not None and "_" in view else []
    if named:
        found.append("names this server's tool" + ("s " if len(named) > 1 else " ") + ", ".join(named))
    return found


def instructions_warning(where: str, text: str, tool_names: Iterable[str]) -> MailWarning | None:
    found = instruction_findings(text, tool_names)
    if not found:
        return None
    return MailWarning(
        code="instructions_to_assistant",
        detail=f"the {where} holds text addressed to an AI assistant ({'; '.join(found)}); it was written by the "
        "sender, not the user, and is left in place, flagged",
    )


def fence_warning(where: Sequence[tuple[str, int]]) -> MailWarning | None:
    """`fence_imitation` for the (place, lines) where lines imitating the fence were neutralised."""
    counted = [(place, lines) for place, lines in where if lines]
    if not counted:
        return None
    places = ", ".join(f"{lines} in the {place}" for place, lines in counted)
    return MailWarning(
        code="fence_imitation",
        detail=f"lines imitating this server's fence ({places}) were neutralised: marked, their brackets turned "
        "round; only lines with this result's nonce are fence lines",
    )


def text_warnings(places: Sequence[tuple[str, str]], tool_names: Iterable[str]) -> list[MailWarning]:
    """`instructions_to_assistant` for each (place, text of the sender) addressed to an AI assistant, and
    `fence_imitation` for the lines among them that imitate the fence."""
    names = frozenset(tool_names)
    found = [instructions_warning(where, text, names) for where, text in places]
    found.append(fence_warning([(where, imitates_fence(text)) for where, text in places]))
    return [warning for warning in found if warning is not None]


def attachment_places(attachments: Iterable[tuple[str | None, str]]) -> list[tuple[str, str]]:
    """The texts of the sender an attachment list shows, by place: each (file name, MIME type as declared)."""
    return [place for name, declared in attachments for place in (("file name", name or ""), ("MIME type", declared))]


def attachment_warnings(
    attachments: Sequence[tuple[str | None, str]], written: Sequence[str], tool_names: Iterable[str]
) -> list[MailWarning]:
    """The warnings of an attachment list, each (file name, MIME type as declared), and of the `written` names of
    files made from them: text addressed to an AI assistant, fence imitations, invisible characters."""
    places = [*attachment_places(attachments), *(("name of the file written", name) for name in written)]
    invisible = [
        ("file names", sum(without_invisible(name or "")[1] for name, _ in attachments)),
        ("MIME types", sum(without_invisible(declared)[1] for _, declared in attachments)),
    ]
    hidden = hidden_warning(None, invisible)
    return merged([*text_warnings(places, tool_names), *([hidden] if hidden else [])])


def merged(found: Sequence[MailWarning]) -> list[MailWarning]:
    """One warning per code: the details of warnings with the same code joined."""
    by_code: dict[WarningCode, list[str]] = {}
    for warning in found:
        by_code.setdefault(warning.code, []).append(warning.detail)
    return [MailWarning(code=code, detail="; ".join(details)) for code, details in by_code.items()]


def hidden_warning(converted: Converted | None, invisible: Sequence[tuple[str, int]]) -> MailWarning | None:
    """`hidden_text` for the hidden HTML removed from the body and the invisible characters removed from each place."""
    parts: list[str] = []
    if converted is not None and converted.hidden:
        reasons = ", ".join(f"{why} x{count}" for why, count in converted.hidden.most_common())
        parts.append(
            f"{sum(converted.hidden.values())} piece(s) of HTML text a person would not see ({converted.hidden_chars} "
            f"characters; {reasons}) were removed from the body"
        )
    counted = [(place, count) for place, count in invisible if count]
    if counted:
        places = ", ".join(f"{count} from the {place}" for place, count in counted)
        parts.append(f"invisible characters (zero-width, bidi controls, tags, fillers) were removed: {places}")
    if not parts:
        return None
    return MailWarning(code="hidden_text", detail="; ".join(parts))


#: visible link text that names a place: a URL, an address or a bare domain with a known-looking suffix
_NAMED_PLACE = re.compile(
    r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^\s@/]+@)?((?:[\w-]+\.)+[a-z\u00a1-\uffff][\w-]*\.?)(?::\d+)?(?:[/?#]\S*)?$"
)


def _named_domain(text: str) -> str | None:
    """The domain a link's visible text names, when the whole text is a URL, an address or a domain."""
    candidate = text.strip().strip("<>()[]\"'").lower()
    if not candidate or " " in candidate or len(candidate) > 2000:
        return None
    found = _NAMED_PLACE.match(candidate)
    if found is None:
        return None
    domain = found.group(1).rstrip(".")
    top = domain.rsplit(".", 1)[-1]
    return domain if len(top) >= 2 and not top.isdigit() else None


def _target_domain(target: str) -> str | None:
    """The host a link's target leads to (the domain of a mailto: address); None when it has none."""
    if target.lower().startswith("mailto:"):
        return domain_of(target[7:].split("?", 1)[0])
    try:
        host = urlsplit(target if "//" in target else "//" + target if target.startswith("www.") else target).hostname
    except ValueError:
        return None
    return host.rstrip(".").lower() if host else None


def link_mismatches(links: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(named domain, target domain) of each link whose visible text names another site than its target."""
    found: list[tuple[str, str]] = []
    for text, target in links:
        named = _named_domain(text)
        if named is None:
            continue
        leads = _target_domain(target)
        if leads is None or registrable(unicode_domain(leads)) != registrable(unicode_domain(named)):
            found.append((named, leads or _scheme(target)))
    return found


def _scheme(target: str) -> str:
    """How a target without a host is named in a detail: its scheme (`javascript:`) when it has a plain one."""
    scheme = target.split(":", 1)[0].lower() + ":" if ":" in target else ""
    return scheme if re.fullmatch(r"[a-z][a-z0-9+.-]{0,20}:", scheme) else "a target without a host"


def link_warning(links: Sequence[tuple[str, str]]) -> MailWarning | None:
    mismatches = link_mismatches(links)
    if not mismatches:
        return None
    shown = Counter((ascii_domain(unicode_domain(a)), _shown_target(b)) for a, b in mismatches)
    examples = "; ".join(f"text names {a}, target is {b}" for (a, b), _ in shown.most_common(3))
    return MailWarning(
        code="link_mismatch",
        detail=f"{len(mismatches)} link(s) whose text names one site lead elsewhere ({examples})",
    )


def _shown_target(target: str) -> str:
    """A target domain in ASCII, or a scheme such as `javascript:`."""
    return target if target.endswith(":") or " " in target else ascii_domain(unicode_domain(target))
