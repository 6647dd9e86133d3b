"""A provider for any OpenAI-compatible chat-completions endpoint (DeepSeek by default).

Each derivation task is one POST to ``{base_url}/chat/completions`` that forces a single
call of the task's tool, whose parameters are the task's JSON schema. The client is the
standard library only (urllib), so the ``[llm]`` extra has no dependencies.

The API key is held in a wrapper whose repr hides it, is only ever placed in the request
headers, and is scrubbed from every error message and stored response — with any other
token the text carries (``core.redact``), and before the text is cut to an excerpt, so a
cut cannot leave a prefix of the key behind.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from core.errors import InvalidInputError
from core.providers.base import BlockSummary, Extraction, ProviderOutputError
from core.providers.import_decision import render_decision_prompt
from core.providers.jsonrecover import extract_json_object
from core.providers.schemas import (
    DECIDE_INSTRUCTIONS,
    DECIDE_SCHEMA,
    EXTRACTION_INSTRUCTIONS,
    EXTRACTION_SCHEMA,
    GRAPH_INSTRUCTIONS,
    GRAPH_SCHEMA,
    RECOVER_INSTRUCTIONS,
    RECOVER_SCHEMA,
    SUMMARY_INSTRUCTIONS,
    SUMMARY_SCHEMA,
)
from core.providers import usage as usage_acct
from core.redact import mask_secret, redact_text
from core.tokens import estimate_tokens

DEFAULT_BASE_URL = "https://api.deepseek.com"
DEFAULT_MODEL = "deepseek-chat"
BASE_URL_ENV = "STRATA_LLM_BASE_URL"
MODEL_ENV = "STRATA_LLM_MODEL"
KEY_ENVS = ("STRATA_LLM_API_KEY", "DEEPSEEK_API_KEY")
MIN_SECRET_CHARS = 8  # keys shorter than this are not masked in messages (see _scrub)

BODY_EXCERPT = 300  # characters of a response body quoted in an error message
MAX_BODY_BYTES = 16 * 1024 * 1024  # refuse to buffer more than this from one response
RECENT_RESPONSES = 5

CORRECTIVE_MESSAGE = (
    "Your previous reply did not contain exactly one valid call of the tool {tool}. "
    "Call the tool {tool} exactly once, with arguments that follow its JSON schema, and "
    "do not answer in plain text."
)


class ProviderCallError(ProviderOutputError):
    """The HTTP exchange itself failed: an error status, a timeout or a connection problem."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False):
        super().__init__(message)
        self.status = status
        self.retryable = retryable


class _Secret:
    """Holds the API key; its repr and str never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__


@dataclass(frozen=True)
class _Task:
    """One structured derivation task: its tool, its schema and how its answer is checked."""

    key: str
    tool: str
    description: str
    instructions: str
    schema: dict[str, Any]
    required: tuple[str, ...]  # keys a recovered object must carry to count as an answer
    retry_truncated: bool
    # The user message from the payload (default: the payload as JSON).
    render: Callable[[Any], str] | None = None
    # Return the tool arguments (or a text reply) as the model gave them, for a caller that checks
    # and recovers them itself: the import decision, whose unusable answer goes to a person.
    raw: bool = False


SUMMARY_TASK = _Task(
    key="summarize_block",
    tool="strata_summarize_block",
    description="Record the title, tags, summary and key points of one conversation block.",
    instructions=SUMMARY_INSTRUCTIONS,
    schema=SUMMARY_SCHEMA,
    required=("title", "summary", "should_extract"),
    retry_truncated=True,
)
EXTRACTION_TASK = _Task(
    key="extract_events",
    tool="strata_extract_events",
    description="Record the event cards found in the target messages of one conversation block.",
    instructions=EXTRACTION_INSTRUCTIONS,
    schema=EXTRACTION_SCHEMA,
    required=("should_extract", "events"),
    retry_truncated=True,
)
GRAPH_TASK = _Task(
    key="project_graph",
    tool="strata_project_graph",
    description="Record the knowledge-graph nodes and edges supported by the supplied events.",
    instructions=GRAPH_INSTRUCTIONS,
    schema=GRAPH_SCHEMA,
    required=("nodes", "edges"),
    retry_truncated=False,
)


def _render_decision(payload: Any) -> str:

    return render_decision_prompt(payload)


DECIDE_TASK = _Task(
    key="decide_external_memory",
    tool="strata_decide_external_memory",
    description="Record the decision for one imported memory against the stored matches.",
    instructions=DECIDE_INSTRUCTIONS,
    schema=DECIDE_SCHEMA,
    required=("action",),
    retry_truncated=True,
    render=_render_decision,
    raw=True,
)
RECOVER_TASK = _Task(
    key="recover_external_memory",
    tool="strata_recover_external_memory",
    description="Record the memory candidates recovered from an export that is not valid JSON.",
    instructions=RECOVER_INSTRUCTIONS,
    schema=RECOVER_SCHEMA,
    required=("candidates",),
    retry_truncated=True,
)


class _BadAnswer(Exception):
    """An attempt whose answer was unusable (internal: decides whether to retry)."""

    def __init__(self, reason: str, *, truncated: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.truncated = truncated


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def _endpoint(base_url: str) -> str:
    """``{base_url}/chat/completions``; a base with or without /v1 is used as given."""
    base = base_url.strip().rstrip("/")
    if base.endswith("/chat/completions"):
        base = base[: -len("/chat/completions")]
    if not base.startswith(("http://", "https://")) or len(base.split("://", 1)[1]) == 0:
        raise InvalidInputError(f"LLM base URL must start with http:// or https://, got {base_url!r}")
    return base + "/chat/completions"


class OpenAICompatProvider:
    """Structured derivation through forced tool calls on a chat-completions API."""

    name = "openai"
    reads_context_lazily = False  # the context becomes a prompt
    model_backed = True  # its import decisions are checked strictly (core.providers.import_decision)

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float = 45.0,
        max_output_tokens: int = 2048,
        attempts: int = 2,
        *,
        retry_delay: float = 1.0,
    ):
        key = (api_key or "").strip() or next((v for v in map(_env, KEY_ENVS) if v), None)
        if not key:
            raise InvalidInputError(
                "the openai provider needs an API key: set "
                + " or ".join(KEY_ENVS)
                + f" (optionally {BASE_URL_ENV} and {MODEL_ENV}; default {DEFAULT_BASE_URL}, {DEFAULT_MODEL})"
            )
        if timeout <= 0:
            raise InvalidInputError(f"timeout must be positive, got {timeout!r}")
        if max_output_tokens < 1:
            raise InvalidInputError(f"max_output_tokens must be at least 1, got {max_output_tokens!r}")
        if attempts < 1:
            raise InvalidInputError(f"attempts must be at least 1, got {attempts!r}")
        self._key = _Secret(key)
        self.base_url = (base_url or _env(BASE_URL_ENV) or DEFAULT_BASE_URL).strip().rstrip("/")
        self.endpoint = _endpoint(self.base_url)
        self.model: str | None = (model or "").strip() or _env(MODEL_ENV) or DEFAULT_MODEL
        self.timeout = float(timeout)
        self.max_output_tokens = int(max_output_tokens)
        self.attempts = int(attempts)
        self.retry_delay = max(0.0, float(retry_delay))
        self.recent_responses: deque[str] = deque(maxlen=RECENT_RESPONSES)
        self._usage = usage_acct.empty()
        self._usage_lock = threading.Lock()  # totals may be read from another thread than the caller's

    def __repr__(self) -> str:
        return (
            f"OpenAICompatProvider(base_url={self.base_url!r}, model={self.model!r}, "
            f"timeout={self.timeout}, max_output_tokens={self.max_output_tokens}, attempts={self.attempts})"
        )

    # -- the three tasks ------------------------------------------------------------

    def summarize_block(self, messages: Sequence[dict[str, Any]]) -> BlockSummary:
        return self._run(SUMMARY_TASK, {"messages": list(messages)}, BlockSummary.validated)

    def extract_events(self, context: dict[str, Any]) -> Extraction:
        return self._run(EXTRACTION_TASK, context, Extraction.validated)

    def project_graph(self, context: dict[str, Any]) -> dict[str, Any]:
        return self._run(GRAPH_TASK, context, _graph_envelope)

    def decide_external_memory(self, context: dict[str, Any]) -> dict[str, Any] | str:
        """The model's answer as it gave it (an object, or text to recover): the import service
        checks it (core.providers.import_decision) and sends an unusable one to a person."""
        return self._run(DECIDE_TASK, context, _raw_answer)

    def recover_external_memory(self, context: dict[str, Any]) -> dict[str, Any]:
        return self._run(RECOVER_TASK, context, _object_envelope)

    # -- a plain chat call with tools (an agent loop's turn, not a derivation task) ---

    def chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] = (),
        *,
        max_tokens: int | None = None,
    ) -> dict[str, Any]:
        """One chat-completions call offering ``tools`` (each ``{name, description, inputSchema}`` as
        ``MemoryTools.schemas()`` gives them, or with ``parameters``); the model may call any of them
        or answer in text. Returns the assistant message ``{role, content, tool_calls?}``, each tool
        call ``{id, type, function: {name, arguments (a JSON string)}}``. An HTTP failure that may pass
        and an unusable body are tried again, up to ``attempts`` calls; every call is metered."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "max_tokens": int(max_tokens or self.max_output_tokens),
            "temperature": 0,
            "stream": False,
        }
        if tools:
            body["tools"] = [_function_tool(t) for t in tools]
        data = json.dumps(body, ensure_ascii=False, default=str).encode("utf-8")
        problem = "no attempt made"
        for attempt in range(1, self.attempts + 1):
            try:
                try:
                    text = self._post(data)
                except (ProviderCallError, _BadAnswer):
                    self._meter(data, None)
                    raise
                self._meter(data, text)
                message = self._chat_message(text)
            except ProviderCallError as exc:
                if not exc.retryable or attempt == self.attempts:
                    raise
                problem = str(exc)
                if self.retry_delay:
                    time.sleep(self.retry_delay)
                continue
            except _BadAnswer as exc:
                problem = exc.reason
                continue
            self.recent_responses.append(self._scrub(text))
            return message
        raise self._fail(f"chat failed after {self.attempts} attempt(s): {problem}")

    def _chat_message(self, text: str) -> dict[str, Any]:
        """The assistant message of one chat-completions body, its tool calls checked, or _BadAnswer."""
        try:
            body = json.loads(text)
        except ValueError:
            raise _BadAnswer(f"response body is not JSON: {self._excerpt(text)}") from None
        choices = body.get("choices") if isinstance(body, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            error = body.get("error") if isinstance(body, dict) else None
            hint = f": {self._excerpt(json.dumps(error, ensure_ascii=False))}" if error else ""
            raise _BadAnswer("response has no choices" + hint)
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise _BadAnswer("response choice has no message")
        content = message.get("content")
        out: dict[str, Any] = {"role": "assistant", "content": content if isinstance(content, str) else None}
        calls = []
        for index, call in enumerate(message.get("tool_calls") or []):
            function = call.get("function") if isinstance(call, dict) else None
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str) or not name:
                continue
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments if arguments is not None else {}, ensure_ascii=False)
            call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else f"call_{index}"
            calls.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
        if calls:
            out["tool_calls"] = calls
        elif out["content"] is None:
            raise _BadAnswer("response has neither text nor a tool call")
        return out

    @property
    def usage(self) -> dict[str, int]:
        """Every call so far: tokens as the provider reported them, and Strata's own estimate."""
        with self._usage_lock:
            return dict(self._usage)

    # -- mechanics ------------------------------------------------------------------

    def _meter(self, data: bytes, text: str | None) -> None:
        """Count one HTTP exchange: the reported usage of a 2xx body, and Strata's estimate of the
        messages sent and of the answer (the tool arguments, else the text) received."""
        sent = json.loads(data)
        estimated_in = sum(estimate_tokens(m.get("content") or "") for m in sent.get("messages") or [])
        estimated_out = 0
        found = None
        if text is not None:
            try:
                body = json.loads(text)
            except ValueError:
                body = None
            found = usage_acct.reported(body)
            try:
                message = body["choices"][0]["message"]
                calls = message.get("tool_calls") or []
                said = calls[0]["function"]["arguments"] if calls else message.get("content")
                estimated_out = estimate_tokens(said if isinstance(said, str) else json.dumps(said))
            except (KeyError, IndexError, TypeError, AttributeError):
                pass
        with self._usage_lock:
            u = self._usage
            u["calls"] += 1
            u["estimated_prompt_tokens"] += estimated_in
            u["estimated_completion_tokens"] += estimated_out
            if found is not None:
                u["reported_calls"] += 1
                u["prompt_tokens"] += found[0]
                u["completion_tokens"] += found[1]
                u["cached_prompt_tokens"] += found[2]

    def _scrub(self, text: str) -> str:
        key = self._key.reveal()
        # A key too short to be a real secret ("k" in a test setup) would mask every "k" in a message
        # ("deepsee[redacted]-chat") and hide the error itself; other tokens are masked all the same.
        if len(key) >= MIN_SECRET_CHARS:
            return mask_secret(text, key, min_chars=MIN_SECRET_CHARS)
        return redact_text(text)

    def _excerpt(self, text: str) -> str:
        """``text`` scrubbed, then cut to an excerpt (never the other way round)."""
        return _excerpt(self._scrub(text))

    def _fail(self, message: str, cls: type[ProviderOutputError] = ProviderOutputError, **kw: Any):
        text = self._scrub(f"{self.name} provider ({self.model}): {message}")
        return cls(text, **kw) if kw else cls(text)

    def _request_body(self, task: _Task, payload: Any, corrective: bool) -> bytes:
        messages: list[dict[str, str]] = [
            {"role": "system", "content": task.instructions},
            {
                "role": "user",
                "content": task.render(payload)
                if task.render
                else json.dumps(payload, ensure_ascii=False, default=str),
            },
        ]
        if corrective:
            messages.append({"role": "user", "content": CORRECTIVE_MESSAGE.format(tool=task.tool)})
        body = {
            "model": self.model,
            "messages": messages,
            "tools": [
                {
                    "type": "function",
                    "function": {"name": task.tool, "description": task.description, "parameters": task.schema},
                }
            ],
            "tool_choice": {"type": "function", "function": {"name": task.tool}},
            "max_tokens": self.max_output_tokens,
            "temperature": 0,
            "stream": False,
        }
        return json.dumps(body, ensure_ascii=False).encode("utf-8")

    def _build_request(self, data: bytes) -> urllib.request.Request:
        # The key only exists inside this short-lived frame and the request's headers.
        return urllib.request.Request(
            self.endpoint,
            data=data,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json",
                "User-Agent": "strata-memory",
                "Authorization": "Bearer " + self._key.reveal(),
            },
        )

    def _post(self, data: bytes) -> str:
        """One HTTP exchange; the decoded body of a 2xx answer or a ProviderCallError."""
        request = self._build_request(data)
        deadline = time.monotonic() + self.timeout
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = _read_bounded(response, deadline)
        except urllib.error.HTTPError as exc:
            status = exc.code
            try:
                detail = _read_bounded(exc, time.monotonic() + min(self.timeout, 5.0))
            except Exception:  # the error body is only decoration
                detail = b""
            excerpt = self._excerpt(detail.decode("utf-8", errors="replace"))
            retryable = status == 429 or status >= 500
            raise self._fail(
                f"HTTP {status} from {self.endpoint}" + (f": {excerpt}" if excerpt else ""),
                ProviderCallError,
                status=status,
                retryable=retryable,
            ) from None
        except (TimeoutError, socket.timeout):
            raise self._fail(
                f"no answer from {self.endpoint} within {self.timeout:g} s", ProviderCallError, retryable=True
            ) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                message = f"no answer from {self.endpoint} within {self.timeout:g} s"
            else:
                message = f"cannot reach {self.endpoint}: {self._excerpt(str(reason))}"
            raise self._fail(message, ProviderCallError, retryable=True) from None
        except (OSError, http.client.HTTPException) as exc:
            raise self._fail(
                f"connection to {self.endpoint} failed: {self._excerpt(str(exc))}", ProviderCallError, retryable=True
            ) from None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _BadAnswer("response body is not UTF-8") from None

    def _answer(self, task: _Task, text: str) -> Any:
        """The tool arguments from one chat-completions body, or _BadAnswer."""
        try:
            body = json.loads(text)
        except ValueError:
            raise _BadAnswer(f"response body is not JSON: {self._excerpt(text)}") from None
        if not isinstance(body, dict):
            raise _BadAnswer("response body is not a JSON object")
        choices = body.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            error = body.get("error")
            hint = f": {self._excerpt(json.dumps(error, ensure_ascii=False))}" if error else ""
            raise _BadAnswer("response has no choices" + hint)
        choice = choices[0]
        if choice.get("finish_reason") == "length":
            raise _BadAnswer(f"response truncated at max_tokens={self.max_output_tokens}", truncated=True)
        message = choice.get("message")
        if not isinstance(message, dict):
            raise _BadAnswer("response choice has no message")
        calls = [c for c in (message.get("tool_calls") or []) if isinstance(c, dict)]
        if task.raw:
            function = ([c for c in calls if (c.get("function") or {}).get("name") == task.tool] or calls or [{}])[0]
            said = (function.get("function") or {}).get("arguments") if calls else message.get("content")
            if isinstance(said, dict) or (isinstance(said, str) and said.strip()):
                return said
            raise _BadAnswer(f"response has neither a {task.tool} call nor text")
        if calls:
            named = [c for c in calls if (c.get("function") or {}).get("name") == task.tool]
            function = (named or calls)[0].get("function") or {}
            arguments = function.get("arguments")
            if isinstance(arguments, dict):
                args = arguments
            elif isinstance(arguments, str):
                try:
                    args = extract_json_object(arguments, task.required)
                except ProviderOutputError as exc:
                    raise _BadAnswer(f"tool call arguments unusable: {exc}") from None
            else:
                raise _BadAnswer("tool call has no arguments")
        else:
            content = message.get("content")
            if not isinstance(content, str) or not content.strip():
                raise _BadAnswer(f"response has neither a {task.tool} call nor text")
            try:
                args = extract_json_object(content, task.required)
            except ProviderOutputError as exc:
                raise _BadAnswer(f"no {task.tool} call and {exc}") from None
        missing = [k for k in task.required if k not in args]
        if missing:
            raise _BadAnswer("tool call arguments lack " + ", ".join(missing))
        return args

    def _run(self, task: _Task, payload: Any, validate: Callable[[Any], Any]) -> Any:
        data = self._request_body(task, payload, corrective=False)
        corrected: bytes | None = None
        problem = "no attempt made"
        for attempt in range(1, self.attempts + 1):
            try:
                try:
                    text = self._post(data)
                except (ProviderCallError, _BadAnswer):
                    self._meter(data, None)  # a call was made, and may be billed, all the same
                    raise
                self._meter(data, text)
                result = validate(self._answer(task, text))
            except ProviderCallError as exc:
                if not exc.retryable or attempt == self.attempts:
                    raise
                problem = str(exc)
                if self.retry_delay:
                    time.sleep(self.retry_delay)
                continue
            except _BadAnswer as exc:
                if exc.truncated and not task.retry_truncated:
                    raise self._fail(f"{task.tool}: {exc.reason}; not retried") from None
                problem = exc.reason
            except ProviderOutputError as exc:  # the answer parsed but failed validation
                problem = str(exc)
            else:
                self.recent_responses.append(self._scrub(text))
                return result
            # An unusable answer: ask again, saying what went wrong.
            if corrected is None:
                corrected = self._request_body(task, payload, corrective=True)
            data = corrected
        raise self._fail(f"{task.tool} failed after {self.attempts} attempt(s): {problem}")


def _function_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as chat-completions takes it; one already in that shape is passed as it is."""
    if tool.get("type") == "function" and isinstance(tool.get("function"), dict):
        return tool
    parameters = tool.get("parameters", tool.get("inputSchema")) or {"type": "object", "properties": {}}
    return {
        "type": "function",
        "function": {"name": tool["name"], "description": tool.get("description", ""), "parameters": parameters},
    }


def _graph_envelope(args: Any) -> dict[str, Any]:
    """Light check of a graph answer; the graph service validates nodes and edges in full."""
    if not isinstance(args, dict):
        raise ProviderOutputError("graph projection result is not an object")
    for key in ("nodes", "edges"):
        if not isinstance(args.get(key), list):
            raise ProviderOutputError(f"graph projection: {key} must be a list")
    return args


def _raw_answer(args: Any) -> Any:
    return args


def _object_envelope(args: Any) -> dict[str, Any]:
    """Import answers are checked in full by the import service; here only their shape."""
    if not isinstance(args, dict):
        raise ProviderOutputError("answer is not an object")
    return args


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= BODY_EXCERPT else flat[: BODY_EXCERPT - 1] + "…"


def _read_bounded(response: Any, deadline: float) -> bytes:
    """Read a response body in chunks, stopping at the size cap or the overall deadline."""
    chunks: list[bytes] = []
    size = 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("read deadline passed")
        chunk = response.read(65536)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _BadAnswer(f"response body larger than {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)


__all__ = ["OpenAICompatProvider", "ProviderCallError", "CORRECTIVE_MESSAGE"]
