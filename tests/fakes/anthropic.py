"""A fake Anthropic Messages API over HTTP, behaving as the API documents, answered by a brain.

The real anthropic SDK talks to it (base_url), so tests cover the live path: headers, beta flags,
retries on 429/529/500, and bodies. Every request goes through the emulated server side
(nightwatch/offline/emulated_api.py): the `anthropic-beta` header and `context_management` shapes
are validated (a 400 `invalid_request_error` otherwise), context edits and compaction are applied
to the history the brain sees, and usage carries cache writes and reads. Before that, the request
itself must be one the real API accepts (`request_problem`): known top-level fields, `model` and
`max_tokens`, tool names and `input_schema`s that are valid JSON Schema of type object, a forced
tool that is offered. The brain is the offline analyst, or scripted replies queued with `script()`;
`FakeAnthropic(generic=True)` answers with `GenericModel`, which knows nothing of NightWatch and
fills each tool's input from the offered schema alone. Requests are recorded as received.
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from typing import Any, Callable

from jsonschema import Draft202012Validator, SchemaError

from nightwatch.offline.emulated_api import EmulatedAPIError, EmulatedMessagesAPI
from nightwatch.offline.model import SUMMARY_TOOL, OfflineAnalyst
from nightwatch.tokens import EstimatingCounter
from tests.fakes.http import FakeHTTPServer, Reply, Request
from tests.fakes.schema_fill import fill

API_KEY = "sk-ant-test-0000000000"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
REQUEST_FIELDS = frozenset({  # the Messages API's body; betas travel in the anthropic-beta header
    "model", "messages", "max_tokens", "system", "tools", "tool_choice", "temperature", "top_p", "top_k", "stop_sequences",
    "stream", "metadata", "thinking", "context_management", "service_tier", "container", "mcp_servers",
})


class _Brain:
    """Scripted content first, then the offline analyst (which also writes every summary)."""

    def __init__(self) -> None:
        self.scripted: deque[list[dict]] = deque()
        self.analyst = OfflineAnalyst()
        self.seen: list[dict] = []  # requests as the model saw them, after edits and compaction

    def respond(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        self.seen.append(request)
        summary = any(t["name"] == SUMMARY_TOOL for t in request.get("tools", []))
        return self.scripted.popleft() if self.scripted and not summary else self.analyst.respond(request)

    def summarise(self, request: dict[str, Any], instructions: str | None) -> str:
        return self.analyst.summarise(request, instructions)


class GenericModel:
    """A model that knows nothing of NightWatch: one tool_use per turn, its input filled from the schema offered.

    The tool is the one `tool_choice` forces, else the only one offered, else the offered tools in turn
    (by the number of assistant turns already in the conversation). Scripted content, if any, comes first.
    `prefer` is how it fills a choice (see schema_fill.fill): "first" (the default) takes the first enum value
    and false, "last" the last enum value and true; it may be changed between requests.
    """

    def __init__(self, prefer: str = "first") -> None:
        self.scripted: deque[list[dict]] = deque()
        self.seen: list[dict] = []
        self.prefer = prefer
        self._ids = itertools.count(1)

    def respond(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        self.seen.append(request)
        if self.scripted:
            return self.scripted.popleft()
        tool = self.choose(request)
        if tool is None:
            return [{"type": "text", "text": "No tool to call."}]
        return [{"type": "tool_use", "id": f"toolu_generic_{next(self._ids):06d}", "name": tool["name"],
                 "input": fill(tool.get("input_schema") or {"type": "object"}, prefer=self.prefer)}]

    @staticmethod
    def choose(request: dict[str, Any]) -> dict[str, Any] | None:
        tools = list(request.get("tools") or [])
        choice = request.get("tool_choice") or {}
        if not tools or choice.get("type") == "none":
            return None
        if choice.get("type") == "tool":
            return next((t for t in tools if t["name"] == choice["name"]), None)
        turn = sum(1 for m in request["messages"] if m["role"] == "assistant")
        return tools[turn % len(tools)]

    def summarise(self, request: dict[str, Any], instructions: str | None) -> str:
        return f"Summary of {len(request['messages'])} messages."


class FakeAnthropic(FakeHTTPServer):
    def __init__(self, api_key: str = API_KEY, model_name: str | None = None, *, generic: bool = False,
                 known_models: set[str] | None = None) -> None:
        super().__init__()
        self.api_key = api_key
        self.model_name = model_name
        self.known_models = known_models  # None: every model exists; else others answer 404 not_found_error
        self.brain: _Brain | GenericModel = GenericModel() if generic else _Brain()
        self.api = EmulatedMessagesAPI(self.brain)
        self.summary_faults = 0  # the next N summary requests (record_summary) fail with a 500
        self._faults_at: dict[int, Reply] = {}
        self._seen = 0
        self.route("POST", "/v1/messages", self._messages)
        self.route("POST", "/v1/messages/count_tokens", self._count)

    @property
    def scripted(self) -> deque[list[dict]]:
        return self.brain.scripted

    def script(self, *contents: list[dict]) -> None:
        """Answer the next requests with these content lists instead of the offline analyst."""
        self.brain.scripted.extend(contents)

    def fail_at(self, n: int, reply: Reply) -> None:
        """The n-th Messages request from now on (1 = the next one) gets this reply instead of an answer."""
        self._faults_at[self._seen + n] = reply

    def message_requests(self) -> list[Request]:
        return [r for r in self.calls("POST", "/v1/messages") if r.path == "/v1/messages"]

    def message_bodies(self) -> list[dict]:
        return [r.json() for r in self.message_requests()]

    def betas(self) -> list[list[str]]:
        """The anthropic-beta header of each Messages request, split, as the server received it."""
        return [_betas(r) for r in self.message_requests()]

    def _authorised(self, req: Request) -> bool:
        return req.headers.get("x-api-key") == self.api_key or req.headers.get("authorization") == f"Bearer {self.api_key}"

    def _refusal(self, req: Request) -> Reply | None:
        """What the API answers before reading a request: a wrong key (401), an unknown model (404)."""
        if not self._authorised(req):
            return Reply(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
        model = (req.json() or {}).get("model")
        if self.known_models is not None and model not in self.known_models:
            return Reply(404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {model}"}})
        return None

    def _messages(self, req: Request) -> Reply:
        refused = self._refusal(req)
        if refused is not None:
            return refused
        self._seen += 1
        if self._seen in self._faults_at:
            return self._faults_at.pop(self._seen)
        body = req.json()
        problem = request_problem(body)
        if problem:
            return Reply(400, EmulatedAPIError(problem).body(), {"request-id": "req_fake"})
        if self.summary_faults and any(t.get("name") == SUMMARY_TOOL for t in body.get("tools", [])):
            self.summary_faults -= 1
            return server_error()
        try:
            message = self.api.create(**body, betas=_betas(req)).to_dict(mode="json")
        except EmulatedAPIError as exc:
            return Reply(exc.status, exc.body(), {"request-id": "req_fake"})
        if self.model_name:
            message["model"] = self.model_name
        return Reply(200, message, {"request-id": "req_fake"})

    def _count(self, req: Request) -> Reply:
        refused = self._refusal(req)
        if refused is not None:
            return refused
        body = req.json()
        return Reply(200, {"input_tokens": EstimatingCounter().count(system=body.get("system"), messages=body["messages"],
                                                                     tools=body.get("tools"))})


# the API's request rules: each returns what the real API would answer with a 400, or None -----------
def _unknown_fields(body: dict) -> str | None:
    unknown = sorted(set(body) - REQUEST_FIELDS)
    return f"{unknown[0]}: Extra inputs are not permitted" if unknown else None


def _model_and_max_tokens(body: dict) -> str | None:
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if "max_tokens" not in body:
        return "max_tokens: Field required"
    if not isinstance(body["max_tokens"], int) or isinstance(body["max_tokens"], bool) or body["max_tokens"] < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    return None


def _custom_tools(body: dict) -> list[tuple[int, dict]]:
    """Tools defined by the caller (server tools carry a versioned `type` and no input_schema)."""
    return [(i, t) for i, t in enumerate(body.get("tools") or []) if t.get("type") in (None, "custom")]


def _tool_names(body: dict) -> str | None:
    names = [t.get("name") for t in body.get("tools") or []]
    for index, name in enumerate(names):
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            return f"tools.{index}.custom.name: String should match pattern '{TOOL_NAME.pattern}'"
    duplicates = sorted({n for n in names if names.count(n) > 1})
    return f"tools: Tool names must be unique. Duplicate: {duplicates[0]}" if duplicates else None


def _tool_input_schemas(body: dict) -> str | None:
    for index, tool in _custom_tools(body):
        schema = tool.get("input_schema")
        if not isinstance(schema, dict):
            return f"tools.{index}.custom.input_schema: Field required"
        try:
            Draft202012Validator.check_schema(schema)
        except SchemaError as exc:
            return f"tools.{index}.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12: {exc.message}"
        if schema.get("type") != "object":
            return f"tools.{index}.custom.input_schema.type: Input should be 'object'"
    return None


def _forced_tool_offered(body: dict) -> str | None:
    choice = body.get("tool_choice") or {}
    if choice.get("type") != "tool":
        return None
    if choice.get("name") not in {t.get("name") for t in body.get("tools") or []}:
        return f"tool_choice.tool.name: tool {choice.get('name')!r} is not among the tools offered"
    return None


REQUEST_RULES: tuple[Callable[[dict], str | None], ...] = (
    _unknown_fields, _model_and_max_tokens, _tool_names, _tool_input_schemas, _forced_tool_offered,
)


def request_problem(body: Any) -> str | None:
    """The first rule the request breaks (the message of the real API's 400), or None."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    return next((problem for rule in REQUEST_RULES if (problem := rule(body))), None)


def _betas(req: Request) -> list[str]:
    header = req.headers.get("anthropic-beta", "")
    return [b.strip() for b in header.split(",") if b.strip()]


def overloaded(retry_after: str = "0") -> Reply:
    return Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, {"retry-after": retry_after, "retry-after-ms": "5"})


def rate_limited(retry_after: str = "0") -> Reply:
    return Reply(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}, {"retry-after": retry_after, "retry-after-ms": "5"})


def server_error() -> Reply:
    return Reply(500, {"type": "error", "error": {"type": "api_error", "message": "internal"}})


def malformed() -> Reply:
    return Reply(200, raw=b'{"id": "msg_broken", "type": "message", "content": [', headers={"content-type": "application/json"})


def slow(seconds: float) -> Reply:
    """A reply that arrives too late for a client with a shorter timeout (the SDK retries it)."""
    return Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "slow"}}, delay_s=seconds)


def anthropic_env(server: FakeAnthropic) -> dict[str, Any]:
    return {"ANTHROPIC_API_KEY": server.api_key, "ANTHROPIC_BASE_URL": server.url}
