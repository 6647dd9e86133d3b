"""The workbench views (one screen per mode) and its modal dialogs."""
