"""Sync's pure rules (DESIGN.md §16): settings and password keeping, status, documents, merge."""

from __future__ import annotations

import asyncio
import doctest
import json

import pytest
from pydantic import ValidationError

import app.checkpoints.versions
import app.history.merge
import app.sync.documents
import app.sync.held
import app.sync.settings
import app.sync.tombstones
from app.history.records import TaskMeta, TurnMeta, Usage, iso
from app.storage import MemoryStorage
from app.sync.documents import conversation_doc, conversation_of, document_of, version_doc, version_of
from app.checkpoints.versions import place_versions
from app.history.merge import merge_conversation
from app.sync.tombstones import Tombstones
from app.sync.settings import (PASSWORD_STORAGE_KEY, SETTINGS_STORAGE_KEY, SyncCredentials, SyncSettings, SyncStatus,
                               failure_reason, load_sync_settings, save_sync_settings)
from tests.unit.turn_events import ended

TASK = "task_20261201_abcdef"


def test_doctests():
    for module in (app.sync.settings, app.sync.documents, app.history.merge, app.sync.tombstones,
                   app.checkpoints.versions):
        assert doctest.testmod(module).failed == 0


# -- settings ----------------------------------------------------------------
@pytest.mark.parametrize("url", ["ftp://h", "127.0.0.1:5984", "http://", "javascript:alert(1)"])
def test_sync_url_must_be_http_or_https(url):
    with pytest.raises(ValidationError):
        SyncSettings(url=url)


@pytest.mark.parametrize("url", ["http://ann:secret@127.0.0.1:5984", "https://ann@couch.example/",
                                 "http://:pw@h:1/db"])
def test_a_sync_url_carrying_a_user_or_password_is_refused_and_never_stored(url):
    from app.agents.settings import CredentialsInUrl, validate_base_url
    from app.sync.settings import validate_sync_url

    with pytest.raises(CredentialsInUrl):
        validate_sync_url(url)
    with pytest.raises(CredentialsInUrl):
        validate_base_url(url)  # the model's base URL: the same rule (DESIGN.md §12)
    with pytest.raises(ValidationError):
        SyncSettings(url=url)
    assert validate_sync_url("http://127.0.0.1:5984/db?x=a@b") == "http://127.0.0.1:5984/db?x=a@b"  # not userinfo


@pytest.mark.parametrize("name", ["Agentbar", "1db", "a b", "_users"])
def test_database_name_follows_couchdb(name):
    with pytest.raises(ValidationError):
        SyncSettings(url="http://h", database=name)


def test_enabled_needs_url_and_database():
    with pytest.raises(ValidationError):
        SyncSettings(enabled=True, url="")
    with pytest.raises(ValidationError):
        SyncSettings(enabled=True, url="http://h", database="")
    assert SyncSettings(enabled=False, url="").enabled is False


def test_password_kept_like_the_model_key_never_in_the_settings():
    local, session = MemoryStorage(), MemoryStorage()
    settings = SyncSettings(enabled=True, url="http://127.0.0.1:5984", user="ann")
    assert save_sync_settings(local, session, settings, "s3cret-pw")
    assert "s3cret-pw" not in local.get_item(SETTINGS_STORAGE_KEY)
    assert session.get_item(PASSWORD_STORAGE_KEY) == "s3cret-pw" and local.get_item(PASSWORD_STORAGE_KEY) is None
    assert load_sync_settings(local, session) == (settings, "s3cret-pw")
    remembered = settings.model_copy(update={"remember": True})
    assert save_sync_settings(local, session, remembered, "s3cret-pw")
    assert local.get_item(PASSWORD_STORAGE_KEY) == "s3cret-pw" and session.get_item(PASSWORD_STORAGE_KEY) is None
    assert save_sync_settings(local, session, remembered, "")
    assert local.get_item(PASSWORD_STORAGE_KEY) is None and session.get_item(PASSWORD_STORAGE_KEY) is None


def test_damaged_settings_read_as_sync_off():
    local = MemoryStorage()
    local.set_item(SETTINGS_STORAGE_KEY, "{not json")
    assert load_sync_settings(local, MemoryStorage())[0].enabled is False
    local.set_item(SETTINGS_STORAGE_KEY, json.dumps({"enabled": True, "url": "ftp://x"}))
    assert load_sync_settings(local, MemoryStorage())[0].enabled is False


def test_credentials_repr_masks_the_password():
    creds = SyncCredentials.of(SyncSettings(url="http://h:5984", database="db", user="ann"), "s3cret-pw")
    assert creds.remote == "http://h:5984/db" and creds.password == "s3cret-pw"
    assert "s3cret-pw" not in repr(creds) and "s3cret-pw" not in str(creds)


def test_failure_reasons_and_states():
    assert [failure_reason(s) for s in (401, 403, 0, None, 404, 200)] == \
        ["unauthorized", "forbidden", "unreachable", "unreachable", "notCouchdb", "notCouchdb"]
    assert SyncStatus.failed("unreachable") == SyncStatus("offline", "unreachable")
    assert SyncStatus.failed("unauthorized").state == "error"
    locale = json.load(open("app/locales/en-US.json", encoding="utf-8"))
    for key in [SyncStatus(s).key for s in app.sync.settings.STATES] + \
               [SyncStatus("error", r).key for r in app.sync.settings.REASONS]:
        section, *rest = key.split(".")
        node = locale[section]
        for part in rest:
            node = node[part]
        assert isinstance(node, str) and node


# -- documents ---------------------------------------------------------------
def _meta(**kw):
    return TaskMeta(**{"taskId": TASK, "taskName": "t", "stageId": "s1", "createdAt": 1, "updatedAt": 2, **kw})


def _turn(n, ms, message_id):
    return TurnMeta(turnId=n, timestamp=iso(ms), messageId=message_id)


def test_conversation_document_round_trip():
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "id": "r1", "content": [{"type": "text", "text": "yo"}]}]
    doc = conversation_doc(_meta(), messages, [_turn(1, 5, "r1")])
    assert doc["_id"] == "conversation:" + TASK and json.loads(json.dumps(doc)) == doc
    meta, back, turns = conversation_of(doc)
    assert meta == _meta() and back == messages and turns == [_turn(1, 5, "r1")]


def test_bad_documents_are_refused():
    doc = conversation_doc(_meta(), [], [])
    with pytest.raises(ValueError):
        conversation_of({**doc, "_id": "conversation:task_20261201_zzzzzz"})
    with pytest.raises(ValueError):
        conversation_of({**doc, "messages": "x"})
    with pytest.raises(ValueError):
        conversation_of({"_id": "x"})
    with pytest.raises(ValueError):
        version_of({"_id": "version:v", "versionNo": 1})
    fields = dict(artifactId="a", stageId="s", sceneId="c", versionNo=0, checkpointId="k", createdAt=1, item={},
                  document={})
    with pytest.raises(ValueError):
        version_of(version_doc("v", **fields))
    assert version_of(version_doc("v", **{**fields, "versionNo": 3}))["versionNo"] == 3
    with pytest.raises(ValueError):  # the id is its checkpoint's
        version_of({**version_doc("v", **{**fields, "versionNo": 3}), "_id": "version:other"})
    with pytest.raises(ValueError):
        version_of(version_doc("v", **{**fields, "versionNo": 3, "document": "x"}))


# -- merge -------------------------------------------------------------------
def _pair(tag, ms):
    return [{"role": "user", "content": tag}, {"role": "assistant", "id": "r" + tag, "content": tag}], \
        _turn(0, ms, "r" + tag)


def test_a_device_that_continues_the_other_wins_by_length():
    (u1, t1), (u2, t2) = _pair("1", 10), _pair("2", 20)
    short, long_ = (u1, [t1]), (u1 + u2, [t1, t2])
    assert merge_conversation(short, long_).how == "remote"
    assert merge_conversation(long_, short) == app.history.merge.Merged("local", u1 + u2, [t1, t2])


def test_the_turns_of_a_merge_are_the_same_whichever_device_merges_and_however_each_numbered_them():
    """Each reply's turn once (the meta that says more where the devices differ), a turn without a
    ``messageId`` (an older record) as many times as one device holds it: never one more per exchange."""
    (u1, _), (u2, _) = _pair("1", 10), _pair("2", 20)
    loose = TurnMeta(turnId=1, timestamp=iso(5))
    usage = Usage(inputTokens=1, outputTokens=2, totalTokens=3)
    mine = [loose, _turn(2, 10, "r1"), _turn(3, 20, "r2").model_copy(update={"usage": usage})]
    theirs = [_turn(4, 10, "r1").model_copy(update={"model": "demo"}), loose.model_copy(update={"turnId": 7}),
              _turn(9, 20, "r2")]
    here, there = merge_conversation((u1 + u2, mine), (u1 + u2, theirs)), merge_conversation((u1 + u2, theirs), (u1 + u2, mine))
    assert here.how == there.how == "merged" and here.turns == there.turns
    assert [(t.turnId, t.messageId, t.model, t.usage.totalTokens) for t in here.turns] == [
        (1, None, "", 0), (2, "r1", "demo", 0), (3, "r2", "", 3)]
    again = merge_conversation((u1 + u2, here.turns), (u1 + u2, mine))  # the merge sent back: nothing new
    assert again.how == "local" and again.turns == here.turns


def _texts(merged):
    """Every message of a merge's tree (the shown path and the branches beside it)."""
    return merged.branching.tree(merged.messages).texts()


def test_diverged_turns_of_both_are_kept_as_siblings_where_they_diverged():
    """DESIGN.md §17 "Sync" (it replaces §16's turns of both in time order on one path)."""
    (u1, t1), (a, ta), (b, tb), (c, tc) = _pair("1", 10), _pair("A", 30), _pair("B", 20), _pair("C", 40)
    local = (u1 + a + c, [t1, ta, tc])       # this device added A (30) then C (40) while off-line
    remote = (u1 + b, [t1, tb])              # the other added B (20)
    merged = merge_conversation(local, remote, local_at=40, remote_at=20)
    assert merged.how == "merged"
    assert [m["content"] for m in merged.messages] == ["1", "1", "A", "A", "C", "C"]  # the later choice is shown
    tree = merged.branching.tree(merged.messages)
    (fork,) = tree.forks().values()  # B's turn is a sibling of A's, under the first turn's reply
    assert [tree.nodes[i]["content"] for i in fork] == ["A", "B"] and tree.parent(fork[0]) == "r1"
    assert [(t.turnId, t.messageId) for t in merged.turns] == [(1, "r1"), (2, "rB"), (3, "rA"), (4, "rC")]
    # the same merge from the other side gives the same conversation (both devices converge)
    again = merge_conversation(remote, local, local_at=20, remote_at=40)
    assert (again.messages, again.branching, again.turns) == (merged.messages, merged.branching, merged.turns)


def test_merge_never_drops_a_message_even_without_metas():
    local = ([{"role": "user", "content": "x"}], [])
    remote = ([{"role": "user", "content": "y"}, {"role": "assistant", "content": "z"}], [])
    merged = merge_conversation(local, remote)
    assert sorted(m["content"] for m in _texts(merged) if isinstance(m["content"], str)) == ["x", "y", "z"]


def test_turns_that_open_with_the_same_question_and_differ_after_it_are_both_kept():
    """Two devices that imported different ChatGPT branches of one conversation (messages without
    ids; the first question was edited): each branch goes on with the same follow-up question,
    answered differently. A turn is on both devices only when all of it is, so neither answer is
    dropped (§16: nothing of either is)."""
    def said(*texts):
        return [{"role": "user" if n % 2 == 0 else "assistant", "content": t} for n, t in enumerate(texts)]

    one = said("What is a gradient?", "A vector of partial derivatives.", "And the learning rate?", "The step size.")
    two = said("What is a gradient, simply?", "The steepest way up.", "And the learning rate?", "How far a step goes.")
    for local, remote in ((one, two), (two, one)):
        merged = merge_conversation((local, []), (remote, []))
        assert merged.how == "merged"
        assert sorted(m["content"] for m in _texts(merged)) == sorted(m["content"] for m in one + two)
        assert [m["role"] for m in merged.messages] == ["user", "assistant"] * 2  # one branch shown (§17)


def test_deleted_ids_do_not_come_back():
    stones = Tombstones()
    stones.delete("conversation:" + TASK)
    assert not stones.admits("conversation:" + TASK)
    assert Tombstones(stones.ids()).ids() == ["conversation:" + TASK]


def test_versions_from_another_device_get_distinct_numbers():
    incoming = [{"versionId": "x", "versionNo": 2, "createdAt": 50}, {"versionId": "y", "versionNo": 3, "createdAt": 40},
                {"versionId": "z", "versionNo": 7, "createdAt": 60}]
    placed = place_versions([1, 2, 3], incoming)
    assert [v["versionId"] for v in placed] == ["x", "y", "z"]
    numbers = [v["versionNo"] for v in placed]
    assert numbers == [9, 8, 7]  # 7 is free; y (older) then x go past the highest
    assert len(set(numbers) | {1, 2, 3}) == 6


# -- history <-> replica (app.sync.engine, HistoryService.apply_synced) ------------------------
import itertools  # noqa: E402

import app.sync.engine  # noqa: E402
from app.history import HistoryService  # noqa: E402
from app.history.changes import HistoryChange  # noqa: E402
from app.history.delete_writes import UNDO_MS  # noqa: E402
from app.records import MemoryBackend  # noqa: E402
from app.sync.engine import DELETED_KEY, LEAVES, SyncEngine, Unsent  # noqa: E402

DEVICE_T0 = 1_780_000_000_000


def _user(text, id):
    return {"role": "user", "id": id, "content": [{"type": "text", "text": text}]}


def _reply(text, id):
    return {"role": "assistant", "id": id, "content": [{"type": "text", "text": text}]}


def _device(seed: int, on_notice=None):
    now = itertools.count(DEVICE_T0 + seed * 1000)
    counter = itertools.count(seed * 50)
    return HistoryService(MemoryBackend(), clock=lambda: next(now),
                          random_bytes=lambda n: bytes([next(counter) % 256] * n), on_notice=on_notice)


def _heads(device):
    """The course threads ``device``'s changes say sync moved, as ``(stage id, message ids)``, as they come."""
    heads = []
    device.changes.subscribe(lambda change: change.head is not None and heads.append(
        (change.stage_id, [m.get("id") for m in change.head])))
    return heads


def _changes(device):
    """``(kind, task id, stage id, source)`` of each change ``device`` announces from now on."""
    changes = []
    device.changes.subscribe(lambda c: changes.append((c.kind, c.task_id, c.stage_id, c.source)))
    return changes


async def _syncing_pair(stage, text, replica=None, b_notices=None):
    """Devices A and B, a turn ``text`` recorded on A in ``stage``, and each device's sync engine over a
    replica of its own (``replica``: the class, ``FakeReplica`` when None; ``b_notices``: B's history
    notices go there). Returns ``(a, b, task, replica_a, replica_b, engine_a, engine_b)``."""
    replica = replica or FakeReplica
    a, b = _device(1), _device(2, on_notice=None if b_notices is None else b_notices.append)
    task = await _device_turn(a, stage, text)
    replica_a, replica_b = replica(), replica()
    engine_a, engine_b = SyncEngine(a, replica_a, MemoryStorage()), SyncEngine(b, replica_b, MemoryStorage())
    return a, b, task, replica_a, replica_b, engine_a, engine_b


async def _device_turn(svc, stage, text, task_id=None):
    await svc.record_turn(ended(stage, [_user(text, f"u-{text}"), _reply("ok " + text, f"a-{text}")],
                                usage={"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}, model="demo",
                                duration_ms=10, message_id=f"a-{text}"), 1)
    return await svc.head_task_id(stage, allocate=False)


class FakeReplica:
    """The local replicated database: documents by id, deletions kept as ``_deleted``."""

    def __init__(self):
        self.docs: dict[str, dict] = {}
        self.puts = 0

    async def put(self, doc):
        if self.docs.get(doc["_id"]) != doc:
            self.docs[doc["_id"]] = json.loads(json.dumps(doc))
            self.puts += 1

    async def remove(self, doc_id, body=None):
        self.docs[doc_id] = {"_id": doc_id, "_deleted": True, **(body or {})}


def test_engine_doctests():
    assert doctest.testmod(app.sync.engine).failed == 0
    assert doctest.testmod(app.sync.held).failed == 0


async def _hold_ends(engine):
    """``engine.release()`` once Undo can no longer take back what it holds (its clock moved past
    ``UNDO_MS``, DESIGN.md §9); returns how many deletions went out."""
    clock = engine.held._clock
    engine.held._clock = lambda: clock() + UNDO_MS + 1
    try:
        return await engine.release()
    finally:
        engine.held._clock = clock


async def _delete_goes_out(engine, task, stage="s"):
    """This device's delete of ``task``, held while Undo can take it back, then sent (``release``)."""
    await engine.local_changed(HistoryChange("delete", task, stage))
    assert await _hold_ends(engine) == 1


async def test_a_conversation_made_on_a_is_kept_on_b_archived_and_comes_back_unchanged():
    a, b, task, replica_a, replica_b, engine_a, engine_b = await _syncing_pair("intro-ml", "hello from A")
    changes = _changes(b)
    await engine_a.local_changed(HistoryChange("record", task, "intro-ml"))
    doc = replica_a.docs[f"conversation:{task}"]
    assert doc["messages"][0]["content"][0]["text"] == "hello from A" and doc["type"] == "conversation"
    assert await engine_b.remote_changed(doc) == "added"
    assert changes == [("import", task, "intro-ml", "sync")]
    meta, messages, turns = await b.bundle(task)
    assert (meta, messages, turns) == await a.bundle(task)
    assert await b.head_task_id("intro-ml", allocate=False) is None  # the active conversation stays per device
    assert await engine_b.remote_changed(doc) == "same" and replica_b.puts == 0  # no echo back


async def test_turns_added_on_both_are_kept_as_siblings_and_sent_back():
    """DESIGN.md §17 "Sync" (it replaces §16's turns of both in time order on one path)."""
    a, b, task, replica_a, replica_b, engine_a, engine_b = await _syncing_pair("s", "first")
    await engine_a.push(task)
    await engine_b.remote_changed(replica_a.docs[f"conversation:{task}"])
    meta, messages, turns = await a.bundle(task)
    await a.record_turn_in(task, ended("s", messages + [_user("on A", "u-A"), _reply("r", "a-A")], usage=None,
                                       model="demo", duration_ms=5, message_id="a-A"))
    await engine_a.push(task)
    _, b_messages, _ = await b.bundle(task)
    await b.record_turn_in(task, ended("s", b_messages + [_user("on B", "u-B"), _reply("r", "a-B")], usage=None,
                                       model="demo", duration_ms=5, message_id="a-B"))
    assert await engine_b.remote_changed(replica_a.docs[f"conversation:{task}"]) == "merged"
    held = await b.bundle(task)
    _, merged, merged_turns = held
    tree = held.branching.tree(merged)
    assert set(tree.ids) == {"u-first", "a-first", "u-A", "a-A", "u-B", "a-B"}
    assert tree.children("a-first") == ["u-B", "u-A"]  # B's own turn first, A's beside it
    assert [m["id"] for m in merged] == ["u-first", "a-first", "u-B", "a-B"]  # B's the later choice
    assert [t.turnId for t in merged_turns] == [1, 2, 3]
    sent = replica_b.docs[f"conversation:{task}"]  # sent back to the server, the tree with it
    assert sent["messages"] == merged and sent["branches"] == held.branching.branches


async def test_a_change_from_another_device_of_the_active_conversation_rebuilds_the_active_thread():
    a, b = _device(1), _device(2)
    task = await _device_turn(a, "s", "first")
    replica_a = FakeReplica()
    engine_a, engine_b = SyncEngine(a, replica_a, MemoryStorage()), SyncEngine(b, FakeReplica(), MemoryStorage())
    await engine_a.push(task)
    heads = _heads(b)
    assert await engine_b.remote_changed(replica_a.docs[f"conversation:{task}"]) == "added"
    assert heads == []  # kept archived: which conversation is active stays per device
    other = await _device_turn(a, "s2", "elsewhere")  # a conversation that is not B's active one
    await engine_a.push(other)
    await engine_b.remote_changed(replica_a.docs[f"conversation:{other}"])
    _, messages, _ = await b.bundle(task)
    assert await b.resume("s", task, [], None, 5) == messages  # B goes on with A's conversation
    meta, a_messages, _ = await a.bundle(task)
    await a.record_turn_in(task, ended("s", a_messages + [_user("on A", "u-A"), _reply("r", "a-A")], usage=None,
                                       model="demo", duration_ms=5, message_id="a-A"))
    await engine_a.push(task)
    assert await engine_b.remote_changed(replica_a.docs[f"conversation:{task}"]) == "remote"
    assert heads == [("s", ["u-first", "a-first", "u-A", "a-A"])]  # B's active thread is rebuilt from it
    assert await engine_b.remote_changed(replica_a.docs[f"conversation:{task}"]) == "same" and len(heads) == 1
    other_doc = json.loads(json.dumps(replica_a.docs[f"conversation:{other}"]))
    await a.record_turn_in(other, ended("s2",
                                        (await a.bundle(other)).messages + [_user("more", "u-m"), _reply("r", "a-m")],
                                        usage=None, model="demo", duration_ms=5, message_id="a-m"))
    await engine_a.push(other)
    assert other_doc != replica_a.docs[f"conversation:{other}"]
    assert await engine_b.remote_changed(replica_a.docs[f"conversation:{other}"]) == "remote"
    assert len(heads) == 1  # an archived conversation changed: no active thread is touched


async def test_two_devices_holding_the_same_conversation_settle_within_two_exchanges_and_lose_no_field():
    """The same messages and turns on both devices, the metas apart (issue 32: B's ``updatedAt`` later,
    each renamed it, A pinned it): traded through the merge, each side sending what it holds whenever
    it keeps its own (``local``) or a merge of both, they agree within two exchanges and then write
    nothing more; each field of the meta is its later change's (DESIGN.md §16, §18)."""
    a, b = _device(1), _device(2)
    task = await _device_turn(a, "intro-ml", "shared")
    held = await a.bundle(task)
    later = held.meta.updatedAt + 33_650  # B's resume stamped it later
    assert await b.apply_synced(held.meta.model_copy(update={"updatedAt": later}), held.messages, held.turns) == "added"
    await a.rename(task, "Name on A")
    await b.rename(task, "Name on B")  # B's clock runs after A's: B's rename is the later
    pinned_at = (await a.pin(task, True)).pinnedAt
    replicas = {a: FakeReplica(), b: FakeReplica()}
    engines = {d: SyncEngine(d, replicas[d], MemoryStorage()) for d in (a, b)}
    await engines[a].push(task)
    doc_id = f"conversation:{task}"
    sender, receiver, exchanges = a, b, 0
    while exchanges < 6:  # an echo would go on for ever
        doc = json.loads(json.dumps(replicas[sender].docs[doc_id]))
        replicas[receiver].docs[doc_id] = doc  # replication brings it into the receiver's database
        before = replicas[receiver].puts
        await engines[receiver].remote_changed(doc)
        exchanges += 1
        if replicas[receiver].puts == before:  # nothing sent back: the devices agree
            break
        sender, receiver = receiver, sender
    assert exchanges <= 2
    kept_a, kept_b = await a.bundle(task), await b.bundle(task)
    assert kept_a == kept_b and kept_a.branching == kept_b.branching
    assert kept_a.messages == held.messages and kept_a.turns == held.turns
    assert kept_a.meta.taskName == "Name on B"  # the later rename
    assert kept_a.meta.pinnedAt == pinned_at  # the only pin, made on A
    assert kept_a.meta.updatedAt == later and kept_a.meta.createdAt == held.meta.createdAt
    # the settled version arriving again changes nothing on either device
    for device in (a, b):
        before = replicas[device].puts
        assert await engines[device].remote_changed(document_of(kept_a)) == "same"
        assert replicas[device].puts == before


async def test_a_delete_replicates_and_a_later_write_of_that_id_does_not_bring_it_back():
    a, b = _device(1), _device(2)
    task = await _device_turn(a, "s", "doomed")
    await a.archive("s", (await a.bundle(task)).messages, 1)
    replica_a, replica_b = FakeReplica(), FakeReplica()
    deleted_b = MemoryStorage()
    engine_a, engine_b = SyncEngine(a, replica_a, MemoryStorage()), SyncEngine(b, replica_b, deleted_b)
    await engine_a.push(task)
    old = replica_a.docs[f"conversation:{task}"]
    await engine_b.remote_changed(old)
    assert await a.delete(task)
    await _delete_goes_out(engine_a, task)
    assert replica_a.docs[f"conversation:{task}"]["_deleted"] is True
    assert await engine_b.remote_changed(replica_a.docs[f"conversation:{task}"]) == "deleted"
    assert await b.bundle(task) is None and not b.can_undo()
    assert json.loads(deleted_b.get_item(DELETED_KEY)) == [f"conversation:{task}"]
    again = SyncEngine(b, replica_b, deleted_b)  # after a reload: the tombstone is remembered
    assert await again.remote_changed(old) == "redeleted"
    assert await b.bundle(task) is None and replica_b.docs[f"conversation:{task}"]["_deleted"] is True
    await a.undo()  # an undo after the delete went out stays local: the id stays deleted everywhere
    await engine_a.local_changed(HistoryChange("undo", task, "s"))
    assert replica_a.docs[f"conversation:{task}"]["_deleted"] is True


async def _deleted_everywhere(a, task, replica_a, engine_a, engine_b):
    """``task`` (kept on A) sent, taken by B, deleted on A and that deletion applied on B; returns what A
    held of it before the delete."""
    from app.sync.documents import doc_id_of_task

    await engine_a.push(task)
    await engine_b.remote_changed(replica_a.docs[doc_id_of_task(task)])
    before = await a.bundle(task)
    assert await a.delete(task)
    await _delete_goes_out(engine_a, task)
    assert await engine_b.remote_changed(replica_a.docs[doc_id_of_task(task)]) == "deleted"
    return before


async def test_an_undo_after_the_delete_went_out_comes_back_here_under_a_new_id_that_syncs_as_any_other():
    from app.sync.documents import doc_id_of_task

    a, b, task, replica_a, replica_b, engine_a, engine_b = await _syncing_pair("s", "undone")
    await a.archive("s", (await a.bundle(task)).messages, 1)
    assert await a.pin(task, True) and await a.rename(task, "my name")
    before = await _deleted_everywhere(a, task, replica_a, engine_a, engine_b)
    changes = _changes(a)
    assert await a.undo() == task
    await engine_a.local_changed(HistoryChange("undo", task, "s"))
    # here: back whole under a new id (name, pin, messages, turns); the deleted id stays deleted
    (item,) = (await a.page("s")).items
    renewed = item.taskId
    assert renewed != task and await a.bundle(task) is None
    after = await a.bundle(renewed)
    assert after.meta == before.meta.model_copy(update={"taskId": renewed})
    assert (after.messages, after.turns) == (before.messages, before.turns)
    assert changes[1:] == [("delete", task, "s", "sync"), ("import", renewed, "s", "sync")]
    assert replica_a.docs[doc_id_of_task(task)]["_deleted"] is True
    # it goes out as a conversation of its own, and B keeps it as any other (never the deleted id)
    assert await engine_b.remote_changed(replica_a.docs[doc_id_of_task(renewed)]) == "added"
    assert await b.bundle(task) is None and (await b.bundle(renewed)).messages == before.messages
    # its later turns sync too
    await a.record_turn_in(renewed, ended("s", after.messages + [_user("later", "u-later"), _reply("r", "a-later")],
                                          usage=None, model="demo", duration_ms=5, message_id="a-later"))
    await engine_a.local_changed(HistoryChange("record", renewed, "s", written=await a.bundle(renewed)))
    assert await engine_b.remote_changed(replica_a.docs[doc_id_of_task(renewed)]) == "remote"
    assert [m["id"] for m in (await b.bundle(renewed)).messages][-2:] == ["u-later", "a-later"]


async def test_documents_that_are_not_conversations_change_nothing():
    b = _device(2)
    engine = SyncEngine(b, FakeReplica(), MemoryStorage())
    assert await engine.remote_changed({"_id": "_design/x", "views": {}}) == "ignored"
    assert await engine.remote_changed({"_id": "conversation:task_20261201_abcdef", "meta": {}}) == "damaged"
    assert await b.total("s") == 0


def test_status_of_replication_events():
    assert SyncStatus.of_event("welcome", 200, {"couchdb": "Welcome"}).state == "syncing"
    assert SyncStatus.of_event("welcome", 200, "<html>").key == "sync.reason.notCouchdb"
    assert SyncStatus.of_event("welcome", 404, None).reason == "notCouchdb"
    assert SyncStatus.of_event("welcome", None).state == "offline"
    assert SyncStatus.of_event("denied", 403).key == "sync.reason.forbidden"
    assert SyncStatus.of_event("error", 0).state == "offline"
    assert SyncStatus.of_event("off").key == "sync.state.off"


def test_synced_waits_while_history_still_takes_replicated_changes_in():
    caught_up = SyncStatus.of_event("paused")
    assert caught_up.shown(applying=True) == SyncStatus("syncing")
    assert caught_up.shown(applying=False) == SyncStatus("synced")
    offline = SyncStatus.of_event("error", 0)
    assert offline.shown(applying=True) == offline



def test_a_database_the_user_may_not_read_is_forbidden_not_a_wrong_password():
    # the welcome refused the credentials: a wrong user name or password
    assert SyncStatus.of_event("welcome", 401).reason == "unauthorized"
    # the welcome took them, the database answers 401 (pouchdb-server) or 403 (CouchDB): forbidden
    assert SyncStatus.of_event("error", 401, welcomed=True) == SyncStatus("error", "forbidden")
    assert SyncStatus.of_event("error", 403, welcomed=True).key == "sync.reason.forbidden"
    assert SyncStatus.of_event("error", 401).reason == "unauthorized"
    assert SyncStatus.of_event("error", 0, welcomed=True).state == "offline"


# -- scene versions (VersionStore.adopt through the engine) ------------------------------------
from app.checkpoints import ArtifactSnapshot, SceneCheckpoints  # noqa: E402
from app.checkpoints.record_backend import RecordVersionBackend  # noqa: E402


def _checkpoints(records, seed):
    records.is_open = True  # opened, as the page opens it before ready
    ids = itertools.count()
    return SceneCheckpoints(RecordVersionBackend(records), new_id=lambda: f"fc_{seed}{next(ids):015d}")


async def _regenerate(checkpoints, title, at, stage="intro-ml", scene="scene-1"):
    await checkpoints.load_stage(stage)
    document = checkpoints.document(stage, scene).model_copy(update={"title": title})
    return await checkpoints.submit(ArtifactSnapshot(stage, scene, document, "regenerate_scene", "conv", "t", "c", at))


def _two_devices():
    """Devices A and B, each with its version store over its own records and its own replica:
    ``(a, b, replica_a, replica_b, engine_a, engine_b, records_b)``."""
    records_a, records_b = MemoryBackend(), MemoryBackend()
    a, b = _checkpoints(records_a, 1), _checkpoints(records_b, 2)
    replica_a, replica_b = FakeReplica(), FakeReplica()
    engine_a = SyncEngine(_device(1), replica_a, MemoryStorage(), checkpoints=a, records=records_a)
    engine_b = SyncEngine(_device(2), replica_b, MemoryStorage(), checkpoints=b, records=records_b)
    return a, b, replica_a, replica_b, engine_a, engine_b, records_b


def _numbers(listed):
    return sorted((c["version_no"], c["title"]) for c in listed["checkpoints"])


async def test_versions_made_on_both_devices_keep_distinct_numbers_and_a_restore_of_the_other_works():
    a, b, replica_a, replica_b, engine_a, engine_b, _ = _two_devices()
    made_a = await _regenerate(a, "made on A", 10)
    made_b = await _regenerate(b, "made on B", 20)  # both devices' version 1, while apart
    assert await engine_a.local_version(made_a) and await engine_b.local_version(made_b)
    doc_a, doc_b = replica_a.docs[f"version:{made_a.id}"], replica_b.docs[f"version:{made_b.id}"]
    assert doc_a["versionId"] == doc_b["versionId"] == "intro-ml/scene-1:v1"  # the same id: different versions
    assert doc_a["document"]["title"] == "made on A" and doc_a["type"] == "version"
    assert await engine_b.remote_changed(json.loads(json.dumps(doc_a))) == "added"
    assert await engine_a.remote_changed(json.loads(json.dumps(doc_b))) == "added"
    assert _numbers(await b.read_model.list_scene("intro-ml", "scene-1")) == [(1, "made on B"), (2, "made on A")]
    assert _numbers(await a.read_model.list_scene("intro-ml", "scene-1")) == [(1, "made on A"), (2, "made on B")]
    # the version made last is current on both (B's, at 20), whatever its number there
    assert b.current("intro-ml", "scene-1").document.title == "made on B" == a.current("intro-ml", "scene-1").document.title
    assert replica_b.puts == 1 and replica_a.puts == 1  # an adopted version is not written back
    assert await engine_b.remote_changed(doc_a) == "same"  # kept once (a reload, another tab)
    # a restore on B of the version made on A: its document, as a new version of B's (source restore)
    item, document = await b.read_model.document(made_a.id)
    assert document.title == "made on A" and item.metadata["artifactVersionId"] == "intro-ml/scene-1:v2"
    restored = await b.submit(ArtifactSnapshot("intro-ml", "scene-1", document, "restore", "conv", None, None, 30,
                                               restored_from=item.metadata["artifactVersionId"]))
    assert restored.metadata["artifactVersionNo"] == 3 and b.current("intro-ml", "scene-1").version_no == 3
    assert await engine_b.local_version(restored)
    assert await engine_a.remote_changed(replica_b.docs[f"version:{restored.id}"]) == "added"
    assert _numbers(await a.read_model.list_scene("intro-ml", "scene-1"))[-1] == (3, "made on A")
    assert a.current("intro-ml", "scene-1").document.title == "made on A"  # the restore, made last, on both
    assert a.notices == () == b.notices  # kept in the record store, not in a fallback


async def test_a_version_kept_from_another_device_is_announced_for_other_tabs_once_and_not_sent_back():
    a, b, replica_a, _, engine_a, engine_b, _ = _two_devices()
    adopted, recorded = [], []
    b.on_adopted(adopted.append)
    b.on_recorded(recorded.append)
    made = await _regenerate(a, "made on A", 10, stage="course-two")
    assert await engine_a.local_version(made)
    doc = replica_a.docs[f"version:{made.id}"]
    assert await engine_b.remote_changed(doc) == "added"
    assert adopted == ["course-two"] and recorded == []  # other tabs redraw; it is not sent out as B's own
    assert await engine_b.remote_changed(doc) == "same" and adopted == ["course-two"]  # here already: no news


async def test_a_free_number_is_kept_and_an_older_one_does_not_replace_the_current_version():
    a, b, replica_a, _, engine_a, engine_b, records_b = _two_devices()
    first, second = await _regenerate(a, "A one", 10), await _regenerate(a, "A two", 11)
    for item in (first, second):
        await engine_a.local_version(item)
    assert await engine_b.remote_changed(replica_a.docs[f"version:{second.id}"]) == "added"  # out of order
    assert await engine_b.remote_changed(replica_a.docs[f"version:{first.id}"]) == "added"
    assert _numbers(await b.read_model.list_scene("intro-ml", "scene-1")) == [(1, "A one"), (2, "A two")]
    assert b.current("intro-ml", "scene-1").document.title == "A two"
    fresh = _checkpoints(records_b, 3)  # after a reload: the stored current version is the newest
    await fresh.load_stage("intro-ml")
    assert fresh.current("intro-ml", "scene-1").version_no == 2


async def test_version_documents_that_are_damaged_or_deleted_change_nothing():
    records = MemoryBackend()
    checkpoints = _checkpoints(records, 1)
    engine = SyncEngine(_device(1), FakeReplica(), MemoryStorage(), checkpoints=checkpoints, records=records)
    good = await _regenerate(_checkpoints(MemoryBackend(), 2), "elsewhere", 5)
    replica = FakeReplica()
    await SyncEngine(_device(2), replica, MemoryStorage(), checkpoints=None).versions.push(
        {"versionId": "intro-ml/scene-1:v1", "artifactId": "intro-ml/scene-1", "stageId": "intro-ml",
         "sceneId": "scene-1", "versionNo": 1, "checkpointId": good.id, "updatedAt": 5, "item": good.wire()},
        {"title": "x", "elements": "not a list"})
    assert await engine.remote_changed(replica.docs[f"version:{good.id}"]) == "damaged"
    assert await engine.remote_changed({"_id": f"version:{good.id}", "_deleted": True}) == "ignored"
    assert await records.query("versions", "versionId", "", "\uffff") == [] and checkpoints.notices == ()


async def test_what_was_stored_before_sync_was_on_goes_out_at_the_first_sync_once():
    records = MemoryBackend()
    history = HistoryService(records, clock=lambda: DEVICE_T0, random_bytes=lambda n: bytes([7] * n))
    checkpoints = _checkpoints(records, 1)
    task = await _device_turn(history, "intro-ml", "before sync")
    item = await _regenerate(checkpoints, "before sync", 10)
    replica, seen = FakeReplica(), MemoryStorage()
    engine = SyncEngine(history, replica, seen, checkpoints=checkpoints, records=records, pause=lambda: asyncio.sleep(0))
    assert await engine.send_all("http://h/db") == 2
    assert set(replica.docs) == {f"conversation:{task}", f"version:{item.id}"}
    assert replica.docs[f"version:{item.id}"]["document"]["title"] == "before sync"
    assert await engine.send_all("http://h/db") == 0 and replica.puts == 2  # once per server and database
    assert await SyncEngine(history, FakeReplica(), seen, checkpoints=checkpoints, records=records).send_all(
        "http://other/db") == 2


class CountingBackend(MemoryBackend):
    """A MemoryBackend that counts its write transactions; ``sneak`` (task id, record) is added by
    "another tab" just before the next write, once."""

    def __init__(self):
        super().__init__()
        self.writes = 0
        self.sneak = None

    async def write(self, ops):
        if self.sneak is not None:
            sneak, self.sneak = self.sneak, None
            await super().write([("put", "conversations", sneak)])
        self.writes += 1
        await super().write(ops)


async def _documents_of(device, stage, texts):
    """Archived conversations of ``texts`` on ``device`` → (task ids, their documents)."""
    replica = FakeReplica()
    engine = SyncEngine(device, replica, MemoryStorage())
    tasks = []
    for text in texts:
        task = await _device_turn(device, stage, text)
        await device.archive(stage, (await device.bundle(task)).messages, 1)
        await engine.push(task)
        tasks.append(task)
    return tasks, [replica.docs[f"conversation:{t}"] for t in tasks]


async def test_a_first_sync_writes_the_conversations_new_here_in_one_transaction():
    tasks, docs = await _documents_of(_device(1), "s", [f"turn {i}" for i in range(6)])
    backend = CountingBackend()
    b = HistoryService(backend, clock=lambda: DEVICE_T0, random_bytes=lambda n: bytes([9] * n))
    changes = _changes(b)
    engine = SyncEngine(b, FakeReplica(), MemoryStorage())
    await b.total("s")  # opened
    before = backend.writes
    assert await engine.remote_changed_many(docs) == ["added"] * 6
    assert backend.writes - before == 1
    assert changes == [("import", t, "s", "sync") for t in tasks]
    assert await b.total("s") == 6
    assert [m["content"][0]["text"] for m in (await b.bundle(tasks[3])).messages][0] == "turn 3"


async def test_a_slice_of_mixed_documents_ends_as_the_same_documents_one_by_one():
    a = _device(1)
    tasks, docs = await _documents_of(a, "s", ["one", "two", "three"])
    meta, messages, _ = await a.bundle(tasks[0])
    await a.record_turn_in(tasks[0], ended("s", messages + [_user("more", "u-more"), _reply("r", "a-more")],
                                           usage=None, model="demo", duration_ms=5, message_id="a-more"))
    replica_a = FakeReplica()
    await SyncEngine(a, replica_a, MemoryStorage()).push(tasks[0])
    longer = replica_a.docs[f"conversation:{tasks[0]}"]
    deleted = {"_id": f"conversation:{tasks[1]}", "_deleted": True}
    damaged = {"_id": "conversation:task_20261201_zzzzzz", "meta": {}}
    design = {"_id": "_design/x"}
    # the same id twice (older, then longer), a delete of one added just before, a damaged one
    slice_ = [docs[0], docs[1], longer, deleted, damaged, design, docs[2]]
    together, alone = _device(2), _device(3)
    engine_t, engine_a = SyncEngine(together, FakeReplica(), MemoryStorage()), SyncEngine(alone, FakeReplica(), MemoryStorage())
    outcomes = await engine_t.remote_changed_many(slice_)
    assert outcomes == [await engine_a.remote_changed(doc) for doc in slice_]
    assert outcomes == ["added", "added", "remote", "deleted", "damaged", "ignored", "added"]
    for task in tasks:
        assert await together.bundle(task) == await alone.bundle(task)
    assert len((await together.bundle(tasks[0])).messages) == 4 and await together.bundle(tasks[1]) is None


async def test_a_slice_whose_transaction_aborts_is_applied_one_by_one_and_loses_nothing():
    tasks, docs = await _documents_of(_device(1), "s", ["x", "y", "z"])
    backend = CountingBackend()
    b = HistoryService(backend, clock=lambda: DEVICE_T0, random_bytes=lambda n: bytes([9] * n))
    await b.total("s")
    # another tab adds y's conversation between the read that found it missing and the write
    backend.sneak = conversation_of(docs[1])[0].model_dump()
    outcomes = await SyncEngine(b, FakeReplica(), MemoryStorage()).remote_changed_many(docs)
    assert b.available is not False
    assert outcomes[0] == "added" and outcomes[2] == "added" and outcomes[1] in ("remote", "same", "added")
    for task in tasks:
        assert (await b.bundle(task)).messages == conversation_of(docs[tasks.index(task)])[1]


async def test_building_a_slice_of_new_conversations_gives_the_page_back_every_slice_ms():
    from app.history.writes import SLICE_MS

    tasks, docs = await _documents_of(_device(1), "s", [f"q {i}" for i in range(6)])
    now, pauses = [DEVICE_T0], []

    def clock():  # each reading is SLICE_MS / 2 later: a pause is due after every second record
        now[0] += SLICE_MS // 2
        return now[0]

    async def pause():
        pauses.append(now[0])

    b = HistoryService(CountingBackend(), clock=clock, random_bytes=lambda n: bytes([9] * n), pause=pause)
    await b.total("s")
    assert await SyncEngine(b, FakeReplica(), MemoryStorage()).remote_changed_many(docs) == ["added"] * 6
    assert 2 <= len(pauses) <= 6 and await b.total("s") == 6


async def test_a_slice_is_encoded_in_a_step_of_its_own_after_its_records_are_built():
    tasks, docs = await _documents_of(_device(1), "s", ["a", "b"])
    log: list[str] = []

    class LoggingBackend(CountingBackend):
        async def write(self, ops):
            log.append("write")
            await super().write(ops)

    async def pause():
        log.append("pause")

    # a clock that never moves: building two records is within SLICE_MS, yet the commit comes after a pause
    b = HistoryService(LoggingBackend(), clock=lambda: DEVICE_T0, random_bytes=lambda n: bytes([9] * n), pause=pause)
    await b.total("s")
    log.clear()
    assert await SyncEngine(b, FakeReplica(), MemoryStorage()).remote_changed_many(docs) == ["added"] * 2
    assert log == ["pause", "write"]


# -- conflicting revisions: every leaf's turns (app.history.merge.merge_leaves) -------------------
def _roles(messages):
    return [m["role"] for m in messages]


def _no_two_users_in_a_row(messages):
    return all(not (a["role"] == b["role"] == "user") for a, b in zip(messages, messages[1:]))


def test_many_leaves_with_disjoint_histories_keep_every_turn_and_never_two_user_messages_in_a_row():
    """Every leaf a branch of its own (DESIGN.md §17 "Sync"; it replaces §16's one path of them all)."""
    from app.history.merge import merge_leaves

    leaves = []
    for n in range(2000):  # a peer wrote each as a revision of its own, sharing no history
        if n % 2:
            leaves.append(([_user(f"q{n}", f"u{n}"), _reply(f"r{n}", f"a{n}")], [_turn(1, 1000 + n, f"a{n}")]))
        else:  # a question with no answer (a turn cut off), as the hostile peer wrote them
            leaves.append(([_user(f"q{n}", f"u{n}")], []))
    merged = merge_leaves(leaves)
    ids = [m.get("id") for m in _texts(merged)]
    assert all(f"u{n}" in ids for n in range(2000)) and all(f"a{n}" in ids for n in range(1, 2000, 2))
    assert len(ids) == 3000 and _no_two_users_in_a_row(merged.messages)
    assert len([t for t in merged.turns]) == 1000 and [t.turnId for t in merged.turns] == list(range(1, 1001))
    again = merge_leaves(list(reversed(leaves)))  # in any order: the same tree
    assert (again.messages, again.branching) == (merged.messages, merged.branching)


def test_continuations_of_one_conversation_are_all_kept_as_siblings():
    """DESIGN.md §17 "Sync" (it replaces §16's turns of all leaves in time order on one path)."""
    from app.history.merge import merge_leaves

    (u1, t1), (a, ta), (b, tb), (c, tc) = _pair("1", 10), _pair("A", 30), _pair("B", 20), _pair("C", 40)
    leaves = [(u1 + a, [t1, ta]), (u1 + b, [t1, tb]), (u1 + c, [t1, tc]), (u1, [t1])]
    merged = merge_leaves(leaves, [30, 20, 40, 10])
    assert [m["content"] for m in merged.messages] == ["1", "1", "C", "C"]  # the latest leaf shown
    tree = merged.branching.tree(merged.messages)
    (fork,) = tree.forks().values()
    assert sorted(tree.nodes[i]["content"] for i in fork) == ["A", "B", "C"] and len(tree) == 8
    assert [t.messageId for t in merged.turns] == ["r1", "rB", "rA", "rC"]
    # one leaf that continues another (a device went on from it) is that one, nothing doubled
    assert merge_leaves([(u1, [t1]), (u1 + a, [t1, ta])]).messages == u1 + a
    assert merge_leaves([(u1 + a, [t1, ta])]).how == "local"


def test_a_two_way_merge_of_unanswered_questions_keeps_each_as_a_first_message_of_its_own():
    """DESIGN.md §17 "Sync" (it replaces §16's stopped reply between two questions on one path):
    each question is a sibling first message, nothing made up, never two user messages in a row."""
    merged = merge_conversation(([_user("x", "ux")], []), ([_user("y", "uy")], []))
    assert _roles(merged.messages) == ["user"]
    tree = merged.branching.tree(merged.messages)
    assert tree.children() == ["uy", "ux"] and len(tree) == 2


# -- a delete wins on every device; what the deleting device never saw is kept apart, said ---------
class LeafReplica(FakeReplica):
    """``FakeReplica`` that also records the bulk writes that resolve a conflict (``resolve``)."""

    def __init__(self):
        super().__init__()
        self.resolved: list[list[dict]] = []

    async def remove(self, doc_id, body=None):
        self.docs[doc_id] = {"_id": doc_id, "_deleted": True, **(body or {})}

    async def resolve(self, docs):
        self.resolved.append(json.loads(json.dumps(docs)))


async def test_a_delete_on_a_wins_over_a_turn_b_added_offline_which_b_keeps_apart_and_says_so():
    from app.sync.documents import doc_id_of_task

    notices = []
    a, b, task, replica_a, replica_b, engine_a, engine_b = await _syncing_pair("s", "shared", LeafReplica, notices)
    await engine_a.push(task)
    doc_id = doc_id_of_task(task)
    shared_doc = {**replica_a.docs[doc_id], "_rev": "1-s"}
    await engine_b.remote_changed(shared_doc)
    assert await b.resume("s", task, [], None, 5)  # B goes on with it, off-line
    _, messages, _ = await b.bundle(task)
    await b.record_turn_in(task, ended("s", messages + [_user("offline on B", "u-B"), _reply("r", "a-B")], usage=None,
                                       model="demo", duration_ms=5, message_id="a-B"))
    await engine_b.push(task)
    b_doc = {**replica_b.docs[doc_id], "_rev": "2-b"}
    heads = _heads(b)
    assert await a.delete(task)
    await _delete_goes_out(engine_a, task)
    deletion = {**replica_a.docs[doc_id], "_rev": "2-a"}
    assert deletion["type"] == "deletion" and deletion["seen"]  # what A had, as digests, no text
    assert "shared" not in json.dumps(deletion)
    # B: CouchDB's winner is B's live revision (a live leaf beats a deletion), A's deletion a leaf beside it
    outcome = await engine_b.remote_changed({**b_doc, "_leaves": [b_doc, deletion]})
    assert outcome == "deleted" and await b.bundle(task) is None
    (kept_apart,) = [m for m in (await b.page("s")).items]
    assert kept_apart.taskId != task
    _, kept_messages, kept_turns = await b.bundle(kept_apart.taskId)
    assert [m.get("id") for m in kept_messages] == ["u-B", "a-B"] and [t.messageId for t in kept_turns] == ["a-B"]
    assert [n.code for n in notices] == ["sync-deleted-kept"] and notices[0].params["count"] == 1
    assert heads == [("s", ["u-B", "a-B"])]  # B's panel shows its own turn, no longer the deleted conversation
    assert await b.head_task_id("s", allocate=False) == kept_apart.taskId
    assert (await b.active("s"))[0].taskId == kept_apart.taskId  # what the panel's stats and list read
    (bulk,) = replica_b.resolved  # B deletes its live leaf too: no live revision of the id is left
    assert [(d["_rev"], d["_deleted"], d["type"]) for d in bulk] == [("2-b", True, "deletion")]
    # A: B's revision arrives before B resolved (A's deletion a leaf beside it): deleted again, not adopted
    assert await engine_a.remote_changed({**b_doc, "_leaves": [b_doc, deletion]}) == "redeleted"
    assert await a.bundle(task) is None and await a.total("s") == 0
    assert [(d["_rev"], d["_deleted"]) for d in replica_a.resolved[0]] == [("2-b", True)]
    # B's kept-apart conversation went out as one of its own
    assert await engine_a.remote_changed(replica_b.docs[doc_id_of_task(kept_apart.taskId)]) == "added"


async def test_a_deleted_active_conversation_with_nothing_unseen_leaves_the_panel_with_a_notice():
    from app.sync.documents import doc_id_of_task, turn_digests

    notices = []
    b = _device(2, on_notice=notices.append)
    task = await _device_turn(b, "s", "only")
    _, messages, _ = await b.bundle(task)
    heads = _heads(b)
    engine = SyncEngine(b, LeafReplica(), MemoryStorage())
    deletion = {"_id": doc_id_of_task(task), "_rev": "3-a", "_deleted": True, "type": "deletion",
                "seen": turn_digests(messages)}
    assert await engine.remote_changed(deletion) == "deleted"
    assert await b.total("s") == 0 and heads == [("s", [])] and [n.code for n in notices] == ["sync-deleted-active"]
    assert await b.head_task_id("s", allocate=False) is None


def test_the_delete_wins_decision():
    from app.sync.tombstones import decide

    live = {"_id": "conversation:t", "_rev": "3-b", "meta": {}}
    other = {**live, "_rev": "2-c"}
    loser_deleted = {"_id": "conversation:t", "_rev": "4-d", "_deleted": True}  # a merged loser, not a delete
    marked = {"_id": "conversation:t", "_rev": "2-a", "_deleted": True, "type": "deletion", "seen": ["d1", 5]}
    assert decide(live, [live, loser_deleted], True).what == "one"
    merge = decide(live, [other, loser_deleted, live], True)
    assert merge.what == "merge" and [leaf["_rev"] for leaf in merge.live] == ["3-b", "2-c"]  # the winner first
    assert [leaf["_rev"] for leaf in merge.losers] == ["2-c"]
    delete = decide(live, [live, other, marked, {**marked, "_rev": "3-e", "seen": ["d2"]}], True)
    assert delete.what == "delete" and delete.seen == {"d1", "d2"} and len(delete.live) == 2
    assert decide(live, None, False).what == "delete" and decide(live, None, False).seen is None  # a tombstone here
    assert decide({**loser_deleted}, [loser_deleted], True).what == "delete"  # every leaf deleted


# -- conflicting revisions through the engine: merged, written over the winner, losers deleted ------
async def test_conflicting_revisions_keep_every_leafs_turns_and_the_losing_leaves_are_deleted_in_one_bulk():
    from app.sync.documents import doc_id_of_task

    b = _device(2)
    task = "task_20261201_abcdef"
    doc_id = doc_id_of_task(task)

    def leaf(rev, texts, at):
        messages = [m for n, text in enumerate(texts) for m in (_user(text, f"u-{text}"), _reply(text, f"a-{text}"))]
        turns = [TurnMeta(turnId=n + 1, timestamp=iso(DEVICE_T0 + at + n), messageId=f"a-{text}")
                 for n, text in enumerate(texts)]
        meta = TaskMeta(taskId=task, taskName="t", stageId="s", createdAt=DEVICE_T0, updatedAt=DEVICE_T0 + at + 9)
        return {**conversation_doc(meta, messages, turns), "_rev": rev}

    # three proper continuations of one first turn, and two revisions sharing no history with it
    leaves = [leaf("3-w", ["base", "w"], 10), leaf("2-x", ["base", "x"], 20), leaf("2-y", ["base", "y"], 30),
              leaf("1-z", ["z"], 40), leaf("1-q", ["q"], 5)]
    replica = LeafReplica()
    engine = SyncEngine(b, replica, MemoryStorage(), clock=lambda: DEVICE_T0 + 10_000)
    await engine.remote_changed({**leaves[0], LEAVES: leaves})
    held = await b.bundle(task)
    _, messages, turns = held
    said = [m["content"][0]["text"] for m in held.branching.tree(messages).texts() if m["role"] == "user"]
    assert sorted(said) == ["base", "q", "w", "x", "y", "z"] and said.count("base") == 1  # every leaf a branch (§17)
    assert _no_two_users_in_a_row(messages) and len(turns) == 6
    (bulk,) = replica.resolved
    assert bulk[0]["_rev"] == "3-w" and not bulk[0].get("_deleted") and bulk[0]["messages"] == messages
    assert sorted((d["_rev"], d["_deleted"]) for d in bulk[1:]) == [("1-q", True), ("1-z", True), ("2-x", True),
                                                                    ("2-y", True)]
    assert all("type" not in d for d in bulk[1:])  # a merged loser's deletion is not the conversation's


async def test_sync_intake_refuses_what_an_import_refuses_and_says_how_many_documents_could_not_be_read():
    from app.history.chatgpt import MAX_CONVERSATION_CHARS
    from app.sync.documents import doc_id_of_task

    b = _device(2)
    now = DEVICE_T0 + 10_000
    notices = []
    engine = SyncEngine(b, LeafReplica(), MemoryStorage(), clock=lambda: now, notify=notices.append)
    meta = TaskMeta(taskId="task_20261201_abcdef", taskName="t", stageId="s", createdAt=DEVICE_T0, updatedAt=now)
    fine = conversation_doc(meta, [_user("hi", "u1"), _reply("yo", "a1")], [])
    huge = conversation_doc(meta.model_copy(update={"taskId": "task_20261201_huge00"}),
                            [_user("x" * (MAX_CONVERSATION_CHARS + 1), "u2")], [])
    ahead = conversation_doc(meta.model_copy(update={"taskId": "task_20261201_ahead0",
                                                     "updatedAt": now + 3 * 365 * 86_400_000}), [], [])
    not_slim = {**conversation_doc(meta.model_copy(update={"taskId": "task_20261201_slim00"}), [], []),
                "messages": [{"role": "user", "content": "not parts"}]}
    malformed = {"_id": doc_id_of_task("task_20261201_broken"), "meta": "?"}
    outcomes = await engine.remote_changed_many([huge, ahead, not_slim, malformed, fine])
    assert outcomes == ["damaged"] * 4 + ["added"]
    assert [m.taskId for m in (await b.page("s")).items] == ["task_20261201_abcdef"]
    assert [(n.code, n.params) for n in notices] == [("sync-unreadable", {"count": 4})]  # one notice, the count
    checkpoints = _checkpoints(MemoryBackend(), 3)
    versions = SyncEngine(b, LeafReplica(), MemoryStorage(), checkpoints=checkpoints, clock=lambda: now)
    ahead_version = app.sync.documents.version_doc(
        "a:v1", artifactId="a", stageId="s", sceneId="c", versionNo=1, checkpointId="fc_ahead",
        createdAt=now + 3 * 365 * 86_400_000, item={}, document={})
    assert await versions.remote_changed(ahead_version) == "damaged" and versions.unreadable == 1


async def test_a_slice_read_ahead_is_not_checked_again_yet_a_deletion_applied_meanwhile_still_wins():
    """``read_ahead`` checks a slice while the one before is written (DESIGN.md §16): what it read is
    taken as it is (nothing checked twice, nothing counted or noticed until applied), a document it
    could not read is counted once, when applied; a deletion applied in between wins over what was
    read; another object of the same id is checked when it comes."""
    from app.sync.documents import doc_id_of_task

    b = _device(2)
    now = DEVICE_T0 + 10_000
    notices = []
    engine = SyncEngine(b, LeafReplica(), MemoryStorage(), clock=lambda: now, notify=notices.append)

    def doc(task, text):
        meta = TaskMeta(taskId=task, taskName=text, stageId="s", createdAt=DEVICE_T0, updatedAt=now)
        return conversation_doc(meta, [_user(text, f"u-{text}"), _reply("ok", f"a-{text}")], [])

    first, gone, broken = doc("task_20261201_first0", "one"), doc("task_20261201_gone00", "two"), \
        {**doc("task_20261201_broken", "three"), "meta": "?"}
    docs = [first, gone, broken]
    ahead = await engine.read_ahead(docs)
    assert engine.unreadable == 0 and notices == [] and await b.bundle("task_20261201_first0") is None
    checked = []
    real_read = engine._read

    async def counting(document):
        checked.append(document["_id"])
        return await real_read(document)

    engine._read = counting
    engine.tombstones.delete(doc_id_of_task("task_20261201_gone00"))  # the slice before deleted it
    assert await engine.remote_changed_many(docs, ahead) == ["added", "redeleted", "damaged"]
    assert checked == [] and engine.unreadable == 1 and [n.params for n in notices] == [{"count": 1}]
    assert (await b.bundle("task_20261201_first0")).meta.taskName == "one"
    assert await b.bundle("task_20261201_gone00") is None
    again = doc("task_20261201_later0", "four")
    assert await engine.remote_changed_many([again], ahead) == ["added"] and checked == [again["_id"]]


async def test_a_read_ahead_gives_the_page_its_turn_between_documents_once_its_budget_went_by(monkeypatch):
    """Each document's checks give the page its turn within them (``_read``); ``read_ahead`` also does
    between documents once ``BUDGET_S`` went by since the page last had it (DESIGN.md §16: no long
    task), so many short documents, each checked within the budget, never run on in one task."""
    clock = [0.0]
    pauses = []

    async def pause():
        pauses.append(clock[0])

    engine = SyncEngine(_device(2), LeafReplica(), MemoryStorage(), clock=lambda: DEVICE_T0 + 10_000, pause=pause)
    real_read = engine._read

    async def read(document):  # each document's checks take 60% of the budget, no pause within
        read = await real_read(document)
        clock[0] += app.sync.engine.BUDGET_S * 0.6
        return read

    engine._read = read
    monkeypatch.setattr(app.sync.engine.time, "perf_counter", lambda: clock[0])

    def doc(n):
        meta = TaskMeta(taskId=f"task_20261201_short{n}", taskName="t", stageId="s", createdAt=DEVICE_T0,
                        updatedAt=DEVICE_T0)
        return conversation_doc(meta, [_user(f"q{n}", f"u{n}"), _reply("a", f"a{n}")], [])

    pauses.clear()
    await engine.read_ahead([doc(n) for n in range(5)])
    budget = app.sync.engine.BUDGET_S
    assert pauses == pytest.approx([2 * 0.6 * budget, 4 * 0.6 * budget])


def test_sync_intake_holds_a_document_to_the_import_rules_without_writing_it_as_an_exports_text(monkeypatch):
    import app.history.export
    import app.store.jsjson

    def as_text(*_args, **_kwargs):
        raise AssertionError("the document was written as an export's text, or such a text decoded")

    monkeypatch.setattr(app.store.jsjson, "js_json", as_text)
    monkeypatch.setattr(app.history.export, "decode_at", as_text)
    now = DEVICE_T0 + 10_000
    meta = TaskMeta(taskId=TASK, taskName="t", stageId="s", createdAt=DEVICE_T0, updatedAt=now)
    messages = [_user("hi \ud83d", "u1"), _reply("yo 😀", "a1")]
    turns = [TurnMeta(turnId=1, timestamp=iso(DEVICE_T0 + 5), messageId="a1", duration=3)]
    assert conversation_of(conversation_doc(meta, messages, turns), now) == (meta, messages, turns)
    refused = [
        conversation_doc(meta.model_copy(update={"updatedAt": now + 2 * 86_400_000}), messages, turns),
        conversation_doc(meta, messages, [turns[0].model_copy(update={"timestamp": iso(now + 2 * 86_400_000)})]),
        conversation_doc(meta, messages, [turns[0].model_copy(update={"timestamp": "2026-02-30T00:00:00.000Z"})]),
        conversation_doc(meta.model_copy(update={"createdAt": now + 1}), messages, turns),
        {**conversation_doc(meta, messages, turns), "messages": [{"role": "user", "content": "not parts"}]},
        {**conversation_doc(meta, messages, turns), "messages": [{**messages[0], "extra": 1}]},
    ]
    for doc in refused:
        with pytest.raises(ValueError):
            conversation_of(doc, now)


def test_sync_intake_builds_no_tree_of_a_chain_and_refuses_what_its_export_would(monkeypatch):
    """A document's checks (the import's, DESIGN.md §14) refuse it exactly when its export
    (``export_document``) is refused by ``checked_steps``, with no tree built, exported and read back."""
    import app.history.export
    from app.history.export import checked_steps, export_document
    from app.history.tree import Tree
    from app.json_steps import run_steps

    now = DEVICE_T0 + 10_000
    meta = TaskMeta(taskId=TASK, taskName="t", stageId="s", createdAt=DEVICE_T0, updatedAt=now)
    turns = [TurnMeta(turnId=1, timestamp=iso(DEVICE_T0 + 5), messageId="a1", duration=3)]
    fine = [_user("hi", "u1"), _reply("yo", "a1")]
    tool = {"type": "tool-call", "toolCallId": "c1", "toolName": "t", "args": {}}
    variants = [fine, [], [_user("hi", "u1"), _reply("yo", "u1")], [{**fine[0], "id": ""}, fine[1]],
                [{**fine[0], "id": 7}, fine[1]], [{k: v for k, v in fine[0].items() if k != "id"}, fine[1]],
                [{**fine[0], "parentId": "zz"}, fine[1]], [{**fine[0], "parentId": None}], [{**fine[0], "extra": 1}],
                [{"role": "system", "id": "s1", "content": [{"type": "text", "text": "x"}]}],
                [{"role": "user", "id": "u1", "content": "plain"}], [{"role": "user", "id": "u1", "content": []}],
                [{"role": "assistant", "id": "a1", "content": [tool]}],
                [{"role": "assistant", "id": "a1", "content": [{**tool, "isError": False}]}],
                [{"role": "assistant", "id": "a1", "content": [{"type": "text", "text": None}]}],
                [{"role": "assistant", "id": "a1", "content": [{"type": "text", "text": "x"}], "status": "?"}],
                [{"role": "tool", "id": "t1", "content": [{"type": "text", "text": "x"}]}], [{**fine[0], "id": "u\x00"}]]
    refused_before = []
    for messages in variants:
        try:
            run_steps(checked_steps(export_document(meta, messages, turns), now))
            refused_before.append(False)
        except ValueError:
            refused_before.append(True)

    def no_tree(*_args, **_kwargs):
        raise AssertionError("a tree was built for a document's checks")

    monkeypatch.setattr(Tree, "chain", no_tree)
    monkeypatch.setattr(Tree, "from_export", no_tree)
    refused = []
    for messages in variants:
        try:
            conversation_of(conversation_doc(meta, messages, turns), now)
            refused.append(False)
        except ValueError:
            refused.append(True)
    assert refused == refused_before and True in refused and False in refused
    assert app.history.export.chain_document(meta, [{**fine[0], "parentId": "x"}], turns)["messages"] == [fine[0]]


class ReadCountingBackend(MemoryBackend):
    """A MemoryBackend that counts every read it answers (records, pages, counts, keys)."""

    def __init__(self):
        super().__init__()
        self.reads = 0

    def __getattribute__(self, name):
        if name in ("get", "bulk_get", "query", "count", "query_count", "keys", "primary_keys", "scan"):
            object.__setattr__(self, "reads", object.__getattribute__(self, "reads") + 1)
        return object.__getattribute__(self, name)


async def test_a_finished_turn_goes_out_as_history_wrote_it_without_reading_history_back():
    """DESIGN.md §15: the change history announces carries what it wrote, so sync sends the
    conversation's document from it and reads no record back (it read three per turn)."""
    from app.sync.documents import doc_id_of_task

    backend = ReadCountingBackend()
    device = HistoryService(backend, clock=lambda: DEVICE_T0, random_bytes=lambda n: bytes([5] * n))
    replica = FakeReplica()
    engine = SyncEngine(device, replica, MemoryStorage())
    heard = []
    device.changes.subscribe(lambda change: SyncEngine.sends(change) and heard.append(change))
    thread = []
    for n in range(2):
        thread += [_user(f"q{n}", f"u{n}"), _reply(f"r{n}", f"a{n}")]
        await device.record_turn(ended("s", list(thread), usage=None, model="demo", duration_ms=5,
                                       message_id=f"a{n}"), n + 1)
        (change,) = heard
        heard.clear()
        before = backend.reads
        await engine.local_changed(change)
        assert backend.reads == before  # nothing read back
        document = replica.docs[doc_id_of_task(change.task_id)]
        assert document == json.loads(json.dumps(conversation_doc(*await device.bundle(change.task_id))))
        assert [m["id"] for m in document["messages"]] == [m["id"] for m in thread]


async def test_the_first_sync_reads_history_a_page_at_a_time_not_three_records_per_conversation():
    """``send_all`` takes conversations from history's repository in pages (meta, messages and turns
    of a page in one read each), not a query then three reads per conversation (DESIGN.md §15)."""
    from app.sync.documents import doc_id_of_task

    backend = ReadCountingBackend()
    counter = itertools.count(3)
    history = HistoryService(backend, clock=lambda: DEVICE_T0, random_bytes=lambda n: bytes([next(counter)] * n))
    tasks = []
    for n in range(6):
        tasks.append(await _device_turn(history, f"course-{n}", f"turn {n}"))
    replica = FakeReplica()
    engine = SyncEngine(history, replica, MemoryStorage(), records=backend, pause=lambda: asyncio.sleep(0))
    before = backend.reads
    assert await engine.send_all("http://h/db") == 6
    assert backend.reads - before <= 3  # one page: the metas, then the messages and turns of all of them
    for task in tasks:
        sent = conversation_doc(*await history.bundle(task))
        assert replica.docs[doc_id_of_task(task)] == json.loads(json.dumps(sent))


def test_sync_backup_and_the_browser_layer_name_no_history_table():
    """Only ``app.history.repository`` (and the stores' own adapters) name the record tables: sync,
    backup and the browser layer reach them through its verbs (DESIGN.md §15). A table is named by a
    call that takes its name (a dict's key and a call of the module's own method aside: ``self.x("versions")``
    in the backup format is a file member) or by a write op ``(verb, table, …)``."""
    import ast
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2]
    tables = set(re.findall(r'^\s+"(\w+)":\s*"', (root / "app" / "records.py").read_text(encoding="utf-8"), re.M))
    assert {"conversations", "versions", "snapshots", "heads", "artifacts"} <= tables

    def names_table(node: ast.AST) -> bool:
        if isinstance(node, ast.Call):
            func = node.func
            dict_verb = isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault") \
                and len(node.args) == 1  # a dict's key, not a table (a backend's get takes a key too)
            own = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
            return not dict_verb and not own and any(
                isinstance(arg, ast.Constant) and arg.value in tables for arg in node.args)
        return isinstance(node, ast.Tuple) and len(node.elts) >= 2 and all(
            isinstance(e, ast.Constant) for e in node.elts[:2]) and node.elts[0].value in (
            "add", "put", "delete", "patch") and node.elts[1].value in tables

    named = []
    for folder in ("sync", "backup", "browser"):
        for path in sorted((root / "app" / folder).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if names_table(node):
                    named.append(f"{folder}/{path.name}:{node.lineno}")
    assert named == []


class StoppedReplica(FakeReplica):
    """A replication that ended (Sync now, the watchdog, new settings): every write is refused, as
    ``static/sync.js`` refuses a call made after ``stop()``."""

    async def put(self, doc):
        raise RuntimeError("sync stopped")

    async def remove(self, doc_id, body=None):
        raise RuntimeError("sync stopped")


async def test_a_change_whose_write_a_stopped_replication_refused_goes_out_with_the_next_start():
    a, b = _device(1), _device(2)
    task = await _device_turn(a, "s", "first")
    doomed = await _device_turn(a, "t", "doomed")
    await a.archive("t", (await a.bundle(doomed)).messages, 1)
    unsent, deleted = Unsent(), MemoryStorage()
    stopped = SyncEngine(a, StoppedReplica(), deleted, unsent=unsent)
    bundle = await a.bundle(task)
    with pytest.raises(RuntimeError):  # the step fails (and is logged): its change is kept to send
        await stopped.local_changed(HistoryChange("record", task, "s", written=bundle))
    assert await a.delete(doomed)
    await stopped.local_changed(HistoryChange("delete", doomed, "t"))  # held while Undo can take it back
    with pytest.raises(RuntimeError):  # then refused: it stays held
        await _hold_ends(stopped)
    await a.record_turn(ended("s", [*bundle.messages, _user("second", "u-second"), _reply("ok second", "a-second")],
                              message_id="a-second"), 2)  # a later turn, its change not heard by the stopped engine
    assert await a.head_task_id("s", allocate=False) == task
    replica = FakeReplica()
    restarted = SyncEngine(a, replica, deleted, unsent=unsent)
    assert await restarted.resend() == 1 and await _hold_ends(restarted) == 1  # a start sends what is held too
    doc = replica.docs[f"conversation:{task}"]  # as history holds it now, not the refused copy
    assert "ok second" in [p["text"] for m in doc["messages"] for p in m["content"]]
    assert replica.docs[f"conversation:{doomed}"]["_deleted"] is True
    assert not unsent and await restarted.resend() == 0  # sent once
    assert await b.bundle(task) is None
    assert await SyncEngine(b, replica, MemoryStorage()).remote_changed(doc) == "added"


async def test_a_scene_version_whose_write_a_stopped_replication_refused_goes_out_with_the_next_start():
    records = MemoryBackend()
    checkpoints = _checkpoints(records, 1)
    made = await _regenerate(checkpoints, "made while A restarted", 10)
    unsent = Unsent()
    stopped = SyncEngine(_device(1), StoppedReplica(), MemoryStorage(), checkpoints=checkpoints, records=records,
                         unsent=unsent)
    with pytest.raises(RuntimeError):
        await stopped.local_version(made)
    replica = FakeReplica()
    restarted = SyncEngine(_device(1), replica, MemoryStorage(), checkpoints=checkpoints, records=records,
                           unsent=unsent)
    assert await restarted.resend() == 1
    assert replica.docs[f"version:{made.id}"]["document"]["title"] == "made while A restarted"
    assert not unsent and await restarted.resend() == 0


async def test_two_devices_whose_turn_metas_of_one_reply_differ_agree_on_one_and_stop_sending():
    """The same messages on both devices, the meta of one reply's turn apart (B's copy says other
    usage and duration: a device's own record of the turn against another's): traded through the merge
    as above, they agree on one turn meta per reply, the same whichever device merges, within two
    exchanges (DESIGN.md §16: no echo; devices end the same)."""
    a, b = _device(1), _device(2)
    task = await _device_turn(a, "intro-ml", "shared")
    held = await a.bundle(task)
    other = [t.model_copy(update={"duration": 999, "usage": None}) for t in held.turns]
    assert other != held.turns
    assert await b.apply_synced(held.meta, held.messages, other) == "added"
    replicas = {a: FakeReplica(), b: FakeReplica()}
    engines = {d: SyncEngine(d, replicas[d], MemoryStorage()) for d in (a, b)}
    await engines[a].push(task)
    await engines[b].push(task)
    doc_id = f"conversation:{task}"
    for first in (a, b):  # each device hears the other's version first once
        sender, receiver, exchanges = (b, a) if first is a else (a, b), None, 0
        sender, receiver = sender
        while exchanges < 6:
            doc = json.loads(json.dumps(replicas[sender].docs[doc_id]))
            before = replicas[receiver].puts
            await engines[receiver].remote_changed(doc)
            exchanges += 1
            if replicas[receiver].puts == before:
                break
            sender, receiver = receiver, sender
        assert exchanges <= 2
    kept_a, kept_b = await a.bundle(task), await b.bundle(task)
    assert kept_a.turns == kept_b.turns and len(kept_a.turns) == len(held.turns)
    assert kept_a.messages == kept_b.messages == held.messages


async def test_a_deleted_conversation_imported_again_from_its_file_syncs_under_a_new_id():
    """Import JSON of a conversation whose deletion went out: another device only ever sees that id
    deleted (DESIGN.md §16), so the import comes back here under a new id, whole, and goes out as any
    other conversation (never kept on this device alone while every device says synced)."""
    from app.sync.documents import doc_id_of_task

    a, b, task, replica_a, replica_b, engine_a, engine_b = await _syncing_pair("s", "imported")
    await a.archive("s", (await a.bundle(task)).messages, 1)
    before = await _deleted_everywhere(a, task, replica_a, engine_a, engine_b)
    assert await a.import_bundle("s", before.meta, before.messages, before.turns) == "ok"
    await engine_a.local_changed(HistoryChange("import", task, "s", "import"))
    (item,) = (await a.page("s")).items
    renewed = item.taskId
    assert renewed != task and await a.bundle(task) is None
    assert (await a.bundle(renewed)).messages == before.messages
    assert await engine_b.remote_changed(replica_a.docs[doc_id_of_task(renewed)]) == "added"
    assert (await b.bundle(renewed)).messages == before.messages and await b.bundle(task) is None


async def test_the_conversations_a_backup_restored_with_sync_on_go_out_and_one_under_a_deleted_id_under_a_new_id():
    """Restore a backup with sync on (DESIGN.md §14, §16; §5: nothing is lost silently): every
    conversation the restore wrote goes out as an import does (before, only the first sync with a
    server sent anything, so what a restore added later stayed on this device while every device
    read "Synced"); one whose id this device deleted, and whose deletion went out, comes back under
    a new id (``renew_synced``) and goes out under it, the deleted id staying deleted."""
    from app.backup.tables import restore, write_backup
    from app.records import MemoryBackend as Records
    from app.sync.documents import doc_id_of_task

    records, records_c = Records(), Records()
    counter = itertools.count(7)
    a = HistoryService(records, clock=lambda: DEVICE_T0, random_bytes=lambda n: bytes([next(counter) % 256] * n))
    b = _device(2)
    c = HistoryService(records_c, clock=lambda: DEVICE_T0 + 5, random_bytes=lambda n: bytes([9] * n))
    x = await _device_turn(a, "s", "backed up")
    await a.archive("s", (await a.bundle(x)).messages, 1)
    replica_a, replica_b = FakeReplica(), FakeReplica()
    engine_a, engine_b = SyncEngine(a, replica_a, MemoryStorage()), SyncEngine(b, replica_b, MemoryStorage())
    pause = lambda: asyncio.sleep(0)  # noqa: E731
    NO_THREADS = {"state": {"threads": {}}, "version": 1}  # noqa: N806 - no course's thread in the backups
    backup_a = await write_backup(records, NO_THREADS, DEVICE_T0, pause)  # holds X
    before = await _deleted_everywhere(a, x, replica_a, engine_a, engine_b)
    y = await _device_turn(c, "t", "made on another device")  # never synced: only in C's backup
    backup_c = await write_backup(records_c, NO_THREADS, DEVICE_T0, pause)
    new_ids = iter(["task_20261201_fresh1", "task_20261201_fresh2"])
    for data in (backup_a, backup_c):
        plan = await restore(records, data, pause, local_thread=lambda s: True, new_id=lambda m: next(new_ids))
        for change in plan.changes():
            await engine_a.local_changed(change)
    assert await engine_b.remote_changed(replica_a.docs[doc_id_of_task(y)]) == "added"
    assert (await b.bundle(y)).messages == (await c.bundle(y)).messages
    (item,) = (await a.page("s")).items  # X: back under a new id, which goes out; the deleted id stays deleted
    renewed = item.taskId
    assert renewed != x and await a.bundle(x) is None and replica_a.docs[doc_id_of_task(x)]["_deleted"] is True
    assert await engine_b.remote_changed(replica_a.docs[doc_id_of_task(renewed)]) == "added"
    assert (await b.bundle(renewed)).messages == before.messages and await b.bundle(x) is None


async def test_a_delete_undone_before_it_went_out_never_leaves_the_device_and_the_other_devices_turn_is_kept_in_it():
    """Undo delete while the delete is held (DESIGN.md §9, §16; §17: no copy conversation is made):
    nothing of the delete goes out, the conversation stays under its id everywhere, and a turn another
    device added to it meanwhile, kept aside while it was deleted here, is taken in on undo. Before, the
    delete went out at once: the other device lost the conversation (its turn kept apart as a fragment)
    and the undo brought it back here under a new id, one conversation split in two."""
    from app.sync.documents import doc_id_of_task
    from app.sync.held import HELD_KEY

    a, b, task, replica_a, replica_b, engine_a, engine_b = await _syncing_pair("s", "kept")
    await a.archive("s", (await a.bundle(task)).messages, 1)
    doc_id = doc_id_of_task(task)
    await engine_a.push(task)
    assert await engine_b.remote_changed(replica_a.docs[doc_id]) == "added"
    notices = []
    b.changes.subscribe(lambda change: change.kind == "delete" and notices.append(change))
    assert await a.delete(task)
    await engine_a.local_changed(HistoryChange("delete", task, "s"))
    assert not replica_a.docs[doc_id].get("_deleted") and json.loads(engine_a._deleted_store.get_item(HELD_KEY))
    _, messages, _ = await b.bundle(task)  # B goes on with it meanwhile
    await b.record_turn_in(task, ended("s", messages + [_user("on B", "u-B"), _reply("r", "a-B")], usage=None,
                                       model="demo", duration_ms=5, message_id="a-B"))
    await engine_b.push(task)
    assert await engine_a.remote_changed(replica_b.docs[doc_id]) == "held"  # kept aside, not in A's history
    assert await a.bundle(task) is None
    assert await a.undo() == task
    await engine_a.local_changed(HistoryChange("undo", task, "s"))
    (item,) = (await a.page("s")).items
    assert item.taskId == task and [m["id"] for m in (await a.bundle(task)).messages][-2:] == ["u-B", "a-B"]
    assert not replica_a.docs[doc_id].get("_deleted") and await _hold_ends(engine_a) == 0
    assert await engine_b.remote_changed(replica_a.docs[doc_id]) in ("same", "remote")
    assert [i.taskId for i in (await b.page("s")).items] == [task] and notices == []
    assert (await b.bundle(task)).messages == (await a.bundle(task)).messages


async def test_a_delete_whose_hold_the_storage_cannot_keep_goes_out_at_once():
    """localStorage full (or blocked): the hold could not be kept for a later start, so a tab closed
    within Undo's time never sent the deletion and the devices disagreed for good, silently. Such a
    delete goes out at once, as before holds (DESIGN.md §5, §16)."""
    from app.sync.documents import doc_id_of_task
    from app.sync.held import HELD_KEY

    a, b, task, replica_a, replica_b, engine_a, engine_b = await _syncing_pair("s", "doomed")
    await a.archive("s", (await a.bundle(task)).messages, 1)
    doc_id = doc_id_of_task(task)
    await engine_a.push(task)
    storage = engine_a._deleted_store
    storage.quota = storage.used  # full: nothing more fits
    assert await a.delete(task)
    await engine_a.local_changed(HistoryChange("delete", task, "s"))
    assert replica_a.docs[doc_id].get("_deleted") is True and replica_a.docs[doc_id]["seen"]
    assert storage.get_item(HELD_KEY) is None and engine_a.held.due() == []


async def test_a_held_delete_goes_out_once_undo_can_no_longer_take_it_back_even_after_the_tab_closed():
    """The hold is kept in storage (``agentbar-sync-held``): a tab closed while Undo could still take
    the delete back sends it at the next start, once that time went by; another device's version that
    came meanwhile was kept aside and is dropped (the deletion goes out over it, naming what this
    device had, so that device keeps its own turn apart, DESIGN.md §16)."""
    from app.sync.documents import doc_id_of_task

    a, b, task, replica_a, replica_b, engine_a, engine_b = await _syncing_pair("s", "doomed")
    await a.archive("s", (await a.bundle(task)).messages, 1)
    doc_id = doc_id_of_task(task)
    await engine_a.push(task)
    await engine_b.remote_changed(replica_a.docs[doc_id])
    storage = engine_a._deleted_store
    assert await a.delete(task)
    await engine_a.local_changed(HistoryChange("delete", task, "s"))
    _, messages, _ = await b.bundle(task)
    await b.record_turn_in(task, ended("s", messages + [_user("on B", "u-B"), _reply("r", "a-B")], usage=None,
                                       model="demo", duration_ms=5, message_id="a-B"))
    await engine_b.push(task)
    assert await engine_a.remote_changed(replica_b.docs[doc_id]) == "held"
    again = SyncEngine(a, replica_a, storage)  # the tab closed; a later start
    assert await again.release() == 0 and not replica_a.docs[doc_id].get("_deleted")  # Undo's time not over
    assert await _hold_ends(again) == 1
    deletion = replica_a.docs[doc_id]
    assert deletion["_deleted"] is True and deletion["seen"] and await a.bundle(task) is None
    assert await _hold_ends(again) == 0 and await again.remote_changed(replica_b.docs[doc_id]) == "redeleted"
    assert await engine_b.remote_changed(deletion) == "deleted"  # B keeps its own turn apart
    (apart,) = (await b.page("s")).items
    assert apart.taskId != task and [m["id"] for m in (await b.bundle(apart.taskId)).messages] == ["u-B", "a-B"]
