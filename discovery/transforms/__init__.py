"""The transforms floor: what turns a column's values into what the indexes compare.

The column encoders (:mod:`.encoders`), the lexicon of names by meaning (:mod:`.lexicon`), the two-table matcher that
writes joined rows (:mod:`.match`), the quantity a number column measures (:mod:`.quantities`) and the segments of a
cell (:mod:`.segments`).
"""
