"""Test tiers: which tests are ``slow`` and ``bench`` (``snapshot`` tests carry their mark in their file).

``pytest -m "not slow"`` is the fast tier for everyday edits; plain ``pytest`` (what ``bash .ci/run`` runs on
each engine) is the whole suite. A test is ``slow`` when it takes more than about half a second on a small
machine, and every ``snapshot`` and ``bench`` test is ``slow`` as well. The tables name files relative to
``tests/`` (a ``*`` in a file name is a glob) and either every test in them (``ALL``) or test functions by name
(every parameter of a parametrized one); ``tests/test_markers.py`` fails when a name here no longer exists.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
ALL = "*"

# Tests that run a `strata bench …` command, or the benchmarks' own code at a small size.
BENCH: dict[str, str | set[str]] = {
    "core/test_bench_*.py": ALL,
    "workbench/test_cli_bench_floor.py": ALL,
    "workbench/test_bench_launch.py": {
        "test_a_launch_reports_what_a_user_sees",
        "test_quitting_while_the_views_are_built_ahead_ends_the_process_with_the_store_closed",
        "test_bench_ui_launches_strata_ui_on_the_demo_and_on_the_store",
        "test_bench_ui_refuses_a_missing_demo_before_building_anything",
    },
    "workbench/test_cli_import.py": {"test_bench_import_prints_a_table_and_writes_the_report_keys"},
    "core/test_import_labels.py": {"test_bench_import_labels_arguments_are_checked_before_a_run"},
    "core/test_import_decider.py": {"test_benchmark_on_a_small_generated_set"},
    "core/test_import_model_decider.py": {
        "test_bench_import_with_a_model_reports_model_tokens_and_cost",
        "test_bench_import_with_a_model_and_no_key_names_the_variables",
        "test_labelled_bench_with_a_model_on_the_fake_server",
    },
}

# Tests of more than about 0.5 s (measured on a busy 2-core machine) that are neither snapshot nor bench
# tests: the workbench driven through Textual's Pilot, tests that start Python processes, real timeouts,
# property checks over much random text, stores built at size and the wheel.
SLOW: dict[str, str | set[str]] = {
    "workbench/test_pilot_*.py": ALL,
    "workbench/test_bench_launch.py": {
        "test_strata_ui_loads_no_other_command_nor_the_services_before_the_workbench",
        "test_a_workbench_started_with_the_collector_paused_resumes_it_once_its_first_view_shows_data",
        "test_closing_the_backend_stops_a_read_under_way_and_waits_for_its_thread",
    },
    "workbench/test_no_db_on_loop.py": {"test_no_database_call_runs_on_the_event_loop_thread"},
    "workbench/test_cli_ingest.py": {"test_cli_ingest_real_locomo10"},
    "workbench/test_cli_store_inputs.py": {
        "test_demo_never_deletes_a_demo_open_elsewhere",
        "test_bytes_that_are_not_utf8_are_a_usage_error_and_write_nothing",
    },
    "workbench/test_cli_import.py": {"test_preview_decide_commit_show_list_undo_round_trip"},
    "workbench/test_cli_redact.py": {"test_blocks_block_events_and_traces_print_masked_text"},
    "workbench/test_cli_commands.py": {
        "test_events_come_a_page_at_a_time",
        "test_python_dash_m_workbench_runs",
        "test_a_reader_that_stops_early_ends_the_command_quietly",
        "test_cli_import_does_not_load_textual",
        "test_demo_outside_a_terminal_builds_without_opening_the_workbench",
        "test_demo_rebuilds_an_earlier_demo",
        "test_demo_never_builds_over_strata_db",
    },
    "workbench/test_cli_database.py": {
        "test_a_fresh_shell_follows_what_strata_demo_prints_into_the_populated_workbench",
        "test_demo_becomes_the_remembered_default_and_says_when_strata_db_hides_it",
        "test_db_then_env_then_the_remembered_default_then_the_builtin_one",
        "test_the_workbench_opens_what_the_commands_open",
    },
    "core/test_gitmemo.py": {"test_export_round_trips_through_the_importer"},  # two exports and three imports
    "core/test_mcp_server.py": {
        "test_real_mcp_client_session_over_stdio",
        "test_a_server_on_a_new_namespace_works_once_a_turn_is_captured",
        "test_cli_module_does_not_import_textual",
        "test_server_logs_to_stderr_only",
        "test_malformed_messages_get_a_json_rpc_error_and_the_server_keeps_serving",
        "test_every_bad_request_whose_id_can_be_read_is_answered_under_its_id",
        "test_a_request_id_escaping_a_lone_surrogate_is_answered_under_null_and_the_server_keeps_serving",
    },
    "core/test_import_undo_property.py": {"test_undo_equals_never_importing"},
    "core/test_search_segment.py": {
        "test_equal_after_appends_merge_reload_and_deletes",
        "test_a_saved_copy_cut_short_is_built_again_and_a_damaged_one_is_reported",
        "test_a_copy_that_cannot_be_saved_leaves_searches_working",
        "test_a_save_leaves_another_processs_copy_alone_while_it_may_still_be_written",
        "test_saving_again_never_rewrites_the_files_of_an_earlier_copy",
        "test_removals_drop_documents_without_a_rebuild",
        "test_another_namespaces_removal_frees_ids_this_view_must_read",
        "test_fast_scoring_equals_the_reference",
    },
    "core/test_jobs.py": {
        "test_run_pending_waits_out_short_backoffs",
        "test_running_jobs_of_a_killed_process_become_retryable_at_open",
        "test_a_live_process_keeps_its_running_jobs_when_another_opens_the_store",
    },
    "core/test_import_flow.py": {"test_a_process_killed_during_commit_leaves_all_or_nothing"},
    "core/test_providers.py": {
        "test_key_never_leaks",
        "test_slow_answer_times_out_and_is_retried",
        "test_slow_first_answer_then_fast",
    },
    "core/test_derive_order.py": {
        "test_workers_and_concurrent_runs_derive_what_one_run_derives",
        "test_several_processes_opening_a_new_store_at_once_create_it_once",
    },
    "core/test_export.py": {
        "test_export_memory_stays_flat_as_the_store_grows",
        "test_streamed_export_is_the_json_of_the_data_at_any_page_size",
    },
    "core/test_concurrent_writes.py": {
        "test_two_processes_appending_to_one_thread_lose_and_repeat_nothing",
        "test_a_receipt_replayed_by_two_processes_at_once_is_stored_once",
        "test_each_job_is_claimed_by_exactly_one_of_several_workers",
    },
    "core/test_gated_patterns.py": {"test_every_gated_pattern_finds_what_its_pattern_finds"},
    "core/test_store.py": {
        "test_core_imports_without_textual_or_rich",
        "test_no_core_module_imports_the_ui_even_lazily",
        "test_two_writer_processes_lose_nothing",
    },
    "core/test_timeparse.py": {
        "test_random_text_gives_well_formed_mentions",
        "test_start_guided_scan_equals_every_rule_scanning_the_text",
        "test_start_guided_scan_equals_full_scan_on_random_text",
    },
    "core/test_layers.py": {"test_token_order_l3_le_l4_le_l5"},
    "test_packaging.py": ALL,  # builds the wheel
    "core/test_redact.py": {"test_a_provider_error_body_cut_at_the_boundary_holds_no_part_of_the_key"},
}


def _listed(table: dict[str, str | set[str]], file: str, name: str) -> bool:
    return any(fnmatch(file, pattern) and (names == ALL or name in names) for pattern, names in table.items())


def mark(items: list[pytest.Item]) -> None:
    """Add the tier marks to collected tests (called from tests/conftest.py)."""
    for item in items:
        try:
            file = item.path.relative_to(TESTS).as_posix()
        except ValueError:
            continue
        name = getattr(item, "originalname", item.name)
        if _listed(BENCH, file, name):
            item.add_marker(pytest.mark.bench)
        if _listed(SLOW, file, name) or item.get_closest_marker("snapshot") or item.get_closest_marker("bench"):
            item.add_marker(pytest.mark.slow)
