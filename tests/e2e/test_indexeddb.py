"""The IndexedDB layer in Chromium: ``app.browser.indexeddb`` over Dexie, and its failure modes
(DESIGN.md §9, app/records.py).

Each test runs Python in the booted page (PyScript's own interpreter) against the
real IndexedDB, and breaks IndexedDB the way browsers do: missing, ``open``
throwing, an open request failing asynchronously, another tab holding an older
version (blocked), another tab upgrading (versionchange), the database deleted
(eviction), a full quota, an aborted transaction.
"""

from __future__ import annotations

import json
import textwrap

from app.records import SCHEMA
from bench.scripts import RUN_PY


PRELUDE = """
import json, math
from app.browser.indexeddb import IndexedDbBackend
from app.records import RecordStoreError
events = []
async def attempt(coro):
    try:
        return ["ok", await coro]
    except RecordStoreError as error:
        return [error.kind, error.message]
ALL = (["s", -math.inf], ["s", math.inf])
IDX = "[stageId+updatedAt+taskId]"
"""


def fresh_database(page) -> None:
    """Close the app's own connection (it opens the database at boot) and delete the database,
    so a test starts from a page with no connection and no database. It first waits until
    history has started: its open runs after ready and, still in flight, would reopen it."""
    page.wait_for_function("() => document.documentElement.dataset.history")
    page.evaluate("""() => { window.agentbarIndexedDbAdapter.close();
      return new Promise((resolve, reject) => { const r = indexedDB.deleteDatabase('agentbar');
        r.onsuccess = () => resolve(); r.onerror = () => reject(r.error); r.onblocked = () => resolve(); }); }""")


def run_py(page, code: str):
    """Run ``code`` (its last line an expression giving JSON text) in the page; return the parsed value."""
    return json.loads(page.evaluate(RUN_PY, PRELUDE + textwrap.dedent(code)))


def records_round_trip_in_order_and_an_aborted_transaction_writes_nothing(page) -> None:
    result = run_py(page, """
        b = IndexedDbBackend()
        await b.open()
        await b.write([("put", "conversations", {"taskId": f"t{i}", "stageId": "s", "updatedAt": i % 3,
                                                 "taskName": "中文 “Infinity” 😀"}) for i in range(5)])
        newest = await b.query("conversations", IDX, *ALL, reverse=True, limit=3)
        aborted = await attempt(b.write([("put", "conversations", {"taskId": "new", "stageId": "s", "updatedAt": 9}),
                                         ("add", "conversations", {"taskId": "t1", "stageId": "s", "updatedAt": 9})]))
        json.dumps({"newest": [(r["taskId"], r["updatedAt"]) for r in newest], "name": newest[0]["taskName"],
                    "aborted": aborted[0], "count": await b.count("conversations", IDX, *ALL),
                    "new": await b.get("conversations", "new"), "types": type(newest[0]).__name__,
                    "together": await b.get_all([("conversations", "t2"), ("heads", "s"), ("conversations", "t4")])})
    """)
    # updatedAt = i % 3: t2 → 2, then t4 and t1 → 1, ties newest taskId first
    assert result["newest"] == [["t2", 2], ["t4", 1], ["t1", 1]]
    assert result["name"] == "中文 “Infinity” 😀"
    assert result["types"] == "dict"
    assert result["aborted"] == "aborted" and result["count"] == 5 and result["new"] is None
    # several tables' records in one read, in the order asked, None where missing
    assert [r and r["taskId"] for r in result["together"]] == ["t2", None, "t4"]


def a_big_object_crosses_to_javascript_in_slices_and_is_stored_whole(page) -> None:
    """A scene document of hundreds of elements (a ``BulkValue``) is copied to JavaScript element
    by element, the task ended between slices (here every element: no time allowed per slice),
    and read back as it was written."""
    result = run_py(page, """
        import app.browser.indexeddb as adapter_module
        from app.records import BulkValue
        pauses, real_pause, real_step = [], adapter_module.next_task, adapter_module.STEP_MS
        async def counted():
            pauses.append(1)
            await real_pause()
        document = {"title": "Big 中文", "background": {"kind": "color", "value": "#fff"},
                    "elements": [{"id": f"el-{i}", "kind": "text", "box": {"x": i, "y": 1, "w": 2.5, "h": 3},
                                  "text": f"Point {i} “x” 😀"} for i in range(300)]}
        adapter_module.next_task, adapter_module.STEP_MS = counted, 0
        try:
            b = IndexedDbBackend()
            await b.open()
            await b.write([("put", "snapshots", {"versionId": "v-big", "document": BulkValue(document)})])
        finally:
            adapter_module.next_task, adapter_module.STEP_MS = real_pause, real_step
        stored = await b.get("snapshots", "v-big")
        del adapter_module  # the page's globals are shared with the later checks
        json.dumps({"same": stored["document"] == document, "pauses": len(pauses)})
    """)
    assert result["same"], result
    assert result["pauses"] >= 300, result


def quota_exceeded_writes_nothing(page, base_url: str) -> None:
    cdp = page.context.new_cdp_session(page)
    origin = base_url.rstrip("/")
    usage = page.evaluate("async () => (await navigator.storage.estimate()).usage")
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": origin, "quotaSize": usage + 200_000})
    result = run_py(page, """
        b = IndexedDbBackend()
        await b.open()
        small = await attempt(b.write([("put", "messages", {"taskId": "small", "messages": []})]))
        big = await attempt(b.write([("put", "messages", {"taskId": "a", "messages": ["x" * 400_000]}),
                                     ("put", "messages", {"taskId": "b", "messages": []})]))
        json.dumps([small[0], big[0], await b.get("messages", "b")])
    """)
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": origin})
    assert result == ["ok", "quota", None]


def open_throwing_is_unavailable(page) -> None:
    page.evaluate("""() => {
      IDBFactory.prototype.open = function () { throw new DOMException('The user denied permission', 'SecurityError'); };
    }""")
    thrown = run_py(page, "json.dumps(await attempt(IndexedDbBackend().open()))")
    page.evaluate("() => { IDBFactory.prototype.open = window.__realOpen; }")
    assert thrown[0] != "ok" and "SecurityError" in thrown[1]


def open_request_failing_asynchronously(page) -> None:
    # The real open request, whose upgrade transaction aborts: the request fails in a later event.
    page.evaluate("""() => {
      const original = window.__realOpen;
      IDBFactory.prototype.open = function (...args) {
        const request = original.apply(this, args);
        request.addEventListener('upgradeneeded', (event) => event.target.transaction.abort());
        return request;
      };
    }""")
    failed = run_py(page, """
        r = await attempt(IndexedDbBackend().open())
        after = await attempt(IndexedDbBackend().get("conversations", "x"))
        json.dumps([r, after])
    """)
    page.evaluate("() => { IDBFactory.prototype.open = window.__realOpen; }")
    assert failed[0][0] != "ok"
    assert failed[1][0] == "closed"  # nothing is open: every call fails cleanly


def working_indexeddb_is_reported_available_without_notice(agent) -> None:
    status = agent.page.evaluate("() => ({...window.agentbarIndexedDb})")
    assert status == {"available": True, "reason": None, "substitute": None}
    notices = [n.get_attribute("data-code") for n in agent.testid("agent-notice").all()]
    assert "indexeddb-unavailable" not in notices
    # PyScript uses the browser's own IndexedDB, not the substitute.
    assert agent.page.evaluate("() => indexedDB instanceof IDBFactory && Object.getPrototypeOf(indexedDB) === IDBFactory.prototype")


def blocked_by_another_tab_holding_an_older_version(page, other_tab) -> None:
    fresh_database(page)
    other_tab.evaluate("""() => new Promise((resolve, reject) => {
      const request = indexedDB.open('agentbar', 5);  // older than Dexie's 10 for version 1, never closed
      request.onsuccess = () => { window.held = request.result; resolve(); };
      request.onerror = () => reject(request.error);
    })""")
    blocked = run_py(page, "json.dumps(await attempt(IndexedDbBackend().open()))")
    assert blocked[0] == "blocked"
    other_tab.evaluate("() => window.held.close()")
    reopened = run_py(page, """
        b = IndexedDbBackend()
        json.dumps([await attempt(b.open()), await attempt(b.count("conversations", IDX, *ALL))])
    """)
    assert reopened == [["ok", None], ["ok", 0]]


def versionchange_from_another_tab_closes_and_says_so_then_deletion_is_reported(page, other_tab) -> None:
    fresh_database(page)
    run_py(page, """
        import builtins
        builtins.idb_events = []
        builtins.idb = IndexedDbBackend(on_event=lambda kind, detail: builtins.idb_events.append([kind, detail]))
        await idb.open()
        await idb.write([("put", "heads", {"stageId": "__proto__", "taskId": "t"})])
        json.dumps(1)
    """)
    newer = (max(SCHEMA) + 1) * 10  # a newer app upgrading: Dexie opens schema version n as n × 10
    other_tab.evaluate("""(newer) => new Promise((resolve, reject) => {
      const request = indexedDB.open('agentbar', newer);
      request.onsuccess = () => { request.result.close(); resolve(); };
      request.onerror = () => reject(request.error);
    })""", newer)
    after = run_py(page, """
        import builtins
        json.dumps([builtins.idb_events, await attempt(builtins.idb.get("heads", "__proto__")),
                    await attempt(IndexedDbBackend().open())])
    """)
    assert after[0] == [["versionchange", str(newer)]]
    assert after[1][0] == "closed"
    # Dexie 4 opens a database that a newer version upgraded when the tables it declares are there
    assert after[2] == ["ok", None]
    other_tab.evaluate("() => new Promise((resolve) => { indexedDB.deleteDatabase('agentbar').onsuccess = resolve; })")
    fresh = run_py(page, """
        import builtins
        builtins.idb_events = []
        b = IndexedDbBackend(on_event=lambda kind, detail: builtins.idb_events.append([kind, detail]))
        await b.open()
        await b.write([("put", "heads", {"stageId": "s", "taskId": "t"})])
        json.dumps(1)
    """)
    assert fresh == 1
    other_tab.evaluate("() => new Promise((resolve) => { indexedDB.deleteDatabase('agentbar').onsuccess = resolve; })")
    evicted = run_py(page, "import builtins\njson.dumps(builtins.idb_events)")
    assert evicted == [["deleted", "null"]]


def version_1_is_upgraded_past_another_tab_and_its_conversations_are_indexed(page, other_tab, base_url) -> None:
    """A database of version 1 (records without the search index's terms), still open in another tab:
    opening the current version (``app.records.SCHEMA``'s highest) closes the other tab's connection
    (its ``versionchange``), adds the indexes and keeps every record; the first search of the course indexes them (DESIGN.md §14)."""
    fresh_database(page)
    records = run_py(page, """
        from app.history.records import TaskMeta
        from app.history.repository import Writes
        writes = Writes()
        for i in range(12):
            meta = TaskMeta(taskId=f"task_20260101_aaaa{i:02d}", taskName=f"t{i}", stageId="up", createdAt=i, updatedAt=i)
            text = "Photosynthesis in 叶绿体" if i % 2 == 0 else "nothing"
            writes.keep(meta, [{"role": "user", "id": f"u{i}", "content": [{"type": "text", "text": text}]}], [])
        ops = [[table, {k: v for k, v in value.items() if k != "terms"}] for _, table, value in writes.ops]
        json.dumps(ops)
    """)
    schema = run_py(page, "from app.records import SCHEMA\njson.dumps(SCHEMA[1])")
    other_tab.evaluate("""async ([url, schema, records]) => {
      const { Dexie } = await import(url);
      const db = new Dexie('agentbar');
      db.version(1).stores(schema);
      await db.open();
      await db.transaction('rw', Object.keys(schema), async () => {
        for (const [table, record] of records) await db.table(table).put(record);
      });
      window.oldDb = db;  // kept open, as an older tab of the app keeps it
    }""", [f"{base_url}static/vendor/dexie/dexie.mjs", schema, records])
    found = run_py(page, """
        from app.history import HistoryService
        svc = HistoryService(IndexedDbBackend(), clock=lambda: 1_780_000_000_000)
        first = await svc.search("up", "photosynthesis")
        cjk = await svc.search("up", "叶绿")
        b = IndexedDbBackend()
        await b.open()
        stored = await b.query("search", "[stageId+updatedAt]", ["up", -math.inf], ["up", math.inf])
        json.dumps({"first": [h.meta.taskId for h in first.items], "total": first.total, "more": first.has_more,
                    "cjk": len(cjk.items), "indexed": sum(1 for r in stored if r.get("terms")), "kept": len(stored),
                    "texts": await b.count("texts", "taskId", "", "\uffff")})
    """)
    assert found["first"] == [f"task_20260101_aaaa{i:02d}" for i in (10, 8, 6, 4, 2, 0)]
    assert found["total"] == 6 and found["more"] is False and found["cjk"] == 6
    assert found["indexed"] == found["kept"] == found["texts"] == 12
    assert other_tab.evaluate("() => window.oldDb.isOpen()") is False
    assert page.evaluate("""() => new Promise((resolve) => { const r = indexedDB.open('agentbar');
      r.onsuccess = () => { const v = r.result.version; r.result.close(); resolve(v); }; })""") == max(SCHEMA) * 10



def version_3_is_upgraded_to_4_and_its_conversation_reads_as_a_chain(page, other_tab, base_url) -> None:
    """Version 4 changes no table (DESIGN.md §17: a ``messages`` record may hold ``branches`` and
    ``shown``; one without them is a chain): a database of version 3 holding a conversation, closed by
    the tab that wrote it, opens at version 4 with every record as it was, and the conversation reads
    as a chain (its messages the shown path, no message with a sibling), listed and read whole; a
    regenerated reply and a switch back to the first one are stored and read back by another service."""
    fresh_database(page)
    records = run_py(page, """
        from app.history.records import TaskMeta
        from app.history.repository import Writes
        writes = Writes()
        meta = TaskMeta(taskId="task_20260101_bbbbbb", taskName="chlorophyll", stageId="v3", createdAt=1, updatedAt=1)
        writes.keep(meta, [{"role": "user", "id": "u1", "content": [{"type": "text", "text": "what is chlorophyll"}]},
                           {"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "a pigment"}]}], [])
        writes.make_head("v3", meta.taskId, 1)
        json.dumps([[table, value] for _, table, value in writes.ops])
    """)
    schema = run_py(page, "from app.records import SCHEMA\njson.dumps(SCHEMA[3])")
    other_tab.evaluate("""async ([url, schema, records]) => {
      const { Dexie } = await import(url);
      const db = new Dexie('agentbar');
      db.version(3).stores(schema);
      await db.open();
      await db.transaction('rw', Object.keys(schema), async () => {
        for (const [table, record] of records) await db.table(table).put(record);
      });
      db.close();
    }""", [f"{base_url}static/vendor/dexie/dexie.mjs", schema, records])
    read = run_py(page, """
        from app.history import HistoryService
        from app.history.tree import Tree
        svc = HistoryService(IndexedDbBackend(), clock=lambda: 1_780_000_000_000)
        kept = await svc.bundle("task_20260101_bbbbbb")
        b = IndexedDbBackend()
        await b.open()
        record = await b.get("messages", "task_20260101_bbbbbb")
        tree = Tree.from_record(record["messages"], record.get("branches"), record.get("shown"))
        from app.ports import TurnEnded
        again = record["messages"][:1] + [{"role": "assistant", "id": "a2", "content": [{"type": "text", "text": "green"}]}]
        await svc.record_turn(TurnEnded(stage_id="v3", messages=again, base=[], usage=None, model="demo", duration_ms=1,
                                        conversation_id="task_20260101_bbbbbb", message_id="a2", at=2), 2)
        await svc.show_path("v3", record["messages"])  # the first answer shown again
        reread = await HistoryService(IndexedDbBackend(), clock=lambda: 1_780_000_000_000).branches("v3")
        json.dumps({"keys": sorted(record), "path": list(tree.path_ids()), "siblings": [tree.siblings(i) for i in tree.ids],
                    "kept": [kept.meta.taskName, len(kept.messages), await svc.total("v3")],
                    "branched": [list(reread.path_ids()), reread.siblings("a1"), reread.siblings("a2")]})
    """)
    assert read == {"keys": ["messages", "taskId"], "path": ["u1", "a1"], "siblings": [[1, 1], [1, 1]],
                    "kept": ["chlorophyll", 2, 1], "branched": [["u1", "a1"], [1, 2], [2, 2]]}
    assert page.evaluate("""() => new Promise((resolve) => { const r = indexedDB.open('agentbar');
      r.onsuccess = () => { const v = r.result.version; r.result.close(); resolve(v); }; })""") == max(SCHEMA) * 10 == 40

def test_indexeddb_layer_and_its_failures_in_one_page(agent, second_agent):
    """Independent checks on the real IndexedDB, one booted page (none breaks the database at boot;
    it is test_snapshot's boot with a snapshot that does not come in time, given up for a normal
    start, whose turn ends the test; a second tab, no app in it, is the other tab): the boot reports
    a working IndexedDB; records
    round-trip in order and an aborted transaction writes nothing; over the quota a write writes
    nothing; ``open`` throwing is unavailable; an open request failing in a later event leaves
    every call failing cleanly; another tab holding an older version blocks the open until it
    closes; another tab upgrading closes the connection and says so, and the database deleted is
    reported; a big object crosses to JavaScript in slices; versions 1 and 3 upgrade keeping every
    record. The quota first, on the freshly booted page; every later check on a database deleted before it (fresh_database), each breakage undone
    before the next check."""
    from tests.e2e.test_core import case
    from tests.e2e.test_snapshot import a_turn_after_the_snapshot_was_given_up, boot_with_a_snapshot_that_does_not_come_in_time

    with case("a snapshot that does not come in time is given up (test_snapshot)"):
        boot_with_a_snapshot_that_does_not_come_in_time(agent)
    working_indexeddb_is_reported_available_without_notice(agent)
    quota_exceeded_writes_nothing(agent.page, agent.base_url)  # first: the usage it measures is the page's own
    fresh_database(agent.page)
    agent.page.evaluate("() => { window.__realOpen = IDBFactory.prototype.open; }")
    open_request_failing_asynchronously(agent.page)
    open_throwing_is_unavailable(agent.page)
    records_round_trip_in_order_and_an_aborted_transaction_writes_nothing(agent.page)
    a_big_object_crosses_to_javascript_in_slices_and_is_stored_whole(agent.page)
    second_agent.page.goto(f"{second_agent.base_url}static/icons/agentbar.svg")
    blocked_by_another_tab_holding_an_older_version(agent.page, second_agent.page)
    versionchange_from_another_tab_closes_and_says_so_then_deletion_is_reported(agent.page, second_agent.page)
    version_1_is_upgraded_past_another_tab_and_its_conversations_are_indexed(agent.page, second_agent.page,
                                                                             agent.base_url)
    version_3_is_upgraded_to_4_and_its_conversation_reads_as_a_chain(agent.page, second_agent.page, agent.base_url)
    with case("a turn after the snapshot was given up (test_snapshot)"):
        a_turn_after_the_snapshot_was_given_up(agent)
