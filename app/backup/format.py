"""The ``agentbar-backup`` zip: build, read, validate and plan a merge (DESIGN.md §14 "Backup", §3, §9, §10).

Pure and browser-free (stdlib ``zipfile``/``json``, pydantic record shapes); the page's adapter
(``app.browser``) reads the tables, hands slices here and yields to the event loop between slices.

Layout (format version 1), every member UTF-8 JSON, compact as ``JSON.stringify`` writes it:

- ``manifest.json``: ``{"format": "agentbar-backup", "formatVersion": 1, "appVersion": "…",
  "createdAt": <epoch ms>, "counts": {"threads": n, "conversations": n, "versions": n}}``;
- ``threads.json``: the ``maic-agent-threads`` envelope value (DESIGN.md §3), ``{"state":
  {"threads": {…}}, "version": 1}``;
- ``heads.json`` (optional): ``[{"stageId", "taskId", "syncedAt"}…]``, which conversation of history
  each course's active thread is (the ``heads`` table, DESIGN.md §9), so that a restored thread
  continues its own conversation and is not adopted as a new one at the next start-up;
- ``conversations/<NNNNNN>.jsonl``: one conversation a line, ``{"meta": TaskMeta, "messages":
  [slim message…], "turns": [TurnMeta…]}`` (DESIGN.md §9), plus, for a conversation that is a tree,
  the ``branches`` and ``shown`` of history's messages record (§17; a line without them is a chain,
  as every line of an older backup), at most ``SLICE`` lines a member;
- ``versions/<NNNNNN>.jsonl``: one scene version a line, ``{"version": version record,
  "snapshot": document}`` (DESIGN.md §10), at most ``SLICE`` lines a member.

Refusal (``BackupRefused.reason``): ``size`` (file over ``MAX_FILE_BYTES``), ``unpacked`` (members
that unpack past ``MAX_UNPACKED_BYTES`` / one member past ``MAX_MEMBER_BYTES``: a zip bomb, however
small the file; said apart from ``size`` so a small file is not called large), ``not-backup``
(not a zip, no manifest, another format name, a member name that climbs out of the archive:
absolute, with a ``..`` part or a backslash), ``newer``
(a format version above ``FORMAT_VERSION``), ``damaged`` (bad CRC, invalid JSON, a wrong type,
an integer beyond ±(2^53 − 1), a record that fails its shape, counts that disagree, a member twice).
A refused file is refused whole, before anything is written.

Read as an archiver may have written it again (``_members``): folder entries (``conversations/``)
are skipped, a leading ``./`` is read as the plain name, and members outside the layout
(``readme.txt``) are ignored, never read nor counted toward the unpacked limits; the manifest makes
the file a backup.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from app.continuity import continues
from app.history.branches import StoredForm
from app.history.branching import Branching
from app.history.changes import HistoryChange
from app.history.limits import MAX_CONVERSATION_CHARS, text_chars
from app.history.merge import merge_conversation, merged_meta
from app.history.records import MAX_SAFE_INTEGER, TaskMeta, TurnMeta
from app.history.tree import Tree, kinship
from app.history.text import copy_title
from app.store.jsjson import js_json

__all__ = [
    "APP_VERSION", "BackupRefused", "BackupWriter", "FORMAT", "FORMAT_VERSION", "MAX_FILE_BYTES",
    "MAX_MEMBER_BYTES", "MAX_UNPACKED_BYTES", "MergePlan", "PIECE_CHARS", "SLICE", "open_backup", "plan_heads",
    "plan_merge", "renumber",
]

FORMAT = "agentbar-backup"
FORMAT_VERSION = 1
APP_VERSION = "0.1.0"
SLICE = 200
"""Records a member holds: a backup is written a member per event-loop slice (a restore reads it in
``PIECE_CHARS`` pieces and writes ``app.backup.tables.STEP`` conversations a transaction)."""
PIECE_CHARS = 32 * 1024
"""A restore parses and checks a member in pieces of about this many characters of its lines, one
piece per task (a whole member of 200 conversations is a main-thread task of 50–200 ms in Pyodide)."""
READ_CHARS = 256 * 1024
"""A restore inflates and decodes a member this many characters at a time, the page given its turn
between them (a member of 250 MB, within ``MAX_MEMBER_BYTES``, read whole was one task of seconds)."""
MAX_LINE_CHARS = 64 * 1024 * 1024
"""The longest line (one conversation or scene version) a member may hold; a longer one is damage
(a conversation within the import's limits is far shorter), refused before more of it is read."""
MAX_FILE_BYTES = 50 * 1024 * 1024
"""DESIGN.md §14: a file over 50 MB is refused before it is read."""
MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
"""All members together, unpacked: past this the zip is a bomb and is refused unread."""
MAX_MEMBER_BYTES = 256 * 1024 * 1024
"""One member, unpacked."""

_MEMBER = re.compile(r"(manifest\.json|threads\.json|heads\.json|(conversations|versions)/\d{6}\.jsonl)\Z")


class BackupRefused(Exception):
    """The file is refused whole; ``reason`` is ``size``, ``unpacked``, ``not-backup``, ``newer`` or ``damaged``
    (module docstring), ``detail`` a short English note for the log."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def _dumps(value: Any) -> str:
    """Compact JSON, non-ASCII literal; a lone surrogate (which the stored threads and history keep
    exactly) written as ``JSON.stringify`` writes it, ``\\ud800``, so the member can be UTF-8."""
    return js_json(value, allow_nan=False)


def _bounded_int(text: str) -> int:
    value = int(text)
    if abs(value) > MAX_SAFE_INTEGER:
        raise BackupRefused("damaged", "an integer beyond ±(2^53 − 1)")
    return value


def _no_constant(text: str) -> Any:
    raise BackupRefused("damaged", f"{text} is not JSON")


def _loads(text: str) -> Any:
    """JSON with integers within ±(2^53 − 1) and no NaN/Infinity; raises ``BackupRefused``."""
    try:
        return json.loads(text, parse_int=_bounded_int, parse_constant=_no_constant)
    except ValueError as error:
        raise BackupRefused("damaged", f"invalid JSON: {error}") from None


class BackupWriter:
    """Builds the zip member by member, so the caller can yield between ``add_*`` calls.

    ``created_at``: epoch ms (stamped by the caller). ``bytes()`` closes the zip and returns it."""

    def __init__(self, created_at: int, *, app_version: str = APP_VERSION) -> None:
        self._buffer = io.BytesIO()
        self._zip = zipfile.ZipFile(self._buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6)
        self._created_at = created_at
        self._app_version = app_version
        self._counts = {"threads": 0, "conversations": 0, "versions": 0}
        self._members = {"conversations": 0, "versions": 0}

    def add_threads(self, envelope: dict) -> None:
        """The ``maic-agent-threads`` value (a dict, DESIGN.md §3)."""
        self._counts["threads"] = len(((envelope or {}).get("state") or {}).get("threads") or {})
        self._zip.writestr("threads.json", _dumps(envelope))

    def add_heads(self, heads: list[dict]) -> None:
        """The ``heads`` records (``{"stageId", "taskId", "syncedAt"}``, DESIGN.md §9)."""
        self._zip.writestr("heads.json", _dumps([{"stageId": h["stageId"], "taskId": h["taskId"],
                                                  "syncedAt": h.get("syncedAt")} for h in heads]))

    def _add_lines(self, kind: str, lines: list[dict]) -> None:
        if not lines:
            return
        self._members[kind] += 1
        self._counts[kind] += len(lines)
        self._zip.writestr(f"{kind}/{self._members[kind]:06d}.jsonl", "\n".join(_dumps(x) for x in lines) + "\n")

    def add_conversations(self, items: list[dict]) -> None:
        """One slice (≤ ``SLICE``) of ``{"meta", "messages", "turns", "branches"?, "shown"?}`` dicts."""
        self._add_lines("conversations", items)

    def add_versions(self, items: list[dict]) -> None:
        """One slice (≤ ``SLICE``) of ``{"version", "snapshot"}`` dicts."""
        self._add_lines("versions", items)

    def bytes(self) -> bytes:
        """Writes the manifest, closes the zip; the whole file."""
        self._zip.writestr("manifest.json", _dumps({
            "format": FORMAT, "formatVersion": FORMAT_VERSION, "appVersion": self._app_version,
            "createdAt": self._created_at, "counts": dict(self._counts)}))
        self._zip.close()
        return self._buffer.getvalue()


def _message_shaped(message: Any) -> bool:
    """True for a message dict whose ``content``, when it has one, is a list of parts (dicts): what
    history's writes read part by part (a ``content`` of ``5`` is damage, never left to fail there)."""
    if not isinstance(message, dict):
        return False
    content = message.get("content")
    return content is None or (isinstance(content, list) and all(isinstance(p, dict) for p in content))


def _conversation(line: Any) -> dict:
    if not isinstance(line, dict) or not isinstance(line.get("messages"), list) \
            or not isinstance(line.get("turns"), list) \
            or not all(_message_shaped(m) for m in line["messages"]):
        raise BackupRefused("damaged", "a conversation line of the wrong shape")
    try:
        meta = TaskMeta.model_validate(line.get("meta")).model_dump()
        turns = [TurnMeta.model_validate(t).record() for t in line["turns"]]
    except ValidationError as error:
        raise BackupRefused("damaged", f"a conversation record: {error.errors()[0]['msg']}") from None
    return {"meta": meta, "messages": line["messages"], "turns": turns, **_tree_fields(line)}


def _tree_fields(line: dict) -> dict:
    """A conversation line's ``branches`` and ``shown`` (its tree beside the shown path, DESIGN.md
    §17), when it has them; a line without them is a chain. Raises ``BackupRefused`` for ones of the
    wrong shape."""
    branches, shown = line.get("branches"), line.get("shown")
    if branches is not None and (not isinstance(branches, list) or not all(_message_shaped(b) for b in branches)):
        raise BackupRefused("damaged", "a conversation's branches of the wrong shape")
    if shown is not None and (not isinstance(shown, dict)
                              or not all(isinstance(k, str) and isinstance(v, str) for k, v in shown.items())):
        raise BackupRefused("damaged", "a conversation's shown branches of the wrong shape")
    return {k: v for k, v in (("branches", branches), ("shown", shown)) if v}


def _version(line: Any) -> dict:
    version = line.get("version") if isinstance(line, dict) else None
    if not isinstance(version, dict) or not isinstance(line.get("snapshot"), dict):
        raise BackupRefused("damaged", "a version line of the wrong shape")
    for key in ("versionId", "artifactId", "stageId", "sceneId", "checkpointId"):
        if not isinstance(version.get(key), str):
            raise BackupRefused("damaged", f"a version without a string {key}")
    number = version.get("versionNo")
    if type(number) is not int or number < 1:
        raise BackupRefused("damaged", "a version number that is not an integer ≥ 1")
    return {"version": version, "snapshot": line["snapshot"]}


class BackupReader:
    """An opened, size-checked backup: ``manifest``, ``threads`` (the envelope dict) and
    ``slices()``, each slice one member parsed (``("conversations"|"versions", [item…])``);
    ``heads``: stage id → task id of its active conversation (empty when the file has none)."""

    def __init__(self, archive: zipfile.ZipFile, manifest: dict, threads: dict,
                 heads: dict[str, str] | None = None, *, members: dict[str, zipfile.ZipInfo] | None = None) -> None:
        self._zip = archive
        # layout name → its entry (``_members``); by default every entry under its own name
        self._members = members if members is not None else {i.filename: i for i in archive.infolist()}
        self.manifest = manifest
        self.threads = threads
        self.heads = heads or {}

    def _read(self, name: str) -> str:
        try:
            return self._zip.read(self._members[name]).decode("utf-8")
        except (zipfile.BadZipFile, zlib.error, UnicodeDecodeError, EOFError, OSError, ValueError) as error:
            raise BackupRefused("damaged", f"{name}: {error}") from None

    def _lines(self, name: str) -> Iterator[str | None]:
        """The lines of member ``name``, split at ``\n`` alone (the writer's separator: a JSON line
        holds U+2028, U+2029 and U+0085 unescaped, which ``str.splitlines`` would cut at), inflated
        and decoded ``READ_CHARS`` at a time with ``None`` after each (the caller may pause there).
        Raises ``BackupRefused("damaged")`` for bytes that do not inflate or decode, or a line
        longer than ``MAX_LINE_CHARS``."""
        try:
            with self._zip.open(self._members[name]) as raw:
                stream = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
                under_way: list[str] = []  # the pieces of the line not ended yet
                held = 0
                while chunk := stream.read(READ_CHARS):
                    lines = chunk.split("\n")
                    if len(lines) > 1:
                        yield "".join([*under_way, lines[0]])
                        yield from lines[1:-1]
                        under_way, held = [], 0
                    under_way.append(lines[-1])
                    held += len(lines[-1])
                    if held > MAX_LINE_CHARS:
                        raise BackupRefused("damaged", f"{name}: a line longer than {MAX_LINE_CHARS} characters")
                    yield None
                yield "".join(under_way)
        except (zipfile.BadZipFile, zlib.error, UnicodeDecodeError, EOFError, OSError, ValueError) as error:
            raise BackupRefused("damaged", f"{name}: {error}") from None

    def slices(self, piece_chars: int = 0) -> Iterator[tuple[str, list[dict]]]:
        """Members in order, one parsed slice each; with ``piece_chars`` > 0 each member comes in
        pieces of whole lines instead, a piece ending at the line that brings it to ``piece_chars``
        characters, or once ``READ_CHARS`` more of the member were read (an empty piece when no line
        ended: the caller pauses between pieces, ``PIECE_CHARS``). Raises ``BackupRefused`` on the
        first bad line."""
        for name in sorted(n for n in self._members if n.endswith(".jsonl")):
            kind = name.split("/", 1)[0]
            check = _conversation if kind == "conversations" else _version
            piece: list[dict] = []
            size = 0
            for line in self._lines(name):
                if line is None:
                    if piece_chars:
                        yield kind, piece
                        piece, size = [], 0
                    continue
                if not line:
                    continue
                piece.append(check(_loads(line)))
                size += len(line)
                if piece_chars and size >= piece_chars:
                    yield kind, piece
                    piece, size = [], 0
            if piece or not piece_chars:
                yield kind, piece

    def read_all(self) -> tuple[list[dict], list[dict]]:
        """Every slice at once (conversations, versions), with the manifest's counts checked."""
        conversations: list[dict] = []
        versions: list[dict] = []
        for kind, items in self.slices():
            (conversations if kind == "conversations" else versions).extend(items)
        check_counts(self.manifest, len(conversations), len(versions))
        return conversations, versions


def check_counts(manifest: dict, conversations: int, versions: int) -> None:
    """Raises ``BackupRefused("damaged")`` when the manifest's counts disagree with what was read."""
    counts = manifest["counts"]
    if counts.get("conversations") != conversations or counts.get("versions") != versions:
        raise BackupRefused("damaged", "the manifest's counts disagree with the members")


def open_backup(data: bytes, *, max_file: int = MAX_FILE_BYTES, max_unpacked: int = MAX_UNPACKED_BYTES,
                max_member: int = MAX_MEMBER_BYTES) -> BackupReader:
    """Opens ``data`` (the whole file) after the size, name and manifest checks of the module
    docstring; raises ``BackupRefused``. Sizes are the zip's declared ones (checked before any
    member is unpacked); ``zipfile`` stops a member that unpacks past its declared size."""
    if len(data) > max_file:
        raise BackupRefused("size", f"{len(data)} bytes")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError, OSError):
        raise BackupRefused("not-backup", "not a zip") from None
    members = _members(infos)
    names = [name for name, _ in members]
    if "manifest.json" not in names:
        raise BackupRefused("not-backup", "no manifest.json")
    if len(set(names)) != len(names):  # a backup's layout, some member written twice: which one is it?
        raise BackupRefused("damaged", "a member twice")
    layout = [info for _, info in members]  # members outside the layout are never read, so never counted
    if any(info.file_size > max_member for info in layout) or sum(i.file_size for i in layout) > max_unpacked:
        raise BackupRefused("unpacked", "members unpack too large")
    reader = BackupReader(archive, {}, {}, members=dict(members))
    manifest = _loads(reader._read("manifest.json"))
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BackupRefused("not-backup", "another format")
    version = manifest.get("formatVersion")
    if type(version) is not int or version < 1:
        raise BackupRefused("damaged", "no format version")
    if version > FORMAT_VERSION:
        raise BackupRefused("newer", f"format version {version}")
    counts = manifest.get("counts")
    if not isinstance(counts, dict) or not all(type(counts.get(k)) is int and counts[k] >= 0
                                               for k in ("threads", "conversations", "versions")):
        raise BackupRefused("damaged", "manifest counts")
    threads: dict = {"state": {"threads": {}}, "version": 1}
    if "threads.json" in names:
        threads = _loads(reader._read("threads.json"))
        inner = threads.get("state", {}).get("threads") if isinstance(threads, dict) and \
            isinstance(threads.get("state"), dict) else None
        if not isinstance(inner, dict) or not all(isinstance(t, dict) and isinstance(t.get("messages"), list)
                                                  for t in inner.values()):
            raise BackupRefused("damaged", "threads.json is not a maic-agent-threads value")
    if "heads.json" in names:
        reader.heads = _heads(_loads(reader._read("heads.json")))
    reader.manifest = manifest
    reader.threads = threads
    return reader


def _members(infos: list[zipfile.ZipInfo]) -> list[tuple[str, zipfile.ZipInfo]]:
    """The layout's members of a zip as (name, entry), names read without a leading ``./``; folder
    entries and names outside the layout are left out (an archiver's re-zip, a ``readme.txt``). A
    name that climbs out of the archive (absolute, a ``..`` part, a backslash) raises
    ``BackupRefused("not-backup")``: no backup is written so."""
    found = []
    for info in infos:
        name = info.filename
        if name.startswith("/") or "\\" in name or ".." in name.split("/"):
            raise BackupRefused("not-backup", "a member name that climbs out of the archive")
        while name.startswith("./"):
            name = name[2:]
        if not info.is_dir() and _MEMBER.match(name):
            found.append((name, info))
    return found


def _heads(value: Any) -> dict[str, str]:
    """``heads.json``'s list as stage id → task id; raises ``BackupRefused("damaged")``."""
    if not isinstance(value, list) or not all(
            isinstance(h, dict) and isinstance(h.get("stageId"), str) and isinstance(h.get("taskId"), str)
            and (h.get("syncedAt") is None or type(h.get("syncedAt")) is int) for h in value):
        raise BackupRefused("damaged", "heads.json is not a list of heads")
    return {h["stageId"]: h["taskId"] for h in value}


@dataclass
class MergePlan:
    """What a restore writes (DESIGN.md §14: merge by id, keep both sides, report counts).

    ``conversations``: items to put (new, a longer continuation replacing the local one, the union
    of the local tree and the incoming one, or a conversation sharing nothing with the local one of
    its id under a new id; ``app.backup.tables.restore`` empties it after writing each slice,
    so a restore never holds more than one slice of them); ``stages``: the courses of the
    conversations put; ``versions``: items to add, renumbered; ``threads``: stage id →
    thread to restore (only courses with no local thread); ``heads``: stage id → task id of the
    conversation each restored thread is (``plan_heads``); ``renames``: incoming task id → the fresh
    id it was added under; ``written``: stage id → the task ids of the conversations put in that
    course, in the order written, each under the id it was written with (what sync sends, §16). Counts: ``added`` (new conversations,
    ``renamed`` of them sharing nothing with the local one of their id), ``extended`` (local
    replaced by the longer incoming one or joined with its tree), ``present`` (already here, or the
    local tree holds every message of it, whatever each shows), ``versions_added``,
    ``versions_present``, ``threads_restored``, ``threads_kept`` (a local thread was there),
    ``too_long`` (left out: more text than ``MAX_CONVERSATION_CHARS``, the limit of every way in)."""

    conversations: list[dict] = field(default_factory=list)
    stages: set[str] = field(default_factory=set)
    versions: list[dict] = field(default_factory=list)
    threads: dict[str, dict] = field(default_factory=dict)
    heads: dict[str, str] = field(default_factory=dict)
    renames: dict[str, str] = field(default_factory=dict)
    written: dict[str, list[str]] = field(default_factory=dict)
    added: int = 0
    renamed: int = 0
    extended: int = 0
    present: int = 0
    versions_added: int = 0
    versions_present: int = 0
    threads_restored: int = 0
    threads_kept: int = 0
    too_long: int = 0

    def changes(self) -> list[HistoryChange]:
        """What history's hub announces once this restore is written (DESIGN.md §14, §15): one
        ``import`` change per restored course (``threads`` and ``stages``, sorted; ``task_id`` ``""``),
        carrying the task ids written in it (``HistoryChange.tasks``, from ``written``), so sync sends
        each of them (§16) while the other tabs hear one message per course however many
        conversations the restore wrote.

        >>> plan = MergePlan(stages={"s"}, written={"s": ["task_1", "task_2"]})
        >>> [(c.kind, c.task_id, c.stage_id, c.source, c.tasks) for c in plan.changes()]
        [('import', '', 's', 'import', ('task_1', 'task_2'))]
        """
        return [HistoryChange("import", "", stage_id, "import", tasks=tuple(self.written.get(stage_id, ())))
                for stage_id in sorted(set(self.threads) | self.stages)]


def plan_merge(incoming: Iterable[dict], local: Callable[[str], dict | None], *,
               new_id: Callable[[dict], str], plan: MergePlan | None = None) -> MergePlan:
    """Adds to ``plan`` the conversations of one slice (DESIGN.md §14: merge by id, keep the
    conversations of both sides, never add one twice; §17: a backup holds whole trees).
    ``local(taskId)`` gives the conversation kept here under that id as a backup line is
    (``{"meta", "messages", "turns", "branches"?, "shown"?}``, as stored) or ``None`` (not here).

    Not here → added. Two chains (§15's one rule, ``app.continuity.continues``): the incoming goes on
    from the local one → it replaces it (``extended``); the local one goes on from it → ``present``.
    Otherwise the two are compared as trees (``_joined``): the incoming holds no message the local
    tree lacks → ``present``, whatever each shows (a choice of shown branch is not content, §17);
    the two are one conversation branched or continued on either side → the union of both trees
    (``app.history.merge.merge_conversation``: turn metas of both by ``messageId``, the meta's
    counts from every turn) replaces the local one (``extended``), never a copy. Only when they share
    no message, or a message with one id differs in content or place, is the incoming added under
    ``new_id(meta)`` (a fresh ``task_…`` id) and ``app.history.text.copy_title``, so both are kept and
    told apart (``renamed``).

    A conversation holding more text than ``MAX_CONVERSATION_CHARS`` (its shown path and its other
    branches together, counted as ``app.history.limits.text_chars`` counts an import's) is left out
    and counted (``too_long``): the one limit of every way in (DESIGN.md §14), as Import JSON and
    sync refuse it."""
    plan = plan if plan is not None else MergePlan()
    for item in incoming:
        if text_chars([*item["messages"], *(item.get("branches") or ())]) > MAX_CONVERSATION_CHARS:
            plan.too_long += 1
            continue
        task_id = item["meta"]["taskId"]
        here = local(task_id)
        if here is None:
            plan.conversations.append(item)
            plan.added += 1
            continue
        if not here.get("branches") and not item.get("branches"):
            if continues(here["messages"], item["messages"]):
                plan.present += 1
                continue
            if continues(item["messages"], here["messages"]):
                plan.conversations.append(item)
                plan.extended += 1
                continue
        how, joined = _joined(here, item)
        if how == "apart":
            fresh = new_id(item["meta"])
            # its own title too, or the list shows two rows alike (DESIGN.md §9's title rule holds)
            title = item["meta"].get("taskName")
            meta = {**item["meta"], "taskId": fresh, "taskName": copy_title(title) if isinstance(title, str) else title}
            plan.conversations.append({**item, "meta": meta})
            plan.renames[task_id] = fresh
            plan.added += 1
            plan.renamed += 1
        elif how == "present":
            plan.present += 1
        else:
            plan.conversations.append(joined)
            plan.extended += 1
    return plan


def _tree(line: dict) -> Tree:
    return StoredForm(line["messages"], line.get("branches") or [], line.get("shown") or {}).tree()


def _joined(here: dict, item: dict) -> tuple[str, dict | None]:
    """The backup's conversation ``item`` against the one ``here`` under its id, as trees (both
    backup lines; ``plan_merge``): ``("apart", None)`` when they are not one conversation (no
    message in common, or a message of one id with another content or parent on each side);
    ``("present", None)`` when ``here`` holds every message of ``item``; else ``("joined", line)``,
    the line to write: the union of both trees, the later side's choices shown (each side's
    ``updatedAt``), turn metas of both by ``messageId``, the meta (``app.history.merge.merged_meta``)
    counting every turn."""
    kin = kinship(_tree(here), _tree(item))
    if kin != "grows":
        return ("apart" if kin == "apart" else "present"), None
    try:
        local_meta = TaskMeta.model_validate(here["meta"])
    except ValidationError:  # a damaged record here: the backup's meta stands for it
        local_meta = TaskMeta.model_validate(item["meta"])
    remote_meta = TaskMeta.model_validate(item["meta"])
    merged = merge_conversation(_side(here), _side(item), local_at=local_meta.updatedAt,
                                remote_at=remote_meta.updatedAt)
    meta = merged_meta(local_meta, remote_meta, merged).model_dump()
    fields = _tree_fields({"branches": merged.branching.branches, "shown": merged.branching.shown})
    return "joined", {"meta": meta, "messages": merged.messages, "turns": [t.record() for t in merged.turns], **fields}


def _side(line: dict) -> tuple[list[dict], list[TurnMeta], Branching]:
    """A backup line as one side of ``app.history.merge.merge_conversation``: its shown path as
    stored, its turn metas (those that fail their shape left out: a damaged record here) and its
    tree beside the path."""
    turns = []
    for turn in line["turns"] if isinstance(line["turns"], list) else []:
        try:
            turns.append(TurnMeta.model_validate(turn))
        except ValidationError:
            pass
    messages = line["messages"] if isinstance(line["messages"], list) else []
    return messages, turns, Branching(line.get("branches") or [], line.get("shown") or {})


def renumber(item: dict, version_no: int) -> dict:
    """``item`` (``{"version", "snapshot"}``) as version ``version_no`` of its artifact: the number
    and the ``<artifactId>:v<n>`` id change in the record, its timeline item and its snapshot
    (DESIGN.md §10: version ids count from 1 per artifact)."""
    version = dict(item["version"])
    version_id = f"{version['artifactId']}:v{version_no}"
    version["versionNo"] = version_no
    version["versionId"] = version_id
    if isinstance(version.get("item"), dict) and isinstance(version["item"].get("metadata"), dict):
        metadata = dict(version["item"]["metadata"])
        if "versionNo" in metadata:
            metadata["versionNo"] = version_no
        version["item"] = {**version["item"], "metadata": metadata}
    snapshot = {**item["snapshot"], "versionId": version_id} if "versionId" in item["snapshot"] else item["snapshot"]
    return {"version": version, "snapshot": snapshot}


def plan_versions(incoming: Iterable[dict], *, present: Callable[[dict], bool],
                  highest: dict[str, int], plan: MergePlan | None = None) -> MergePlan:
    """Adds one slice of versions to ``plan``: skipped when ``present(version record)`` (its
    checkpoint or version id is here), else renumbered past ``highest[artifactId]`` (the highest
    local version number of that scene, updated as versions are planned). DESIGN.md §10, §14."""
    plan = plan if plan is not None else MergePlan()
    for item in sorted(incoming, key=lambda x: (x["version"]["artifactId"], x["version"]["versionNo"])):
        if present(item["version"]):
            plan.versions_present += 1
            continue
        artifact = item["version"]["artifactId"]
        highest[artifact] = highest.get(artifact, 0) + 1
        plan.versions.append(renumber(item, highest[artifact]))
        plan.versions_added += 1
    return plan


def plan_threads(incoming: dict, local_has: Callable[[str], bool], plan: MergePlan | None = None) -> MergePlan:
    """Courses' active threads from ``incoming`` (the envelope) restored only where
    ``local_has(stageId)`` is False (DESIGN.md §14); the others counted in ``threads_kept``."""
    plan = plan if plan is not None else MergePlan()
    for stage_id, thread in incoming["state"]["threads"].items():
        if local_has(stage_id):
            plan.threads_kept += 1
        else:
            plan.threads[stage_id] = thread
            plan.threads_restored += 1
    return plan


def plan_heads(heads: dict[str, str], known: Callable[[str], bool], plan: MergePlan) -> MergePlan:
    """For each thread ``plan`` restores, the conversation it is: the backup's head of that course
    (``heads``: stage id → task id), under its fresh id when it was renamed, kept only when
    ``known(task id)`` (the conversation is here or planned). A thread without one is adopted into
    history at the next start-up, as any thread history lacks (DESIGN.md §9, §14)."""
    for stage_id in plan.threads:
        task_id = heads.get(stage_id)
        if task_id is None:
            continue
        task_id = plan.renames.get(task_id, task_id)
        if known(task_id):
            plan.heads[stage_id] = task_id
    return plan
