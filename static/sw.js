// AgentBar's service worker (DESIGN.md §11). tools/build.py writes dist/sw.js as
//   const BUILD = {version, files: {path: sha256}, onDemand: [path]};   (the content-hashed manifest)
// followed by this file. Registered by static/boot.js only in a build (meta agentbar-build).
//
// - install: precache every file of BUILD into the cache "agentbar-<version>". A file whose
//   sha256 is already in an older AgentBar cache (each cache holds an index of path → sha256,
//   written last, so a cache without it is incomplete) is copied from there; any other is fetched
//   with cache "no-cache" (revalidated: on a first visit the page has just loaded it, so the
//   body comes from the HTTP cache) and checked against its sha256, so a host caught
//   mid-deploy can never produce a cache mixing versions (the install fails, the old one stays).
//   Files of BUILD.onDemand (sync's client, loaded only when sync is on, DESIGN.md §16) are not
//   precached: the first request for one fetches it, checks its sha256 and keeps it.
// - fetch: files of BUILD are answered from this version's cache (navigations to the scope
//   root or index.html with any query get index.html); anything else goes to the network.
// - a new version waits (no automatic skipWaiting, so a running page never sees files of
//   another version); boot.js asks it to take over before PyScript loads, and the worker
//   agrees only when that page is the scope's only window, which then reloads.
// - activate: older AgentBar caches are deleted.
// Why not Workbox: its precache refetches changed revisions with cache "reload" (every file
// twice on a first visit) and offers no per-version consistency; this is the whole worker.
const CACHE_PREFIX = "agentbar-";
const CACHE = CACHE_PREFIX + BUILD.version;
const SCOPE = new URL(self.registration.scope);
const INDEX = new URL("agentbar-cache-index.json", SCOPE).href; // per cache: {path: sha256} of what it holds
const ON_DEMAND = new Set(BUILD.onDemand || []);
const PRECACHED = Object.fromEntries(Object.entries(BUILD.files).filter(([path]) => !ON_DEMAND.has(path)));

const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");

async function indexOf(cache) {
  const hit = await cache.match(INDEX);
  return hit ? hit.json() : {};
}

async function fromOlderCache(path, sha) {
  for (const name of await caches.keys()) {
    if (!name.startsWith(CACHE_PREFIX) || name === CACHE) continue;
    const cache = await caches.open(name);
    if ((await indexOf(cache))[path] !== sha) continue;
    const hit = await cache.match(new URL(path, SCOPE).href);
    if (hit) return hit;
  }
  return null;
}

// The server's own response is stored (its URL and headers kept: Chromium then reuses the
// compiled wasm), after its body was checked against the manifest's sha256.
async function fetchVerified(path, sha) {
  const url = new URL(path, SCOPE).href;
  const response = await fetch(url, { cache: "no-cache", credentials: "same-origin" });
  if (!response.ok) throw new Error(`precache ${url}: HTTP ${response.status}`);
  const stored = response.clone();
  const actual = hex(await crypto.subtle.digest("SHA-256", await response.arrayBuffer()));
  if (actual !== sha) throw new Error(`precache ${url}: sha256 ${actual}, the manifest says ${sha}`);
  return stored;
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    const held = await indexOf(cache);
    await Promise.all(Object.entries(PRECACHED).map(async ([path, sha]) => {
      if (held[path] === sha) return;
      await cache.put(new URL(path, SCOPE).href, (await fromOlderCache(path, sha)) || (await fetchVerified(path, sha)));
    }));
    await cache.put(INDEX, new Response(JSON.stringify(PRECACHED), { headers: { "content-type": "application/json" } }));
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys())
      if (name.startsWith(CACHE_PREFIX) && name !== CACHE) await caches.delete(name);
  })());
});

self.addEventListener("message", (event) => {
  if (!event.data || event.data.type !== "agentbar:activate") return;
  event.waitUntil((async () => {
    const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    const alone = windows.length <= 1;
    if (alone) await self.skipWaiting();
    event.source.postMessage({ type: alone ? "agentbar:activating" : "agentbar:busy" });
  })());
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== SCOPE.origin || !url.pathname.startsWith(SCOPE.pathname)) return;
  let path = decodeURIComponent(url.pathname.slice(SCOPE.pathname.length));
  if (request.mode === "navigate" && path === "") path = "index.html";
  if (!Object.hasOwn(BUILD.files, path)) return;
  event.respondWith((async () => {
    const cache = await caches.open(CACHE);
    const hit = await cache.match(new URL(path, SCOPE).href);
    if (hit) return hit;
    if (!ON_DEMAND.has(path)) return fetch(request);
    const fetched = await fetchVerified(path, BUILD.files[path]); // a file of another version is refused
    await cache.put(new URL(path, SCOPE).href, fetched.clone());
    return fetched;
  })());
});
