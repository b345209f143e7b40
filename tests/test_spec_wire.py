"""The 2026-07-28 wire, from the spec's side: hand-written exchanges and hypothesis-generated variants.

The exchanges live in `spec-fixtures/wire/*.json` (installed as `imap_mcp.spec_fixtures`). Every
test posts raw JSON-RPC to a real `imap-mcp serve` with the spec fixtures on, and checks the exact
JSON-RPC error code, the HTTP status, the echoed id, and, where several checks fail at once, that
the spec's order decides which error is reported: `_meta` (-32602), then headers (-32020), then
version (-32022), then method (-32601), then the handler (-32021).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from importlib.resources import files
from typing import Any

import httpx
import pytest
from harness import new_account, spec_fixture_server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imap_mcp.server.demo.dovecot import Dovecot

MODERN = "2026-07-28"
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
REMOVED_METHODS = ("initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe")
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPS_KEY = "io.modelcontextprotocol/clientCapabilities"
INFO_KEY = "io.modelcontextprotocol/clientInfo"
HTTP_FOR = {-32700: 400, -32600: 400, -32602: 400, -32020: 400, -32021: 400, -32022: 400, -32601: 404, -32603: 200}
WIRE = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(files("imap_mcp.spec_fixtures").joinpath("wire", name).read_text())
    return loaded


EXCHANGES = {name: _load(f"{name}.json") for name in ("discover", "tools-list", "tools-call")}
MRTR = _load("input-required.json")
ERRORS = _load("errors.json")
DEFINED_CODES = set(ERRORS["defined_codes"])


@pytest.fixture(scope="module")
def url(dovecot: Dovecot, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("spec-wire") / "server.log"
    with spec_fixture_server(new_account(dovecot).env(), log) as served:
        yield served


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=15) as http:
        yield http


def post(
    http: httpx.Client, url: str, headers: dict[str, str], body: Any = None, raw: str | None = None
) -> httpx.Response:
    """POST one message the way a 2026 client does (both Accept types); `raw` bypasses JSON encoding."""
    content = raw if raw is not None else json.dumps(body)
    sent = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **headers}
    return http.post(url, content=content, headers=sent)


def message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC response, from a JSON body or the last data event of an SSE body."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        events = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        replies: list[dict[str, Any]] = [
            json.loads(e) for e in events if e and ("result" in json.loads(e) or "error" in json.loads(e))
        ]
        return replies[-1]
    reply: dict[str, Any] = response.json()
    return reply


def assert_error(response: httpx.Response, code: int, request_id: Any) -> dict[str, Any]:
    """The exact code, its HTTP status, the echoed id, and a code the spec defines (never a retired one)."""
    reply = message(response)
    assert "error" in reply, reply
    assert reply["error"]["code"] == code, reply
    assert response.status_code == HTTP_FOR[code], (response.status_code, reply)
    assert reply["id"] == request_id, reply
    assert reply["error"]["code"] in DEFINED_CODES
    error: dict[str, Any] = reply["error"]
    return error


def assert_result(response: httpx.Response, request_id: Any) -> dict[str, Any]:
    reply = message(response)
    assert response.status_code == 200, (response.status_code, reply)
    assert "result" in reply, reply
    assert reply["id"] == request_id
    result: dict[str, Any] = reply["result"]
    return result


def _subset(expected: object, actual: object) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and _subset(v, actual[k]) for k, v in expected.items())
    return expected == actual


# --- the hand-written exchanges --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXCHANGES))
def test_the_spec_exchange_is_answered_as_written(client: httpx.Client, url: str, name: str) -> None:
    exchange = EXCHANGES[name]
    request, expected = exchange["request"], exchange["response"]
    result = assert_result(post(client, url, request["headers"], request["body"]), request["body"]["id"])
    assert set(expected["result_keys"]) <= result.keys()
    assert _subset(expected["result"], result), result


def _mrtr_round1(http: httpx.Client, url: str) -> dict[str, Any]:
    request = MRTR["round1"]
    return assert_result(post(http, url, request["headers"], request["body"]), request["body"]["id"])


def _mrtr_retry(http: httpx.Client, url: str, request_id: Any, **params: Any) -> httpx.Response:
    body = copy.deepcopy(MRTR["round1"]["body"])
    body["id"] = request_id
    body["params"].update(params)
    return post(http, url, MRTR["round1"]["headers"], body)


def test_an_input_required_round_trip_completes_with_the_echoed_state(client: httpx.Client, url: str) -> None:
    first = _mrtr_round1(client, url)
    asked = MRTR["round1_response"]
    assert set(asked["result_keys"]) <= first.keys() and first["resultType"] == "input_required"
    assert first["inputRequests"][asked["input_request"]["key"]]["method"] == asked["input_request"]["method"]
    answers = MRTR["round2_params"]["inputResponses"]
    final = assert_result(_mrtr_retry(client, url, 2, inputResponses=answers, requestState=first["requestState"]), 2)
    assert final["resultType"] == "complete"
    assert MRTR["round2_response"]["text_contains"] in final["content"][0]["text"]


def _examples() -> list[Any]:
    params = []
    for row in ERRORS["rows"]:
        for example in row["examples"]:
            params.append(pytest.param(row["code"], example, id=f"{row['code']}:{example['label']}"))
    return params


@pytest.mark.parametrize(("code", "example"), _examples())
def test_each_error_row_example_gets_its_code_and_status(
    client: httpx.Client, url: str, code: int, example: dict[str, Any]
) -> None:
    """Every server-side row of the spec's error table."""
    response = post(client, url, example["headers"], example.get("body"), example.get("raw"))
    error = assert_error(response, code, example["id"])
    if "data" in example:
        assert _subset(example["data"], error.get("data")), error
    for secret in example.get("never_said", []):
        assert secret not in json.dumps(error), error


def test_the_error_table_covers_every_defined_code() -> None:
    assert {row["code"] for row in ERRORS["rows"]} == DEFINED_CODES
    assert [step["code"] for step in ERRORS["validation_order"]] == [-32602, -32020, -32022, -32601, -32021]


# --- generated variants ----------------------------------------------------------------------------------

request_ids = st.one_of(st.integers(-(2**31), 2**31), st.text(st.characters(codec="ascii"), min_size=1, max_size=12))
exchange_names = st.sampled_from(sorted(EXCHANGES))
header_token = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=24)


def _request(name: str, request_id: Any) -> tuple[dict[str, str], dict[str, Any]]:
    request = copy.deepcopy(EXCHANGES[name]["request"])
    request["body"]["id"] = request_id
    return request["headers"], request["body"]


@WIRE
@given(name=exchange_names, request_id=request_ids, data=st.data())
def test_missing_meta_keys_are_invalid_params(
    client: httpx.Client, url: str, name: str, request_id: Any, data: st.DataObject
) -> None:
    headers, body = _request(name, request_id)
    shape = data.draw(st.sampled_from(["drop-keys", "no-meta", "meta-not-object", "no-params"]))
    if shape == "drop-keys":
        for key in data.draw(st.sets(st.sampled_from([VERSION_KEY, CAPS_KEY]), min_size=1)):
            del body["params"]["_meta"][key]
    elif shape == "no-meta":
        del body["params"]["_meta"]
    elif shape == "meta-not-object":
        body["params"]["_meta"] = data.draw(st.one_of(st.text(max_size=8), st.integers(), st.lists(st.integers())))
    else:
        del body["params"]
    assert_error(post(client, url, headers, body), -32602, request_id)


@WIRE
@given(name=exchange_names, request_id=request_ids)
def test_client_info_is_optional(client: httpx.Client, url: str, name: str, request_id: Any) -> None:
    headers, body = _request(name, request_id)
    body["params"]["_meta"].pop(INFO_KEY, None)
    assert_result(post(client, url, headers, body), request_id)


@WIRE
@given(name=exchange_names, request_id=request_ids, data=st.data())
def test_a_routing_header_that_disagrees_with_the_body_is_a_header_mismatch(
    client: httpx.Client, url: str, name: str, request_id: Any, data: st.DataObject
) -> None:
    headers, body = _request(name, request_id)
    target = data.draw(st.sampled_from([h for h in ("Mcp-Method", "Mcp-Name") if h in headers] + ["version"]))
    if target == "version":  # header stays 2026-07-28, the envelope names something else
        body["params"]["_meta"][VERSION_KEY] = data.draw(header_token.filter(lambda v: v != MODERN))
    elif data.draw(st.booleans()):
        del headers[target]
    else:
        current = headers[target]
        headers[target] = data.draw(header_token.filter(lambda v: v != current))
    assert_error(post(client, url, headers, body), -32020, request_id)


@WIRE
@given(name=exchange_names, request_id=request_ids, data=st.data())
def test_header_names_are_case_insensitive(
    client: httpx.Client, url: str, name: str, request_id: Any, data: st.DataObject
) -> None:
    """Padded values are checked by the suite's http-header-validation; httpx refuses to send them."""
    headers, body = _request(name, request_id)
    cased = {"".join(data.draw(st.sampled_from([c.lower(), c.upper()])) for c in k): v for k, v in headers.items()}
    assert_result(post(client, url, cased, body), request_id)


unknown_versions = header_token.filter(lambda v: v != MODERN and v not in HANDSHAKE_VERSIONS)


@WIRE
@given(name=exchange_names, request_id=request_ids, version=unknown_versions)
def test_an_unknown_version_is_unsupported_and_names_what_is_served(
    client: httpx.Client, url: str, name: str, request_id: Any, version: str
) -> None:
    headers, body = _request(name, request_id)
    headers["MCP-Protocol-Version"] = body["params"]["_meta"][VERSION_KEY] = version
    error = assert_error(post(client, url, headers, body), -32022, request_id)
    assert error["data"] == {"supported": [MODERN], "requested": version}


@WIRE
@given(name=exchange_names, request_id=request_ids, version=st.sampled_from(HANDSHAKE_VERSIONS))
def test_a_legacy_version_inside_the_modern_envelope_is_refused(
    client: httpx.Client, url: str, name: str, request_id: Any, version: str
) -> None:
    """Legacy versions exist only through `initialize`; on the envelope they never get a result.

    With the header still at 2026-07-28 the disagreement is a -32020. With both at the legacy value
    it is an unsupported version on the envelope path (-32022), naming the versions served there.
    """
    headers, body = _request(name, request_id)
    body["params"]["_meta"][VERSION_KEY] = version
    assert_error(post(client, url, headers, body), -32020, request_id)
    headers["MCP-Protocol-Version"] = version
    error = assert_error(post(client, url, headers, body), -32022, request_id)
    assert error["data"] == {"supported": [MODERN], "requested": version}


method_names = st.one_of(
    st.sampled_from(REMOVED_METHODS),
    st.from_regex(r"\A[a-z]{1,10}/[a-zA-Z_]{1,12}\Z").filter(
        lambda m: (
            m not in {"tools/list", "tools/call", "prompts/list", "prompts/get", "server/discover"}
            and not m.startswith(("resources/", "completion/", "subscriptions/", "notifications/"))
        )
    ),
)


@WIRE
@given(method=method_names, request_id=request_ids)
def test_removed_and_unknown_methods_are_not_found(
    client: httpx.Client, url: str, method: str, request_id: Any
) -> None:
    headers, body = _request("tools-list", request_id)
    body["method"] = headers["Mcp-Method"] = method
    assert_error(post(client, url, headers, body), -32601, request_id)


json_scalars = st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=10), st.booleans())


@WIRE
@given(
    request_id=request_ids,
    responses=st.one_of(
        json_scalars,
        st.lists(json_scalars, max_size=3),
        st.dictionaries(st.sampled_from(["user_name", "other"]), json_scalars, min_size=1),
    ),
)
def test_malformed_input_responses_are_invalid_params(
    client: httpx.Client, url: str, request_id: Any, responses: Any
) -> None:
    assert_error(_mrtr_retry(client, url, request_id, inputResponses=responses), -32602, request_id)


@WIRE
@given(request_id=request_ids, keys=st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=3))
def test_well_formed_answers_to_questions_never_asked_are_asked_again(
    client: httpx.Client, url: str, request_id: Any, keys: list[str]
) -> None:
    """Unknown keys are ignored and a missing answer re-asks: SHOULD in the spec, not an error."""
    answers = {k: {"action": "accept", "content": {"ok": True}} for k in keys if k != "confirm"}
    result = assert_result(_mrtr_retry(client, url, request_id, inputResponses=answers), request_id)
    assert result["resultType"] == "input_required"


def _tamper(state: str, how: str, noise: str) -> str:
    if how == "append":
        return state + noise
    if how == "truncate":
        return state[: max(0, len(state) - len(noise))]
    cut = len(noise) % len(state)
    swapped = "A" if state[cut] != "A" else "B"
    return state[:cut] + swapped + state[cut + 1 :]


@WIRE
@given(
    request_id=request_ids,
    how=st.sampled_from(["append", "truncate", "flip"]),
    noise=st.text(st.characters(codec="ascii"), min_size=1, max_size=40),
)
def test_a_tampered_request_state_is_refused(
    client: httpx.Client, url: str, request_id: Any, how: str, noise: str
) -> None:
    """The fixture's state is sealed by the SDK's RequestStateBoundary; any change fails verification."""
    state = _mrtr_round1(client, url)["requestState"]
    forged = _tamper(state, how, noise)
    answers = MRTR["round2_params"]["inputResponses"]
    response = _mrtr_retry(client, url, request_id, inputResponses=answers, requestState=forged)
    error = assert_error(response, -32602, request_id)
    assert error["data"] == {"reason": "invalid_request_state"}


@WIRE
@given(
    request_id=request_ids,
    state=st.one_of(
        st.text(max_size=200),
        st.text(st.characters(codec="ascii"), min_size=1, max_size=400).map(lambda s: "v1." + s),
        st.integers(min_value=0, max_value=200_000).map(lambda n: "v1." + "A" * n),
        st.integers(),
        st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    ),
)
def test_garbage_request_state_is_refused(client: httpx.Client, url: str, request_id: Any, state: Any) -> None:
    assert_error(_mrtr_retry(client, url, request_id, requestState=state), -32602, request_id)


def test_a_request_state_beyond_the_body_limit_is_refused_before_parsing(client: httpx.Client, url: str) -> None:
    """mcp 2.3.0 caps a body at 4 MiB; anything larger is refused at the HTTP layer (413)."""
    response = _mrtr_retry(client, url, 1, requestState="v1." + "A" * (5 * 1024 * 1024))
    assert response.status_code == 413


# --- the order of the checks -----------------------------------------------------------------------------


@WIRE
@given(
    request_id=request_ids,
    defects=st.fixed_dictionaries(
        {"meta": st.booleans(), "header": st.booleans(), "version": st.booleans(), "method": st.booleans()}
    ),
    removed=st.sampled_from((*REMOVED_METHODS, "no/such_method")),
    missing_capability=st.booleans(),
)
def test_when_several_checks_fail_the_spec_order_decides(
    client: httpx.Client,
    url: str,
    request_id: Any,
    defects: dict[str, bool],
    removed: str,
    missing_capability: bool,
) -> None:
    """Several defects on one `tools/call test_missing_capability`: the earliest check in the order wins."""
    meta = {VERSION_KEY: MODERN, CAPS_KEY: {} if missing_capability else {"sampling": {}}}
    params = {"name": "test_missing_capability", "arguments": {}, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": "test_missing_capability"}
    if defects["method"]:
        body["method"] = headers["Mcp-Method"] = removed
    if defects["version"]:
        headers["MCP-Protocol-Version"] = meta[VERSION_KEY] = "v999.0.0"
    if defects["header"]:
        headers["Mcp-Method"] = "prompts/list"
    if defects["meta"]:
        del meta[CAPS_KEY]
    order = [("meta", -32602), ("header", -32020), ("version", -32022), ("method", -32601)]
    expected = next((code for defect, code in order if defects[defect]), -32021 if missing_capability else None)
    response = post(client, url, headers, body)
    if expected is None:
        assert assert_result(response, request_id)["resultType"] == "complete"
    else:
        assert_error(response, expected, request_id)
