"""`strata bench qa`: question answering through the harness adapter, on tiny files written here.

A scripted answer model searches, closes its batch and answers (or answers at once); a scripted
judge replies in odd formats, one of them unparseable. The same run goes through the real
OpenAI-compatible client against the local fake server (tests/fake_llm.py) from the command line.
"""

from __future__ import annotations

import json

import pytest

from core.bench.qa import ABSTENTION_NOTE, FINAL_NUDGE, QA_TOOLS, UNPARSED, parse_judge_label, run_qa_bench
from core.db import db
from core.providers import usage as usage_acct
from core.providers.base import ProviderOutputError
from core.providers.openai_compat import ProviderCallError
from tests.fake_llm import llm, text_reply, tool_call, usage  # noqa: F401 (llm is a fixture)
from tests.stores import fresh_url

DATE_1 = "1:56 pm on 8 May, 2023"
DATE_2 = "10:04 am on 12 June, 2023"


def t(speaker: str, dia_id: str, text: str) -> dict:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


LOCOMO = [
    {
        "sample_id": "conv-26",  # a dev conversation
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": DATE_1,
            "session_1": [
                t("Alice", "D1:1", "I adopted a puppy named Biscuit last week."),
                t("Bob", "D1:2", "That is lovely, what breed is Biscuit?"),
                t("Alice", "D1:3", "Biscuit is a beagle, very curious."),
            ],
            "session_2_date_time": DATE_2,
            "session_2": [
                t("Bob", "D2:1", "I started learning the violin this month."),
                t("Alice", "D2:2", "Nice! I went hiking in the Alps on Saturday."),
            ],
        },
        "qa": [
            {"question": "What breed is Alice's puppy?", "answer": "beagle", "evidence": ["D1:3"], "category": 4},
            {"question": "What is Bob's puppy called?", "adversarial_answer": "Biscuit", "category": 5},
            {
                "question": "What instrument does Bob learn and where did Alice hike?",
                "answer": "violin; the Alps",
                "evidence": ["D2:1; D2:2"],
                "category": 1,
            },
            {"question": "When did Alice adopt Biscuit?", "answer": 2023, "evidence": ["D1:1"], "category": 2},
        ],
    },
    {  # a test-split conversation: never ingested by a dev run
        "sample_id": "conv-44",
        "conversation": {
            "speaker_a": "Eve",
            "speaker_b": "Finn",
            "session_1_date_time": DATE_1,
            "session_1": [t("Eve", "D1:1", "Hello there.")],
        },
        "qa": [{"question": "Who says hello?", "answer": "Eve", "evidence": ["D1:1"], "category": 4}],
    },
]

LME = [
    {
        "question_id": "lme-cat",
        "question_type": "single-session-user",
        "question": "What is the name of my cat?",
        "answer": "Miso",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 11:00"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "My cat Miso knocked over a plant."},
                {"role": "assistant", "content": "Cats do that."},
            ],
            [{"role": "user", "content": "I like tea."}, {"role": "assistant", "content": "Tea is nice."}],
        ],
        "answer_session_ids": ["s1"],
    },
    {
        "question_id": "lme-dog_abs",
        "question_type": "single-session-user",
        "question": "What is the name of my dog?",
        "answer": "You did not mention a dog.",
        "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": ["a1"],
        "haystack_dates": ["2023/05/03 (Wed) 12:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "I bought a bike."}, {"role": "assistant", "content": "Enjoy it."}]
        ],
        "answer_session_ids": [],
    },
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("STRATA_DB", "STRATA_LLM_BASE_URL", "STRATA_LLM_MODEL", "STRATA_LLM_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(usage_acct.PRICE_INPUT_ENV, "1")
    monkeypatch.setenv(usage_acct.PRICE_OUTPUT_ENV, "2")
    yield
    if db.obj is not None and not db.is_closed():
        db.close()


@pytest.fixture
def locomo_file(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(LOCOMO), encoding="utf-8")
    return path


class Scripted:
    """A chat model whose replies come from ``reply(messages, tools)``; every call reports usage."""

    def __init__(self, model: str, reply, prompt_tokens: int, completion_tokens: int):
        self.model = model
        self.reply = reply
        self.calls: list[tuple[list, list]] = []
        self._usage = usage_acct.empty()
        self.per_call = (prompt_tokens, completion_tokens)

    @property
    def usage(self) -> dict[str, int]:
        return dict(self._usage)

    def chat(self, messages, tools=()):
        self.calls.append(([dict(m) for m in messages], list(tools)))
        self._usage["calls"] += 1
        self._usage["reported_calls"] += 1
        self._usage["prompt_tokens"] += self.per_call[0]
        self._usage["completion_tokens"] += self.per_call[1]
        return self.reply(messages, tools)


def _call(name: str, args: dict, call_id: str = "c1") -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}],
    }


def _question(messages) -> str:
    return next(m["content"] for m in messages if m["role"] == "user")


def answering(messages, tools):
    """Searches for the puppy question (then closes the batch), answers the others at once."""
    question = _question(messages)
    served = [m for m in messages if m["role"] == "tool"]
    if "breed" in question:
        if not served:
            return _call("search_raw", {"query": "puppy breed beagle"})
        if len(served) == 1:
            batch = json.loads(served[0]["content"])["batch_id"]
            return _call("record_use", {"batch_id": batch, "evidence_refs": []}, "c2")
        return {"role": "assistant", "content": "A beagle."}
    if "instrument" in question:
        return {"role": "assistant", "content": "The violin, and she hiked in the Alps."}
    return {"role": "assistant", "content": "I do not know."}


JUDGE_REPLIES = {
    "What breed is Alice's puppy?": "**Label:** Correct",
    "What instrument does Bob learn and where did Alice hike?": "Hmm, hard to say.",
    "When did Alice adopt Biscuit?": "The generated answer is not correct.",
}


def judging(messages, tools):
    assert tools == []
    prompt = messages[-1]["content"]
    question = prompt.split("\n", 1)[0].removeprefix("Question: ")
    return {"role": "assistant", "content": JUDGE_REPLIES.get(question, '{"label": "CORRECT"}')}


# -- the judge's label -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply, label",
    [
        ('{"label": "CORRECT"}', "CORRECT"),
        ('{"label": "wrong"}', "WRONG"),
        ('```json\n{"Label": "Correct"}\n```', "CORRECT"),
        ('Reasoning: the dates match.\n{"verdict": "CORRECT"}', "CORRECT"),
        ("CORRECT", "CORRECT"),
        ("wrong.", "WRONG"),
        ("**INCORRECT**", "WRONG"),
        ("Label: correct", "CORRECT"),
        ("label = WRONG, since the year differs", "WRONG"),
        ("The answer names the same city, so it is correct.", "CORRECT"),
        ("The generated answer is not correct.", "WRONG"),
        ("That is incorrect: the gold answer is 2021.", "WRONG"),
        ("It is partly correct but mostly wrong.", UNPARSED),
        ("Hmm, hard to say.", UNPARSED),
        ('{"label": "maybe"}', UNPARSED),
        ('{"score": 1}', UNPARSED),
        ('{"correct": false}', "WRONG"),
        ('{"is_correct": true, "why": "same date"}', "CORRECT"),
        ('The answer is correct. {"score": 1}', UNPARSED),  # an object decides alone
        ("", UNPARSED),
        (None, UNPARSED),
    ],
)
def test_judge_labels_are_read_robustly(reply, label):
    assert parse_judge_label(reply) == label


# -- end to end ----------------------------------------------------------------------------------


def test_locomo_qa_end_to_end_with_scripted_models(locomo_file, tmp_path):
    answer = Scripted("scripted-answer", answering, 100, 10)
    judge = Scripted("scripted-judge", judging, 50, 5)
    seen: list = []
    report = run_qa_bench(
        locomo_file,
        "dev",
        answer_model=answer,
        judge_model=judge,
        db_url=fresh_url(tmp_path),
        progress=lambda done, total, label: seen.append((done, total, label)),
    )
    assert report["benchmark"] == "qa" and report["dataset"] == "locomo" and report["split"] == "dev"
    assert report["answer_model"] == "scripted-answer" and report["judge_model"] == "scripted-judge"
    assert report["conversations"] == ["conv-26"] and report["ingest"]["conversations"] == 1
    assert report["ingest"]["messages"] == 5 and report["derive"]["failed"] == 0 and report["derive"]["events"] > 0
    rows = {r["id"]: r for r in report["per_question"]}
    assert list(rows) == ["conv-26#0", "conv-26#2", "conv-26#3"]  # category 5 left out
    breed, hike, when = rows["conv-26#0"], rows["conv-26#2"], rows["conv-26#3"]

    assert breed["category"] == "single-hop" and breed["gold"] == "beagle" and breed["answer"] == "A beagle."
    assert [c["name"] for c in breed["tool_calls"]] == ["search_raw", "record_use"]
    assert all(c["error"] is None for c in breed["tool_calls"]) and breed["unclosed_batches"] == 0
    assert breed["label"] == "CORRECT" and breed["judge_reply"] == "**Label:** Correct"
    assert hike["category"] == "multi-hop" and hike["tool_calls"] == [] and hike["label"] == UNPARSED
    assert when["gold"] == "2023" and when["label"] == "WRONG"

    # Tokens per question: three answer calls for the searched question, one for the others.
    assert breed["usage"]["answer"]["prompt_tokens"] == 300 and breed["usage"]["answer"]["completion_tokens"] == 30
    assert hike["usage"]["answer"]["calls"] == 1 and hike["usage"]["judge"]["prompt_tokens"] == 50
    assert breed["estimated_cost"] == pytest.approx((350 * 1 + 35 * 2) / 1e6)
    assert all(r["context_tokens"] > 0 for r in rows.values())  # the derived conversation is placed first
    assert all(r["seconds"] >= 0 for r in rows.values())

    acc = report["accuracy"]
    assert acc["overall"] == {
        "questions": 3,
        "correct": 1,
        "wrong": 1,
        "unparsed": 1,
        "error": 0,
        "accuracy": pytest.approx(1 / 3, abs=1e-4),
    }
    assert acc["single-hop"]["accuracy"] == 1.0 and acc["multi-hop"]["accuracy"] == 0.0
    assert acc["temporal"]["wrong"] == 1 and "open-domain" not in acc
    total = report["usage"]["total"]
    assert report["usage"]["answer"]["prompt_tokens"] == 500 and report["usage"]["judge"]["completion_tokens"] == 15
    assert total["prompt_tokens"] == 650 and total["completion_tokens"] == 65 and total["calls"] == 8
    assert total["cost"]["estimated_cost"] == pytest.approx((650 + 130) / 1e6)
    assert total["cost"]["input_per_mtok"] == 1 and report["tool_calls"] == 2
    assert set(report["timing"]) >= {"ingest_s", "derive_s", "question_p50_s", "question_p95_s", "total_s"}
    assert seen[-1] == (3, 3, "conv-26#3") and seen[0][2] == "derive conv-26"
    json.dumps(report)  # JSON-ready

    # What the answer model was given: memory before the question, the read tools only, Strata's hits.
    first_messages, tools = answer.calls[0]
    assert {t["name"] for t in tools} == set(QA_TOOLS)
    assert first_messages[0]["role"] == "system" and "Alice and Bob" in first_messages[0]["content"]
    assert "Biscuit" in first_messages[0]["content"]
    searched = answer.calls[1][0][-1]
    assert searched["role"] == "tool" and searched["tool_call_id"] == "c1" and "beagle" in searched["content"]
    judged = judge.calls[0][0]
    assert "Gold answer: beagle" in judged[-1]["content"] and "Generated answer: A beagle." in judged[-1]["content"]
    assert ABSTENTION_NOTE not in judged[0]["content"]


def test_limit_a_tool_loop_that_never_answers_and_a_failed_call(locomo_file, tmp_path):
    def searching_forever(messages, tools):
        if messages[-1]["content"] == FINAL_NUDGE:
            assert tools  # still offered: a history with tool results needs them
        served = sum(m["role"] == "tool" for m in messages)
        if served == 0:  # arguments that are not JSON, then a tool not offered: errors the model is shown
            call = _call("search_events", {}, "c0")
            call["tool_calls"][0]["function"]["arguments"] = "{query: puppy"
            return call
        if served == 1:
            return _call("remember", {"title": "x"}, "c1")
        return _call("search_events", {"query": "puppy"}, f"c{served}")

    failed = iter(
        [
            ProviderOutputError("openai provider (m): response has no choices"),
            ProviderCallError("openai provider (m): HTTP 400: prompt too long", status=400),
        ]
    )

    def flaky_judge(messages, tools):
        error = next(failed, None)
        if error is not None:
            raise error
        return {"role": "assistant", "content": "WRONG"}

    answer = Scripted("loop", searching_forever, 10, 1)
    report = run_qa_bench(
        locomo_file,
        "dev",
        limit=2,
        answer_model=answer,
        judge_model=Scripted("judge", flaky_judge, 5, 1),
        db_url=fresh_url(tmp_path),
        max_tool_rounds=3,
    )
    first, second = report["per_question"]
    assert report["questions"] == 2 and report["limit"] == 2
    assert first["stopped"] == "tool_rounds" and first["answer"] == ""
    assert [(c["name"], c["error"]) for c in first["tool_calls"]] == [
        ("search_events", "bad_arguments"),
        ("remember", "unknown_tool"),
        ("search_events", None),
    ]
    shown = [m for m in answer.calls[2][0] if m["role"] == "tool"]
    assert "bad_arguments" in shown[0]["content"] and "is not offered" in shown[1]["content"]
    assert first["label"] == "error" and "no choices" in first["error"]
    assert first["unclosed_batches"] == 1  # the agent never closed its batch: reported
    assert first["usage"]["answer"]["calls"] == 4 and first["usage"]["judge"]["calls"] == 1
    assert second["label"] == "error" and "HTTP 400" in second["error"]  # one question's failure
    assert report["accuracy"]["overall"]["error"] == 2 and report["accuracy"]["overall"]["accuracy"] == 0.0

    def refused(messages, tools):
        raise ProviderCallError("openai provider (m): HTTP 401", status=401)

    with pytest.raises(ProviderCallError):
        run_qa_bench(
            locomo_file,
            "dev",
            limit=1,
            answer_model=Scripted("a", refused, 1, 1),
            judge_model=Scripted("j", judging, 1, 1),
            db_url=fresh_url(tmp_path, "again.db"),
        )


def test_longmemeval_questions_each_get_their_haystack(tmp_path):
    path = tmp_path / "lme.json"
    path.write_text(json.dumps(LME), encoding="utf-8")

    def reply(messages, tools):
        return {"role": "assistant", "content": "Miso" if "cat" in _question(messages) else "I do not know."}

    answer = Scripted("a", reply, 10, 2)
    judge = Scripted("j", lambda m, t: {"role": "assistant", "content": '{"label": "CORRECT"}'}, 5, 1)
    report = run_qa_bench(
        path, "all", dataset="longmemeval", answer_model=answer, judge_model=judge, db_url=fresh_url(tmp_path)
    )
    assert report["conversations"] == 2 and report["ingest"]["conversations"] == 2
    cat, dog = report["per_question"]
    assert cat["category"] == "single-session-user" and cat["question_date"] == "2023/05/30 (Tue) 23:40"
    assert cat["answer"] == "Miso" and dog["abstention"] is True and dog["answer"] == "I do not know."
    assert "Miso" in answer.calls[0][0][0]["content"] and "2023/05/30" in answer.calls[0][0][0]["content"]
    assert "Miso" not in answer.calls[1][0][0]["content"]  # the dog question sees only its own haystack
    assert ABSTENTION_NOTE in judge.calls[1][0][0]["content"] and ABSTENTION_NOTE not in judge.calls[0][0][0]["content"]
    assert report["accuracy"]["abstention"]["questions"] == 1 and report["accuracy"]["overall"]["accuracy"] == 1.0


# -- the command -----------------------------------------------------------------------------------


def test_cli_runs_against_the_fake_server_and_writes_the_report(llm, locomo_file, tmp_path, monkeypatch, capsys):
    from workbench.cli import main

    def respond(body):
        if not body.get("tools"):  # the judge
            return 200, {**text_reply('{"label": "CORRECT"}'), "usage": usage(40, 4)}
        if not any(m["role"] == "tool" for m in body["messages"]):
            return 200, tool_call({"query": "puppy breed"}, name="search_raw", usage=usage(300, 12))
        return 200, {**text_reply("A beagle."), "usage": usage(500, 6)}

    llm.respond = respond
    monkeypatch.setenv("STRATA_LLM_API_KEY", "sk-fake-qa-0123456789")
    monkeypatch.setenv("STRATA_LLM_BASE_URL", llm.url)
    out = tmp_path / "qa.json"
    argv = ["bench", "qa", "--data", str(locomo_file), "--split", "dev", "--limit", "1"]
    code = main([*argv, "--model", "answer-m", "--judge-model", "judge-m", "--json-out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "conv-26#0" in printed and "CORRECT" in printed and "answer model answer-m" in printed
    report = json.loads(out.read_text())
    assert report["answer_model"] == "answer-m" and report["judge_model"] == "judge-m"
    [row] = report["per_question"]
    assert row["answer"] == "A beagle." and row["label"] == "CORRECT" and row["tool_calls"][0]["name"] == "search_raw"
    assert row["usage"]["answer"]["prompt_tokens"] == 800 and row["usage"]["judge"]["completion_tokens"] == 4
    assert report["usage"]["total"]["cost"]["estimated_cost"] == pytest.approx((840 * 1 + 22 * 2) / 1e6)
    assert [r["json"]["model"] for r in llm.requests] == ["answer-m", "answer-m", "judge-m"]
    served = llm.requests[1]["json"]["messages"][-1]
    assert served["role"] == "tool" and "breed" in served["content"] and served["tool_call_id"] == "call_1"


def test_cli_without_a_key_exits_2_before_any_work(locomo_file, monkeypatch, capsys):
    import core.bench.qa
    from workbench.cli import main

    monkeypatch.setattr(core.bench.qa, "run_qa_bench", lambda *a, **k: pytest.fail("the bench ran"))
    assert main(["bench", "qa", "--data", str(locomo_file), "--provider", "openai"]) == 2
    err = capsys.readouterr().err
    assert "STRATA_LLM_API_KEY" in err and "DEEPSEEK_API_KEY" in err
