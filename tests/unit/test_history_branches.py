"""History keeps conversation trees (DESIGN.md §17): the stored form, every write path keeping the
branches, a turn on a branch growing its conversation, search over every branch, and the port the
panel reads and switches branches through. On the in-memory backend (the page's queries)."""

from __future__ import annotations

from app.records import SCHEMA


# -- (a) the stored form -----------------------------------------------------------------------

def test_schema_version_4_declares_the_tables_of_version_3_and_a_record_may_hold_a_tree():
    assert max(SCHEMA) == 4 and SCHEMA[4] == SCHEMA[3]  # same tables and indexes: nothing to migrate
