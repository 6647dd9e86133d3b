"""The LoCoMo and LongMemEval retrieval benches end to end, on tiny synthetic files.

The files are written here (two LoCoMo conversations with three scored questions; three
LongMemEval questions, one of them an abstention). Fake retrievers pin the system side
(gold first: every metric is 1; nothing: every metric is 0); the BM25 baseline is checked
against a direct rank_bm25 computation on the same text.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re

import pytest
from rank_bm25 import BM25Okapi

from core.bench.locomo import KS as LOCOMO_KS, run_locomo
from core.bench.longmemeval import KS as LME_KS, run_longmemeval, select_questions, session_of, split_of
from core.bench.retrieval import Bm25Baseline, DefaultRetriever, RawBM25Retriever, Retriever, message_external_ids
from core.errors import InvalidInputError
from core.tokens import estimate_tokens
from tests.stores import fresh_url

DATE_1 = "1:56 pm on 8 May, 2023"
DATE_2 = "10:04 am on 12 June, 2023"


def t(speaker: str, dia_id: str, text: str, caption: str | None = None) -> dict:
    turn = {"speaker": speaker, "dia_id": dia_id, "text": text}
    if caption is not None:
        turn["blip_caption"] = caption
    return turn


LOCOMO = [
    {
        "sample_id": "conv-26",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": DATE_1,
            "session_1": [
                t("Alice", "D1:1", "I adopted a puppy named Biscuit last week."),
                t("Bob", "D1:2", "That is lovely, what breed is Biscuit?"),
                t("Alice", "D1:3", "A beagle. Here is a photo.", caption="a beagle puppy on grass"),
            ],
            "session_2_date_time": DATE_2,
            "session_2": [
                t("Bob", "D2:1", "I started learning the violin this month."),
                t("Alice", "D2:2", "Nice! I went hiking in the Alps."),
                t("Bob", "D2:3", "The Alps sound amazing."),
            ],
            "session_3_date_time": DATE_2,  # a date with no session, as in the real conv-26
        },
        "qa": [
            {"question": "What breed is Alice's puppy?", "answer": "beagle", "evidence": ["D1:3"], "category": 4},
            {
                "question": "What instrument does Bob learn and where did Alice hike?",
                "answer": "violin; Alps",
                "evidence": ["D2:1; D2:2"],
                "category": 1,
            },
            {
                "question": "What is Bob's puppy called?",
                "adversarial_answer": "Biscuit",
                "evidence": ["D1:1"],
                "category": 5,
            },
            {"question": "Would Alice enjoy mountains?", "answer": "yes", "evidence": [], "category": 3},
        ],
    },
    {
        "sample_id": "conv-30",
        "conversation": {
            "speaker_a": "Carol",
            "speaker_b": "Dan",
            "session_1_date_time": DATE_1,
            "session_1": [
                t("Carol", "D1:1", "My sister moved to Lisbon in 2021."),
                t("Dan", "D1:2", "Does she like Portugal?"),
                t("Carol", "D1:3", "She loves the food there."),
            ],
            "session_2_date_time": DATE_2,
            "session_2": [
                t("Dan", "D2:1", "I bought a red bicycle yesterday."),
                t("Carol", "D2:2", "Ride it to the lake!"),
            ],
        },
        "qa": [
            {
                "question": "When did Carol's sister move to Lisbon?",
                "answer": "2021",
                "evidence": ["D:1:01"],
                "category": 2,
            },
            {"question": "What colour is the boat?", "answer": "?", "evidence": ["D9:9"], "category": 4},
        ],
    },
    {  # a test-split conversation: never ingested or scored by a dev run
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
LOCOMO_GOLD = {
    ("conv-26", "What breed is Alice's puppy?"): ["D1:3"],
    ("conv-26", "What instrument does Bob learn and where did Alice hike?"): ["D2:1", "D2:2"],
    ("conv-30", "When did Carol's sister move to Lisbon?"): ["D1:1"],
}


def turns(*pairs: tuple[str, str]) -> list[dict]:
    return [{"role": role, "content": content} for role, content in pairs]


LME = [
    {
        "question_id": "q-alpha",
        "question_type": "single-session-user",
        "question": "What is the name of my cat?",
        "answer": "Miso",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["s1", "s2", "s3"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00", "2023/05/02 (Tue) 11:00", "2023/05/03 (Wed) 12:00"],
        "haystack_sessions": [
            turns(("user", "I moved my aquarium to the living room."), ("assistant", "Fish like calm rooms.")),
            turns(("user", "What is a good pasta recipe?"), ("assistant", "Try a carbonara.")),
            turns(
                ("user", "My cat is named Miso and she sleeps all day."),
                ("assistant", ""),
                ("assistant", "Miso is a lovely name for a cat."),
            ),
        ],
        "answer_session_ids": ["s3"],
    },
    {
        "question_id": "q-gamma_abs",
        "question_type": "single-session-user",
        "question": "What is the name of my dog?",
        "answer": "unknown",
        "question_date": "2023/05/30 (Tue) 23:40",
        "haystack_session_ids": ["a1"],
        "haystack_dates": ["2023/05/01 (Mon) 10:00"],
        "haystack_sessions": [turns(("user", "I like tea."), ("assistant", "Tea is nice."))],
        "answer_session_ids": ["a1"],
    },
    {
        "question_id": "q-beta",
        "question_type": "multi-session",
        "question": "How many marathons and triathlons did I run?",
        "answer": "3",
        "question_date": "2024/01/10 (Wed) 08:05",
        "haystack_session_ids": ["t1", "t2", "t1", "t3"],
        "haystack_dates": [
            "2023/06/01 (Thu) 09:00",
            "2023/07/01 (Sat) 09:00",
            "2023/07/05 (Wed) 09:00",
            "2023/08/01 (Tue) 09:00",
        ],
        "haystack_sessions": [
            turns(("user", "I ran my second marathon in Boston."), ("assistant", "Congratulations on the marathon!")),
            turns(("user", "Recommend a sci-fi novel."), ("assistant", "Read Dune.")),
            turns(("user", "Again: I ran my second marathon in Boston."), ("assistant", "Well done.")),
            turns(("user", "I finished a triathlon last weekend."), ("assistant", "A triathlon is hard work.")),
        ],
        "answer_session_ids": ["t1", "t3"],
    },
]
LME_GOLD = {item["question_id"]: item["answer_session_ids"] for item in LME}


@pytest.fixture
def locomo_file(tmp_path):
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(LOCOMO), encoding="utf-8")
    return path


@pytest.fixture
def lme_file(tmp_path):
    path = tmp_path / "lme.json.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(LME, handle)
    return path


@pytest.fixture(autouse=True)
def _no_env_db(monkeypatch):
    monkeypatch.delenv("STRATA_DB", raising=False)


class GoldFirst:
    name = "gold-first"

    def __init__(self, gold: dict, *, lme: bool = False) -> None:
        self.gold, self.lme, self.calls = gold, lme, []

    def rank(self, namespace, question, *, question_time=None, limit=50):
        from core.models import Message, Namespace

        ns = Namespace.get_or_none(Namespace.name == namespace)
        stored = Message.select().where(Message.namespace == ns).count() if ns else 0
        self.calls.append({"namespace": namespace, "question_time": question_time, "limit": limit, "stored": stored})
        if self.lme:
            gold = self.gold[namespace]
            return [f"{sid}:0" for sid in gold] + [f"{gold[0]}:1"]  # a second message of a seen session
        gold = self.gold[(namespace, question)]
        return gold + gold[:1] + ["D1:2"]  # a repeat (dropped) and a filler


class Nothing:
    def rank(self, namespace, question, *, question_time=None, limit=50):
        return []


def baseline_tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def direct_locomo_rankings() -> dict[tuple[str, str], list[str]]:
    """Ranking of every dev question by a hand-built BM25Okapi, ties in corpus order."""
    out = {}
    for sample in LOCOMO[:2]:
        conv = sample["conversation"]
        ids, docs = [], []
        for key in ("session_1", "session_2"):
            for turn in conv[key]:
                text = f"{turn['speaker']}: {turn['text']}"
                if "blip_caption" in turn:
                    text += f" [image: {turn['blip_caption']}]"
                ids.append(turn["dia_id"])
                docs.append(baseline_tokens(text))
        bm25 = BM25Okapi(docs)
        for sid, question in LOCOMO_GOLD:
            if sid == sample["sample_id"]:
                scores = bm25.get_scores(baseline_tokens(question))
                out[(sid, question)] = [ids[i] for i in sorted(range(len(ids)), key=lambda i: -scores[i])]
    return out


# --------------------------------------------------------------------------- LoCoMo


def test_locomo_gold_first_report_shape(locomo_file):
    fake = GoldFirst(LOCOMO_GOLD)
    seen = []
    report = run_locomo(
        locomo_file,
        "dev",
        retriever_factory=lambda: fake,
        progress=lambda done, total, label: seen.append((done, total, label)),
    )

    assert {"benchmark", "split", "provider", "commit", "questions", "results", "timing", "per_question"} <= set(report)
    assert (report["benchmark"], report["split"], report["provider"]) == ("locomo", "dev", "offline")
    assert report["retriever"] == "gold-first"
    assert report["questions"] == 3
    assert report["conversations"] == ["conv-26", "conv-30"]
    assert set(report["timing"]) >= {"ingest_s", "derive_s", "query_p50_ms", "query_p95_ms"}
    assert report["ingest"]["messages"] == 11  # conv-44 (test split) is not ingested
    assert seen[-1] == (3, 3, "query")

    results = report["results"]
    assert set(results) == {"strata", "bm25"}
    for system in results.values():
        assert set(system) == {"turn", "session"}
        for level in system.values():
            assert set(level) == {"recall", "recall_all"}
            for metric in level.values():
                assert list(metric) == ["overall", "multi-hop", "temporal", "open-domain", "single-hop"]
                assert list(metric["overall"]) == ["1", "5", "10", "20", "50"]
                assert metric["open-domain"] == {str(k): None for k in LOCOMO_KS}  # no such question here
    strata = results["strata"]
    # gold first: everything found by k=2; the two-evidence question misses its second id at k=1
    assert strata["turn"]["recall"]["overall"] == {
        "1": round((1 + 0.5 + 1) / 3, 4),
        "5": 1.0,
        "10": 1.0,
        "20": 1.0,
        "50": 1.0,
    }
    assert strata["turn"]["recall_all"]["overall"]["1"] == round(2 / 3, 4)
    assert strata["turn"]["recall"]["multi-hop"]["1"] == 0.5
    # the two-evidence question's ids sit in one session each: D2 both → session recall@1 is 1
    assert strata["session"]["recall"]["overall"]["1"] == 1.0

    by_id = {q["id"]: q for q in report["per_question"]}
    assert list(by_id) == ["conv-26#0", "conv-26#1", "conv-30#0"]
    assert by_id["conv-26#1"]["category"] == "multi-hop"
    assert by_id["conv-26#1"]["gold"] == ["D2:1", "D2:2"]  # packed evidence split
    assert by_id["conv-30#0"]["gold"] == ["D1:1"]  # "D:1:01" repaired
    assert by_id["conv-30#0"]["category"] == "temporal"
    assert by_id["conv-26#0"]["ranked"]["strata"] == ["D1:3", "D1:2"]  # repeat dropped
    assert set(by_id["conv-26#0"]["ranked"]) == {"strata", "bm25"}

    # the system was asked after ingestion, for 50 messages, with no question time
    assert all(call["stored"] > 0 and call["limit"] == 50 and call["question_time"] is None for call in fake.calls)

    # context tokens at k=1: the single top message of each question, averaged
    def tokens_of(sample, dia_id):
        conv = next(s for s in LOCOMO if s["sample_id"] == sample)["conversation"]
        turn = next(x for key in ("session_1", "session_2") for x in conv[key] if x["dia_id"] == dia_id)
        text = f"{turn['speaker']}: {turn['text']}"
        return estimate_tokens(text + (f" [image: {turn['blip_caption']}]" if "blip_caption" in turn else ""))

    expected = (tokens_of("conv-26", "D1:3") + tokens_of("conv-26", "D2:1") + tokens_of("conv-30", "D1:1")) / 3
    assert report["context_tokens"]["strata"]["1"] == round(expected, 1)


def test_locomo_bm25_baseline_matches_rank_bm25(locomo_file):
    report = run_locomo(locomo_file, "dev", retriever_factory=Nothing)
    direct = direct_locomo_rankings()
    for q in report["per_question"]:
        sid, index = q["id"].split("#")
        question = LOCOMO[0 if sid == "conv-26" else 1]["qa"][int(index)]["question"]
        assert q["ranked"]["bm25"] == direct[(sid, question)]
        assert q["ranked"]["strata"] == []
    for k in LOCOMO_KS:
        values = [len(set(gold) & set(direct[key][:k])) / len(gold) for key, gold in LOCOMO_GOLD.items()]
        assert report["results"]["bm25"]["turn"]["recall"]["overall"][str(k)] == round(sum(values) / 3, 4)
        assert report["results"]["strata"]["turn"]["recall"]["overall"][str(k)] == 0.0
        assert report["results"]["strata"]["session"]["recall_all"]["overall"][str(k)] == 0.0
    assert report["context_tokens"]["strata"]["50"] == 0.0
    assert report["context_tokens"]["bm25"]["1"] > 0


def test_locomo_with_raw_bm25_fallback(locomo_file):
    report = run_locomo(locomo_file, "all", retriever_factory=RawBM25Retriever)
    assert report["retriever"] == "raw-bm25"
    assert report["questions"] == 4  # conv-44's question joins with split all
    by_id = {q["id"]: q for q in report["per_question"]}
    assert by_id["conv-30#0"]["ranked"]["strata"][0] == "D1:1"  # "sister ... Lisbon" is one turn only
    assert by_id["conv-44#0"]["ranked"]["strata"] == ["D1:1"]  # its own conversation only
    known = {
        turn["dia_id"]
        for s in LOCOMO
        for key, v in s["conversation"].items()
        if key.startswith("session_") and isinstance(v, list)
        for turn in v
    }
    assert all(set(q["ranked"]["strata"]) <= known for q in report["per_question"])


# --------------------------------------------------------------------------- LongMemEval


def test_split_of_follows_sha256_first_digit():
    for qid in ("q-alpha", "q-beta", "gpt4_2655b836", "7161e7e2"):
        digit = int(hashlib.sha256(qid.encode()).hexdigest()[0], 16)
        assert split_of(qid) == ("dev" if digit < 8 else "test")
    dev = select_questions(LME, "dev")
    test = select_questions(LME, "test")
    assert len(dev) + len(test) == 3 and not {q["question_id"] for q in dev} & {q["question_id"] for q in test}
    assert [q["question_id"] for q in select_questions(LME, "all", 2)] == ["q-alpha", "q-gamma_abs"]
    with pytest.raises(InvalidInputError):
        select_questions(LME, "train")
    with pytest.raises(InvalidInputError):
        select_questions(LME, "all", 0)


def test_session_of_external_id():
    assert session_of("answer_4be1b6b4_2:13") == "answer_4be1b6b4_2"
    assert session_of("a:b:0") == "a:b"


def test_longmemeval_gold_first_report_shape(lme_file):
    fake = GoldFirst(LME_GOLD, lme=True)
    report = run_longmemeval(lme_file, "all", retriever_factory=lambda: fake)

    assert {"benchmark", "split", "provider", "commit", "questions", "results", "timing", "per_question"} <= set(report)
    assert (report["benchmark"], report["split"], report["questions"]) == ("longmemeval", "all", 2)
    assert report["abstention_skipped"] == 1
    assert set(report["timing"]) >= {"ingest_s", "derive_s", "query_p50_ms", "query_p95_ms", "total_s"}
    # q-alpha 7 turns less one empty one, q-beta 8; the abstention question is not ingested
    assert report["ingest"]["messages"] == 6 + 8

    for system in ("strata", "bm25"):
        session = report["results"][system]["session"]
        assert set(session) == {"recall_any", "recall_all", "ndcg_any"}
        for metric in session.values():
            assert list(metric)[:3] == ["overall", "single-session-user", "single-session-assistant"]
            assert len(metric) == 7
            assert list(metric["overall"]) == [str(k) for k in LME_KS]
    strata = report["results"]["strata"]["session"]
    assert strata["recall_any"]["overall"] == {str(k): 1.0 for k in LME_KS}
    assert strata["ndcg_any"]["overall"] == {str(k): 1.0 for k in LME_KS}
    # q-beta has two gold sessions: at k=1 only one is in
    assert strata["recall_all"]["overall"]["1"] == 0.5
    assert strata["recall_all"]["multi-session"]["1"] == 0.0
    assert strata["recall_all"]["overall"]["3"] == 1.0
    assert strata["recall_any"]["temporal-reasoning"]["1"] is None

    by_id = {q["id"]: q for q in report["per_question"]}
    assert list(by_id) == ["q-alpha", "q-beta"]
    assert by_id["q-beta"]["question_type"] == "multi-session"
    assert by_id["q-beta"]["gold"] == ["t1", "t3"]
    assert by_id["q-beta"]["ranked"]["strata"] == ["t1", "t3"]  # session ids, each once
    # each question was asked at its own date, in its own namespace, after its haystack was written
    calls = {call["namespace"]: call for call in fake.calls}
    assert calls["q-alpha"]["question_time"] == "2023-05-30T23:40:00+00:00"
    assert calls["q-beta"]["question_time"] == "2024-01-10T08:05:00+00:00"
    assert calls["q-alpha"]["stored"] == 6 and calls["q-beta"]["stored"] == 8


def test_longmemeval_bm25_baseline_and_empty_system(lme_file):
    report = run_longmemeval(lme_file, "all", retriever_factory=Nothing)
    strata = report["results"]["strata"]["session"]
    assert strata["recall_any"]["overall"] == {str(k): 0.0 for k in LME_KS}
    assert strata["ndcg_any"]["overall"] == {str(k): 0.0 for k in LME_KS}
    for q in report["per_question"]:
        item = next(i for i in LME if i["question_id"] == q["id"])
        docs = [baseline_tokens("\n".join(turn["content"] for turn in s)) for s in item["haystack_sessions"]]
        scores = BM25Okapi(docs).get_scores(baseline_tokens(item["question"]))
        order = sorted(range(len(docs)), key=lambda i: -scores[i])
        expected = list(dict.fromkeys(item["haystack_session_ids"][i] for i in order))
        assert q["ranked"]["bm25"] == expected
        assert q["ranked"]["strata"] == []
    assert report["per_question"][0]["ranked"]["bm25"][0] == "s3"  # "cat" and "name" meet only in s3
    bm25 = report["results"]["bm25"]["session"]
    # q-alpha: gold s3 at rank 1. q-beta: gold t1 and t3 are the two sessions mentioning a race.
    beta = report["per_question"][1]["ranked"]["bm25"]
    assert set(beta[:2]) == {"t1", "t3"}
    assert bm25["recall_any"]["overall"]["1"] == 1.0
    assert bm25["recall_all"]["overall"]["3"] == 1.0


def test_longmemeval_limit_and_raw_bm25(lme_file):
    report = run_longmemeval(lme_file, "all", limit=2, retriever_factory=RawBM25Retriever)
    assert report["questions"] == 1 and report["abstention_skipped"] == 1 and report["limit"] == 2
    ranked = report["per_question"][0]["ranked"]["strata"]
    assert ranked[0] == "s3" and set(ranked) <= {"s1", "s2", "s3"}  # its own haystack only


# --------------------------------------------------------------------------- retrievers


def test_default_retriever_falls_back_to_raw_bm25(monkeypatch, store):
    import core.bench.retrieval as retrieval
    from core.services.capture import append_messages

    monkeypatch.setattr(retrieval, "_load_default_retrieval", lambda: None)
    append_messages(
        "ns",
        "main",
        [
            {"role": "user", "speaker": "Ann", "content": "The violin lesson is on Friday.", "external_id": "D1:1"},
            {"role": "assistant", "content": "Noted, violin on Friday.", "external_id": "D1:2"},
            {"role": "user", "content": "Also buy bread.", "external_id": "D1:3"},
        ],
    )
    default = DefaultRetriever()
    assert isinstance(default, Retriever)
    assert default.name == "raw-bm25-fallback"
    assert default.rank("ns", "violin lesson") == RawBM25Retriever().rank("ns", "violin lesson")
    assert default.rank("ns", "violin lesson")[:2] == ["D1:1", "D1:2"]
    assert default.rank("ns", "violin", limit=1) == default.rank("ns", "violin")[:1]
    assert len(default.rank("ns", "violin")) == 2
    assert default.rank("missing", "violin") == []


def test_default_retriever_uses_default_retrieval_when_present(monkeypatch, store):
    import core.bench.retrieval as retrieval
    from core.models import Message
    from core.services.capture import append_messages

    append_messages(
        "ns",
        "main",
        [
            {"role": "user", "content": "one", "external_id": "D1:1"},
            {"role": "user", "content": "two", "external_id": "D1:2"},
            {"role": "user", "content": "three", "external_id": "D1:3"},
        ],
    )
    pk = {m.external_id: m.id for m in Message.select()}
    asked = {}

    def fake_default(namespace, question, *, question_time=None, limit=50):
        asked.update(namespace=namespace, question=question, question_time=question_time, limit=limit)
        # a raw hit, an event citing two messages, a message pk and a repeat
        return [{"external_id": "D1:2"}, {"source_message_ids": [pk["D1:3"], pk["D1:2"]]}, pk["D1:1"], "D1:3"]

    monkeypatch.setattr(retrieval, "_load_default_retrieval", lambda: fake_default)
    default = DefaultRetriever()
    assert default.name == "default_retrieval"
    assert default.rank("ns", "q", question_time="2024-01-01T00:00:00+00:00", limit=7) == ["D1:2", "D1:3", "D1:1"]
    assert asked == {"namespace": "ns", "question": "q", "question_time": "2024-01-01T00:00:00+00:00", "limit": 7}
    with pytest.raises(TypeError):
        message_external_ids([object()])


def test_bm25_baseline_ties_keep_corpus_order_and_dedupe():
    baseline = Bm25Baseline(
        ["a", "b", "c", "d", "b"], ["red apple", "green pear", "blue sky", "yellow sun", "pear pear"]
    )
    assert baseline.rank("nothing matches") == ["a", "b", "c", "d"]  # all zero: corpus order, b once
    assert baseline.rank("pear")[0] == "b"
    assert baseline.rank("pear", limit=1) == ["b"]
    assert Bm25Baseline([], []).rank("x") == []
    assert Bm25Baseline(["a"], ["!!!"]).rank("x") == ["a"]


def test_cli_locomo_and_longmemeval(locomo_file, lme_file, tmp_path, capsys, monkeypatch):
    from workbench.cli import main, output

    monkeypatch.setattr(output.console, "width", 200)  # the tables are wide; keep rich from folding them

    out = tmp_path / "locomo-report.json"
    assert main(["bench", "locomo", "--data", str(locomo_file), "--split", "dev", "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "turn recall" in printed and "multi-hop" in printed and " / " in printed
    assert json.loads(out.read_text())["questions"] == 3

    out = tmp_path / "lme-report.json"
    assert (
        main(
            ["bench", "longmemeval", "--data", str(lme_file), "--split", "all", "--limit", "3", "--json-out", str(out)]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "recall_any" in printed and "knowledge-update" in printed
    assert json.loads(out.read_text())["questions"] == 2

    assert main(["bench", "longmemeval", "--data", str(lme_file), "--split", "all", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["benchmark"] == "longmemeval"


def test_longmemeval_with_db_runs_in_one_process_unless_told_otherwise(lme_file, tmp_path, capsys, monkeypatch):
    from workbench.cli import bench, main

    monkeypatch.setattr(bench, "default_workers", lambda: 4)  # a many-core machine
    url = fresh_url(tmp_path, "lme.db")
    assert main(["bench", "longmemeval", "--data", str(lme_file), "--split", "all", "--db", url, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["workers"] == 1
    assert main(["bench", "longmemeval", "--data", str(lme_file), "--split", "all", "--db", url, "--workers", "2"]) == 2
    assert "pass --workers 1 (the default with --db), or drop --db" in " ".join(capsys.readouterr().err.split())


@pytest.mark.parametrize(
    "argv",
    [
        ["locomo", "--data", "{locomo}", "--json-out", "{missing}"],
        ["coverage", "--data", "{locomo}", "--json-out", "{missing}"],
        ["longmemeval", "--data", "{lme}", "--json-out", "{missing}"],
        ["import", "--candidates", "5", "--json-out", "{missing}"],
        ["ui", "--events", "50", "--json-out", "{missing}"],
        ["scale", "--messages", "100", "--svg", "{missing}"],
        ["scale", "--messages", "100", "--json-out", "{tmp}"],
        ["scale", "--messages", "100", "--workdir", "{locomo}"],
    ],
)
def test_bench_output_paths_are_checked_before_the_run(argv, locomo_file, lme_file, tmp_path, capsys, monkeypatch):
    """A report path that cannot be written is refused up front, not after a run of hours."""
    import core.bench.coverage
    import core.bench.imports
    import core.bench.locomo
    import core.bench.longmemeval
    import core.bench.scale
    import workbench.bench_ui
    from workbench.cli import main

    def ran(*args, **kwargs):
        pytest.fail("the benchmark ran")

    for module, name in (
        (core.bench.locomo, "run_locomo"),
        (core.bench.coverage, "run_coverage"),
        (core.bench.longmemeval, "run_longmemeval"),
        (core.bench.imports, "run_import_bench"),
        (workbench.bench_ui, "run"),
        (core.bench.scale, "run_scale"),
    ):
        monkeypatch.setattr(module, name, ran)
    names = {"locomo": locomo_file, "lme": lme_file, "missing": tmp_path / "no" / "report.json", "tmp": tmp_path}
    assert main(["bench", *(a.format(**names) for a in argv)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("strata: error: --") and ("does not exist" in err or "a directory" in err)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["import", "--candidates", "0"], "--candidates: expected an integer from 1 to 200, got 0"),
        (["import", "--candidates", "500"], "--candidates: expected an integer from 1 to 200, got 500"),
        (["import", "--people", "0"], "--people: expected an integer from 1 to 20, got 0"),
        (["import", "--top-k", "0"], "--top-k: expected an integer from 1 to 20, got 0"),
        (["import", "--threshold", "1.5"], "--threshold: must be from 0 to 1, got 1.5"),
        (["ui", "--events", "-5"], "--events: expected an integer from 1 to 2^63-1, got -5"),
        (["scale", "--queries", "-1"], "--queries: expected an integer from 1 to 2^63-1, got -1"),
        (["scale", "--derive-limit", "0"], "--derive-limit: expected an integer from 1 to 2^63-1, got 0"),
        (["longmemeval", "--data", "x", "--limit", "0"], "--limit: expected an integer from 1 to 2^63-1, got 0"),
        (["longmemeval", "--data", "x", "--workers", "many"], "--workers: expected an integer, got 'many'"),
    ],
)
def test_bench_numbers_out_of_range_are_usage_errors(argv, message, capsys):
    from workbench.cli import main

    with pytest.raises(SystemExit) as info:
        main(["bench", *argv])
    assert info.value.code == 2 and message in capsys.readouterr().err


def test_longmemeval_workers_give_the_same_rankings(lme_file):
    serial = run_longmemeval(lme_file, "all", workers=1)
    parallel = run_longmemeval(lme_file, "all", workers=2)
    assert parallel["workers"] == 2 and parallel["retriever"] == serial["retriever"] == "default_retrieval"
    assert [q["ranked"] for q in parallel["per_question"]] == [q["ranked"] for q in serial["per_question"]]
    assert parallel["results"] == serial["results"]


def test_longmemeval_derives_what_default_retrieval_reads_unless_asked_for_all(lme_file):
    lean = run_longmemeval(lme_file, "all")
    full = run_longmemeval(lme_file, "all", derive="all")
    assert lean["derive_stages"] == ["summary", "extraction"]
    assert full["derive_stages"] == ["summary", "extraction", "graph"]
    assert full["derive"]["jobs"] > lean["derive"]["jobs"] and full["derive"]["events"] == lean["derive"]["events"]
    # The graph is not read by default retrieval: the rankings do not change.
    assert [q["ranked"] for q in full["per_question"]] == [q["ranked"] for q in lean["per_question"]]
    with pytest.raises(InvalidInputError, match="--derive"):
        run_longmemeval(lme_file, "all", derive="some")
