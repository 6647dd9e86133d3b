"""The Imports view: preview a file with progress, decide items, commit and undo (with confirmation)."""

from __future__ import annotations

import asyncio
import json

import pytest
from textual.widgets import DataTable, Input, Static

from tests.stores import fresh_url
from workbench.testing import settle

pytest.importorskip("core.services.import_preview")

EXPORT = {
    "schemaVersion": "stratagate.external-memory.v2",
    "sourceType": "external_ai_memory_export",
    "sourceSystem": "OtherAI",
    "exportedAt": "2026-03-05",
    "candidates": [
        {
            "title": "Maya adopted a cat named Miso",
            "summary": "Maya adopted a grey cat named Miso in March 2026.",
            "participants": ["Maya"],
        },
        {
            "title": "Atlas launch moved",
            "summary": "The Atlas launch moved to Tuesday, March 17.",
            "participants": ["Maya"],
        },
    ],
}


async def confirmed(pilot, key: str) -> None:
    """Press ``key``, check that it asks first, and say yes."""
    from workbench.widgets.confirm import ConfirmScreen

    await pilot.press(key)
    await settle(pilot)
    assert isinstance(pilot.app.screen, ConfirmScreen)
    await pilot.press("y")
    await settle(pilot)


async def timeline_search(pilot, text: str) -> None:
    """Open the timeline and filter it by ``text``."""
    await pilot.press("2")
    await settle(pilot)
    await pilot.press("f", *text, "enter")
    await settle(pilot)


async def test_preview_decide_commit_and_undo(make_app, tmp_path):
    from workbench.screens.imports import ImportsScreen

    export = tmp_path / "export.json"
    export.write_text(json.dumps(EXPORT), encoding="utf-8")
    app = make_app()
    messages = []
    async with app.run_test(size=(120, 36), message_hook=messages.append) as pilot:
        await pilot.press("5")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ImportsScreen)
        assert "No imports yet" in str(screen.query_one("#batch-head", Static).render())
        await pilot.press("o")
        screen.query_one("#i-path", Input).value = str(export)
        await pilot.press("enter")
        await settle(pilot)
        assert any(isinstance(m, ImportsScreen.PreviewProgress) for m in messages)
        preview = screen.preview
        assert preview is not None and preview.batch.total == 2
        items = screen.query_one("#items", DataTable)
        assert items.row_count == 2
        assert all(item.state == "decided" for item in preview.items)
        # a person's choice for the first item
        items.focus()
        items.move_cursor(row=0)
        await pilot.press("a")
        await settle(pilot)
        assert screen.preview.items[0].choice_action == "add"
        assert [str(cell) for cell in items.get_row_at(0)[1:3]] == ["you", "ADD"]
        # commit asks first
        await confirmed(pilot, "C")
        assert screen.preview.batch.status == "committed"
        # a committed item is decided: none is left marked "choose"
        assert all(str(items.get_row_at(i)[1]) != "choose" for i in range(items.row_count))
        created = screen.preview.items[0].created_event_id
        assert created is not None
        # the result is visible in the timeline
        await timeline_search(pilot, "Miso")
        assert [r.id for r in app.screen.query_one("#events").items] == [created]
        # undo asks first, then shows its result
        await pilot.press("5")
        await settle(pilot)
        await confirmed(pilot, "U")
        assert screen.preview.batch.status == "undone"
        assert created in screen.undo_result.removed_event_ids
        assert "undo removed events" in str(screen.query_one("#batch-head", Static).render())
        await timeline_search(pilot, "Miso")
        assert app.screen.query_one("#events").row_count == 0


async def test_an_empty_store_imports_into_a_new_namespace(tmp_path, config):
    from workbench.app import Workbench
    from workbench.screens.imports import ImportsScreen

    export = tmp_path / "export.json"
    export.write_text(json.dumps(EXPORT), encoding="utf-8")
    app = Workbench(db_url=fresh_url(tmp_path, "empty.db"), config=config)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        assert app.namespace is None and app.screen.has_class("-empty")
        await pilot.press("5")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ImportsScreen)
        assert not screen.has_class("-empty")  # the view itself, not the newcomer's message
        field = screen.query_one("#i-namespace", Input)
        assert field.value == "default"
        assert "new namespace default" in str(screen.query_one("#batch-head", Static).render())
        field.value = "work"
        screen.query_one("#i-path", Input).value = str(export)
        screen.query_one("#i-path", Input).focus()
        await pilot.press("enter")
        await settle(pilot)
        assert screen.preview is not None and screen.preview.batch.namespace == "work"
        assert screen.query_one("#items", DataTable).row_count == 2
        screen.query_one("#items", DataTable).focus()
        await confirmed(pilot, "C")
        assert screen.preview.batch.status == "committed"
        # the new namespace is created, listed and opened; its events are in the timeline
        assert app.namespaces == ("work",) and app.namespace == "work"
        await pilot.press("2")
        await settle(pilot)
        assert not app.screen.has_class("-empty")
        created = {i.created_event_id for i in screen.preview.items} - {None}
        assert created and created <= {r.id for r in app.screen.query_one("#events").items}


# ----------------------------------------------------------------------------- the keyboard path

FACTS = (
    "- Omar runs marathons every spring.\n- The Atlas launch moved to Tuesday, March 17.\n"
    "- Maya prefers window seats on flights.\n- Maya adopted a grey cat named Miso.\n"
)


class Decider:
    """Decides by position, with targets among the matches the preview found (whatever the search
    returns), so these tests follow the keys and not the decider's judgement: item 1 is added,
    2 proposes superseding two events and 3 merging one, both below the threshold; 4 is ignored."""

    name = "scripted"
    model = None
    reads_context_lazily = False

    def decide_external_memory(self, context):
        ids = [m["id"] for m in context["matches"]]
        title = context["candidate"]["title"]
        if title.startswith("Omar"):
            return {"action": "add", "existing_event_ids": [], "confidence": 0.95, "reason": "new"}
        if title.startswith("The Atlas"):
            return {
                "action": "supersede",
                "existing_event_ids": ids[:2],
                "confidence": 0.6,
                "reason": "Atlas · launch date · March 17",
            }
        if title.startswith("Maya prefers"):
            return {"action": "merge", "existing_event_ids": ids[:1], "confidence": 0.5, "reason": "seat"}
        return {"action": "ignore", "existing_event_ids": ids[:1], "confidence": 0.95, "reason": "known"}


@pytest.fixture
def decider(monkeypatch):
    import core.services.import_preview as service

    provider = Decider()
    monkeypatch.setattr(service, "get_provider", lambda name=None: provider)
    return provider


async def previewed(pilot, tmp_path, text: str = FACTS, name: str = "facts.txt"):
    """Open the imports view and preview ``text`` from a file typed into the path field."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    await pilot.press("5")
    await settle(pilot)
    await pilot.press("o")
    pilot.app.screen.query_one("#i-path", Input).value = str(path)
    await pilot.press("enter")
    await settle(pilot)
    return pilot.app.screen


def focused_id(app) -> str | None:
    return app.focused.id if app.focused is not None else None


def row_text(screen, row: int) -> list[str]:
    return [str(cell) for cell in screen.query_one("#items").get_row_at(row)]


def toasts(app) -> list[tuple[str, str]]:
    return [(n.title, n.message) for n in app._notifications]


async def test_a_txt_file_is_a_text_list_and_waiting_items_show_their_proposal(make_app, tmp_path, decider):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await previewed(pilot, tmp_path)
        assert screen.preview.batch.format == "text" and screen.preview.batch.total == 4
        assert str(screen.query_one("#i-format").value) == "text"
        atlas = screen.preview.items[1]
        assert atlas.requires_confirmation and atlas.effective_action == "ignore" and len(atlas.target_ids) == 2
        # The row shows what was proposed and what it points at, by title, not only the IGNORE commit would apply.
        cells = row_text(screen, 1)
        first = atlas.matches[0]
        assert cells[1] == "choose" and cells[2] == "SUPERSEDE?"
        assert cells[5].startswith(f"#{first.event_id} {first.title[:8]}") and cells[5].endswith("+1")
        assert row_text(screen, 2)[2] == "MERGE?" and row_text(screen, 0)[2] == "ADD"
        # A JSON file after it is JSON again.
        await previewed(pilot, tmp_path, json.dumps(EXPORT), "export.json")
        assert screen.preview.batch.format == "v2" and str(screen.query_one("#i-format").value) == "v2"


async def test_enter_and_arrows_go_into_the_items_and_esc_comes_back(make_app, tmp_path, decider):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await previewed(pilot, tmp_path)
        screen.query_one("#batches").focus()
        await pilot.press("enter")
        assert focused_id(app) == "items"
        await pilot.press("j", "enter")  # deeper: the item's detail
        assert focused_id(app) == "item-detail"
        assert "proposed SUPERSEDE" in str(screen.query_one("#item-text").render())
        await pilot.press("escape")
        assert focused_id(app) == "items" and screen.query_one("#items").cursor_row == 1
        await pilot.press("escape")
        assert focused_id(app) == "batches"
        await pilot.press("right")
        assert focused_id(app) == "items"
        await pilot.press("left")
        assert focused_id(app) == "batches"


async def test_decision_keys_act_only_on_the_focused_item(make_app, tmp_path, decider):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await previewed(pilot, tmp_path)
        items = screen.query_one("#items")
        items.move_cursor(row=1)
        screen.query_one("#batches").focus()
        await pilot.press("a", "i", "r")  # the batch list has focus: no item is touched
        await settle(pilot)
        assert all(i.choice_action is None for i in screen.preview.items)
        await pilot.press("enter", "a")  # into the items, where the cursor is: item 2
        await settle(pilot)
        assert [i.choice_action for i in screen.preview.items] == [None, "add", None, None]
        assert row_text(screen, 1)[1:3] == ["you", "ADD"] and focused_id(app) == "items"


async def test_next_and_previous_item_to_decide_and_the_filter(make_app, tmp_path, decider):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await previewed(pilot, tmp_path)
        items = screen.query_one("#items")
        screen.query_one("#batches").focus()
        await pilot.press("right_square_bracket")  # from the batches: the first one waiting
        assert focused_id(app) == "items" and items.current.position == 2
        await pilot.press("right_square_bracket")
        assert items.current.position == 3
        await pilot.press("right_square_bracket")  # wraps around
        assert items.current.position == 2
        await pilot.press("left_square_bracket")
        assert items.current.position == 3
        await pilot.press("f")
        assert [i.position for i in items.items] == [2, 3] and items.current.position == 3
        assert "showing only the 2 waiting" in str(screen.query_one("#batch-head").render())
        await pilot.press("k", "i")  # deciding item 2 takes it off the list; the cursor is on the next one
        await settle(pilot)
        assert [i.position for i in items.items] == [3] and items.current.position == 3
        await pilot.press("i")
        await settle(pilot)
        assert items.row_count == 0
        assert "Nothing waits for a decision" in str(screen.query_one("#item-text").render())
        await pilot.press("right_square_bracket")
        assert any("no item waits" in message for _, message in toasts(app))
        await pilot.press("f")
        assert [i.position for i in items.items] == [1, 2, 3, 4]


async def test_several_targets_any_event_id_and_reset(make_app, tmp_path, decider):
    from core.models import Event
    from workbench.screens.imports import TargetScreen
    from workbench.widgets.confirm import ConfirmScreen

    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await previewed(pilot, tmp_path)
        item = screen.preview.items[2]  # merge into one match, waiting
        known = {m.event_id for m in item.matches}

        def another_event() -> int:
            return next(
                e.id for e in Event.select().where(Event.status == "active").order_by(Event.id) if e.id not in known
            )

        other = await asyncio.wrap_future(app.backend.submit(another_event))  # never on the event loop
        assert focused_id(app) == "items"  # a preview just made is ready to be decided
        await pilot.press("j", "j", "t")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, TargetScreen)
        assert list(dialog.query_one("#target-list").selected) == [item.matches[0].event_id]
        await pilot.press("j", "space")  # tick the second match too
        dialog.query_one("#target-ids").value = f"#{other}"  # and one the search missed
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen
        chosen = screen.preview.items[2]
        wanted = (item.matches[0].event_id, item.matches[1].event_id, other)
        assert chosen.choice_action == "merge" and chosen.choice_target_ids == wanted
        assert [e.event_id for e in chosen.chosen_events] == [other]
        assert row_text(screen, 2)[1:3] == ["you", "MERGE"] and row_text(screen, 2)[5].endswith("+2")
        detail = str(screen.query_one("#item-text").render())
        assert f"#{other}" in detail and "chosen by id" in detail and "your choice MERGE" in detail
        # A supersede keeps the chosen targets.
        await pilot.press("s")
        await settle(pilot)
        assert screen.preview.items[2].choice_target_ids == wanted
        # r forgets the choice: the item waits again.
        await pilot.press("r")
        await settle(pilot)
        assert screen.preview.items[2].choice_action is None and row_text(screen, 2)[1] == "choose"
        # R forgets every choice, after asking.
        await pilot.press("a", "j", "i")
        await settle(pilot)
        assert [i.choice_action for i in screen.preview.items][2:] == ["add", "ignore"]
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        assert all(i.choice_action is None for i in screen.preview.items)


async def test_tab_completes_the_path(make_app, tmp_path, decider):
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "other-assistant.txt").write_text(FACTS, encoding="utf-8")
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("5")
        await settle(pilot)
        await pilot.press("o")
        await pilot.press(*str(tmp_path / "exp"))
        await settle(pilot)
        await pilot.press("tab")
        field = app.screen.query_one("#i-path", Input)
        assert field.value == f"{folder}/" and focused_id(app) == "i-path"
        await settle(pilot)
        await pilot.press("tab")
        assert field.value == str(folder / "other-assistant.txt")
        await settle(pilot)
        await pilot.press("tab")  # nothing left to complete: tab moves on, as anywhere else
        assert focused_id(app) != "i-path"
        field.focus()
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.preview.batch.total == 4


async def test_a_failed_preview_says_why_in_its_own_words(make_app, tmp_path, decider):
    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        bad = json.dumps({**EXPORT, "schemaVersion": "stratagate.external-memory.v9"})
        screen = await previewed(pilot, tmp_path, bad, "bad.json")
        head = str(screen.query_one("#batch-head").render())
        assert "Deciding every item" not in head and "The preview failed" in head and "schemaVersion" in head
        assert "No imports yet" in head  # what the pane said before
        assert not screen.query_one("#i-progress").display
        titles = [title for title, _ in toasts(app)]
        assert titles == ["import: the preview failed"]
        assert not any("preview-run" in f"{t} {m}" for t, m in toasts(app))
        # The next preview clears the message.
        await previewed(pilot, tmp_path)
        head = str(screen.query_one("#batch-head").render())
        assert "The preview failed" not in head and screen.preview.batch.total == 4


async def test_the_detail_shows_the_subject_slot_and_value_matched(make_app, tmp_path, decider):
    import dataclasses

    from workbench.screens.imports import item_detail

    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await previewed(pilot, tmp_path)
        item = screen.preview.items[1]
        assert "reason Atlas · launch date · March 17" in str(item_detail(item, screen.preview.batch))
        # Whatever fields a decision carries: read when there, never required.
        plain = str(item_detail(item, screen.preview.batch))
        assert "matched" not in plain.split("reason")[0]
        Rich = dataclasses.make_dataclass("Rich", [("subject", str), ("slot", str), ("value", str)])
        richer = type(
            "Item",
            (),
            {
                **{f.name: getattr(item, f.name) for f in dataclasses.fields(item)},
                "subject": "Atlas",
                "slot": "launch date",
                "value": "March 17",
                "matches": tuple(
                    type(
                        "Match",
                        (),
                        {
                            **{f.name: getattr(m, f.name) for f in dataclasses.fields(m)},
                            "matched": Rich("Atlas", "launch", "March 3"),
                        },
                    )
                    for m in item.matches
                ),
            },
        )
        text = str(item_detail(richer, screen.preview.batch))
        assert "matched subject Atlas · slot launch date · value March 17" in text
        assert "subject Atlas · slot launch · value March 3" in text


async def test_the_view_s_own_widgets_have_remappable_listed_keys(make_app, tmp_path, decider):
    from workbench.app import binding_ids
    from workbench.config import Config
    from workbench.screens.help import HelpScreen

    ids = binding_ids()
    assert {
        "imports.items",
        "imports.detail",
        "imports.complete",
        "imports.next-waiting",
        "imports.reset",
        "targets.apply",
        "paste.preview",
    } <= ids
    app = make_app(config=Config(theme="strata-dark", path=None, keymap={"imports.items": "l"}))
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await previewed(pilot, tmp_path)
        screen.query_one("#batches").focus()
        await pilot.press("l")
        assert focused_id(app) == "items"
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        keys = {row[2]: row[0] for row in app.screen.rows}
        assert keys["imports.items"] == "l" and keys["imports.complete"] == "tab"


async def test_a_stale_commit_writes_nothing_and_shows_the_refreshed_preview(make_app, tmp_path, decider):
    from core.services.capture import append_turn

    app = make_app()
    async with app.run_test(size=(120, 36)) as pilot:
        screen = await previewed(pilot, tmp_path)
        before = screen.preview.batch.preview_revision
        await asyncio.wrap_future(app.backend.submit(lambda: append_turn("demo", "later", "Unrelated.", "Ok.")))
        await confirmed(pilot, "C")
        assert "import: nothing was committed" in [title for title, _ in toasts(app)]
        assert screen.preview.batch.status != "committed" and screen.preview.batch.preview_revision > before
        await confirmed(pilot, "C")
        assert screen.preview.batch.status == "committed"
