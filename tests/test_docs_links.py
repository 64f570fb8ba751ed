"""Every relative link of the README and docs/ leads somewhere: the file exists, and a ``#fragment`` names a heading
of the page it points to (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    "The anchors GitHub gives the headings of a Markdown page (outside code blocks)"
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    found = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M)
    return [target for target in LINK.findall(text) if not re.match(r"[a-z]+:", target)]


def test_the_anchor_rule_matches_github():
    page = ROOT / "docs" / "operations.md"
    assert "distributed-campaigns-leader-and-helper" in anchors(page)
    assert "the-protocol-a-leader-and-a-helper-collectordistributed" in anchors(ROOT / "docs" / "distributed.md")


def test_every_relative_link_of_the_readme_and_docs_resolves():
    broken = []
    for page in PAGES:
        for target in links(page):
            path, _, fragment = target.partition("#")
            destination = (page.parent / path).resolve() if path else page
            if not destination.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif fragment and destination.suffix == ".md" and fragment not in anchors(destination):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_readme_is_a_front_door():
    "About 150 lines: the rest of what a user needs is one link away, in docs/"
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 170
    linked = {Path(target.partition("#")[0]).name for target in links(ROOT / "README.md")}
    for page in ("sdk.md", "api.md", "operations.md", "distributed.md", "mechanisms.md", "deploy.md", "sdk-js.md",
                 "privacy.md", "scaling.md", "tour.md", "architecture.md", "benchmarks.md"):
        assert page in linked, page
