"""The `input_required` (MRTR, SEP-2322) fixtures: 2026-07-28 only.

Each handler looks at `ctx.input_responses` / `ctx.request_state` and either finishes or asks
again. Every `requestState` these return leaves the server sealed by the SDK's
`RequestStateBoundary` (AES-GCM, bound to method, tool and arguments), and the handler sees its
own plaintext on the way back; so a tampered echo is refused with -32602 before any handler
runs. The plaintext here is small JSON because none of it is security-relevant: it only counts
rounds. `inputResponses` are per round, so what a later round still needs rides in the state.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt, UserMessage
from mcp.types import (
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequest,
    InputRequiredResult,
    InputResponses,
    ListRootsRequest,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)


def ask_form(message: str, **fields: str) -> ElicitRequest:
    """A form elicitation whose fields are all required and of the given JSON types."""
    schema = {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in fields.items()},
        "required": list(fields),
    }
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


def ask_model(prompt: str, max_tokens: int) -> CreateMessageRequest:
    """A sampling request for one user message."""
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    return CreateMessageRequest(params=CreateMessageRequestParams(messages=[message], max_tokens=max_tokens))


def form_field(answers: InputResponses | None, key: str, field: str) -> Any | None:
    """The accepted value of `field` in the form answered under `key`, else None."""
    answer = (answers or {}).get(key)
    if isinstance(answer, ElicitResult) and answer.action == "accept" and answer.content:
        return answer.content.get(field)
    return None


async def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
    """Asks for a name (key `user_name`), then greets it. A non-string name is asked for again."""
    name = form_field(ctx.input_responses, "user_name", "name")
    if isinstance(name, str):
        return f"Hello, {name}!"
    return InputRequiredResult(input_requests={"user_name": ask_form("What is your name?", name="string")})


async def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
    """Asks the client's model a question (key `capital_question`), then repeats its answer."""
    answer = (ctx.input_responses or {}).get("capital_question")
    if isinstance(answer, CreateMessageResult):
        text = answer.content.text if answer.content.type == "text" else "(non-text)"
        return f"Model said: {text}"
    return InputRequiredResult(input_requests={"capital_question": ask_model("What is the capital of France?", 100)})


async def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
    """Asks for the client's roots (key `client_roots`), then counts them."""
    answer = (ctx.input_responses or {}).get("client_roots")
    if isinstance(answer, ListRootsResult):
        return f"The client has {len(answer.roots)} root(s)."
    return InputRequiredResult(input_requests={"client_roots": ListRootsRequest()})


_CONFIRM_STATE = json.dumps({"fixture": "request_state", "asked": "confirm"})


async def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
    """Asks for a confirmation with a state; finishes only when both the answer and that state return."""
    if ctx.request_state == _CONFIRM_STATE and "confirm" in (ctx.input_responses or {}):
        return "state-ok: the echoed requestState was verified"
    return InputRequiredResult(
        input_requests={"confirm": ask_form("Please confirm", ok="boolean")}, request_state=_CONFIRM_STATE
    )


_ALL_INPUTS = ("user_name", "greeting", "client_roots")


async def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
    """Asks for a form, a model reply and the roots in one round."""
    if set(_ALL_INPUTS) <= (ctx.input_responses or {}).keys():
        return "All three inputs received."
    requests: dict[str, InputRequest] = {
        "user_name": ask_form("What is your name?", name="string"),
        "greeting": ask_model("Write a one-line greeting.", 50),
        "client_roots": ListRootsRequest(),
    }
    return InputRequiredResult(input_requests=requests, request_state=json.dumps({"fixture": "multiple_inputs"}))


def _round(ctx: Context) -> dict[str, Any]:
    try:
        state = json.loads(ctx.request_state or "{}")
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def _ask_step1() -> InputRequiredResult:
    return InputRequiredResult(
        input_requests={"step1": ask_form("Step 1: what is your name?", name="string")},
        request_state=json.dumps({"round": 1}),
    )


async def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
    """Three rounds: name, then colour (carrying the name in the state), then the answer.

    Any answer that does not fit the round the state names starts over at step 1.
    """
    state = _round(ctx)
    if state.get("round") == 1 and (name := form_field(ctx.input_responses, "step1", "name")) is not None:
        return InputRequiredResult(
            input_requests={"step2": ask_form("Step 2: what is your favourite colour?", color="string")},
            request_state=json.dumps({"round": 2, "name": name}),
        )
    if state.get("round") == 2 and (color := form_field(ctx.input_responses, "step2", "color")) is not None:
        return f"{state.get('name')} likes {color}."
    return _ask_step1()


async def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
    """Returns a state in round 1. Tamper rejection is the SDK boundary's job, before this runs."""
    if ctx.request_state is None:
        return InputRequiredResult(
            input_requests={"confirm": ask_form("Please confirm", ok="boolean")},
            request_state=json.dumps({"fixture": "tampered_state", "round": 1}),
        )
    return "state-ok: the requestState came back intact"


async def test_input_required_result_capabilities(ctx: Context) -> InputRequiredResult:
    """Asks only through the capabilities this request declared (sampling and/or elicitation)."""
    caps = ctx.client_capabilities
    requests: dict[str, InputRequest] = {}
    if caps is not None and caps.sampling is not None:
        requests["sample"] = ask_model("Say hello.", 20)
    if caps is not None and caps.elicitation is not None:
        requests["ask"] = ask_form("What is your name?", name="string")
    return InputRequiredResult(input_requests=requests or None, request_state=json.dumps({"fixture": "caps"}))


async def test_input_required_result_prompt(ctx: Context) -> list[UserMessage] | InputRequiredResult:
    """A prompt that first asks for context (key `user_context`), then uses it."""
    context = form_field(ctx.input_responses, "user_context", "context")
    if isinstance(context, str):
        return [UserMessage(role="user", content=TextContent(type="text", text=f"Use this context: {context}"))]
    return InputRequiredResult(
        input_requests={"user_context": ask_form("What context should the prompt use?", context="string")}
    )


INPUT_REQUIRED_TOOLS = (
    test_input_required_result_elicitation,
    test_input_required_result_sampling,
    test_input_required_result_list_roots,
    test_input_required_result_request_state,
    test_input_required_result_multiple_inputs,
    test_input_required_result_multi_round,
    test_input_required_result_tampered_state,
    test_input_required_result_capabilities,
)


def register(mcp: MCPServer) -> None:
    """Add the MRTR tools and the MRTR prompt."""
    for fn in INPUT_REQUIRED_TOOLS:
        mcp.add_tool(fn)
    mcp.add_prompt(Prompt.from_function(test_input_required_result_prompt))
