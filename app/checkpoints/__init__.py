"""Scene documents and their file checkpoints (DESIGN.md §10, seed ``runtime-persistence-map.md``).

One module per link of the seed's chain, each consuming the one before:

``events`` (``ArtifactSnapshot``, the only writer) → ``timeline``
(``FileArtifact`` items) → ``versions`` (current + every version, over a
backend protocol with an in-memory twin) → ``read_model`` (summary; list /
get / diff) → ``exports`` (evidence pack, replay case).

Beside them: ``documents`` (the ``SceneDocument`` model and version 0 of each
demo scene), ``paths`` (safe keys and paths), ``diff`` (document diffs) and
``recorder`` (``SceneCheckpoints``, the runtime's collaborator). Nothing here
imports the browser.
"""

from app.checkpoints.documents import SceneDocument, base_document
from app.checkpoints.events import REGENERATE, RESTORE, ArtifactSnapshot
from app.checkpoints.read_model import CheckpointNotFound, CheckpointReadModel
from app.checkpoints.recorder import SceneCheckpoints, SceneState
from app.checkpoints.versions import BackendUnavailable, MemoryVersionBackend, VersionStore

__all__ = [
    "REGENERATE",
    "RESTORE",
    "ArtifactSnapshot",
    "BackendUnavailable",
    "CheckpointNotFound",
    "CheckpointReadModel",
    "MemoryVersionBackend",
    "SceneCheckpoints",
    "SceneDocument",
    "SceneState",
    "VersionStore",
    "base_document",
]
