"""The model-backed import decider: its prompt and schema, the strict check of an answer, the cap on a
confidence the evidence does not back, token accounting through the fake server, and
`strata bench import --provider openai` end to end on it."""

from __future__ import annotations

import json
import re

import pytest

from core.providers.import_decision import (
    SECTIONS,
    UnusableAnswer,
    render_decision_prompt,
    validate_answer,
    weakness,
)
from core.providers.openai_compat import OpenAICompatProvider
from core.providers.schemas import DECIDE_INSTRUCTIONS, DECIDE_SCHEMA, DECISION_FIELDS, IMPORT_ACTIONS
from core.providers.scripted import ScriptedProvider
from core.services.capture import append_messages
from core.services.derive import run_pending
from core.services.import_batches import get_batch
from core.services.import_preview import preview_import
from tests.fake_llm import llm, tool_call, usage  # noqa: F401 (llm is a fixture)

KEY = "sk-test-9f8e7d6c5b4a-secret"
TOOL = "strata_decide_external_memory"
NS = "ns"
LLM_ENV = (
    "STRATA_LLM_BASE_URL",
    "STRATA_LLM_MODEL",
    "STRATA_LLM_API_KEY",
    "DEEPSEEK_API_KEY",
    "STRATA_PRICE_INPUT_PER_MTOK",
    "STRATA_PRICE_OUTPUT_PER_MTOK",
)


@pytest.fixture(autouse=True)
def _no_llm_env(monkeypatch):
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)


def v2(*candidates) -> str:
    return json.dumps(
        {
            "schemaVersion": "stratagate.external-memory.v2",
            "sourceType": "external_ai_memory_export",
            "sourceSystem": "OtherAI",
            "exportedAt": "2025-06-01",
            "candidates": list(candidates),
        }
    )


def good(action="supersede", targets=(), confidence=0.95, **extra) -> dict:
    return {
        "action": action,
        "existing_event_ids": list(targets),
        "confidence": confidence,
        "reason": "Maya's home city changes from Lisbon to Porto",
        "subject": "Maya",
        "slot": "home city",
        "value": "Porto",
        **extra,
    }


CONTEXT = {
    "candidate": {
        "title": "Maya moved",
        "summary": "Maya moved from Lisbon to Porto in 2025.",
        "tags": ["home"],
        "temporal": {
            "mentioned_at": "2025-05-01",
            "happened_start": "2025",
            "precision": "year",
            "participants": ["Maya"],
            "original_text": "in 2025",
        },
    },
    "matches": [
        {
            "id": 12,
            "title": "Maya lives in Lisbon",
            "summary": "Maya lives in Lisbon.",
            "tags": [],
            "participants": ["Maya"],
            "status": "active",
            "mentioned_at": "2024-03-01T10:00:00+00:00",
            "happened_start": None,
            "happened_end": None,
            "time_status": "ongoing",
            "score": 0.03,
        },
        {
            "id": 15,
            "title": "Ben's dog",
            "summary": "Ben has a dog named Rex.",
            "participants": ["Ben"],
            "status": "active",
            "mentioned_at": "2024-03-03T10:00:00+00:00",
            "score": 0.01,
        },
    ],
    "source": {"system": "OtherAI", "exported_at": "2025-06-01", "format": "v2", "recovered": False},
    "user": {"names": ["Maya"]},
    "earlier": [{"position": 1, "title": "Maya's job", "summary": "Maya works at Acme."}],
}


# -- the prompt and the schema ------------------------------------------------------------


def test_the_prompt_shows_candidate_earlier_items_and_matches_with_their_times():
    text = render_decision_prompt(CONTEXT)
    places = [text.index(s) for s in SECTIONS]
    assert places == sorted(places), "sections in order: candidate, earlier items, matches, answer"
    candidate, earlier, matches, answer = (text[a:b] for a, b in zip(places, places[1:] + [len(text)]))
    assert "summary: Maya moved from Lisbon to Porto in 2025." in candidate
    assert 'mentioned 2025-05-01; happened 2025 (year); in its words "in 2025"' in candidate
    assert "export date (not the time anything happened): 2025-06-01" in candidate
    assert "the user: Maya" in candidate and "participants: Maya" in candidate
    assert "item 1: Maya's job — Maya works at Acme." in earlier
    assert "(2; cite only these ids)" in matches
    assert "[id 12] Maya lives in Lisbon" in matches and "[id 15] Ben's dog" in matches
    assert "status active; mentioned 2024-03-01T10:00:00+00:00; happened: unknown; status ongoing" in matches
    assert "existing_event_ids (only from: 12, 15)" in answer
    empty = render_decision_prompt({"candidate": {"title": "Hi", "summary": "Said hello."}, "matches": []})
    assert "(none: nothing stored resembles the candidate, so the action is add or ignore)" in empty
    assert "the user: no name known" in empty and "(0)\n(none)" in empty
    several = render_decision_prompt({**CONTEXT, "user": {"names": ["Maya", "Ben"]}})
    assert "the user: not known (several people speak as users here: Maya, Ben)" in several


def test_the_instructions_define_every_action_and_the_schema_is_strict():
    text = DECIDE_INSTRUCTIONS
    for action in IMPORT_ACTIONS:
        assert f"- {action}:" in text
    assert "same subject and the same slot, the values differ, and the candidate is newer" in text
    assert "says the same thing" in text and "nothing says which is newer" in text
    assert "no match has this subject and slot" in text and "small talk" in text and "exact restatement" in text
    assert "Cite only ids shown under Stored matches" in text
    assert DECIDE_SCHEMA["additionalProperties"] is False
    assert (
        set(DECIDE_SCHEMA["required"])
        == set(DECISION_FIELDS)
        == {"action", "existing_event_ids", "confidence", "reason", "subject", "slot", "value"}
    )
    assert DECIDE_SCHEMA["properties"]["action"]["enum"] == list(IMPORT_ACTIONS)


def test_the_provider_sends_the_prompt_and_schema_as_a_forced_tool_call(llm):
    llm.queue(tool_call(good(targets=[12]), name=TOOL, usage=usage(900, 60)))
    provider = OpenAICompatProvider(base_url=llm.url, model="test-model", api_key=KEY, retry_delay=0, timeout=5)
    raw = provider.decide_external_memory(CONTEXT)
    assert json.loads(raw) == good(targets=[12])  # as the model gave it: the service checks it
    body = llm.requests[0]["json"]
    assert body["tool_choice"]["function"]["name"] == TOOL
    assert body["tools"][0]["function"]["parameters"] == DECIDE_SCHEMA
    assert body["messages"][0]["content"] == DECIDE_INSTRUCTIONS
    assert body["messages"][1]["content"] == render_decision_prompt(CONTEXT)
    spent = provider.usage
    assert (spent["calls"], spent["reported_calls"], spent["prompt_tokens"], spent["completion_tokens"]) == (
        1,
        1,
        900,
        60,
    )
    assert spent["estimated_prompt_tokens"] > 100 and spent["estimated_completion_tokens"] > 10


# -- validation ---------------------------------------------------------------------------


def test_a_good_answer_passes_and_keeps_what_it_matched():
    answer = validate_answer(good(targets=[12], stored_value="Lisbon"), [12, 15])
    assert answer["action"] == "supersede" and answer["existing_event_ids"] == [12]
    assert (answer["subject"], answer["slot"], answer["value"], answer["stored_value"]) == (
        "Maya",
        "home city",
        "Porto",
        "Lisbon",
    )
    assert weakness(answer, CONTEXT["candidate"], CONTEXT["matches"], ["Maya"]) is None


@pytest.mark.parametrize(
    "raw, message",
    [
        ({k: v for k, v in good(targets=[12]).items() if k != "slot"}, "the answer lacks slot"),
        (good(targets=[12, 99]), "it cites event 99, which is not among the matches shown (12, 15)"),
        (good(targets=[]), "supersede cites no match"),
        (good(targets=[12], confidence=1.5), "confidence 1.5 is not a number from 0 to 1"),
        (good(targets=[12], confidence=True), "confidence True"),
        (good(action="replace", targets=[12]), "action 'replace' is not one of"),
        (good(targets=["12"]), "existing_event_ids is not a list of event ids"),
        ({**good(targets=[12]), "reason": " "}, "the reason is empty"),
        ({**good(targets=[12]), "value": 7}, "value is not a string"),
        ("I would supersede event 12, since Maya moved.", "not JSON even after recovery"),
        ('{"action": "supersede", "existing_event_ids": [12], "confid', "not JSON even after recovery"),
        ([good(targets=[12])], "the answer is not a JSON object"),
    ],
)
def test_an_answer_that_fails_the_schema_is_unusable(raw, message):
    with pytest.raises(UnusableAnswer, match=re.escape(message)):
        validate_answer(raw, [12, 15])


def test_broken_json_is_recovered_once():
    prose = "Let me think. The candidate updates event 12.\n```json\n" + json.dumps(good(targets=[12])) + "\n```\nDone."
    assert validate_answer(prose, [12, 15])["existing_event_ids"] == [12]
    assert validate_answer(json.dumps(good(action="ADD", targets=[12])), [12])["existing_event_ids"] == []


@pytest.mark.parametrize(
    "change, why",
    [
        ({"subject": "", "slot": ""}, "it names no subject / slot"),
        ({"value": "Amsterdam"}, "its value 'Amsterdam' is not in the candidate's words"),
        ({"subject": "Clara"}, "its subject 'Clara' is neither in the candidate nor in a cited match"),
    ],
)
def test_an_inferred_or_weak_match_is_named(change, why):
    answer = validate_answer({**good(targets=[12]), **change}, [12, 15])
    assert weakness(answer, CONTEXT["candidate"], CONTEXT["matches"], ["Maya"]) == why


def test_small_talk_needs_no_subject_but_an_add_does():
    chatter = validate_answer({**good(action="ignore"), "subject": "", "slot": "", "value": ""}, [12])
    assert weakness(chatter, CONTEXT["candidate"], CONTEXT["matches"]) is None
    add = validate_answer({**good(action="add"), "subject": "", "slot": "", "value": ""}, [12])
    assert weakness(add, CONTEXT["candidate"], CONTEXT["matches"]) == "it names no subject / slot / value"
    about_user = {"title": "Likes jazz", "summary": "Likes jazz."}
    user_add = validate_answer({**good(action="add"), "subject": "the user", "slot": "music", "value": "jazz"}, [])
    assert weakness(user_add, about_user, []) is None


# -- through the import service -----------------------------------------------------------


@pytest.fixture
def maya(store):
    append_messages(
        NS,
        "chat",
        [
            {"role": "user", "content": "Maya lives in Lisbon.", "created_at": "2024-03-01T10:00:00+00:00"},
            {"role": "assistant", "content": "Noted.", "created_at": "2024-03-01T10:00:05+00:00"},
        ],
        close_turn=True,
        close_thread=True,
    )
    assert run_pending(NS).failed == 0
    from core.models import Event

    return next(e.id for e in Event.select() if "Lisbon" in e.summary)


MOVE = {"title": "Maya moved", "summary": "Maya moved from Lisbon to Porto in 2025."}


def _model(*answers) -> ScriptedProvider:
    return ScriptedProvider({"decide_external_memory": list(answers)}, model_backed=True)


def test_a_good_model_answer_is_applied_and_shows_what_it_matched(maya):
    preview = preview_import(NS, v2(MOVE), provider=_model(good(targets=[maya], stored_value="Lisbon")))
    item = preview.items[0]
    assert (item.action, item.target_ids, item.confidence, item.requires_confirmation) == (
        "supersede",
        (maya,),
        0.95,
        False,
    )
    assert item.matched == {"subject": "Maya", "slot": "home city", "value": "Porto", "stored_value": "Lisbon"}
    assert get_batch(preview.batch.id).items[0].matched == item.matched


def test_a_weak_model_answer_is_capped_below_the_threshold(maya):
    preview = preview_import(NS, v2(MOVE), provider=_model({**good(targets=[maya]), "value": ""}))
    item = preview.items[0]
    assert item.action == "supersede" and item.requires_confirmation and item.confidence == 0.84
    assert item.reason.endswith("(a person confirms: it names no value)")
    assert item.effective_action == "ignore"  # until a person chooses


def test_an_unusable_answer_waits_for_a_person_and_is_asked_again_later(maya):
    provider = _model("Sure! Maya moved to Porto, so I'd supersede the Lisbon card.")
    preview = preview_import(NS, v2(MOVE), provider=provider)
    item = preview.items[0]
    assert (item.action, item.confidence, item.requires_confirmation, item.effective_action) == (
        "ignore",
        0.0,
        True,
        "ignore",
    )
    assert item.reason.startswith("the model's answer was unusable (not JSON even after recovery")
    assert preview.batch.status == "awaiting_confirmation" and preview.batch.needs_confirmation == 1
    outside = _model(good(targets=[maya + 1000]))
    item = preview_import(NS, v2(MOVE), provider=outside).items[0]
    assert "which is not among the matches shown" in item.reason and item.requires_confirmation
    from core.models import ImportItem

    assert ImportItem.get(ImportItem.batch == preview.batch.id).decision_key is None  # not reused


def test_the_offline_and_plain_scripted_deciders_are_not_capped(maya):
    plain = ScriptedProvider(
        {
            "decide_external_memory": [
                {"action": "supersede", "existing_event_ids": [maya], "confidence": 0.95, "reason": "scripted"}
            ]
        }
    )
    item = preview_import(NS, v2(MOVE), provider=plain).items[0]
    assert item.confidence == 0.95 and not item.requires_confirmation and item.matched is None


# -- accounting through the fake server ---------------------------------------------------


def test_usage_lands_in_the_items_the_batch_and_import_show(maya, llm, db_url, monkeypatch, capsys):
    llm.queue(
        tool_call(json.dumps(good(targets=[maya])), name=TOOL, usage=usage(1200, 80, prompt_cache_hit_tokens=1000))
    )
    llm.queue(tool_call("no json here", name=TOOL, usage=usage(1100, 5)))
    llm.queue(tool_call(json.dumps(good(action="add", targets=[])), name=TOOL))  # reports no usage
    provider = OpenAICompatProvider(base_url=llm.url, model="test-model", api_key=KEY, retry_delay=0, timeout=5)
    preview = preview_import(
        NS,
        v2(
            MOVE,
            {"title": "Porto flat", "summary": "Maya rents a flat in Porto."},
            {"title": "Cello", "summary": "Priya plays the cello."},
        ),
        provider=provider,
    )
    first, second, third = preview.items
    assert (first.usage["prompt_tokens"], first.usage["completion_tokens"], first.usage["cached_prompt_tokens"]) == (
        1200,
        80,
        1000,
    )
    assert second.usage["prompt_tokens"] == 1100 and "unusable" in second.reason
    assert third.usage["calls"] == 1 and third.usage["reported_calls"] == 0 and third.usage["prompt_tokens"] == 0
    assert third.usage["estimated_prompt_tokens"] > 0  # Strata's own estimate, kept apart
    total = preview.batch.usage
    assert (total["calls"], total["reported_calls"], total["prompt_tokens"], total["completion_tokens"]) == (
        3,
        2,
        2300,
        85,
    )
    assert get_batch(preview.batch.id).batch.usage == total

    from core.db import db
    from workbench.cli import main

    url = db_url  # the store's URL (db.database is only a file path on SQLite)
    db.close()
    monkeypatch.setenv("STRATA_PRICE_INPUT_PER_MTOK", "1")
    monkeypatch.setenv("STRATA_PRICE_OUTPUT_PER_MTOK", "10")
    assert main(["import", "show", str(preview.batch.id), "--db", url]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # 2300 * 1 / 1e6 + 85 * 10 / 1e6 = 0.00315
    assert (
        "openai:test-model: 3 model call(s): 2300 prompt + 85 completion tokens reported (1000 prompt tokens cached)"
    ) in out
    assert "estimated cost 0.0032 USD at 1 / 10 per million input / output tokens" in out
    assert "1 call(s) reported no usage" in out and "not a bill" in out
    assert "matched subject Maya · slot home city · value Porto" in out
    monkeypatch.setenv("STRATA_PRICE_OUTPUT_PER_MTOK", "cheap")
    assert main(["import", "show", str(preview.batch.id), "--db", url]) == 2
    assert "STRATA_PRICE_OUTPUT_PER_MTOK must be a price per million tokens" in capsys.readouterr().err


def test_a_failed_call_is_counted_on_the_batch(maya, llm):
    from core.errors import StrataError

    llm.queue({"error": "busy"}, status=503)
    llm.queue({"error": "busy"}, status=503)
    provider = OpenAICompatProvider(base_url=llm.url, model="test-model", api_key=KEY, retry_delay=0, timeout=5)
    with pytest.raises(StrataError, match="HTTP 503"):
        preview_import(NS, v2(MOVE), provider=provider)
    from core.models import ImportBatch

    batch = ImportBatch.select().order_by(ImportBatch.id.desc()).first()
    assert batch.usage["calls"] == 2 and batch.usage["reported_calls"] == 0 and "HTTP 503" in batch.last_error


# -- the bench, end to end on the fake server ---------------------------------------------


def _decide_add(request: dict) -> tuple[int, dict]:
    prompt = request["messages"][1]["content"]
    summary = re.search(r"^summary: (.*)$", prompt, re.M).group(1)
    answer = {
        "action": "add",
        "existing_event_ids": [],
        "confidence": 0.9,
        "reason": "nothing stored says it",
        "subject": summary.split()[0],
        "slot": "fact",
        "value": summary.split()[-1].rstrip("."),
    }
    return 200, tool_call(answer, name=TOOL, usage=usage(500, 40))


def test_bench_import_with_a_model_reports_model_tokens_and_cost(llm, tmp_path, monkeypatch, capsys):
    from workbench.cli import main

    monkeypatch.setenv("STRATA_LLM_BASE_URL", llm.url)
    monkeypatch.setenv("STRATA_LLM_API_KEY", KEY)
    monkeypatch.setenv("STRATA_LLM_MODEL", "fake-chat")
    llm.respond = _decide_add
    out = tmp_path / "report.json"
    assert (
        main(
            [
                "bench",
                "import",
                "--provider",
                "openai",
                "--candidates",
                "8",
                "--people",
                "3",
                "--seed",
                "5",
                "--json-out",
                str(out),
            ]
        )
        == 0
    )
    printed = " ".join(capsys.readouterr().out.split())
    report = json.loads(out.read_text())
    calls = llm.count
    assert calls >= 1 and all(r["json"]["tool_choice"]["function"]["name"] == TOOL for r in llm.requests)
    assert report["provider"] == "openai" and report["model"] == "fake-chat"
    spent = report["usage"]
    assert (spent["calls"], spent["prompt_tokens"], spent["completion_tokens"]) == (calls, 500 * calls, 40 * calls)
    cost = spent["cost"]
    assert cost["input_per_mtok"] == 0.28 and cost["output_per_mtok"] == 0.42 and "may be out of date" in cost["source"]
    assert cost["estimated_cost"] == round((500 * 0.28 + 40 * 0.42) * calls / 1e6, 6)
    assert report["undo_round_trip"] is True
    assert f"model openai:fake-chat: {calls} model call(s): {500 * calls} prompt + {40 * calls} completion" in printed


def test_bench_import_with_a_model_and_no_key_names_the_variables(tmp_path, capsys, monkeypatch):
    import core.bench.imports
    from workbench.cli import main

    monkeypatch.setattr(core.bench.imports, "_seed_store", lambda *a, **k: pytest.fail("a store was seeded"))
    assert main(["bench", "import", "--provider", "openai", "--candidates", "5"]) == 2
    err = capsys.readouterr().err
    assert "STRATA_LLM_API_KEY" in err and "DEEPSEEK_API_KEY" in err
    import core.bench.import_labelled
    from core.bench.import_labels import LABEL_DIR

    monkeypatch.setattr(core.bench.import_labelled, "build_store", lambda *a, **k: pytest.fail("a store was built"))
    assert (
        main(
            [
                "bench",
                "import",
                "--labels",
                str(LABEL_DIR),
                "--provider",
                "openai",
                "--data",
                str(tmp_path / "none.json"),
            ]
        )
        == 2
    )
    monkeypatch.setenv("STRATA_LLM_API_KEY", KEY)
    monkeypatch.setenv("STRATA_PRICE_INPUT_PER_MTOK", "-1")
    assert main(["bench", "import", "--provider", "openai", "--candidates", "5"]) == 2
    assert "STRATA_PRICE_INPUT_PER_MTOK must be a price" in capsys.readouterr().err


def test_labelled_bench_with_a_model_on_the_fake_server(llm, tmp_path, monkeypatch, capsys):
    from core.bench.import_labels import LABEL_DIR
    from workbench.cli import main

    items = json.loads((LABEL_DIR / "demo.json").read_text())[:3]
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "demo.json").write_text(json.dumps(items))
    monkeypatch.setenv("STRATA_LLM_BASE_URL", llm.url)
    monkeypatch.setenv("STRATA_LLM_API_KEY", KEY)
    llm.respond = _decide_add
    out = tmp_path / "report.json"
    assert (
        main(
            [
                "bench",
                "import",
                "--labels",
                str(labels),
                "--split",
                "all",
                "--provider",
                "openai",
                "--json-out",
                str(out),
            ]
        )
        == 0
    )
    report = json.loads(out.read_text())
    assert report["model"] == "deepseek-chat" and report["items"] == 3
    assert report["usage"]["calls"] == llm.count and report["usage"]["prompt_tokens"] == 500 * llm.count
    assert "model openai:deepseek-chat:" in " ".join(capsys.readouterr().out.split())


def test_migration_to_22_adds_the_accounting_columns_and_keeps_batches(maya, db_url):
    """A store from before schema 22 with a batch in it: the columns arrive, the batch reads as before."""
    from playhouse.migrate import SchemaMigrator, migrate as run

    from core.db import db
    from core.migrations import SCHEMA_VERSION
    from core.models import ImportBatch, ImportItem, SchemaVersion
    from core.api import open_store

    batch = preview_import(NS, v2(MOVE)).batch.id
    migrator = SchemaMigrator.from_database(db)
    run(
        migrator.drop_column(ImportItem._meta.table_name, "matched"),
        migrator.drop_column(ImportItem._meta.table_name, "usage"),
        migrator.drop_column(ImportBatch._meta.table_name, "usage"),
    )
    SchemaVersion.delete().execute()
    SchemaVersion.create(version=21, applied_at="2026-12-01T00:00:00+00:00")
    db.close()
    assert open_store(db_url).schema_version == SCHEMA_VERSION
    assert {"matched", "usage"} <= {c.name for c in db.get_columns(ImportItem._meta.table_name)}
    row = get_batch(batch)
    assert row.batch.usage is None and row.items[0].matched is None and row.items[0].action


def test_an_item_the_export_marks_uncertain_is_not_applied_on_a_models_word():
    unsure = {**CONTEXT["candidate"], "confidence": 0.3}
    answer = validate_answer(good(targets=[12]), [12, 15])
    assert weakness(answer, unsure, CONTEXT["matches"], ["Maya"]) == "the export marks it uncertain (confidence 0.3)"


def test_recovery_tokens_land_on_the_batch_and_a_reply_without_choices_waits_for_a_person(maya, llm):
    recovered = {"reason": "one memory in prose", "candidates": [MOVE]}
    llm.queue(tool_call(recovered, name="strata_recover_external_memory", usage=usage(300, 30)))
    llm.queue({"error": {"message": "overloaded"}}, status=200)  # no choices: an unusable reply, twice
    llm.queue({"error": {"message": "overloaded"}}, status=200)
    provider = OpenAICompatProvider(base_url=llm.url, model="test-model", api_key=KEY, retry_delay=0, timeout=5)
    preview = preview_import(NS, "Here is what I remember: Maya moved from Lisbon to Porto in 2025.", provider=provider)
    item = preview.items[0]
    assert preview.batch.recovered and item.requires_confirmation
    assert item.reason.startswith("the model's answer was unusable (") and "response has no choices" in item.reason
    assert item.usage["calls"] == 2 and item.usage["reported_calls"] == 0
    total = preview.batch.usage
    assert (total["calls"], total["reported_calls"], total["prompt_tokens"], total["completion_tokens"]) == (
        3,
        1,
        300,
        30,
    )


def test_a_reply_in_prose_around_the_json_is_recovered_through_the_fake_server(maya, llm):
    from tests.fake_llm import text_reply

    answer = json.dumps(good(targets=[maya], stored_value="Lisbon"))
    llm.queue(text_reply(f"Thinking it over: Maya moved.\n```json\n{answer}\n```\nHope that helps!"))
    provider = OpenAICompatProvider(base_url=llm.url, model="test-model", api_key=KEY, retry_delay=0, timeout=5)
    item = preview_import(NS, v2(MOVE), provider=provider).items[0]
    assert (item.action, item.target_ids, item.requires_confirmation) == ("supersede", (maya,), False)
    assert item.matched["stored_value"] == "Lisbon" and llm.count == 1


def test_the_graph_projection_of_an_imported_batch_is_charged_to_it(maya, llm):
    from core.services.import_commit import commit_batch

    preview = preview_import(
        NS,
        v2({"title": "Cello", "summary": "Priya plays the cello."}),
        provider=_model(good(action="add", subject="Priya", slot="instrument", value="cello")),
    )
    commit_batch(preview.batch.id)
    llm.queue(
        tool_call(
            {"reason": "nothing to add", "nodes": [], "edges": []}, name="strata_project_graph", usage=usage(700, 20)
        )
    )
    provider = OpenAICompatProvider(base_url=llm.url, model="test-model", api_key=KEY, retry_delay=0, timeout=5)
    assert run_pending(NS, provider=provider).failed == 0 and llm.count == 1
    spent = get_batch(preview.batch.id).batch.usage
    assert (spent["calls"], spent["prompt_tokens"], spent["completion_tokens"]) == (1, 700, 20)


def test_the_workbench_batch_pane_line_says_tokens_and_an_estimate(monkeypatch):
    from types import SimpleNamespace as NS

    from workbench.screens.imports import _spent_line

    batch = NS(provider="openai:deepseek-chat", usage={"calls": 2, "prompt_tokens": 1000, "completion_tokens": 50})
    assert _spent_line(batch) == (
        "openai:deepseek-chat: 2 model call(s) · 1000 + 50 tokens reported · estimated cost "
        "0.0003 USD (an estimate, not a bill)"
    )
    monkeypatch.setenv("STRATA_PRICE_INPUT_PER_MTOK", "free")
    assert "no cost estimate: STRATA_PRICE_INPUT_PER_MTOK must be a price" in _spent_line(batch)


def test_the_cost_preflight_blocks_a_model_decision_past_the_budget_and_a_person_decides(maya):
    from core.services.ledger import list_ledger
    from core.services.policy import read_policy_text, set_policy

    set_policy(NS, read_policy_text("budgets: {session_tokens: 50}", "policy.yaml"))
    provider = _model(good(targets=[maya], stored_value="Lisbon"))
    preview = preview_import(NS, v2(MOVE), provider=provider)
    item = preview.items[0]
    assert item.requires_confirmation and item.effective_action == "ignore"
    assert "not sent to the model" in item.reason and "session budget" in item.reason
    assert [task for task, _ in provider.calls] == []  # the model was never asked
    (row,) = list_ledger(NS, kind="preflight")
    assert row.decision == "block" and row.query.startswith(f"import batch {preview.batch.id}")


def test_the_cost_preflight_lets_a_decision_through_within_the_budget(maya):
    from core.services.ledger import list_ledger
    from core.services.policy import read_policy_text, set_policy

    set_policy(NS, read_policy_text("budgets: {session_tokens: 100000, daily_tokens: 100000}", "policy.yaml"))
    preview = preview_import(NS, v2(MOVE), provider=_model(good(targets=[maya], stored_value="Lisbon")))
    assert preview.items[0].action == "supersede"
    (row,) = list_ledger(NS, kind="preflight")
    assert row.decision == "allow" and 0 < row.tokens < 100000
