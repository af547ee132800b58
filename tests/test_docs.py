"""The documentation keeps its promises: the reference documents every warehouse table column by column, and every
definition, lemma, algorithm or equation the documents name is a paper's, named beside it and cited by title."""
from __future__ import annotations

import os
import re

import pytest

from discovery.data.store import SCHEMAS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = ("README.md", "docs/reference.md", "benchmarks/README.md")
#: The papers the searches follow, by the name the documents use.
PAPERS = {
    "PGTUS": "An Efficient Proximity Graph-based Approach to Table Union Search",
    "TACTUS": "Efficient and Effective Table-Centric Table Union Search in Data Lakes",
    "PEXESO": "Efficient Joinable Table Discovery in Data Lakes: A High-Dimensional Similarity-Based Approach",
    "MATE": "MATE: Multi-Attribute Table Extraction",
}
NUMBERED = re.compile(r"\b(?:Definition|Def\.|Lemmas?|Algorithm|Alg\.|Eq\.|Equation|Theorem)\s*\d|§\s*\d")


def read(name: str) -> str:
    with open(os.path.join(ROOT, name), encoding="utf-8") as fh:
        return fh.read()


def test_the_reference_documents_every_warehouse_table_and_column():
    section = read("docs/reference.md").split("## The warehouse tables", 1)[1].split("\n## ", 1)[0]
    heads = list(re.finditer(r"\*\*`([a-z_]+)`\*\*", section))
    documented = {m[1] for m in heads}
    assert documented == set(SCHEMAS)
    intro = set(re.findall(r"`([a-z_0-9]+)`", section[:heads[0].start()]))   # table_id, content_hash of them all
    assert {"table_id", "content_hash"} <= intro
    for i, m in enumerate(heads):
        # a table's columns are named between its heading and the next table's (two share one paragraph at most)
        end = heads[i + 2].start() if i + 2 < len(heads) else len(section)
        named = set(re.findall(r"`([a-z_0-9]+)`", section[m.start():end]))
        missing = set(SCHEMAS[m[1]].names) - named - intro
        assert not missing, f"{m[1]}: the reference does not name {sorted(missing)}"


@pytest.mark.parametrize("name", DOCS)
def test_every_numbered_result_names_its_paper_and_the_paper_is_cited_by_title(name):
    text = read(name)
    flat = " ".join(text.split())                       # a title may be wrapped over lines
    cited = {paper for paper, title in PAPERS.items() if f"*{title}*" in flat}
    found = list(NUMBERED.finditer(text))
    assert found or name == "README.md"
    for m in found:
        around = text[max(0, m.start() - 60):m.end() + 30]
        named = {p for p in PAPERS if p in around}
        assert named, f"{name}: {text[m.start():m.end() + 20]!r} names no paper"
        assert named & cited, f"{name}: {sorted(named)} is not cited by title in the document"
