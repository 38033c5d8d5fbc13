"""Mutation check: apply each of thirty DESIGN rules' mutations alone, run the unit suite, say which it kills.

    .venv/bin/python tools/mutations.py        # from the repository root; ~25 unit-suite runs

Each mutation breaks one rule the design states (the section is named); a mutation the unit suite does not
kill is a rule no test proves. The file is restored after each run, also when a run is interrupted. Exit
status 1 when any mutation survives.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MUTATIONS = [  # (rule, file, text, mutated text)
    ("two devices holding different metas of one reply's turn each keep their own for good (§16)",
     "app/history/merge.py", "(turn != held and _fuller(turn) > _fuller(held))", "False"),
    ("a change a replication that ended refused to write is forgotten, not sent by the next start (§5, §16)",
     "app/sync/engine.py", "            self.unsent.changes[task_id] = change\n", ""),
    ("two devices holding the same conversation keep the earlier-updated meta, so each sends its own (§16)",
     "app/history/merge.py",
     "key=lambda m: (m.updatedAt, repr(m.model_dump())), reverse=True)",
     "key=lambda m: (m.updatedAt, repr(m.model_dump())))"),
    ("the earlier change of a conversation's name or pin wins in sync (§18)", "app/history/names.py",
     "return a if ta > tb else b", "return a if ta < tb else b"),
    ("a course's pinned conversations are listed after the rest (§18)", "app/history/reads.py",
     "return replace(page, items=[*(pins or []), *rest])",
     "return replace(page, items=[*rest, *(pins or [])])"),
    ("a turn drawn into the list without a read puts the pinned after the rest (§18, issue #33)",
     "app/history/reads.py",
     'items = [*pins, *(row for row in listed if getattr(row, "pinnedAt", None) is None)]',
     'items = [*(row for row in listed if getattr(row, "pinnedAt", None) is None), *pins]'),
    ("a rename leaves the old title's words in the search index (§18)", "app/history/terms.py",
     "body = held - set(title_only)", "body = held"),
    ("a turn extends a search record whose messages were edited since (§14)", "app/history/repository.py",
     "len(held_messages) != count or not continues(messages, held_messages):", "len(held_messages) != count:"),
    ("continues ignores a thread's last message (DESIGN.md §15)", "app/continuity.py",
     "thread[: len(base)] == base", "thread[: len(base) - 1] == base[:-1]"),
    ("quota pruning drops the newest course first (§5)", "app/store/quota.py",
     "key=lambda k: (threads[k].updated_at, rank[k]))", "key=lambda k: (-threads[k].updated_at, rank[k]))"),
    ("a value one version newer is written over (§3)", "app/store/facade.py",
     "if found.version > current:  # never written", "if found.version > current + 1:  # never written"),
    ("search folds with lower() (§14)", "app/history/text.py",
     ".casefold().translate(_DOTLESS_I)", ".lower().translate(_DOTLESS_I)"),
    ("negative counts are accepted (§14)", "app/history/records.py",
     "Count = Annotated[StrictInt, Field(ge=0, le=MAX_SAFE_INTEGER)]",
     "Count = Annotated[StrictInt, Field(ge=-10**9, le=MAX_SAFE_INTEGER)]"),
    ("archive trusts an older copy of the thread (§9)", "app/history/writes.py",
     "if meta is None or not continues((await self._repository.form(meta.taskId)).messages, messages):",
     "if meta is None:"),
    ("reconcile copies a head that already holds the shown thread (§5, §9)", "app/history/writes.py",
     "whole = meta is not None and (messages == old or (not goes_on and continues(old, messages)))", "whole = False"),
    ("a damaged value is not backed up (§5)", "app/store/facade.py",
     "key = self._try(lambda: self._stored.back_up(self._clock), False)  # False: storage was lost",
     'key = "maic-agent-threads.backup.0"'),
    ("a refused version commit counts as written (§10)", "app/checkpoints/versions.py",
     "            if taken is None:\n                self._keep(", "            if True:\n                self._keep("),
    ("a tool result keeps content items of any type (§3)", "app/projection.py",
     'if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)',
     'if isinstance(c, dict) and isinstance(c.get("text"), str)'),
    ("a sync merge shows the earlier device's choices, not the later's (§17)", "app/history/merge.py",
     "ordered = sorted(versions, key=lambda v: v.rank, reverse=True)",
     "ordered = sorted(versions, key=lambda v: v.rank)"),
    ("a message without an id is one with any message of the same content (§17)", "app/continuity.py",
     "[previous, message] if not salt else [previous, message, salt]", "[message] if not salt else [message, salt]"),
    ("the original's thread gets a task id without its course (§14)", "app/history/original.py",
     "json.dumps([stage_id, thread.messages], sort_keys=True)", "json.dumps([thread.messages], sort_keys=True)"),
    ("a paint record of another locale is drawn (§13)", "static/paint.js",
     "record.stageId === stageId && record.locale === locale", "record.stageId === stageId"),
    ("the paint record's text is drawn as HTML (§13)", "static/paint.js",
     "if (isText(node.x)) element.textContent = node.x;", "if (isText(node.x)) element.innerHTML = node.x;"),
    ("a reply cut at the length limit is drawn as stopped (§12, §13)", "app/message_row.py",
     'return {"error": "failed", "length": "cut"}.get(', 'return {"error": "failed"}.get('),
    ("an edit's or a regenerate's agent reads the whole thread, other branches included (§17)",
     "app/runtime/turns.py",
     "history = list(session.messages if before is None else before)", "history = list(session.messages)"),
    ("history's tree of another conversation is mixed into the panel's (§17)", "app/runtime/branches.py",
     "if history_tree is None or first is None or first not in history_tree:", "if history_tree is None:"),
    ("the branch picker's arrows are not mirrored right to left (§7, §17)", "app/message_actions.py",
     'ActionButton("branch-prev", "›" if rtl else "‹"', 'ActionButton("branch-prev", "‹"'),
    ("the app wheel in dist/ keeps the dev-only hooks (§15)", "tools/build.py",
     "        if fnmatch.fnmatch(rel, APP_WHEEL):\n", "        if False:\n"),
    ("a write made of a read another tab's turn has outdated lands unchecked, over that turn (§9, §17)",
     "app/history/repository.py", "            return await attempt(True)", "            return await attempt(False)"),
    ("a rename made of a read another tab's turn has outdated writes the meta back without it (§9, §18)",
     "app/history/name_writes.py", "        if expect:\n            writes.expect(meta)\n", ""),
    ("another device's version of the active path with a new sibling leaves the pickers as they were (§16, §17)",
     "app/history/active_thread.py",
     "            self._runtime.conversation_changed_elsewhere(change.stage_id, change.kind, change.task_id)\n", ""),
    ("a merge drops the only choice made at a fork the later device never had (§17)", "app/history/tree.py",
     "                chosen[key] = child\n", "                pass\n"),
    ("a merge hides the later device's own later turns below a fork the other made (§17)", "app/history/tree.py",
     "and child in earlier.nodes and not later._went_on(key, earlier)):", "and child in earlier.nodes):"),
]


def main() -> int:
    """Run every mutation; print KILLED/survived per rule and the total; 1 when any survived."""
    survived = 0
    for rule, name, text, mutated in MUTATIONS:
        path = ROOT / name
        source = path.read_text(encoding="utf-8")
        if source.count(text) != 1:
            print(f"not applicable (the code moved; update the mutation): {rule}")
            survived += 1
            continue
        path.write_text(source.replace(text, mutated), encoding="utf-8")
        try:
            run = subprocess.run([sys.executable, "-m", "pytest", "tests/unit", "-x", "-q", "-p", "no:cacheprovider"],
                                 cwd=ROOT, capture_output=True, text=True)
        finally:
            path.write_text(source, encoding="utf-8")
        killed = run.returncode != 0
        survived += not killed
        print(f"{'KILLED' if killed else 'survived'}: {rule}", flush=True)
    print(f"{len(MUTATIONS) - survived} of {len(MUTATIONS)} killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
