"""The official MCP conformance suite against a real `imap-mcp serve`, one pytest test per scored scenario.

The suite runs once per revision (`--requirements 2026-07-28`, `--requirements 2025-11-25`) with
`-o DIR`, which leaves one `checks.json` per scenario. There is no expected-failure baseline: a
scored scenario passes only when none of its checks is a FAILURE. The server runs in its default
single-instance mode, so the 2025-11-25 leg gets a stateful SSE session and the suite's
sampling/elicitation requests can be pushed to it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from pinned_suite import Harness

pytestmark = pytest.mark.slow

SCORED = json.loads((Path(__file__).parent / "scored-scenarios.json").read_text())["scored"]
REVISIONS = tuple(SCORED)
PINNED_HARNESS = "0.2.0-alpha.12"
SUITE_TIMEOUT_S = 300
_RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


@dataclass
class SuiteRun:
    """One `--requirements` run: the exit code, the console output and the checks of each scenario."""

    returncode: int
    output: str
    checks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def tail(self) -> str:
        return self.output[-3000:]


def _read_checks(out_dir: Path) -> dict[str, list[dict[str, Any]]]:
    checks: dict[str, list[dict[str, Any]]] = {}
    for entry in out_dir.iterdir():
        match = _RESULT_DIR.match(entry.name)
        if match and (entry / "checks.json").is_file():
            checks[match["scenario"]] = json.loads((entry / "checks.json").read_text())
    return checks


@pytest.fixture(scope="session")
def suite(
    conformance_cli: Harness, fixture_server_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], SuiteRun]:
    """Runs the suite for a revision on first use and remembers the result for the session."""
    runs: dict[str, SuiteRun] = {}

    def run(revision: str) -> SuiteRun:
        if revision not in runs:
            out_dir = tmp_path_factory.mktemp(f"conformance-{revision}")
            args = ("server", "--url", fixture_server_url, "--requirements", revision, "-o", str(out_dir))
            done = conformance_cli.run(*args, timeout=SUITE_TIMEOUT_S)
            runs[revision] = SuiteRun(done.returncode, done.stdout + done.stderr, _read_checks(out_dir))
        return runs[revision]

    return run


def _scenario_ids() -> list[Any]:
    return [pytest.param(rev, name, id=f"{rev}:{name}") for rev in REVISIONS for name in SCORED[rev]]


@pytest.mark.parametrize(("revision", "scenario"), _scenario_ids())
def test_scored_scenario_has_no_failed_check(suite: Callable[[str], SuiteRun], revision: str, scenario: str) -> None:
    run = suite(revision)
    assert scenario in run.checks, f"the suite wrote no checks.json for {scenario}:\n{run.tail()}"
    checks = run.checks[scenario]
    assert checks, f"{scenario} ran no checks"
    failed = [f"{c['id']}: {c.get('errorMessage', '')}" for c in checks if c["status"] == "FAILURE"]
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("revision", REVISIONS)
def test_suite_exits_zero_on_the_scored_set(suite: Callable[[str], SuiteRun], revision: str) -> None:
    """With `--requirements` the exit code counts scored scenarios only; 0 means all of them passed."""
    run = suite(revision)
    assert run.returncode == 0, run.tail()
    assert f"Not scored for {revision}" in run.output, "the console summary changed shape"


@pytest.mark.parametrize("revision", REVISIONS)
def test_scored_scenarios_raise_no_should_level_warnings(suite: Callable[[str], SuiteRun], revision: str) -> None:
    """WARNING marks a missed SHOULD; the harness does not score it, but none is expected here either."""
    run = suite(revision)
    warnings = [
        f"{name}/{c['id']}: {c.get('errorMessage', '')}"
        for name in SCORED[revision]
        for c in run.checks.get(name, [])
        if c["status"] == "WARNING"
    ]
    assert not warnings, "\n".join(warnings)


def test_harness_is_the_pin_and_runs_on_node_22(conformance_cli: Harness) -> None:
    """The suite runs on the npm-installed Node 22, not the system Node (which stays at whatever it is)."""
    node = conformance_cli.node("-e", "process.stdout.write(process.version)", timeout=30)
    version = conformance_cli.run("--version", timeout=30)
    assert node.stdout.startswith("v22."), node.stdout + node.stderr
    assert version.stdout.strip() == PINNED_HARNESS, version.stdout + version.stderr


@pytest.mark.parametrize("revision", REVISIONS)
def test_pinned_scenario_list_is_what_the_harness_requires(conformance_cli: Harness, revision: str) -> None:
    listing = conformance_cli.run("list", "--server", "--requirements", revision, timeout=60)
    section = listing.stdout.split("Server scenarios (test against a server):", 1)[1].split("\n\n", 1)[0]
    listed = [line.strip().removeprefix("- ") for line in section.strip().splitlines()]
    assert listed == SCORED[revision]


FIXTURE_NAMES = {
    "tools": {
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_error_handling",
        "test_tool_with_progress",
        "test_missing_capability",
        "test_input_required_result_elicitation",
        "test_input_required_result_sampling",
        "test_input_required_result_list_roots",
        "test_input_required_result_request_state",
        "test_input_required_result_multiple_inputs",
        "test_input_required_result_multi_round",
        "test_input_required_result_tampered_state",
        "test_input_required_result_capabilities",
        "test_tool_with_logging",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
    },
    "prompts": {
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
        "test_input_required_result_prompt",
    },
    "resources": {"test://static-text", "test://static-binary", "test://watched-resource"},
    "resourceTemplates": {"test://template/{id}/data"},
}
_LIST_CALLS = {
    "tools": ("tools/list", "name"),
    "prompts": ("prompts/list", "name"),
    "resources": ("resources/list", "uri"),
    "resourceTemplates": ("resources/templates/list", "uriTemplate"),
}


def _list_2026(url: str, method: str) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": meta}}
    response = httpx.post(url, json=body, headers=headers, timeout=10)
    response.raise_for_status()
    result: dict[str, Any] = response.json()["result"]
    return result


@pytest.mark.parametrize("kind", sorted(FIXTURE_NAMES))
def test_every_fixture_the_suite_calls_is_listed(fixture_server_url: str, kind: str) -> None:
    """Guards the scenarios that would pass vacuously: the SDK answers an unknown tool with an isError result."""
    method, key = _LIST_CALLS[kind]
    listed = {item[key] for item in _list_2026(fixture_server_url, method)[kind]}
    assert FIXTURE_NAMES[kind] <= listed, sorted(FIXTURE_NAMES[kind] - listed)
