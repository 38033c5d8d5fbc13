"""The history list's state, as a pure model (DESIGN.md §9 UI hooks, §15 "views draw").

``HistoryList`` holds what the drawn list is: its course (stage), its order and time range,
the cursor of its next page, whether more pages exist, which items are drawn, which
conversation is the course's active one (``current``), and a generation that tells a late
read from a list drawn since. ``app.browser.history_view.HistoryView`` only draws it and
forwards events. A ``HistoryChange`` (``app.history.changes``: this tab's, another tab's, sync's or
an import's, as history's hub announces it) is heard by the view, and ``HistoryList.effect`` says
what it means for the list.
``item_rows`` decides every text and attribute of drawn items (``static/history-view.js``
draws them). Nothing here imports the browser.

The first page is drawn ahead (DESIGN.md §14: the list opens at about the cost of a raw read):
after ready, in idle time, the shown course's first page is drawn in the closed drawer (``live``),
so a click only shows it. ``HistoryList.ready_to_show`` says when what is drawn may be shown as it
is: nothing changed since its read began (``heard``/``covered``: every change of history, this
tab's, another tab's or sync's, arrives through ``heard``), drawn for the course, keyword, order
and range asked for, one page, and every relative time still reading the same.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Literal

from app.history.changes import HistoryChange
from app.history.labels import item_stats_text
from app.history.reads import Page, after_turn
from app.history.records import iso
from app.history.service import ConversationStats
from app.history.text import relative_label, relative_label_until, shown_title

__all__ = ["AHEAD_GAP_MS", "RANGES_MS", "SEARCH_PAUSE_MS", "Effect", "ahead_delay", "HistoryList", "item_rows", "list_line", "unavailable_key"]

SEARCH_PAUSE_MS = 150
"""Typing in ``history-search`` searches once it pauses this long (ms); a key typed meanwhile starts
the wait again and cancels the search still running for an older keyword (DESIGN.md §14)."""

AHEAD_GAP_MS = 1000
"""The closed list is drawn ahead again (a read of its first page with the course's total, then the
draw) no sooner than this many ms after the last such draw began (``ahead_delay``)."""


def ahead_delay(last_began: float | None, now: float, gap: float = AHEAD_GAP_MS) -> float:
    """How long (ms) a draw ahead of the closed list asked for at ``now`` waits before it looks for
    idle time: none after ``gap`` ms of quiet since the last one began at ``last_began`` (None: never),
    so a single change is drawn as soon as the page is idle; else until ``gap`` ms past that one (and
    never longer than ``gap``, whatever the clock did). Changes that keep coming, a first sync taking
    in thousands of conversations (DESIGN.md §16), are drawn about once per ``gap``, the last of them
    included, instead of once per slice: each draw reads the page and counts the whole course again.

    >>> ahead_delay(None, 5.0), ahead_delay(1000.0, 1400.0), ahead_delay(1000.0, 2000.0), ahead_delay(1000.0, 900.0)
    (0.0, 600.0, 0.0, 1000.0)
    """
    if last_began is None:
        return 0.0
    return min(float(gap), max(0.0, last_began + gap - now))


RANGES_MS: dict[str, int | None] = {"all": None, "1d": 86_400_000, "7d": 7 * 86_400_000, "30d": 30 * 86_400_000}
"""The list's time ranges (``history-range`` values) as a span in ms back from now; ``None``: all."""

Effect = Literal["none", "remove", "reload", "top"]
"""What a history change does to the open list: nothing, remove its item, draw afresh, or draw
what arrived above the top (``HistoryList.effect``)."""


class HistoryList:
    """The history drawer's list state (module docstring). Every field is set here; the view
    changes it only through these verbs, and reads it to draw.

    ``open``: the drawer shows; ``stage``: the course the list was last drawn for; ``sort``
    (``newest``, ``oldest``, ``tokens``…) and ``since`` (epoch ms or ``None``) hold for its
    pages; ``cursor``/``has_more``: the next page; ``loading``: a page is being read;
    ``current``: the course's active conversation (its item is marked, it cannot be deleted);
    ``live``: the list is drawn and kept (shown or drawn ahead in the closed drawer).
    """

    def __init__(self) -> None:
        self.open = False
        self.live = False
        self.stage: str | None = None
        self.sort = "newest"
        self.since: int | None = None
        self.cursor: tuple | None = None
        self.has_more = False
        self.loading = False
        self.generation = 0
        self.current: str | None = None
        self.query = ""  # the keyword the list was last read for ("": the plain list)
        self.range_name = "all"
        self.pages = 0  # pages drawn since the list was drawn afresh
        self.drawn_generation = 0  # the generation whose first page (or results) is drawn
        self.heard = 0  # changes of the list's course announced so far
        self.covered = 0  # of those, announced before the read now drawn began
        self.owed = False  # a refresh of the top was asked for while the first page was read
        self._keys: dict[str, tuple[int, str]] = {}  # drawn taskId -> its list key (updatedAt, taskId)
        self._pinned: set[str] = set()  # drawn taskIds that are pinned (they lead the list, §18)
        self._labels: dict[str, tuple[str, int]] = {}  # drawn taskId -> its relative-time label as drawn
        self._first: Page | None = None  # the first page drawn, as read (``keep``, ``follow``)

    # -- drawing afresh -------------------------------------------------------------
    def restart(self, stage_id: str | None) -> None:
        """The list is drawn afresh for course ``stage_id``: nothing drawn, no next page."""
        self.stage = stage_id
        self._keys, self._labels, self.cursor, self.has_more, self.pages = {}, {}, None, False, 0
        self._pinned, self._first = set(), None

    def begin(self, sort: str, range_name: str, now: int, query: str = "") -> int:
        """Start a read of the first page (or of search results for ``query``) in order ``sort`` over
        ``range_name`` (a ``RANGES_MS`` key; unknown: all) as of ``now`` (epoch ms); returns its
        generation. The read sees every change announced before it (``heard``)."""
        span = RANGES_MS.get(range_name)
        self.sort, self.since = sort, None if span is None else now - span
        self.query, self.range_name, self.covered = query, range_name, self.heard
        self.generation += 1
        self.owed = False
        return self.generation

    def settled(self, generation: int) -> bool:
        """The first page (or results) read by ``generation`` is drawn. True when a refresh of the top
        was asked for while it was read (``refresh_generation``): the view refreshes it now, since that
        read may have begun before the change it was asked for was written."""
        self.drawn_generation = generation
        owed, self.owed = self.owed, False
        return owed

    def refresh_generation(self) -> int | None:
        """The generation a read of what arrived above the top (``HistoryService.newer``) belongs to;
        its result is drawn only while ``is_latest`` holds for it (a list drawn afresh meanwhile read
        after the change, so it shows it). ``None`` when nothing may be read now: no course, or the
        first page of the latest read is not drawn yet (the list has no top: ``newer()`` of no top is
        every conversation, drawn over a page about to replace it, and its keys left behind hid those
        rows from every later page); the refresh is then owed (``settled`` returns True).

        Two tabs on one course: a turn then New conversation in one, a change that drew the other's
        list afresh in between, and the reads landing in another order (Firefox, WebKit) left most of
        the course's conversations undrawn while the model counted them drawn (DESIGN.md §9, §14)."""
        if self.stage is None:
            return None
        if self.drawn_generation != self.generation:
            self.owed = True
            return None
        return self.generation

    def is_latest(self, generation: int) -> bool:
        """True when no read started after the one of ``generation`` (its result may be drawn)."""
        return generation == self.generation

    # -- pages ------------------------------------------------------------------------
    def drawn(self, metas: Iterable[Any], now: int = 0) -> None:
        """``metas`` (``TaskMeta`` or damaged records) are drawn now, their relative times as of
        ``now`` (epoch ms)."""
        for meta in metas:
            self._keys[meta.taskId] = (meta.updatedAt, meta.taskId)
            self._labels[meta.taskId] = relative_label(meta.updatedAt, now)
            if getattr(meta, "pinnedAt", None) is not None:
                self._pinned.add(meta.taskId)
            else:
                self._pinned.discard(meta.taskId)

    def place(self, metas: Iterable[Any], mode: str, now: int = 0) -> list[Any]:
        """The ``metas`` (``TaskMeta`` or damaged records) to draw in ``mode`` (as ``static/history-view.js``
        draws: ``replace``, ``append``, ``prepend``), each task id once, and record them as drawn at
        ``now`` (epoch ms). ``replace``: the drawn keys become exactly these (nothing drawn before, or by
        a late read, stays counted); ``append``: only those not drawn (an item that moved up is not drawn
        twice); ``prepend``: all of them (each replacing its old node). A row's key is drawn once
        whatever order reads land in (DESIGN.md §9)."""
        if mode == "replace":
            self._keys, self._labels, self._pinned = {}, {}, set()
        chosen: dict[str, Any] = {}
        for meta in metas:
            if meta.taskId not in chosen and (mode != "append" or meta.taskId not in self._keys):
                chosen[meta.taskId] = meta
        placed = list(chosen.values())
        self.drawn(placed, now)
        return placed

    def paged(self, cursor: tuple | None, has_more: bool) -> None:
        """The page just drawn ends at ``cursor``; ``has_more``: a next page exists."""
        self.cursor, self.has_more = cursor, has_more
        self.pages += 1

    def can_page_on(self) -> bool:
        """True when scrolling to the end reads the next page (of the list or of search results,
        DESIGN.md §14): one exists and none is being read."""
        return not self.loading and self.has_more

    def short_of(self, drawn: int) -> bool:
        """True while a list drawn afresh in place of one that held ``drawn`` items (a rename, pin,
        undo or import moved an item: ``effect`` is ``reload``) holds fewer and can read its next page
        (``can_page_on``): it reads it, so the pages read by scrolling stay drawn (DESIGN.md §9, §18)."""
        return self.count < drawn and self.can_page_on()

    def seeks(self, task_id: str, added: int) -> bool:
        """True while the open list, drawn afresh after an import that added ``added`` conversations to
        its course (``task_id`` the first of them), reads its next page to draw ``task_id``: one
        conversation was added (it shows at once, wherever its time puts it, DESIGN.md §14), it is not
        drawn and a next page exists. An import of many (a ChatGPT export) is not sought: the list is
        drawn as opened afresh, its first page (``HistoryListView.redraw`` keeps the pages scrolled to
        before), and the rest come with scrolling.

        Issue 32: after 3,000 ChatGPT conversations imported with the drawer open, every one was drawn
        into the list (36,000 elements), and each later layout of the page cost what the list held."""
        return added == 1 and not self.shows(task_id) and self.has_more

    def unseen(self, metas: Iterable[Any]) -> list[Any]:
        """``metas`` not drawn yet (an item that moved up is not drawn twice)."""
        return [meta for meta in metas if meta.taskId not in self._keys]

    def shows(self, task_id: str) -> bool:
        """True when ``task_id``'s item is drawn."""
        return task_id in self._keys

    @property
    def count(self) -> int:
        """How many items are drawn."""
        return len(self._keys)

    def top(self) -> tuple[int, str] | None:
        """The list key ``(updatedAt, taskId)`` of the newest drawn item, ``None`` when none is."""
        return max(self._keys.values()) if self._keys else None

    def tops_by_prepending(self, query: str) -> bool:
        """True when what arrived above the top can be drawn first (open, newest first, not search
        results, no pinned item drawn: pinned ones lead the list, DESIGN.md §18); otherwise the list
        is drawn afresh."""
        return self.open and not query.strip() and self.sort == "newest" and not self._pinned

    def removed(self, task_id: str) -> None:
        """``task_id``'s item is gone from the list."""
        self._keys.pop(task_id, None)
        self._labels.pop(task_id, None)
        self._pinned.discard(task_id)

    def keep(self, page: Page) -> None:
        """``page`` is the first page just drawn (its pinned ones and rows as read): kept so that a turn
        of a conversation it lists is followed without a read (``follow``)."""
        self._first = page

    def follow(self, change: HistoryChange) -> Page | None:
        """The first page to draw (``replace``) for ``change``, heard (``hear``) by the closed list drawn
        ahead, worked out with no read (``app.history.reads.after_turn``): this tab's turn (``record``
        with ``written``) of a conversation the kept first page lists, on a plain newest-first list over
        all times, one page drawn, every change before it covered. The list then counts as read after
        the change (``ready_to_show``). None when a read must draw it (``draw_ahead``): anything else.

        Issue #33: each finished turn read the first page and the pins again (two IndexedDB reads)."""
        written = change.written
        if (self.open or not self.live or change.kind != "record" or written is None or self._first is None
                or change.stage_id != self.stage or written.meta.stageId != self.stage
                or (self.query, self.sort, self.since) != ("", "newest", None) or self.pages != 1
                or self.drawn_generation != self.generation or self.loading or self.heard != self.covered + 1):
            return None
        page = after_turn(self._first, written.meta)
        if page is not None:
            self._first, self.covered = page, self.heard
            self.cursor, self.has_more = page.cursor, page.has_more
        return page

    # -- drawn ahead ------------------------------------------------------------------
    def hear(self, change: HistoryChange) -> bool:
        """Count ``change`` when it may concern the drawn list (its course, or no course named);
        True when it does (what is drawn no longer shows it: ``ready_to_show`` is False until a
        read begun after it is drawn)."""
        if not self.live or change.stage_id not in (self.stage, ""):
            return False
        self.heard += 1
        return True

    @property
    def behind(self) -> bool:
        """True when a change was announced after the drawn read began (the open list follows it
        item by item; the closed one is drawn afresh)."""
        return self.covered != self.heard

    def ready_to_show(self, stage_id: str | None, query: str, sort: str, range_name: str, now: int) -> bool:
        """True when the drawn list can be shown as it is for course ``stage_id``, keyword ``query``,
        order ``sort`` and range ``range_name`` at ``now`` (epoch ms): drawn and kept, its read done
        and no change announced since it began, the same course, keyword, order and range ("all":
        a range's start moves with the clock), one page, and every relative time reading as drawn."""
        return (self.live and stage_id is not None and self.stage == stage_id and not self.behind
                and self.drawn_generation == self.generation and not self.loading and self.pages == 1
                and (self.query, self.sort, self.range_name) == (query, sort, range_name)
                and RANGES_MS.get(range_name, None) is None and self.labels_hold(now))

    def labels_change_at(self, now: int) -> int | None:
        """The epoch ms at which a drawn item's relative time first reads otherwise than at ``now``;
        ``None`` when none ever does (every one a date)."""
        times = [at for at in (relative_label_until(key[0], now) for key in self._keys.values()) if at is not None]
        return min(times, default=None)

    def labels_hold(self, now: int) -> bool:
        """True when every drawn item's relative time reads at ``now`` as when it was drawn."""
        return all(relative_label(key[0], now) == self._labels.get(task_id) for task_id, key in self._keys.items())

    # -- changes ---------------------------------------------------------------------
    def effect(self, change: HistoryChange) -> Effect:
        """What ``change`` does to the list as it is now: nothing when it is closed or shows
        another course; a delete removes its item; an undo or import puts one back or in at its own
        place (maybe far down), a rename or pin changes an item where it is or moves it (§18): drawn
        afresh; anything else arrives at the top. A delete of an item drawn removes it whatever course
        its record names (one no course's list holds is drawn in every course's, ``Page.strays``)."""
        if self.open and change.kind == "delete" and self.shows(change.task_id):
            return "remove"
        if not self.open or change.stage_id != self.stage:
            return "none"
        if change.kind == "delete":
            return "remove"
        if change.kind in ("undo", "import", "rename", "pin"):
            return "reload"
        return "top"


def item_rows(t: Callable[..., str], entries: Iterable[tuple[Any, tuple[str, str, str] | None]], now: int,
              current: str | None) -> list[dict[str, Any]]:
    """The rows ``static/history-view.js`` draws for ``(meta, snippet)`` entries, every text decided:
    ``taskId``, ``current`` (the active conversation: no delete button), ``damaged`` (listed so that
    it can be deleted, DESIGN.md §14), ``totalTokens``, ``title``, ``iso`` and the relative-time
    ``unit``/``count`` as of ``now`` (epoch ms; ``unit`` ``"unknown"`` and ``iso`` empty for a damaged
    record whose time cannot be read: no time is drawn), ``justNow``, ``snippet`` (before, match, after),
    ``stats`` and ``deleteLabel``; ``pinned``, ``name`` (the title the rename field starts from, ``""``
    when untitled), ``renameLabel``, ``renameFieldLabel`` and ``pinLabel`` (DESIGN.md §18). ``t``: the
    page's ``app.i18n.Translator``."""
    just_now, untitled = t("history.justNow"), t("history.untitled")  # once per draw, not per item
    damaged_title = t("history.damaged")
    rows = []
    for meta, piece in entries:
        damaged = bool(getattr(meta, "damaged", False))  # a record field only damaged ones have
        title = damaged_title if damaged else shown_title(meta.taskName) or untitled
        # a damaged record's time unknown (``Damaged.updatedAt`` 0) is drawn as none, never as 1970
        unit, count = relative_label(meta.updatedAt, now) if meta.updatedAt > 0 else ("unknown", 0)
        rows.append({"taskId": meta.taskId, "current": meta.taskId == current, "damaged": damaged,
                     "totalTokens": meta.stats.totalTokens,
                     "title": title, "iso": iso(meta.updatedAt) if unit != "unknown" else "", "unit": unit, "count": count,
                     "justNow": just_now, "snippet": [shown_title(p) for p in piece] if piece else None,
                     "stats": item_stats_text(t, ConversationStats.of(meta)),
                     # an attribute has no <bdi>: the title is isolated by FSI … PDI
                     "deleteLabel": t("history.delete", title=f"\u2068{title}\u2069"),
                     # §18: the pin toggle's state (aria-pressed, data-pinned), the name the rename field starts from
                     "pinned": getattr(meta, "pinnedAt", None) is not None,
                     "name": "" if damaged else shown_title(meta.taskName),
                     "renameLabel": t("history.rename", title=f"\u2068{title}\u2069"),
                     "renameFieldLabel": t("history.renameField", title=f"\u2068{title}\u2069"),
                     "pinLabel": t("history.pin", title=f"\u2068{title}\u2069")})
    return rows


def list_line(kind: str | None, listed: bool, empty_key: str) -> str | None:
    """What ``history-status`` says once the list is drawn: ``None`` to leave the line as it is, else
    the key of its own line (``""``: nothing). ``kind``: the line's ``data-kind`` (set by an action:
    ``import``, ``import-chatgpt``, ``backup``, ``resume``, ``delete``; empty or None when no action's
    outcome is shown); ``listed``: the list shows an item; ``empty_key``: the empty list's line
    (``history.empty``, ``history.noResults``, ``history.unavailable``).

    An action's outcome stays until the next action (DESIGN.md §14: a restore or import says its
    counts, or why it was refused, in ``history-status``): the list drawn again after it (the restored
    or imported items revealed, another tab's change, the course switched) does not end it; the
    user's own next step does (``app.browser.status_line.dismiss``). A restore's counts used to vanish
    when the restore redrew the list."""
    if kind:
        return None
    return "" if listed else empty_key


EMPTY_STATES = {"history.empty": "empty", "history.noResults": "no-match", "history.unavailable": "unavailable",
                "notice.history-blocked": "unavailable", "notice.history-version-change": "unavailable"}

_UNAVAILABLE_KEYS = {"blocked": "notice.history-blocked", "versionchange": "notice.history-version-change"}


def unavailable_key(failure: str | None) -> str:
    """The catalogue key of the empty list's line while history is unavailable, from ``failure``
    (the ``RecordStoreError.kind`` that stopped it, ``HistoryService.failure``): the notice's own
    reason when the database is in another tab's hands (``blocked``: an older version held open;
    ``versionchange``: upgraded by another tab, DESIGN.md §9), ``history.unavailable`` otherwise.

    >>> unavailable_key("blocked"), unavailable_key(None)
    ('notice.history-blocked', 'history.unavailable')
    """
    return _UNAVAILABLE_KEYS.get(failure or "", "history.unavailable")


def empty_state(listed: bool, empty_key: str) -> tuple[str, str] | None:
    """What ``history-empty`` says under a list drawn with no item: ``(catalogue key, data-reason)``,
    ``None`` when an item is listed. ``empty_key`` as in ``list_line``; its reason: ``empty`` (no
    conversation), ``no-match`` (a search that found none), ``unavailable`` (DESIGN.md §9, §14).

    The line is the list's own, so it is said even while an action's outcome holds ``history-status``
    (a search with no hit after an import showed an empty list and no word).

    >>> empty_state(False, "history.noResults")
    ('history.noResults', 'no-match')
    >>> empty_state(True, "history.noResults") is None
    True
    """
    if listed:
        return None
    return empty_key, EMPTY_STATES[empty_key]
