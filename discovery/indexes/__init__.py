"""The indexes floor: one package per search, each building its index in a refresh stage and answering from a
snapshot: union (:mod:`.union`, PGTUS and TACTUS), the semantic join (:mod:`.join`, PEXESO), the numerical join
(:mod:`.numjoin`) and the n-ary join (:mod:`.nary`, MATE), with the name search (:mod:`.find`) and browsing what a
snapshot holds (:mod:`.browse`).
"""
