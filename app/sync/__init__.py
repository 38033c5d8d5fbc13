"""Sync across devices through CouchDB replication (DESIGN.md §16), pure rules, browser-free.

- ``settings``: the sync settings (server URL, database, user) and where the password is kept
  (like the model key, §12: never in ``maic-agent-threads``, history, exports or logs);
  the status the panel shows (``off``/``syncing``/``synced``/``offline``/``error`` + reason).
- ``documents``: one CouchDB document per conversation (meta + messages + turns, ``_id`` from the
  ``taskId``) and one per scene version; deletes replicate as deletes.
- ``tombstones``: ids deleted on any device stay deleted.
- ``engine``: replication's changes in and out. What a remote change of a conversation does here is
  history's one rule for another writer (``app.history.merge`` through ``app.continuity``, §15: a
  device is another writer); a scene version whose number is taken here is renumbered past the
  highest (``app.checkpoints.versions.place_versions``).
- ``tabs``: one tab of a browser replicates (the Web Lock's name); the others follow it (the
  messages they pass).
"""
