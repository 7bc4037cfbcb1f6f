"""Typed records: every value that crosses a module or the disk, with to_json/from_json at the disk boundary (docs/architecture.md)."""
