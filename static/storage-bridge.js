// The JavaScript half of app/browser/local_storage.py (DESIGN.md §2, §5).
// Python hands values over as UTF-8 bytes, decoded here with TextDecoder: copying a
// non-ASCII Python str into a JS string is several times slower. `unchanged` compares
// strings on the JS side, so a save need not copy the whole stored value into Python
// to know that no other tab wrote it since.
const decoder = new TextDecoder();
const last = new Map(); // key -> the string this tab last read or wrote

function area() {
  return window.localStorage; // may throw (blocked storage, some private modes)
}

globalThis.agentbarStorage = {
  probe() {
    const ls = area();
    ls.getItem("maic-agent-threads");
    return true;
  },
  // Returns [value, tooDeep]: json.loads of JSON nested deeper than maxDepth kills
  // Pyodide (the JavaScript stack runs out), so Python is told not to parse it.
  get(key, maxDepth) {
    const value = area().getItem(key);
    last.set(key, value);
    return [value, typeof value === "string" && nestedDeeper(value, maxDepth)];
  },
  // Returns "ok", or "quota" when the browser refused the write for lack of space.
  set(key, value) {
    return write(key, typeof value === "string" ? value : decoder.decode(value));
  },
  // Replaces UTF-16 units [start, end) of the value this tab last read or wrote, so a
  // save hands over only the changed thread. "stale" when another tab wrote since.
  splice(key, start, end, value) {
    const base = last.get(key);
    if (typeof base !== "string" || area().getItem(key) !== base) return "stale";
    const text = typeof value === "string" ? value : decoder.decode(value);
    return write(key, base.slice(0, start) + text + base.slice(end));
  },
  // What another tab changed since this tab last read or wrote `key`, in terms of the
  // entries of that last value (UTF-16 offsets starts[k]..ends[k]): [first, last, text],
  // entries first..last-1 being now `text`; [] when that cannot be said (the caller
  // reads whole). Spares copying the whole value into Python after another tab's save.
  readChanges(key, starts, ends, maxDepth) {
    const old = last.get(key);
    const now = area().getItem(key);
    last.set(key, now);
    const n = starts.length;
    if (typeof old !== "string" || typeof now !== "string" || n === 0) return [];
    if (old === now) return [0, 0, ""];
    const m = Math.min(old.length, now.length);
    let p = 0;
    while (p < m && old.charCodeAt(p) === now.charCodeAt(p)) p++;
    let s = 0;
    while (s < m - p && old.charCodeAt(old.length - 1 - s) === now.charCodeAt(now.length - 1 - s)) s++;
    const oldEnd = old.length - s;
    if (p < starts[0] || oldEnd > ends[n - 1]) return [];
    let first = 0;
    while (first + 1 < n && starts[first + 1] <= p) first++;
    let lastEntry = first;
    while (lastEntry < n - 1 && ends[lastEntry] < oldEnd) lastEntry++;
    const text = now.slice(starts[first], ends[lastEntry] + now.length - old.length);
    if (nestedDeeper(text, maxDepth)) return [];
    return [first, lastEntry + 1, text];
  },
  remove(key) {
    area().removeItem(key);
    last.set(key, null);
  },
  unchanged(key) {
    return last.has(key) && area().getItem(key) === last.get(key);
  },
  // Keys starting with `prefix`; no value crosses into Python.
  keys(prefix) {
    return Object.keys(area()).filter((k) => k.startsWith(prefix));
  },
  // Whether two keys hold equal values, compared here (backups are never made twice).
  same(key, other) {
    const ls = area();
    const a = ls.getItem(key);
    return a !== null && a === ls.getItem(other);
  },
  // Copies the value at `key` to `dest` without it crossing into Python: "ok", "quota".
  copy(key, dest) {
    const value = area().getItem(key);
    return value === null ? "ok" : write(dest, value);
  },
  // Downloads the value at `key` as a file named `fileName` (the user's own backup of a
  // damaged value that no backup key can hold); the value then counts as read here.
  exportFile(key, fileName) {
    const value = area().getItem(key);
    if (value === null) return false;
    const url = URL.createObjectURL(new Blob([value], { type: "text/plain;charset=utf-8" }));
    const link = document.createElement("a");
    link.href = url;
    link.download = fileName;
    link.hidden = true;
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    last.set(key, value);
    return true;
  },
};

function write(key, text) {
  try {
    area().setItem(key, text);
  } catch (error) {
    if (error && (error.name === "QuotaExceededError" || error.name === "NS_ERROR_DOM_QUOTA_REACHED" || error.code === 22))
      return "quota";
    throw error;
  }
  last.set(key, text);
  return "ok";
}

// True when `text` (JSON) nests arrays/objects more than `limit` levels deep.
function nestedDeeper(text, limit) {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) {
      if (++depth > limit) return true;
    } else if (c === 93 || c === 125) depth--;
  }
  return false;
}

// A text field's value for Python as UTF-8 bytes: copying a long non-ASCII JS string into
// Python costs several times what TextEncoder and a decode in Python cost (a 2 MB
// message: ~30 ms against ~12 ms). A value with lone surrogates, which UTF-8 cannot
// carry, is handed over as the string itself.
const encoder = new TextEncoder();
globalThis.agentbarText = {
  fieldUtf8(field) {
    const value = field.value;
    return typeof value.isWellFormed === "function" && value.isWellFormed() ? encoder.encode(value) : value;
  },
};
