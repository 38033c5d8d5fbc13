"""The history list's state as a pure model (app/history/list_model.py; DESIGN.md §9 UI hooks, §15)."""

from __future__ import annotations

import pytest

from app.history.changes import HistoryChange
from app.history.list_model import RANGES_MS, HistoryList, item_rows
from app.history.text import shown_title
from app.history.records import Stats, TaskMeta, iso
from app.history.service import Damaged
from app.i18n import Translator

T0 = 1_780_000_000_000


def meta(n: int, updated: int = T0, name: str = "", tokens: int = 0) -> TaskMeta:
    return TaskMeta(taskId=f"task_20260528_{n:06d}", taskName=name, stageId="s", createdAt=updated,
                    updatedAt=updated, stats=Stats(totalTokens=tokens, outputTokens=tokens), turnCount=1)


def test_a_read_started_later_makes_an_earlier_one_stale():
    """A search or page read while sort, range or course changed is not drawn (§9)."""
    model = HistoryList()
    first = model.begin("newest", "all", T0)
    second = model.begin("oldest", "7d", T0)
    assert not model.is_latest(first) and model.is_latest(second)
    assert (model.sort, model.since) == ("oldest", T0 - RANGES_MS["7d"])
    model.begin("newest", "unknown", T0)
    assert model.since is None  # an unknown range is all of it


def test_restart_forgets_the_drawn_items_and_the_next_page():
    model = HistoryList()
    model.drawn([meta(1), meta(2)])
    model.paged(("cursor",), True)
    model.restart("other")
    assert (model.stage, model.count, model.cursor, model.has_more, model.top()) == ("other", 0, None, False, None)


def test_pages_skip_items_already_drawn_and_the_top_is_the_newest_key():
    """An item that moved up is not drawn twice; the newest drawn item is where newer ones begin."""
    model = HistoryList()
    model.drawn([meta(1, T0 + 5), meta(2, T0 + 9)])
    assert [m.taskId for m in model.unseen([meta(2, T0 + 9), meta(3, T0 + 1)])] == [meta(3).taskId]
    assert model.top() == (T0 + 9, meta(2).taskId) and model.shows(meta(1).taskId)
    model.removed(meta(2).taskId)
    assert model.top() == (T0 + 5, meta(1).taskId) and not model.shows(meta(2).taskId)


def test_the_next_page_is_read_only_when_one_exists_and_none_is_loading_search_results_too():
    model = HistoryList()
    assert not model.can_page_on()
    model.paged(("c",), True)
    assert model.can_page_on()  # the plain list and search results page alike (DESIGN.md §14)
    model.loading = True
    assert not model.can_page_on()


def test_only_an_open_newest_first_plain_list_takes_new_items_at_its_top():
    model = HistoryList()
    assert not model.tops_by_prepending("")  # closed: a reload (which draws nothing)
    model.open = True
    assert model.tops_by_prepending("") and not model.tops_by_prepending("query")
    model.begin("tokens", "all", T0)
    assert not model.tops_by_prepending("")


def test_a_change_touches_the_list_only_when_it_is_open_on_that_course():
    """Delete removes its item; undo and import put one at its own place (drawn afresh); the
    rest (archive, resume, a recorded turn) arrive at the top (§9)."""
    model = HistoryList()
    model.restart("s")
    assert model.effect(HistoryChange("delete", "t", "s")) == "none"  # closed
    model.open = True
    assert model.effect(HistoryChange("delete", "t", "other")) == "none"
    assert model.effect(HistoryChange("delete", "t", "s")) == "remove"
    assert model.effect(HistoryChange("undo", "t", "s")) == "reload"
    assert model.effect(HistoryChange("import", "t", "s", "other-tab")) == "reload"
    assert model.effect(HistoryChange("archive", "t", "s")) == "top"
    assert model.effect(HistoryChange("resume", "t", "s")) == "top"


def test_the_delete_of_a_drawn_conversation_no_course_list_holds_removes_its_item():
    """A record whose ``stageId`` is no course's (``5``) is drawn in every course's list (``Page.strays``):
    its delete, told with that stage, removes its item from the list that drew it."""
    from app.history.repository import Damaged

    model = HistoryList()
    model.restart("s")
    model.open = True
    model.drawn([Damaged("task_20260528_stray0", "", 0)], T0)
    assert model.effect(HistoryChange("delete", "task_20260528_stray0", 5)) == "remove"
    assert model.effect(HistoryChange("delete", "task_20260528_undraw", 5)) == "none"


def test_item_rows_decide_every_text_and_mark_the_current_conversation():
    t = Translator("en-US")
    current, other = meta(1, T0 - 120_000, "Kept", tokens=7), meta(2, T0, "")
    rows = item_rows(t, [(current, None), (other, ("a ", "hit", " b"))], T0, current.taskId)
    assert [r["current"] for r in rows] == [True, False]
    assert rows[0]["title"] == "Kept" and rows[1]["title"] == t("history.untitled")
    assert (rows[0]["unit"], rows[0]["count"]) == ("minute", 2) and rows[1]["unit"] == "now"
    assert rows[0]["iso"] == iso(current.updatedAt) and rows[0]["totalTokens"] == 7
    assert rows[1]["snippet"] == ["a ", "hit", " b"] and rows[0]["snippet"] is None
    assert rows[0]["deleteLabel"] == t("history.delete", title="\u2068Kept\u2069")
    assert rows[0]["justNow"] == t("history.justNow") and rows[0]["stats"]


def test_bidi_controls_in_a_title_are_neutralised_when_drawn():
    """A right-to-left override in a title drew the rest of its row reversed: explicit embeddings,
    overrides and isolates are dropped from the drawn title and snippet (the stored title keeps
    them), and the delete label isolates the title (FSI … PDI), as a <bdi> would."""
    t = Translator("ar-SA")
    hostile = "invoice\u202egpj.exe\u202c \u2067x\u2069 \u202a\u202b\u202d\u2066\u2068end\u200f"
    (row,) = item_rows(t, [(meta(1, T0, hostile), ("\u202eb", "hit", "a\u202e"))], T0, None)
    assert row["title"] == "invoicegpj.exe x end\u200f"  # a mark (RLM) scopes nothing: kept
    assert row["snippet"] == ["b", "hit", "a"]
    assert row["deleteLabel"] == t("history.delete", title="\u2068invoicegpj.exe x end\u200f\u2069")
    assert shown_title("كتاب \u202eabc") == "كتاب abc" and shown_title("plain") == "plain"


def test_a_damaged_record_is_listed_under_the_damaged_title_so_that_it_can_be_deleted():
    """DESIGN.md §14: a record whose meta cannot be read is listed, never hidden."""
    t = Translator("en-US")
    (row,) = item_rows(t, [(Damaged(taskId="task_20260528_bad000", stageId="s", updatedAt=T0), None)], T0, None)
    assert row["damaged"] and row["title"] == t("history.damaged") and not row["current"]
    assert row["unit"] == "now" and row["iso"]  # its time, when it could be read, as any row's


def test_a_damaged_record_whose_time_cannot_be_read_draws_no_time_never_1970():
    """A record whose ``updatedAt`` is no number reads as 0 (``Damaged``): drawn with no time, not
    as 1 January 1970 (``static/history-view.js`` draws no ``history-time`` for unit ``unknown``)."""
    t = Translator("en-US")
    (row,) = item_rows(t, [(Damaged(taskId="task_20260528_bad000", stageId="s", updatedAt=0), None)], T0, None)
    assert (row["unit"], row["iso"]) == ("unknown", "")


def test_an_actions_outcome_stays_when_the_list_is_drawn_again_and_the_lists_own_line_otherwise():
    """A restore's counts stayed a moment, then vanished when the restore redrew the list: an
    outcome (any ``data-kind``) now stays until the user's next step ends it."""
    from app.history.list_model import list_line

    for kind in ("backup", "import", "import-chatgpt", "resume", "delete"):
        assert list_line(kind, True, "history.empty") is None
        assert list_line(kind, False, "history.empty") is None
    assert list_line(None, False, "history.noResults") == "history.noResults"
    assert list_line("", True, "history.empty") == ""


def drawn_ahead(model: HistoryList, stage: str = "s", now: int = T0 + 3_600_000) -> int:
    """``model`` after its first page was read and drawn for ``stage`` (newest, all, no keyword) at ``now``."""
    model.live = True
    model.restart(stage)
    generation = model.begin("newest", "all", now)
    model.drawn([meta(1, T0), meta(2, T0)], now)
    model.paged(("c",), True)
    model.settled(generation)
    return generation


def test_a_list_drawn_ahead_shows_as_it_is_only_for_its_course_keyword_order_and_range():
    """DESIGN.md §14: a click shows the list drawn ahead only when it is what the click asks for."""
    model = HistoryList()
    now = T0 + 3_600_000
    assert not model.ready_to_show("s", "", "newest", "all", now)  # nothing drawn yet
    drawn_ahead(model)
    assert model.ready_to_show("s", "", "newest", "all", now)
    assert not model.ready_to_show("other", "", "newest", "all", now)
    assert not model.ready_to_show(None, "", "newest", "all", now)
    assert not model.ready_to_show("s", "learning", "newest", "all", now)
    assert not model.ready_to_show("s", "", "oldest", "all", now)
    assert not model.ready_to_show("s", "", "newest", "7d", now)  # a range's start moves with the clock


def test_a_change_heard_after_the_read_began_keeps_the_drawn_list_from_showing_until_read_again():
    """This tab's write, another tab's or sync's, a delete: every change of the list's course is heard;
    what was drawn before it is not shown as it is (never stale); a read begun after it is."""
    for kind in ("record", "archive", "delete", "import", "sync", "undo", "resume"):
        model = HistoryList()
        now = T0 + 3_600_000
        drawn_ahead(model)
        assert not model.hear(HistoryChange(kind, "t", "another course", "other-tab"))  # not this list's
        assert model.ready_to_show("s", "", "newest", "all", now)
        assert model.hear(HistoryChange(kind, "t", "s", "sync" if kind == "sync" else "this-tab"))
        assert model.behind and not model.ready_to_show("s", "", "newest", "all", now)
        generation = model.begin("newest", "all", now)  # drawn afresh: its read sees the change
        assert not model.ready_to_show("s", "", "newest", "all", now)  # read, not drawn yet
        model.restart("s")
        model.drawn([meta(3, T0)], now)
        model.paged(None, False)
        model.settled(generation)
        assert model.ready_to_show("s", "", "newest", "all", now)


def test_a_change_heard_during_the_read_keeps_it_from_showing():
    model = HistoryList()
    model.live = True
    model.restart("s")
    generation = model.begin("newest", "all", T0)
    model.hear(HistoryChange("archive", "t", "s"))  # the read began before it: may not show it
    model.drawn([meta(1, T0)], T0)
    model.paged(None, False)
    model.settled(generation)
    assert not model.ready_to_show("s", "", "newest", "all", T0)


def test_a_list_not_drawn_ahead_hears_nothing():
    model = HistoryList()
    assert not model.hear(HistoryChange("archive", "t", "s"))
    assert not model.behind


def test_a_drawn_list_with_a_relative_time_that_reads_otherwise_now_or_more_pages_is_drawn_afresh():
    model = HistoryList()
    now = T0 + 3_600_000  # "1 hour ago" for both items
    drawn_ahead(model, now=now)
    assert model.labels_hold(now + 59_000)
    assert not model.ready_to_show("s", "", "newest", "all", now + 3_600_000)  # now "2 hours ago"
    model.paged(("d",), True)  # a second page read (scrolled)
    assert not model.ready_to_show("s", "", "newest", "all", now)
    drawn_ahead(model, now=now)
    model.loading = True  # a next page being read
    assert not model.ready_to_show("s", "", "newest", "all", now)


def test_the_drawn_list_says_when_its_first_relative_time_turns():
    """The closed list is drawn afresh then (app/browser/history_list_view.py ``relabel_later``), so a
    click still finds it ready to show."""
    model = HistoryList()
    assert model.labels_change_at(T0) is None  # nothing drawn
    model.drawn([meta(1, T0), meta(2, T0 - 100_000)], T0 + 1)
    turns = model.labels_change_at(T0 + 1)
    assert turns == T0 + 20_000  # "1 minute ago" becomes "2 minutes ago" before "just now" turns
    assert HistoryList().labels_change_at(T0) is None
    assert model.labels_hold(turns - 1) and not model.labels_hold(turns)
    old = HistoryList()
    old.drawn([meta(3, T0 - 8 * 86_400_000)], T0)
    assert old.labels_change_at(T0) is None  # a date reads the same for ever


def test_a_list_with_no_item_says_why_under_it_even_while_an_action_outcome_is_shown():
    """``history-empty``: the reason of a list drawn empty (DESIGN.md §9, §14); ``None`` with an item."""
    from app.history.list_model import empty_state

    assert empty_state(False, "history.noResults") == ("history.noResults", "no-match")
    assert empty_state(False, "history.empty") == ("history.empty", "empty")
    assert empty_state(False, "history.unavailable") == ("history.unavailable", "unavailable")
    assert empty_state(True, "history.empty") is None


def test_history_failing_to_open_its_database_is_left_to_the_one_indexeddb_notice():
    """DESIGN.md §5: storage unavailable is said once (app.browser.page leaves these to IndexedDB's)."""
    from app.history.access import database_failed

    assert database_failed("history-unavailable", False) and database_failed("history-full", None)
    assert not database_failed("history-full", True)  # opened, then a write found the disk full: its own
    assert not database_failed("history-blocked", False) and not database_failed("history-version-change", None)


class _Screen:
    """The history list as ``app.browser.history_list_view`` drives it over ``HistoryList``, with a
    store of metas (newest first, pages of ``size``) and the drawn rows as ``static/history-view.js``
    draws them (``replace``, ``append``, ``prepend`` each replacing its old node). Each read is two
    steps (begun, landed) so that a test can interleave them as IndexedDB and the channels may."""

    def __init__(self, model: HistoryList, metas: list[TaskMeta], size: int = 12) -> None:
        self.model, self.metas, self.size, self.rows = model, metas, size, []

    def ordered(self) -> list[TaskMeta]:
        return sorted(self.metas, key=lambda m: (m.updatedAt, m.taskId), reverse=True)

    def draw(self, metas, mode: str) -> None:
        shown = [m.taskId for m in self.model.place(metas, mode, T0)]
        if mode == "replace":
            self.rows = shown
        elif mode == "append":
            self.rows += shown
        else:
            self.rows = shown + [row for row in self.rows if row not in shown]

    def reload(self):
        """``reload`` up to its read: returns the step that lands it."""
        self.model.restart("s")
        generation = self.model.begin("newest", "all", T0)
        page = self.ordered()[:self.size]  # the read's snapshot
        has_more = len(self.metas) > self.size

        def land() -> bool:
            if not self.model.is_latest(generation):
                return False
            self.draw(page, "replace")
            self.model.paged((page[-1].updatedAt, page[-1].taskId) if page else None, has_more)
            return self.model.settled(generation)
        return land

    def refresh_top(self):
        """``refresh_top`` up to its ``newer()`` read: returns the step that lands it (None: nothing read)."""
        generation = self.model.refresh_generation()
        if generation is None:
            return None
        top = self.model.top()
        newer = [m for m in self.ordered() if top is None or (m.updatedAt, m.taskId) > top]

        def land() -> None:
            if self.model.is_latest(generation):
                self.draw(newer, "prepend")
        return land

    def scroll_to_the_end(self) -> None:
        while self.model.can_page_on():
            cursor = self.model.cursor
            page = [m for m in self.ordered() if (m.updatedAt, m.taskId) < cursor][:self.size]
            self.draw(page, "append")
            last = page[-1] if page else None
            self.model.paged((last.updatedAt, last.taskId) if last else cursor, len(page) == self.size and
                             any((m.updatedAt, m.taskId) < (last.updatedAt, last.taskId) for m in self.metas))


def test_changes_met_by_a_read_in_flight_draw_each_conversation_once_and_none_is_lost():
    """Two tabs on one course (issue: a turn then New conversation listed twice in the other tab): the
    other tab's list hears a recorded turn, then a change that draws it afresh, then the archive, while
    its reads are in flight and land in another order (Firefox, WebKit). A refresh of the top asked for
    while the first page is read reads nothing (``newer()`` with no top is every conversation) and is
    owed once the page is drawn; one that read before the list was drawn afresh is dropped. Every
    conversation reaches the list exactly once, and the model's drawn keys are the rows drawn."""
    metas = [meta(n, T0 + n) for n in range(1, 31)]
    model = HistoryList()
    model.open = model.live = True
    screen = _Screen(model, metas)
    assert not screen.reload()()  # the open list, its first page drawn
    metas[9] = meta(10, T0 + 100)  # a turn in the other tab moves conversation 10 to the top
    turn = screen.refresh_top()
    assert turn is not None
    redraw = screen.reload()  # a change that draws the list afresh (an undo, an import)
    metas.append(meta(31, T0 + 200))  # New conversation there: the archived one arrives
    assert screen.refresh_top() is None  # the page is being read: no top to read above
    turn()  # read before the list was drawn afresh: dropped
    owed = redraw()
    assert owed  # the archive was heard while the page was read: one refresh follows it
    screen.refresh_top()()
    screen.scroll_to_the_end()
    expected = [m.taskId for m in screen.ordered()]
    assert screen.rows == expected
    assert model.count == len(expected) and all(model.shows(row) for row in screen.rows)


def test_place_draws_a_key_once_whatever_the_mode():
    """``HistoryList.place``: a page that names one conversation twice draws it once; a replace makes
    the drawn keys exactly its rows; an append skips what is drawn; a prepend draws each row anew
    (its old node is replaced)."""
    model = HistoryList()
    model.drawn([meta(9, T0 + 9)])
    assert [m.taskId for m in model.place([meta(1, T0 + 1), meta(1, T0 + 1), meta(2, T0 + 2)], "replace", T0)] \
        == [meta(1).taskId, meta(2).taskId]
    assert not model.shows(meta(9).taskId) and model.count == 2
    assert [m.taskId for m in model.place([meta(2, T0 + 2), meta(3, T0)], "append", T0)] == [meta(3).taskId]
    assert [m.taskId for m in model.place([meta(2, T0 + 5)], "prepend", T0)] == [meta(2).taskId]
    assert model.top() == (T0 + 5, meta(2).taskId) and model.count == 3


def test_an_unavailable_history_says_under_its_list_the_reason_its_status_gives():
    """Another tab holding an older version open (``blocked``) was said under the list as "History is
    unavailable in this browser", blaming the browser: the line says the notice's reason (in use by
    another tab; updated in another tab), and the browser's line stays for the other failures."""
    from app.history.list_model import empty_state, unavailable_key

    assert unavailable_key("blocked") == "notice.history-blocked"
    assert unavailable_key("versionchange") == "notice.history-version-change"
    for failure in (None, "unavailable", "failed", "closed", "version"):
        assert unavailable_key(failure) == "history.unavailable", failure
    for failure in ("blocked", "versionchange", None):
        assert empty_state(False, unavailable_key(failure)) == (unavailable_key(failure), "unavailable")


@pytest.mark.parametrize("kind", ["blocked", "versionchange"])
def test_history_in_another_tabs_hands_is_logged_below_warning(kind, caplog):
    """Another tab holding the database (an expected condition the notice explains) reached the page's
    console as an error: Python's warnings go to stderr, which the page prints as ``console.error``.
    It is logged at info (the page already warns ``IndexedDB: blocked``); any other failure stays a
    warning."""
    import logging

    from app.history.access import HistoryAccess
    from app.records import RecordStoreError

    notices = []
    access = HistoryAccess(None, notices.append)
    with caplog.at_level(logging.DEBUG, logger="app.history.access"):
        access.fail(RecordStoreError(kind, "another tab"))
        access.fail(RecordStoreError("failed", "disk"))
    levels = {record.getMessage().split(": ")[1]: record.levelno for record in caplog.records}
    assert levels == {kind: logging.INFO, "failed": logging.WARNING}
    expected = {"blocked": "history-blocked", "versionchange": "history-version-change"}[kind]
    assert access.available is False and notices[0].code == expected


class _CountingReads:
    """Wraps a ``MemoryBackend``: counts its reads (every call but ``open``, ``write``, ``persist``)."""

    READS = ("get", "bulk_get", "get_all", "query", "count", "query_count", "keys", "primary_keys", "scan")

    def __init__(self, backend) -> None:
        self.backend, self.reads = backend, 0

    def __getattr__(self, name):
        attr = getattr(self.backend, name)
        if name in self.READS:
            async def counted(*args, **kw):
                self.reads += 1
                return await attr(*args, **kw)
            return counted
        return attr


def _page_rows(page) -> tuple:
    return ([(m.taskId, m.updatedAt, getattr(m, "pinnedAt", None)) for m in page.items], page.cursor, page.has_more,
            page.total)


async def test_a_turn_of_a_listed_conversation_is_drawn_from_what_it_wrote_without_a_read():
    """Issue #33: the closed list drawn ahead follows this tab's turn of a conversation it lists (the
    turn's change carries the meta as committed) without reading IndexedDB, and holds what a re-read of
    its first page gives: the conversation at the top, pinned ones first, the same total, next-page
    cursor and has-more; a turn of a conversation it does not list is left to the re-read."""
    from app.records import MemoryBackend
    from tests.unit.test_history import add, reply, service, user
    from tests.unit.turn_events import ended

    backend = _CountingReads(MemoryBackend())
    svc, _, _ = service(backend=backend)
    heard: list[HistoryChange] = []
    svc.changes.subscribe(heard.append)
    ids = [await add(svc, "s", f"q{n}") for n in range(14)]  # more than a page, archived
    await svc.pin(ids[2], True)
    thread = list(await svc.resume("s", ids[12], [], None, 1))  # listed on the first page, not at its top
    model = HistoryList()
    model.live = True
    model.restart("s")
    generation = model.begin("newest", "all", T0)
    page = await svc.page("s")
    model.place(page.items, "replace", T0)
    model.paged(page.cursor, page.has_more)
    assert page.items[0].taskId == ids[2] and page.items[1].taskId != ids[12]  # the pin, then not the resumed one
    model.keep(page)
    model.settled(generation)
    for n in range(2):  # the resumed conversation's turn, then the turn after it
        thread += [user(f"more {n}", f"u-m{n}"), reply("ok", f"a-m{n}")]
        await svc.record_turn(ended("s", thread, message_id=f"a-m{n}"), 1)
        change = heard[-1]
        assert change.kind == "record" and change.written is not None
        model.hear(change)
        before = backend.reads
        followed = model.follow(change)
        assert backend.reads == before  # no read
        assert followed is not None and not model.behind
        assert _page_rows(followed) == _page_rows(await svc.page("s"))  # what a re-read gives
        assert followed.items[0].taskId == ids[2] and followed.items[1].taskId == change.task_id
    moved = change.written.meta.model_copy(update={"taskId": ids[0]})  # the oldest: not on the first page
    unlisted = HistoryChange("record", ids[0], "s", written=change.written._replace(meta=moved))
    model.hear(unlisted)
    assert model.follow(unlisted) is None and model.behind  # not listed: the list is read again


async def _reveal(svc, model: HistoryList, task_id: str, added: int) -> list[str]:
    """The rows ``HistoryListView.reveal`` draws after an import that added ``added`` conversations,
    ``task_id`` the first of them: the first page afresh, then the next pages while
    ``HistoryList.seeks`` asks for them."""
    model.restart("s")
    model.begin("newest", "all", T0)
    page = await svc.page("s")
    rows = [m.taskId for m in model.place(page.items, "replace", T0)]
    model.paged(page.cursor, page.has_more)
    while model.seeks(task_id, added):
        page = await svc.page("s", model.cursor)
        rows += [m.taskId for m in model.place(page.items, "append", T0)]
        model.paged(page.cursor, page.has_more)
    return rows


async def test_an_import_of_many_conversations_keeps_the_open_list_paged():
    """Issue 32: after 3,000 ChatGPT conversations were imported with the drawer open, every one of them
    was drawn into the list (36,000 elements; each later layout of the page cost what the list held).
    An import of many draws the open list afresh where it stands: the rows a list opened afresh shows,
    in its order, pinned ones first, and no more; the rest come with scrolling. An import of one
    conversation still pages on until it is drawn, wherever its time puts it (DESIGN.md §14)."""
    from app.history.reads import PAGE_SIZE
    from tests.unit.test_history import add, reply, service, user

    svc, _, _ = service()
    kept = [await add(svc, "s", f"kept {n}") for n in range(3)]
    await svc.pin(kept[0], True)
    imported = [meta(n, T0 - 10_000_000 + n, name=f"imported {n}") for n in range(300)]  # older than the kept
    for one in imported:
        assert await svc.import_bundle("s", one, [user(one.taskName, f"u-{one.taskId}"),
                                                  reply("ok", f"a-{one.taskId}")], []) == "ok"
    model = HistoryList()
    model.open = model.live = True
    rows = await _reveal(svc, model, imported[0].taskId, len(imported))
    fresh = await svc.page("s")
    assert model.count <= 2 * PAGE_SIZE and len(rows) == model.count
    assert rows == [m.taskId for m in fresh.items] and rows[0] == kept[0]  # as opened afresh, the pin first
    assert model.has_more  # the rest come with scrolling
    one = imported[-35].taskId  # on the fourth page
    rows = await _reveal(svc, model, one, 1)  # one imported: shown at once, however far down
    assert one in rows[-PAGE_SIZE:] and model.count == len(rows) > 3 * PAGE_SIZE  # on the last page read


def test_the_closed_list_is_drawn_ahead_at_once_after_quiet_and_about_once_a_gap_while_changes_keep_coming():
    """DESIGN.md §14, §16: a change after ``AHEAD_GAP_MS`` of quiet is drawn as soon as the page is idle;
    one that comes sooner waits until the gap since the last draw has passed (a first sync's slices
    each read the page and counted the whole course again), and never longer than the gap."""
    from app.history.list_model import AHEAD_GAP_MS, ahead_delay

    assert AHEAD_GAP_MS == 1000
    assert ahead_delay(None, 123.0) == 0.0  # never drawn: at once
    assert ahead_delay(1_000.0, 2_000.0) == 0.0 and ahead_delay(1_000.0, 9_000.0) == 0.0  # quiet for the gap
    assert ahead_delay(1_000.0, 1_001.0) == 999.0  # the slices of a sync: about once a gap
    assert ahead_delay(1_000.0, 1_750.0) == 250.0
    assert ahead_delay(1_000.0, 500.0) == 1_000.0  # a clock that went back: one gap at most
    assert ahead_delay(0.0, 30.0, gap=50) == 20.0
