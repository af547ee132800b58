"""The data floor: the two things Lakescout reads, the lake (:mod:`.lake`, one reader per table format behind one
listing) and the warehouse (:mod:`.store`: the Delta index tables, snapshots, the lease and the session object).
"""
