"""Reusable widgets of the workbench: header, paged table, empty state, detail panes."""
