"""Sync across devices through CouchDB replication (DESIGN.md §16), pure rules, browser-free.

- ``settings``: the sync settings (server URL, database, user) and where the password is kept
  (like the model key, §12: never in ``maic-agent-threads``, history, exports or logs);
  the status the panel shows (``off``/``syncing``/``synced``/``offline``/``error`` + reason).
- ``documents``: one CouchDB document per conversation (meta + messages + turns, ``_id`` from the
  ``taskId``) and one per scene version; deletes replicate as deletes.
- ``merge``: what a remote change does locally, through ``app.continuity`` (§15: a device is
  another writer): B continues A → the longer; diverged → turns of both in time order, never dropped;
  scene versions append-only, a number already taken here is renumbered past the highest.
"""
