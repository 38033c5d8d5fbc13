// AgentBar's service worker (DESIGN.md §11). tools/build.py writes dist/sw.js as
//   const BUILD = {version, files: {path: sha256}};   (the content-hashed manifest)
// followed by this file. Registered by static/boot.js only in a build (meta agentbar-build).
//
// - install: precache every file of BUILD into the cache "agentbar-<version>". A file whose
//   sha256 is already in an older AgentBar cache is copied from there; any other is fetched
//   with cache "no-cache" (revalidated: on a first visit the page has just loaded it, so the
//   body comes from the HTTP cache) and checked against its sha256, so a host caught
//   mid-deploy can never produce a cache mixing versions (the install fails, the old one stays).
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
const SHA_HEADER = "x-agentbar-sha256";

const hex = (buffer) => Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, "0")).join("");

async function fromOlderCache(url, sha) {
  for (const name of await caches.keys()) {
    if (!name.startsWith(CACHE_PREFIX) || name === CACHE) continue;
    const hit = await (await caches.open(name)).match(url);
    if (hit && hit.headers.get(SHA_HEADER) === sha) return hit;
  }
  return null;
}

async function fetchVerified(url, sha) {
  const response = await fetch(url, { cache: "no-cache", credentials: "same-origin" });
  if (!response.ok) throw new Error(`precache ${url}: HTTP ${response.status}`);
  const body = await response.arrayBuffer();
  const actual = hex(await crypto.subtle.digest("SHA-256", body));
  if (actual !== sha) throw new Error(`precache ${url}: sha256 ${actual}, the manifest says ${sha}`);
  const headers = new Headers({ "content-type": response.headers.get("content-type") || "application/octet-stream" });
  headers.set(SHA_HEADER, sha);
  return new Response(body, { status: 200, headers });
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await Promise.all(Object.entries(BUILD.files).map(async ([path, sha]) => {
      const url = new URL(path, SCOPE).href;
      const have = await cache.match(url);
      if (have && have.headers.get(SHA_HEADER) === sha) return;
      await cache.put(url, (await fromOlderCache(url, sha)) || (await fetchVerified(url, sha)));
    }));
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
    const hit = await (await caches.open(CACHE)).match(new URL(path, SCOPE).href);
    return hit || fetch(request);
  })());
});
