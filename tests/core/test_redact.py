"""Secrets are masked on every read surface while the stored text stays exact (core.redact).

Each pattern has positives (the secret is gone and its marker is there) and negatives (text that
only looks a little like one passes unchanged); then each core surface: the agent tools, the MCP
server, the export, a provider's error, a job's stored error, a trace, a database URL.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import NamedTuple

import anyio
import pytest

from core.redact import marker, mask_secret, redact_text, redact_value

# Made-up credentials of the real shapes (none of them is live).
GITHUB = "ghp_" + "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LmNbVc"
GITHUB_FINE = "github_pat_11ABCDEFG0abcdefghijkl_" + "m" * 40 + "1234"
OPENAI = "sk-proj-4fT9kQ2mX7vB1nC8zR5wL3yH6jD0sA2e"
DEEPSEEK = "sk-" + "9f8e7d6c5b4a39281706f5e4d3c2b1a0"
ANTHROPIC = "sk-ant-api03-" + "Qm9yZ2VkIGtleSBmb3IgdGVzdHMgb25seQ" + "-x1Y2z3AA"
AWS_ID = "AKIAZ7Q4EXAMPLE2K9QF"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDgCvQ2kFakeKeyMaterialForTestsOnly0000000000000000000000\n-----END OPENSSH PRIVATE KEY-----"
)
VISA = "4111 1111 1111 1111"


def masked(text: str, secret: str, kind: str) -> str:
    out = redact_text(text)
    assert secret not in out, out
    assert marker(kind) in out, out
    return out


# ----------------------------------------------------------------------------- patterns: positives


@pytest.mark.parametrize("secret", [GITHUB, "gho_" + "a1B2" * 9, "ghs_" + "Q" * 35 + "7", GITHUB_FINE])
def test_github_tokens(secret):
    assert masked(f"push with {secret} please", secret, "github-token") == f"push with {marker('github-token')} please"


@pytest.mark.parametrize("secret", [OPENAI, DEEPSEEK, ANTHROPIC, "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"])
def test_sk_style_api_keys(secret):
    masked(f'OPENAI_API_KEY="{secret}"', secret, "api-key")
    masked(f"the key is {secret}.", secret, "api-key")


def test_aws_access_key_id_and_secret_key():
    out = redact_text(f"aws_access_key_id = {AWS_ID}\naws_secret_access_key = {AWS_SECRET}\nregion = eu-west-1")
    assert AWS_ID not in out and AWS_SECRET not in out
    assert marker("aws-access-key-id") in out and marker("aws-secret-key") in out
    assert "region = eu-west-1" in out  # the rest of the file stays
    masked(f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET, "aws-secret-key")
    masked("temporary ASIAY34FZKBOKMUTVV7A key", "ASIAY34FZKBOKMUTVV7A", "aws-access-key-id")


def test_bearer_tokens():
    token = "mF_9.B5f-4.1JqM"
    out = masked(f"curl -H 'Authorization: Bearer {token}' https://api.example.com", token, "bearer-token")
    assert "Authorization: Bearer [REDACTED:bearer-token]" in out
    masked("authorization: bearer 8d9f0a1b2c3d4e5f6a7b", "8d9f0a1b2c3d4e5f6a7b", "bearer-token")


def test_jwts():
    masked(f"session cookie {JWT} expired", JWT, "jwt")
    # In a bearer header the token goes either way; no part of it survives.
    out = redact_text(f"Authorization: Bearer {JWT}")
    assert "eyJ" not in out and "SflKxw" not in out


@pytest.mark.parametrize(
    "text,secret,kind",
    [
        ("password=hunter2", "hunter2", "password"),
        ("DB_PASSWORD = 'tr0ub4dor&3'", "tr0ub4dor&3", "password"),
        ("passwd: s3cr3t!", "s3cr3t!", "password"),
        ("Password: correcthorsebatterystaple", "correcthorsebatterystaple", "password"),
        ('{"password": "correct horse battery", "user": "ana"}', "correct horse battery", "password"),
        ("api_key=AbCdEf123456", "AbCdEf123456", "api-key"),
        ("apikey: 'k9-3j4h5g6f'", "k9-3j4h5g6f", "api-key"),
        ("x-api-key: 7b1f0c2e9d", "7b1f0c2e9d", "api-key"),
        ("secret=swordfish", "swordfish", "secret"),
        ("client_secret: 'oauth-Cl1ent'", "oauth-Cl1ent", "secret"),
        ("token=tok_1234abcd", "tok_1234abcd", "token"),
        ("refresh_token: 1//0gLx-abc", "1//0gLx-abc", "token"),
        ('"access_token" => "ya29.a0AfH6SM"', "ya29.a0AfH6SM", "token"),
        ("https://api.example.com/v1?token=abc123xyz&page=2", "abc123xyz", "token"),
    ],
)
def test_key_value_secrets(text, secret, kind):
    out = masked(text, secret, kind)
    assert out.count(marker(kind)) == 1


def test_a_value_is_masked_whole():
    """No tail of a value is left over: '&' belongs to a password, and ends a value only in a URL's query."""
    assert redact_text("password=Tr0ub4dor&3 it is") == f"password={marker('password')} it is"
    assert (
        redact_text("/login?user=ana&password=pw9&next=/home")
        == f"/login?user=ana&password={marker('password')}&next=/home"
    )


def test_private_key_blocks():
    out = masked(f"here is my key:\n{PEM}\nthanks", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "private-key")
    assert out == f"here is my key:\n{marker('private-key')}\nthanks"
    rsa = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\n-----END RSA PRIVATE KEY-----"
    masked(rsa, "MIIEowIBAAKCAQEA7bq", "private-key")
    # A block cut off before its END line is masked to the end of the text.
    assert redact_text("key: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B") == f"key: {marker('private-key')}"


@pytest.mark.parametrize(
    "number", [VISA, "4111-1111-1111-1111", "5555555555554444", "3782 822463 10005", "6011 0009 9013 9424"]
)
def test_card_numbers_that_pass_luhn(number):
    masked(f"my card is {number}, expiry 12/29", number, "card-number")


def test_passwords_in_urls():
    out = masked("DATABASE_URL=postgresql://alice:pa55-w0rd@db.internal:5432/app", "pa55-w0rd", "url-password")
    assert "postgresql://alice:[REDACTED:url-password]@db.internal:5432/app" in out
    masked("clone https://bot:ghtoken42@git.example.com/repo.git", "ghtoken42", "url-password")
    masked("redis://:Sup3rS3cret@cache:6379/0", "Sup3rS3cret", "url-password")


# ----------------------------------------------------------------------------- patterns: negatives


@pytest.mark.parametrize(
    "text",
    [
        "We decided to ship the token bucket rate limiter on Friday.",
        "The secret to good bread is time. Password resets go through the help desk.",
        "Secret: we are planning a surprise party for Ana.",
        "Password: ********",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed the migration",
        "request id 123e4567-e89b-12d3-a456-426614174000 failed",
        "call me at +1 (555) 123-4567 or +44 20 7946 0958",
        "from 2023-05-07 to 2024-01-15, then 2024-02-01 10:30",
        "order 4111 1111 1111 1112 is not a valid card",  # fails the Luhn check
        "1234 5678 9012 3456 is a Luhn-valid test string with no card prefix",
        "epoch millis 1700000000000 and 17000000000000000",
        "max_tokens=2048, tokens: 500, the bearer of bad news, sk-learn, task-management",
        "def login(user, password=None, token=token): return os.environ['API_KEY']",
        "password=${DB_PASSWORD} and api_key=<your key here>",
        "env: PWD=/home/ana/project SHELL=/bin/bash; IdentityFile private_key: ~/.ssh/id_ed25519",
        "see https://example.com:8443/path?q=1 and mailto:ana@example.com",
        "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ public key is fine to share",
        "SHA-256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    ],
)
def test_ordinary_text_passes_unchanged(text):
    assert redact_text(text) == text


def test_redaction_is_idempotent_and_leaves_markers_alone():
    text = f"token={GITHUB} password=hunter2 postgresql://u:pw1@h/db {VISA} {JWT}"
    once = redact_text(text)
    assert redact_text(once) == once
    assert "token=[REDACTED:github-token]" in once  # the key=value rule leaves an earlier marker as it is


def test_empty_and_non_text_values():
    assert redact_text("") == "" and redact_text(None) is None  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Row:
    id: int
    content: str
    tags: tuple[str, ...]
    extra: dict


class _Pair(NamedTuple):
    name: str
    value: str


def test_redact_value_walks_dtos_and_keeps_what_is_clean():
    clean = _Row(1, "nothing here", ("a",), {"k": [1, 2]})
    assert redact_value(clean) is clean  # no copy when there is nothing to mask
    dirty = _Row(2, f"use {GITHUB}", ("ok", f"password={GITHUB[:10]}x9"), {"k": [f"{OPENAI}"], "n": 3})
    out = redact_value(dirty)
    assert isinstance(out, _Row) and out.id == 2
    assert GITHUB not in json.dumps([out.content, out.tags, out.extra]) and OPENAI not in str(out.extra)
    assert out.content == f"use {marker('github-token')}" and out.extra["n"] == 3
    pair = redact_value(_Pair("k", f"Bearer {'a1' * 10}"))
    assert isinstance(pair, _Pair) and pair.value == f"Bearer {marker('bearer-token')}"


def test_mask_secret_masks_a_key_whole_and_cut():
    key = "zq8-Very-Private-Key-0042"  # no recognisable shape: only knowing it masks it
    assert mask_secret(f"bad key {key} given", key) == f"bad key {marker('api-key')} given"
    assert key[:12] not in mask_secret(f"…echo: {key[:12]}", key)
    assert mask_secret("deepseek-chat", "k") == "deepseek-chat"  # too short to be a secret


def test_redacting_ten_thousand_chat_messages_is_cheap():
    """The precheck keeps ordinary text at a few microseconds a message; only text holding one of
    a secret's words runs the patterns."""
    from pathlib import Path

    demo = Path(__file__).resolve().parents[2] / "core" / "demo_data" / "demo.jsonl"
    texts = [json.loads(line).get("content") or "" for line in demo.read_text(encoding="utf-8").splitlines()]
    batch = (texts * (10_000 // len(texts) + 1))[:10_000]
    best = min(_timed(batch) for _ in range(3))
    assert best < 1.0, f"10k messages took {best:.3f} s"  # measured ~0.03 s; a loose bound for a busy machine


def _timed(batch: list[str]) -> float:
    started = time.perf_counter()
    for text in batch:
        redact_text(text)
    return time.perf_counter() - started


# ----------------------------------------------------------------------------- surfaces (core)

SECRET_TURN = f"Deploy with GITHUB_TOKEN={GITHUB} and the staging password=Tr0ub4dor&3, the billing key is {OPENAI}."


@pytest.fixture
def secret_memory(store):
    from core.services.capture import append_turn
    from core.services.derive import run_pending
    from core.services.spaces import configure_namespace

    configure_namespace("ns", block_turn_size=2)
    append_turn("ns", "chat-1", SECRET_TURN, "Noted, we deploy on Friday with the new token.")
    append_turn("ns", "chat-1", "We decided to deploy the billing service on Friday.", "Friday it is.")
    append_turn("ns", "chat-1", "Remember the deploy checklist.", "Will do.")
    assert run_pending("ns").failed == 0
    return store


def _assert_masked(payload) -> str:
    text = json.dumps(payload, ensure_ascii=False)
    for secret in (GITHUB, "Tr0ub4dor&3", OPENAI, GITHUB[:12], OPENAI[:12]):
        assert secret not in text, secret
    return text


def test_stored_message_stays_exact(secret_memory):
    from core.models import Message

    assert Message.select().where(Message.content == SECRET_TURN).count() == 1


def test_agent_tools_mask_every_result(secret_memory):
    from core.agent_tools import MemoryTools

    tools = MemoryTools("ns", session="chat-1", budget=None)
    raw = tools.call("search_raw", {"query": "deploy GITHUB_TOKEN staging password"})
    text = _assert_masked(raw)
    assert marker("github-token") in text and marker("password") in text and marker("api-key") in text
    block_id = raw["results"][0]["block_id"]
    expanded = tools.call("expand_block", {"id": block_id, "target": "raw"})
    assert marker("github-token") in _assert_masked(expanded)
    _assert_masked(tools.call("get_blocks", {"scope": "namespace"}))
    events = tools.call("search_events", {"query": "deploy billing Friday"})
    _assert_masked(events)
    for ref in events["evidence_refs"]:
        if ref.startswith("event:"):
            _assert_masked(tools.call("expand_event", {"id": ref}))
    # A refusal quoting the agent's argument does not echo a secret either.
    refused = tools.call_safe("expand_block", {"id": block_id, "target": f"L9 {GITHUB}"})
    assert "error" in refused and marker("github-token") in _assert_masked(refused)


def test_a_cut_never_leaves_a_prefix(secret_memory):
    """search_raw cuts content at CONTENT_LIMIT: a token that straddles the cut is masked first."""
    from core.agent_tools import CONTENT_LIMIT, MemoryTools
    from core.services.capture import append_turn

    filler = "Long context about the rollout. " * 40
    at = CONTENT_LIMIT - 20  # the token starts 20 characters before the cut
    text = filler[:at] + GITHUB + " and then more words about rollout"
    append_turn("ns", "chat-9", text, "ok")
    hits = MemoryTools("ns", budget=None).call("search_raw", {"query": "rollout context", "limit": 20})
    contents = [h["message"]["content"] for h in hits["results"] if h["message"]["thread"] == "chat-9"]
    # The marker may be cut itself ("[REDACTED:github-to…"): it is no secret.
    assert contents and "ghp_" not in contents[0] and "[REDACTED:github" in contents[0]


def test_mcp_call_is_masked(secret_memory):
    from mcp import Client

    from core.agent_tools import MemoryTools
    from core.mcp_server import build_server

    tools = MemoryTools("ns", session="chat-1", budget=None)

    async def run() -> dict:
        with anyio.fail_after(15):
            async with Client(build_server(tools)) as client:
                found = await client.call_tool("search_raw", {"query": "GITHUB_TOKEN staging password"})
                return json.loads(found.content[0].text)

    payload = anyio.run(run)
    assert payload["results"] and marker("github-token") in _assert_masked(payload)


def test_mcp_unexpected_error_text_is_masked(secret_memory, monkeypatch):
    from mcp import Client

    from core.agent_tools import MemoryTools
    from core.mcp_server import build_server

    tools = MemoryTools("ns", session="chat-1")

    def explode(args):
        raise RuntimeError(f"could not reach https://svc:{GITHUB}@internal with {OPENAI}")

    monkeypatch.setitem(tools._handlers, "search_graph", explode)  # noqa: SLF001

    async def run() -> dict:
        async with Client(build_server(tools)) as client:
            crashed = await client.call_tool("search_graph", {"query": "x"})
            return json.loads(crashed.content[0].text)

    payload = anyio.run(run)
    assert payload["error"]["code"] == "internal_error" and marker("api-key") in _assert_masked(payload)


def test_export_is_exact_by_default_and_masked_with_redact(secret_memory):
    from core.services.export import export_namespace

    for fmt in ("json", "markdown"):
        exact = export_namespace("ns", fmt)
        assert GITHUB in exact and "Tr0ub4dor&3" in exact  # the user's backup keeps what was said
        shared = export_namespace("ns", fmt, redact=True)
        assert marker("github-token") in _assert_masked(shared)
    data = json.loads(export_namespace("ns", "json", redact=True))
    assert len(data["messages"]) == len(json.loads(export_namespace("ns", "json"))["messages"])


def test_a_provider_error_body_cut_at_the_boundary_holds_no_part_of_the_key():
    """The body quotes the key where the 300-character excerpt ends: masked before the cut, no
    prefix of it is left (cut first, 'sk-test-9f8e…' would survive)."""
    import http.server
    import threading

    from core.providers.openai_compat import BODY_EXCERPT, OpenAICompatProvider, ProviderCallError

    key = "sk-live-7Hq2Lm9Xv4Tn8Rw3Zp6Ky1Bc5"
    body = ("x" * (BODY_EXCERPT - 20) + f" {key} rejected").encode()  # the cut falls 19 characters into the key

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(401)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        provider = OpenAICompatProvider(
            base_url=f"http://127.0.0.1:{server.server_address[1]}", api_key=key, timeout=5, retry_delay=0
        )
        with pytest.raises(ProviderCallError) as info:
            provider.summarize_block([{"id": 1, "role": "user", "text": "hi"}])
    finally:
        server.shutdown()
        server.server_close()
    message = str(info.value)
    for cut in range(8, len(key) + 1):
        assert key[:cut] not in message, (cut, message)
    assert marker("api-key") in message


def test_a_jobs_stored_error_is_masked(store):
    from core.models import Job
    from core.services import jobs
    from core.services.spaces import get_or_create_namespace
    from core.db import write_transaction

    with write_transaction():
        ns = get_or_create_namespace("ns")
        created = jobs.create_job(ns, "summary")
    Job.update(status="running", attempts=1).where(Job.id == created.id).execute()  # as a claim leaves it
    job = Job.get_by_id(created.id)
    error = "x" * 1980 + f" {OPENAI} was refused"  # stored errors are cut at 2000: 19 characters into the key
    jobs.fail(job, error)
    stored = Job.get_by_id(job.id).last_error
    assert OPENAI[:8] not in stored and marker("api-key") in stored and len(stored) <= 2000


def test_a_trace_stores_the_query_masked(secret_memory):
    from core.agent_tools import MemoryTools
    from core.models import RetrievalTrace

    MemoryTools("ns", budget=None).call("search_raw", {"query": f"token {GITHUB}"})
    query = RetrievalTrace.select().order_by(RetrievalTrace.id.desc()).first().query
    assert GITHUB not in query and marker("github-token") in query


# ----------------------------------------------------------------------------- database URLs


def test_display_url_hides_only_the_password():
    from core.db import display_url

    assert (
        display_url("postgresql://strata:s3cr%40t@db.example.com:5432/memory")
        == "postgresql://strata:***@db.example.com:5432/memory"
    )
    assert display_url("postgresql://strata@db/memory") == "postgresql://strata@db/memory"
    assert display_url("sqlite:////var/lib/strata.db") == "sqlite:////var/lib/strata.db"
    assert "hunter2" not in display_url("postgres://u@h/db?sslmode=require&password=hunter2")


def test_a_database_url_with_a_password_never_shows_it_in_an_error():
    from core.errors import InvalidInputError, StoreUnavailableError
    from core.store import open_store, unavailable_reason

    url = "postgresql://strata:Pa55w0rd-xyz@127.0.0.1:1/memory"
    with pytest.raises(StoreUnavailableError) as info:
        open_store(url)
    assert "Pa55w0rd-xyz" not in str(info.value) and "strata:***@127.0.0.1" in str(info.value)
    reason = unavailable_reason(url, OSError(f"could not connect to {url}"))
    assert "Pa55w0rd-xyz" not in reason
    with pytest.raises(InvalidInputError) as info:
        open_store("postgresql://strata:Pa55w0rd-xyz@127.0.0.1:1/")
    assert "Pa55w0rd-xyz" not in str(info.value)


def test_automatic_context_is_masked(secret_memory):
    from core.services.context import auto_context

    context = auto_context("ns", "What are the deploy credentials: GITHUB_TOKEN, staging password, billing key?")
    assert context.text and context.event_ids
    assert marker("github-token") in _assert_masked(context.text)


def test_mcp_log_lines_are_masked(caplog):
    import logging

    from core.mcp_server import log

    with caplog.at_level(logging.INFO, logger="strata.mcp"):
        log.info("tool %s refused: %s", "search_raw", f"argument 'query' got {GITHUB!r}")
        try:
            raise RuntimeError(f"connect to postgresql://u:{PASSWORD_IN_URL}@db/x failed")
        except RuntimeError:
            log.exception("tool %s failed", "search_graph")
    text = caplog.text + "".join(r.exc_text or "" for r in caplog.records)
    assert GITHUB not in text and PASSWORD_IN_URL not in text
    assert marker("github-token") in text and marker("url-password") in text


PASSWORD_IN_URL = "Sup3r-s3cret-pw"


@pytest.mark.parametrize(
    "text",
    [
        "token " + "a_" * 20_000,
        "secret " + "a-" * 20_000,
        "password=" * 20_000,
        'token="' * 20_000,
        "s://u:" + "a:" * 20_000,
        ("eyJ" + "a" * 6 + ".") * 5_000,
        "Bearer " + "a" * 40_000,
        "4111 " * 20_000,
        "-----BEGIN PRIVATE KEY-----" * 2_000,
    ],
)
def test_hostile_text_is_masked_in_linear_time(text):
    """A key's name was once matched whole: 40 KB of "a_a_…" after "token" took 30 s."""
    started = time.perf_counter()
    redact_text(text)
    assert time.perf_counter() - started < 1.0
