"""The shipped lexicon of names by meaning: its two sources read as documented, phrases split as names are, a
word's rare WordNet senses kept out, and a term's variants one phrase at a time."""
from __future__ import annotations

import os

from discovery.transforms.encoders.header import header_words
from discovery.transforms.lexicon import MAX_VARIANTS, SOURCES, Lexicon, lexicon


def synonyms(term: str) -> dict[str, str]:
    """The term's synonyms as a whole (its variants of one replacement of all its words), with their source."""
    return {" ".join(v): source for v, source in lexicon().synonyms(tuple(header_words(term)))}


def variants(term: str) -> list[str]:
    return [" ".join(v) for v, _, _ in lexicon().variants(header_words(term))]


def test_both_sources_are_read_and_the_wordnet_licence_ships_beside_them():
    folder = os.path.dirname(__import__("discovery.transforms.lexicon", fromlist=["x"]).__file__)
    assert set(lexicon().sources) == set(SOURCES)
    assert os.path.exists(os.path.join(folder, "WORDNET_LICENSE"))
    with open(os.path.join(folder, SOURCES["wordnet"]), encoding="utf-8") as fh:
        assert "Princeton University" in fh.readline() + fh.readline()


def test_common_column_synonyms_and_abbreviations():
    assert {"salary", "wage", "compensation"} <= set(synonyms("pay"))
    assert {"date of birth", "birth date"} <= set(synonyms("DOB"))
    assert "quantity" in synonyms("qty") and "speed" in synonyms("velocity")
    assert synonyms("surname")["last name"] == "columns"
    assert synonyms("movie")["film"] == "columns"
    assert "speed" in synonyms("Velocity") and synonyms("nation")["country"] == "columns"
    assert synonyms("remuneration")["salary"] in SOURCES


def test_a_phrase_inside_a_longer_term_is_replaced_and_fewest_replacements_come_first():
    assert {"client id", "customer number", "client identifier"} <= set(variants("customer_id"))
    assert "start date" in variants("hireDate") and "hire dt" in variants("hire date")
    counts = [n for _, _, n in lexicon().variants(["customer", "id"])]
    assert counts == sorted(counts) and counts[0] == 1 and max(counts) == 2


def test_rare_senses_and_plurals_stay_out():
    assert not {"nothing", "nil"} & set(variants("zip"))           # the column lexicon holds zip: WordNet does not
    assert "idaho" not in variants("id")                             # proper nouns are not kept
    assert variants("name") == []                                    # `names` (calling names) is not `name`


def test_variants_are_capped_and_never_the_term():
    book = Lexicon()
    letters = "abcdefghijklmnopqr"                                   # header words drop digits; no plural -s
    book.add([f"word{a}{b}" for a in letters for b in letters], "columns")
    got = book.variants(["wordaa", "wordab"])
    assert len(got) == MAX_VARIANTS and ("wordaa", "wordab") not in [v for v, _, _ in got]
    assert all(len(v) == 2 and n == 1 for v, _, n in got)           # the cap keeps single replacements


def test_a_later_source_does_not_take_a_phrase_an_earlier_one_holds():
    book = Lexicon()
    book.add(["zip", "postcode"], "columns")
    book.add(["zip", "nothing", "nil"], "wordnet")
    assert [" ".join(v) for v, _, _ in book.variants(["zip"])] == ["postcode"]
    assert [" ".join(v) for v, _, _ in book.variants(["nil"])] == ["nothing"]
