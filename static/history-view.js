// The DOM half of app/browser/history_list_view.py: draws list items that Python has fully decided
// (titles, labels, attributes: app/history/list_model.py item_rows) in one call, so a page of items costs one crossing instead of
// dozens. Every string goes in as textContent or an attribute, never as HTML (DESIGN.md §5).
// items: JSON [{taskId, current, damaged, totalTokens, title, iso, unit, count, justNow, stats, snippet, deleteLabel,
//   pinned, name, renameLabel, renameFieldLabel, pinLabel}];
// An item is a focusable list item (not an option: it holds its delete button, and its name is its
// whole visible text), so no interactive element nests in another.
// unit "now" | "minute" | "hour" | "day" | "date" (app/history/text.py relative_label decides).
const formats = new Map();

function format(locale, kind) {
  const key = `${locale}|${kind}`;
  if (!formats.has(key))
    formats.set(key, kind === "rel" ? new Intl.RelativeTimeFormat(locale, { numeric: "always", numberingSystem: "latn" })
      : new Intl.DateTimeFormat(locale, { year: "numeric", month: "2-digit", day: "2-digit",
        numberingSystem: "latn" }));
  return formats.get(key);
}

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

// An icon of static/icons/ (an SVG symbol drawn in the text's colour), not an emoji: a system without an
// emoji font draws that as an empty box. Decorative: its button carries the name.
function icon(name) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "icon");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const use = document.createElementNS("http://www.w3.org/2000/svg", "use");
  use.setAttribute("href", `static/icons/${name}.svg#${name}`);
  svg.append(use);
  return svg;
}

function item(locale, it) {
  const li = el("li", { "data-testid": "history-item", class: "history-item", "data-task-id": it.taskId,
    "data-current": it.current ? "true" : "false", "data-damaged": it.damaged ? "true" : "false",
    "data-total-tokens": String(it.totalTokens), "data-pinned": it.pinned ? "true" : "false", tabindex: "0" });
  if (it.current) li.setAttribute("aria-current", "true");
  const head = el("div", { class: "history-item-head" });
  head.append(el("span", { "data-testid": "history-title", class: "history-title", dir: "auto" }, it.title));
  if (it.unit !== "unknown") {  // a damaged record whose time cannot be read draws none
    const label = it.unit === "now" ? it.justNow
      : it.unit === "date" ? format(locale, "date").format(new Date(it.iso))
        : format(locale, "rel").format(-it.count, it.unit);
    head.append(el("time", { "data-testid": "history-time", datetime: it.iso }, label));
  }
  const foot = el("div", { class: "history-item-foot" });
  foot.append(el("p", { class: "history-item-stats" }, it.stats));
  if (!it.damaged) {
    // rename and pin (DESIGN.md §18): the pin is a toggle whose state screen readers hear (aria-pressed).
    // Out of the Tab order like the delete button (Tab goes item to item): the focused item's F2 renames
    // and P pins (app/browser/history_list_view.py), as its Delete key deletes.
    const tools = el("span", { class: "history-item-tools" });
    tools.append(
      el("button", { type: "button", "data-testid": "history-rename", class: "history-rename",
        "aria-label": it.renameLabel, title: it.renameLabel, "data-name": it.name,
        "data-field-label": it.renameFieldLabel, "aria-keyshortcuts": "F2", tabindex: "-1" }, "✎"),
      el("button", { type: "button", "data-testid": "history-pin", class: "history-pin",
        "aria-label": it.pinLabel, title: it.pinLabel, "aria-pressed": it.pinned ? "true" : "false",
        "aria-keyshortcuts": "P", tabindex: "-1" }));
    tools.lastChild.append(icon("pin"));
    foot.append(tools);
  }
  li.append(head, foot);
  if (it.snippet) {
    const line = el("p", { "data-testid": "history-snippet", class: "history-snippet", dir: "auto" });
    line.append(it.snippet[0], el("mark", {}, it.snippet[1]), it.snippet[2]);
    li.append(line);
  }
  const del = el("button", { type: "button", "data-testid": "history-delete", class: "history-delete",
    "aria-label": it.deleteLabel, title: it.deleteLabel, tabindex: "-1" }, "×");
  del.hidden = Boolean(it.current);
  li.append(del);
  return li;
}

globalThis.agentbarHistoryDom = {
  // mode: "replace" (the list becomes these), "append", "prepend" (each replacing its old node).
  draw(list, locale, json, mode) {
    const nodes = JSON.parse(json).map((it) => item(locale, it));
    if (mode === "replace") list.replaceChildren(...nodes);
    else if (mode === "append") list.append(...nodes);
    else {
      for (const node of nodes) list.querySelector(`[data-task-id="${node.dataset.taskId}"]`)?.remove();
      list.prepend(...nodes);
    }
    return list.childElementCount;
  },
};
