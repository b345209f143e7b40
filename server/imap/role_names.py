"""The names mailboxes of each role have in the languages people read their mail in, for servers without SPECIAL-USE.

A server that marks no mailbox with a SPECIAL-USE (or XLIST) attribute still has a Sent, a Trash, ...: the ones the
user's mail client or provider created, named in the user's language. `ROLE_NAMES` lists, for each role, the
names the major clients and providers give it, most usual first (English first, as the existing behaviour was;
where two mailboxes of a role exist, the one named earlier here wins). They are compared case-insensitively after
Unicode normalisation (`comparable`), after the personal namespace's prefix and an `INBOX`, `[Gmail]` or
`[Google Mail]` parent (`imap.mailboxes`).

Sources (the names as each shows them to a user of that language; Outlook and Gmail create them on the server
under these names, Thunderbird shows its special folders so, providers create them so):
- Microsoft Outlook / Exchange / Outlook.com: the localized default folder names ("Sent Items", "Deleted Items",
  "Junk Email" and their translations: "Gesendete Elemente", "Gelöschte Elemente", "Junk-E-Mail", "Éléments
  envoyés", "Elementos eliminados", "Posta eliminata", "Verwijderde items", "Itens Excluídos", "Удаленные",
  "Elementy usunięte", "Borttagna objekt", "Slettede elementer", "Poistetut", "Odstraněná pošta", ...).
- Gmail / Google Mail: its system labels in the interface language ("[Gmail]/Gesendet", "[Gmail]/Papierkorb",
  "[Google Mail]/Entwürfe", "Messages envoyés", "Corbeille", "Posta inviata", "Cestino", "Prullenbak", "Lixeira",
  "Корзина", "Kosz", "Papperskorgen", ...).
- Thunderbird's locales: the special folders' names in messenger.properties (sentFolderName, draftsFolderName,
  trashFolderName, junkFolderName, archivesFolderName) of de, fr, es-ES, it, nl, pt-BR, pt-PT, ru, pl, sv-SE, da,
  nb-NO, fi, cs, uk ("Gesendet", "Entwürfe", "Papierkorb", "Envoyés", "Brouillons", "Enviados", "Borradores",
  "Inviati", "Bozze", "Verzonden", "Concepten", "Rascunhos", "Отправленные", "Черновики", "Wysłane", "Szkice",
  "Skickat", "Utkast", "Archiv", "Archief", "Архив", ...).
- Providers that create them in their users' language: GMX and WEB.DE ("Gesendet", "Entwürfe", "Papierkorb",
  "Spamverdacht"), T-Online, Yandex and Mail.ru ("Отправленные", "Черновики", "Удалённые", "Спам"), Orange
  ("Pourriels").
"""

from __future__ import annotations

import unicodedata
from typing import Literal

NamedRole = Literal["sent", "drafts", "trash", "junk", "archive"]

# fmt: off
ROLE_NAMES: dict[NamedRole, tuple[str, ...]] = {
    "sent": (
        # en
        "Sent", "Sent Items", "Sent Messages", "Sent Mail",
        # de
        "Gesendet", "Gesendete Elemente", "Gesendete Objekte", "Gesendete Nachrichten",
        # fr
        "Envoyés", "Éléments envoyés", "Messages envoyés",
        # es, pt
        "Enviados", "Elementos enviados", "Correo enviado", "Itens enviados", "Mensagens enviadas", "E-mails enviados",
        # it
        "Inviati", "Posta inviata", "Elementi inviati",
        # nl
        "Verzonden", "Verzonden items", "Verzonden berichten",
        # ru, uk
        "Отправленные", "Отправленные элементы", "Надіслані", "Відправлені",
        # pl
        "Wysłane", "Elementy wysłane",
        # sv, da, nb, fi, cs
        "Skickat", "Skickade", "Skickade objekt", "Skickade meddelanden", "Sendt", "Sendte elementer", "Sendt post",
        "Lähetetyt", "Lähetetyt viestit", "Odeslané", "Odeslaná pošta",
    ),
    "drafts": (
        "Drafts", "Draft",
        "Entwürfe",
        "Brouillons",
        "Borradores", "Rascunhos",
        "Bozze",
        "Concepten",
        "Черновики", "Чернетки",
        "Szkice", "Wersje robocze", "Kopie robocze",
        "Utkast", "Kladder", "Luonnokset", "Koncepty", "Rozepsané",
    ),
    "trash": (
        "Trash", "Deleted Items", "Deleted Messages", "Bin",
        "Papierkorb", "Gelöschte Elemente", "Gelöschte Objekte", "Gelöschte Nachrichten",
        "Corbeille", "Éléments supprimés", "Messages supprimés",
        "Papelera", "Elementos eliminados", "Elementos borrados",
        "Lixeira", "Lixo", "Itens excluídos", "Itens eliminados",
        "Cestino", "Posta eliminata", "Elementi eliminati",
        "Prullenbak", "Verwijderde items", "Verwijderde berichten",
        "Корзина", "Удаленные", "Удалённые", "Удаленные элементы", "Кошик", "Видалені",
        "Kosz", "Elementy usunięte",
        "Papperskorgen", "Papperskorg", "Borttagna objekt", "Papirkurv", "Slettet post", "Slettede elementer",
        "Roskakori", "Poistetut", "Koš", "Odstraněná pošta",
    ),
    "junk": (
        "Junk", "Spam", "Junk E-mail", "Junk Email", "Bulk Mail",
        "Junk-E-Mail", "Spamverdacht", "Unerwünscht",
        "Indésirables", "Courrier indésirable", "Pourriels",
        "Correo no deseado", "No deseado", "Lixo eletrônico", "Lixo electrónico",
        "Posta indesiderata", "Indesiderata",
        "Ongewenste e-mail", "Ongewenst",
        "Спам", "Нежелательная почта",
        "Wiadomości-śmieci", "Niechciane",
        "Skräppost", "Skräp", "Uønsket e-mail", "Uønsket post", "Søppelpost", "Roskaposti", "Nevyžádaná pošta",
    ),
    "archive": (
        "Archive", "Archives",
        "Archiv", "Arkiv",
        "Archivo", "Archivos", "Arquivo", "Arquivos",
        "Archivio", "Archivi",
        "Archief",
        "Архив", "Архів",
        "Archiwum", "Arkisto",
    ),
}
# fmt: on
#: the parents some servers and providers keep the role mailboxes under, besides the personal namespace's prefix
ROLE_PARENTS = ("INBOX", "[Gmail]", "[Google Mail]")


def comparable(name: str) -> str:
    """`name` as names are compared: composed Unicode (a decomposed ü is ü), case folded (ß is ss, Ё is ё)."""
    return unicodedata.normalize("NFC", name).casefold()


#: each role's names as compared, most usual first
COMPARABLE_NAMES: dict[NamedRole, tuple[str, ...]] = {
    role: tuple(dict.fromkeys(comparable(name) for name in names)) for role, names in ROLE_NAMES.items()
}
#: the setting that names each role's mailbox (in the environment, or per account in the accounts file)
ROLE_SETTINGS: dict[NamedRole, str] = {role: f"IMAP_MAILBOX_{role.upper()}" for role in ROLE_NAMES}
