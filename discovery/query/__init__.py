"""The query floor: a query table resolved as the lake tables were read (:mod:`.resolve`), its column vectors
(:mod:`.vectors`) and the checked parameters of every search (:mod:`.params`).
"""
