"""Write loadgen/report/card.schema.json from the pair card's types (loadgen/records/card.py card_schema).

Run after changing a record of the card: ``.venv/bin/python scripts/card_schema.py``; tests/records/test_card.py
fails while the file and the types differ.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadgen.records.card import card_schema

#: The committed schema file the tests compare with the types.
SCHEMA_PATH = Path(__file__).resolve().parents[1] / "loadgen" / "report" / "card.schema.json"


def schema_text() -> str:
    """The schema file's text: :func:`card_schema` as indented JSON, one trailing newline."""
    return json.dumps(card_schema(), indent=2) + "\n"


if __name__ == "__main__":
    SCHEMA_PATH.write_text(schema_text())
    print(f"wrote {SCHEMA_PATH}")
