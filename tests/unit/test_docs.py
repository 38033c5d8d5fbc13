"""README.md for a newcomer, the rest in docs/ (DESIGN.md §15, last point): README at most 300 lines,
each docs/ file linked from it, every relative link resolving, the two commands as CI runs them, and
the README sections the app's own messages send a reader to."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def headings(text: str) -> list[str]:
    """The Markdown headings of ``text`` (``## Deploying`` → ``Deploying``), code fences skipped."""
    found, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.append(line.lstrip("#").strip())
    return found


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but ``-`` and ``_`` dropped, spaces → ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_the_readme_is_a_newcomers_page_of_at_most_300_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def test_every_docs_file_is_linked_from_the_readme():
    linked = {Path(target.split("#")[0]).name for target in LINK.findall(README.read_text(encoding="utf-8"))
              if target.startswith("docs/")}
    pages = {p.name for p in DOCS.glob("*.md")}
    assert {"performance.md", "failures.md", "deploying.md", "sync.md", "models.md", "layout.md",
            "testing.md"} <= pages
    assert pages - linked == set()


def test_every_relative_link_in_the_readme_and_docs_resolves():
    broken = []
    for page in [README, *sorted(DOCS.glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # an address outside the repository
            path, _, fragment = target.partition("#")
            into = (page.parent / path) if path else page
            if not into.exists():
                broken.append(f"{page.name}: {target}")
            elif fragment and into.suffix == ".md" and fragment not in {
                    anchor(h) for h in headings(into.read_text(encoding="utf-8"))}:
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_readme_gives_the_two_commands_and_ci_runs_its_test_command():
    text = README.read_text(encoding="utf-8")
    assert "bash tools/dev.sh serve" in text and "bash tools/dev.sh test" in text
    ci = [line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
          if not line.lstrip().startswith("#")]
    assert any("bash tools/dev.sh test" in line for line in ci)


def test_the_readme_sections_the_apps_messages_name_are_there_and_say_what_they_promise():
    """A refused model or sync server says "see README, “Connecting a model”" / "“Syncing across
    devices”" (app/locales/en-US.json): those sections exist and hold the CORS and connect-src advice."""
    readme = README.read_text(encoding="utf-8")
    messages = (ROOT / "app" / "locales" / "en-US.json").read_text(encoding="utf-8")
    named = set(re.findall(r"README, “([^”]+)”", messages))
    assert named == {"Connecting a model", "Syncing across devices"}
    sections = re.split(r"^## ", readme, flags=re.M)
    for name in named:
        body = next((s for s in sections if s.startswith(name + "\n")), None)
        assert body is not None, name
        assert "CORS" in body and "--connect-src" in body, name
