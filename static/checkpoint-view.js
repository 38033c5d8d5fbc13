// The DOM half of CheckpointView.draw_list (app/browser/checkpoint_view.py): draws a scene's
// checkpoint list that Python has fully decided (texts, labels, attributes) in one call, so 200
// versions cost one crossing instead of a dozen per item. Every string goes in as textContent or
// an attribute, never as HTML (DESIGN.md §10: stored text is data).
// rows: JSON [{kind: "empty", text}
//   | {kind: "item", version, id, source, current, versionText, sourceText, iso, currentText,
//      preview, diffText, restoreText, restoreLabel}     (restore* absent on the current version)
//   | {kind: "original", current, versionText, sourceText, currentText, restoreText, restoreLabel}]
// The time is the page locale's Intl.DateTimeFormat (short date, medium time) of iso, in Latin digits
// as every number of the page (app/browser/intl.py).
const formats = new Map();

function format(locale) {
  if (!formats.has(locale))
    formats.set(locale, new Intl.DateTimeFormat(locale, { dateStyle: "short", timeStyle: "medium", numberingSystem: "latn" }));
  return formats.get(locale);
}

function el(tag, cls, attrs, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  return node;
}

function head(row, time) {
  const box = el("div", "checkpoint-head");
  box.append(el("strong", "", null, row.versionText), el("span", "badge", null, row.sourceText));
  if (time) box.append(time);
  if (row.current) box.append(el("span", "badge current", null, row.currentText));
  return box;
}

function row(locale, r) {
  if (r.kind === "empty") return el("li", "checkpoint-empty", null, r.text);
  const current = r.current ? "true" : "false";
  if (r.kind === "original") {
    const li = el("li", "checkpoint-item checkpoint-original",
      { "data-testid": "checkpoint-original", "data-version": "0", "data-current": current });
    li.append(head(r, null));
    if (r.restoreText !== undefined) {
      const actions = el("div", "checkpoint-actions");
      actions.append(el("button", "", { "data-testid": "checkpoint-restore-original", type: "button",
        "aria-label": r.restoreLabel }, r.restoreText));
      li.append(actions);
    }
    return li;
  }
  const li = el("li", "checkpoint-item", { "data-testid": "checkpoint-item", "data-version": String(r.version),
    "data-checkpoint-id": r.id, "data-source": r.source, "data-current": current });
  li.append(head(r, el("time", "", { datetime: r.iso }, format(locale).format(new Date(r.iso)))));
  if (r.preview) li.append(el("p", "checkpoint-preview", { dir: "auto" }, r.preview));
  const actions = el("div", "checkpoint-actions");
  actions.append(el("button", "", { "data-testid": "checkpoint-diff", type: "button", "aria-expanded": "false" },
    r.diffText));
  if (r.restoreText !== undefined)
    actions.append(el("button", "", { "data-testid": "checkpoint-restore", type: "button",
      "aria-label": r.restoreLabel }, r.restoreText));
  li.append(actions);
  return li;
}

globalThis.agentbarCheckpointDom = {
  // The list becomes these rows; returns its number of children.
  draw(list, locale, json) {
    list.replaceChildren(...JSON.parse(json).map((r) => row(locale, r)));
    return list.childElementCount;
  },
};
