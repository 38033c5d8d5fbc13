"""Safe keys and paths for scene artifacts (DESIGN.md §10; an id with odd characters stays a safe key and path).

Any scene id and course id is allowed (``../x``, ``__proto__``, 300
characters, Chinese). Each becomes one path *segment* that can never climb out
of its folder or collide with another id:

- letters and digits of any script, ``-`` and ``_`` stay as they are;
- every other character (``/``, ``.``, ``%``, spaces, ``\\``…) becomes
  ``%XX`` per UTF-8 byte, so ``..`` can never be a segment;
- a segment longer than ``MAX_SEGMENT`` keeps its first 48 characters and ends
  with ``~`` and 16 hex digits of the id's sha256 (paths stay short enough for
  zip readers and file systems, and distinct ids stay distinct).

Example::

    >>> segment("../x"), segment("__proto__"), segment("场景一")
    ('%2E%2E%2Fx', '__proto__', '场景一')
    >>> scene_path("scene-1"), snapshot_path("scene-1", 3)
    ('scenes/scene-1.json', 'versions/scene-1/v0003.artifact.json')
    >>> artifact_id("intro-ml", "scene-1"), version_id("intro-ml/scene-1", 2)
    ('intro-ml/scene-1', 'intro-ml/scene-1:v2')
"""

from __future__ import annotations


__all__ = ["MAX_SEGMENT", "artifact_id", "scene_path", "segment", "snapshot_path", "version_id"]

MAX_SEGMENT = 80


def segment(raw: str) -> str:
    """``raw`` as one safe path segment (see the module docstring); never empty."""
    out = []
    for char in raw:
        if char.isalnum() or char in "-_":
            out.append(char)
        else:
            out.extend(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))
    text = "".join(out) or "%"  # "%" alone is never the encoding of a non-empty id
    if len(text) > MAX_SEGMENT:
        import hashlib  # here, not at the top: hashlib is a start-up cost these rare ids need not add (§13)

        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        text = f"{text[:48]}~{digest}"
    return text


def artifact_id(stage_id: str, scene_id: str) -> str:
    """The artifact of scene ``scene_id`` in course ``stage_id``: ``<stage>/<scene>`` (safe segments)."""
    return f"{segment(stage_id)}/{segment(scene_id)}"


def version_id(artifact: str, version_no: int) -> str:
    """``<artifactId>:v<n>`` (DESIGN.md §10); ``v0`` names the course's own document."""
    return f"{artifact}:v{version_no}"


def scene_path(scene_id: str) -> str:
    """The timeline path of a scene document: ``scenes/<sceneId>.json``."""
    return f"scenes/{segment(scene_id)}.json"


def snapshot_path(scene_id: str, version_no: int) -> str:
    """Where version ``version_no`` of the scene is kept: ``versions/<sceneId>/v0003.artifact.json``."""
    return f"versions/{segment(scene_id)}/v{version_no:04d}.artifact.json"
