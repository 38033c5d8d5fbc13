"""tools/build.py's Brotli quality: 11 for a real build; a lower one for the quick benchmark, whose build
must not spend minutes compressing (quality 11 is about 2 s of CPU a megabyte) to prove the part runs."""

from __future__ import annotations

import hashlib

import brotli

from tests.unit.test_build import tree  # noqa: F401 (the miniature repository)
from tools import build


def test_a_lower_quality_is_cached_apart_and_decodes_to_the_same_bytes(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "COMPRESS_CACHE", tmp_path)
    data = "AgentBar 学习 ".encode() * 5000
    digest = hashlib.sha256(data).hexdigest()
    best = build._compressed(data, "br")
    quick = build._compressed(data, "br", quality=5)
    assert brotli.decompress(quick) == data == brotli.decompress(best)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{digest}.br", f"{digest}.br5"]  # never mixed up
    (tmp_path / f"{digest}.br5").write_bytes(b"cached")
    assert build._compressed(data, "br", quality=5) == b"cached"  # read from its own cache entry


def test_a_build_at_a_lower_quality_serves_the_same_files(tree, tmp_path, monkeypatch):  # noqa: F811
    monkeypatch.setattr(build, "COMPRESS_CACHE", tmp_path / "cache")
    best = build.build(tmp_path / "best", root=tree, quiet=True)
    quick = build.build(tmp_path / "quick", root=tree, quiet=True, brotli_quality=5)
    assert quick == best  # the manifest (files, their sha256, the version) does not depend on it
    for rel in best["files"]:
        if not rel.endswith(".gz"):
            assert brotli.decompress((tmp_path / "quick" / f"{rel}.br").read_bytes()) == \
                (tmp_path / "quick" / rel).read_bytes(), rel
