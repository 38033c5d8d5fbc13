"""CouchDB documents for what syncs (DESIGN.md §16): one per conversation, one per scene version.

- a conversation: ``{"_id": "conversation:<taskId>", "type": "conversation", "meta": TaskMeta JSON,
  "messages": [slim message dicts: the shown path], "turns": [TurnMeta JSON]}``, and when it is a
  tree, history's ``messages`` record's ``branches``, ``shown`` and ``shownAt`` beside them
  (``app.history.branching``, DESIGN.md §17; a document without them is a chain, as an older device
  writes it, and an older device reads the shown path of one with them); which conversation is a
  course's active one stays per device (not in the document);
- a scene version: ``{"_id": "version:<checkpointId>", "type": "version", "versionId", "artifactId",
  "stageId", "sceneId", "versionNo", "checkpointId", "createdAt" (epoch ms), "item": the version's
  timeline item, "document": its whole scene document}``, as the device that made it numbered it. Its
  id is the checkpoint id (random, the same on every device), not the version id: two devices'
  ``<artifactId>:v3`` are different versions, and each device numbers the other's past its own
  (``app.checkpoints.versions.VersionStore.adopt``); versions are never changed or deleted;
- a delete is CouchDB's own (``_deleted``): it replicates as a delete and the id never comes back
  (``app.sync.engine`` keeps it in the tombstones a later remote write of the same id is checked
  against). The deletion of a conversation carries ``{"type": "deletion", "seen": [turn digests]}``
  (``deletion_doc``): which turns the deleting device had, so that a device that added a turn the
  other never saw keeps that turn as a conversation of its own (``turn_digests``,
  ``app.sync.tombstones.decide``); a deletion without it (a losing revision deleted once merged, or
  an older client's) says nothing of turns.

What comes in is held to the limits of an import (DESIGN.md §14, one set for every way data comes
in): ``conversation_of`` and ``version_of`` take ``now_ms`` and refuse, as ``app.history.export``'s
import does, what its rules refuse (not the slim projection, integers past 2^53, ``createdAt`` after
``updatedAt``, a time more than ``FUTURE_SLACK_MS`` ahead) and a conversation whose text passes
``MAX_CONVERSATION_CHARS`` (``app.history.chatgpt``).

Raises ``ValueError`` for a document that is not one of these (another app's, damaged, past a limit).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

from pydantic import ValidationError

from app.history.branching import NO_BRANCHES, Branching
from app.history.chatgpt import MAX_CONVERSATION_CHARS
from app.history.export import FUTURE_SLACK_MS, chain_document, checked_steps, run_steps
from app.history.merge import split_turns
from app.history.records import TaskMeta, TurnMeta
from app.history.repository import Conversation
from app.history.text import plain_text

__all__ = ["CONVERSATION", "DELETION", "VERSION", "conversation_doc", "conversation_of", "conversation_steps",
           "deletion_doc", "document_of",
           "doc_id_of_task", "doc_id_of_version", "kind_of", "turn_digests", "version_doc", "version_doc_of",
           "version_of", "version_record_of"]

DELETION = "deletion"
"""``type`` of a conversation's deletion document (``deletion_doc``)."""

CONVERSATION = "conversation:"
VERSION = "version:"


def doc_id_of_task(task_id: str) -> str:
    """``conversation:<taskId>``.

    >>> doc_id_of_task("task_20260101_abcdef")
    'conversation:task_20260101_abcdef'
    """
    return CONVERSATION + task_id


def doc_id_of_version(checkpoint_id: str) -> str:
    """``version:<checkpointId>``.

    >>> doc_id_of_version("fc_0123456789abcdef")
    'version:fc_0123456789abcdef'
    """
    return VERSION + checkpoint_id


def kind_of(doc_id: str) -> str | None:
    """``"conversation"``, ``"version"`` or ``None`` (a design document or another app's).

    >>> kind_of("conversation:t"), kind_of("version:v"), kind_of("_design/x")
    ('conversation', 'version', None)
    """
    for prefix in (CONVERSATION, VERSION):
        if doc_id.startswith(prefix) and len(doc_id) > len(prefix):
            return prefix[:-1]
    return None


def conversation_doc(meta: TaskMeta, messages: list[dict], turns: list[TurnMeta],
                     branching: Branching = NO_BRANCHES) -> dict[str, Any]:
    """The document of one conversation (no ``_rev``: the adapter keeps PouchDB's): ``messages`` the
    shown path, and ``branching``'s fields (``branches``, ``shown``, ``shownAt``) when it holds them
    (DESIGN.md §17; a chain's document is as before branches)."""
    return {"_id": doc_id_of_task(meta.taskId), "type": "conversation", "meta": meta.model_dump(),
            "messages": list(messages), "turns": [turn.model_dump() for turn in turns], **branching.fields()}


def document_of(conversation: Conversation) -> dict[str, Any]:
    """``conversation_doc`` of a conversation as history holds it, its tree included."""
    return conversation_doc(*conversation, conversation.branching)


def _now(now_ms: int | None) -> int:
    return int(time.time() * 1000) if now_ms is None else now_ms


def conversation_of(doc: dict[str, Any], now_ms: int | None = None) -> Conversation:
    """The conversation of a document: ``(meta, messages, turns)`` with its tree as ``branching``
    (``NO_BRANCHES`` for a document without one: a chain, as an older device writes it);
    ``ValueError`` when it is not one, when its id and its meta's ``taskId`` differ, or when an import
    would refuse it (module docstring; ``now_ms``: this device's clock, epoch ms, the wall clock
    when None)."""
    return run_steps(conversation_steps(doc, now_ms))


def _branching_of(doc: dict[str, Any], now_ms: int) -> tuple[Branching, list[dict]]:
    """The document's tree beside its path and the messages of its branches (without ``parentId``;
    the bare ``{"id", "parentId"}`` entries that only order siblings are none), held to the intake's
    rules: ``branches`` a list of objects each with a string ``id`` and a ``parentId`` that is null,
    a message of the path or an earlier entry (the order ``Tree.record`` writes; any other would
    cost the reader a pass per message), ``shown`` an object of strings, ``shownAt`` a whole number of epoch ms no more
    than ``FUTURE_SLACK_MS`` ahead of ``now_ms`` (a choice dated ahead would win every later one).
    ``ValueError`` otherwise."""
    branches, shown, at = doc.get("branches", []), doc.get("shown", {}), doc.get("shownAt")
    if not isinstance(branches, list) or not all(
            isinstance(b, dict) and isinstance(b.get("id"), str) and isinstance(b.get("parentId"), (str, type(None)))
            for b in branches):
        raise ValueError(f"bad branches in {doc.get('_id')!r}")
    known = {m.get("id") for m in doc.get("messages") or () if isinstance(m, dict)}
    for entry in branches:  # as Tree.record lists them: a parent before its children (read in one pass)
        if entry["parentId"] is not None and entry["parentId"] not in known:
            raise ValueError(f"a branch of {doc.get('_id')!r} comes before its parent")
        known.add(entry["id"])
    if not isinstance(shown, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in shown.items()):
        raise ValueError(f"bad shown in {doc.get('_id')!r}")
    if at is not None and (not isinstance(at, int) or isinstance(at, bool) or not 0 <= at <= now_ms + FUTURE_SLACK_MS):
        raise ValueError(f"bad shownAt in {doc.get('_id')!r}")
    said = [{k: v for k, v in b.items() if k != "parentId"} for b in branches if set(b) - {"id", "parentId"}]
    return Branching(branches, shown, at), said


def conversation_steps(doc: dict[str, Any], now_ms: int | None = None):
    """``conversation_of`` as a generator that yields between slices of the import's checks
    (``app.history.export.checked_steps``), so a caller can give the page its turn; its return value is
    ``conversation_of``'s; raises ``ValueError`` as ``conversation_of`` does. The messages of the
    branches are held to the same checks as the shown path's, and their text counts toward the
    same limit (DESIGN.md §17: every branch is the conversation's)."""
    now = _now(now_ms)
    try:
        meta = TaskMeta.model_validate(doc["meta"])
        turns = [TurnMeta.model_validate(turn) for turn in doc.get("turns") or []]
        messages = doc["messages"]
    except (KeyError, TypeError, ValidationError) as error:
        raise ValueError(f"not a conversation document: {doc.get('_id')!r}") from error
    if doc.get("_id") != doc_id_of_task(meta.taskId) or not isinstance(messages, list) \
            or not all(isinstance(m, dict) for m in messages):
        raise ValueError(f"not a conversation document: {doc.get('_id')!r}")
    branching, said = _branching_of(doc, now)
    if len(plain_text(messages + said)) > MAX_CONVERSATION_CHARS:
        raise ValueError(f"{doc['_id']!r}: its text passes {MAX_CONVERSATION_CHARS} characters")
    yield
    # the import's own rules (ImportRefused), held to the export's value itself: the document is
    # already values JSON read, so writing it as an export's text to decode that again checks nothing more
    yield from checked_steps(chain_document(meta, messages + said, turns), now)  # export_document's refusals
    return Conversation(meta, messages, turns, branching)


def turn_digests(messages: list[dict]) -> list[str]:
    """One digest per turn of ``messages`` (``app.history.merge.split_turns``): the first 16 hex digits
    of the SHA-256 of its canonical JSON, the same on every device for the same turn; what a deletion
    says the deleting device had (``deletion_doc``), never the text itself.

    >>> turn_digests([{"role": "user", "content": "a"}]) == turn_digests([{"content": "a", "role": "user"}])
    True
    """
    return [hashlib.sha256(json.dumps(turn, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
                           .encode("utf-8", "surrogatepass")).hexdigest()[:16] for turn in split_turns(messages)]


def deletion_doc(doc_id: str, seen: list[str], rev: str | None = None) -> dict[str, Any]:
    """The deletion of conversation ``doc_id`` (over revision ``rev`` when given): ``seen``, the
    ``turn_digests`` of what the deleting device had.

    >>> deletion_doc("conversation:t", ["ab"], "2-x")
    {'_id': 'conversation:t', '_deleted': True, 'type': 'deletion', 'seen': ['ab'], '_rev': '2-x'}
    """
    doc: dict[str, Any] = {"_id": doc_id, "_deleted": True, "type": DELETION, "seen": sorted(set(seen))}
    if rev is not None:
        doc["_rev"] = rev
    return doc


_VERSION_FIELDS = ("artifactId", "stageId", "sceneId", "versionNo", "checkpointId", "createdAt", "item", "document")


def version_doc(version_id: str, **fields: Any) -> dict[str, Any]:
    """The document of one scene version; ``fields`` are ``_VERSION_FIELDS`` (camelCase).

    >>> version_doc("a:v1", artifactId="a", stageId="s", sceneId="c", versionNo=1, checkpointId="fc_1",
    ...             createdAt=5, item={}, document={})["_id"]
    'version:fc_1'
    """
    missing = [name for name in _VERSION_FIELDS if name not in fields]
    if missing:
        raise ValueError(f"version document lacks {missing}")
    return {"_id": doc_id_of_version(str(fields["checkpointId"])), "type": "version", "versionId": version_id,
            **{name: fields[name] for name in _VERSION_FIELDS}}


def version_of(doc: dict[str, Any], now_ms: int | None = None) -> dict[str, Any]:
    """The fields of a version document (``versionId`` and ``_VERSION_FIELDS``); ``ValueError`` when
    it is not one (``versionNo`` must be a whole number ≥ 1, the id its checkpoint's, ``item`` and
    ``document`` objects, ``createdAt`` epoch ms no more than ``FUTURE_SLACK_MS`` after ``now_ms``,
    the import's rule: a version dated ahead would stay the current one)."""
    if kind_of(str(doc.get("_id", ""))) != "version" or any(name not in doc for name in (*_VERSION_FIELDS, "versionId")):
        raise ValueError(f"not a version document: {doc.get('_id')!r}")
    number = doc["versionNo"]
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise ValueError(f"bad versionNo in {doc['_id']!r}")
    created = doc["createdAt"]
    if not isinstance(created, int) or isinstance(created, bool) or not 0 <= created <= _now(now_ms) + FUTURE_SLACK_MS:
        raise ValueError(f"bad createdAt in {doc['_id']!r}")
    if doc["_id"] != doc_id_of_version(str(doc["checkpointId"])) or not isinstance(doc["item"], dict) \
            or not isinstance(doc["document"], dict) or not isinstance(doc["versionId"], str):
        raise ValueError(f"not a version document: {doc.get('_id')!r}")
    return {"versionId": doc["versionId"], **{name: doc[name] for name in _VERSION_FIELDS}}


def version_doc_of(record: dict[str, Any], document: dict[str, Any]) -> dict[str, Any]:
    """The document of a version record of the version store (``app.checkpoints.versions``) and its
    whole scene ``document``."""
    return version_doc(record["versionId"], artifactId=record["artifactId"], stageId=record["stageId"],
                       sceneId=record["sceneId"], versionNo=record["versionNo"], checkpointId=record["checkpointId"],
                       createdAt=record["updatedAt"], item=record["item"], document=document)


def version_record_of(fields: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(version record, scene document)`` of ``version_of``'s ``fields``, as the version store keeps
    them (numbered as the other device numbered it; ``VersionStore.adopt`` gives it its number here)."""
    item = fields["item"]
    return ({"schema": 1, "versionId": fields["versionId"], "artifactId": fields["artifactId"],
             "stageId": fields["stageId"], "sceneId": fields["sceneId"], "versionNo": fields["versionNo"],
             "conversationId": item.get("conversationId", ""), "checkpointId": fields["checkpointId"],
             "updatedAt": fields["createdAt"], "item": item}, fields["document"])
