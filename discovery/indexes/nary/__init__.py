"""N-ary (multi-column key) join discovery: MATE with XASH super keys, exact top-k, SCR and Bloom baselines."""
from discovery.indexes.nary.bloom import bloom_hash_count, bloom_keys
from discovery.indexes.nary.index import NaryIndex
from discovery.indexes.nary.postings import POSTINGS_SCHEMA, binary_to_superkeys, build_postings, superkeys_to_binary
from discovery.indexes.nary.search import METHODS, NaryMatch, NarySearchResult, NaryStats, search

__all__ = [
    "METHODS", "POSTINGS_SCHEMA", "NaryIndex", "NaryMatch", "NarySearchResult", "NaryStats",
    "binary_to_superkeys", "bloom_hash_count", "bloom_keys", "build_postings", "search", "superkeys_to_binary",
]
