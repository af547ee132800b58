"""The orchestration floor: what runs the indexes together.

The refresh that runs the stages under the lease and publishes a snapshot (:mod:`.refresh`), the registry of search
kinds every surface answers through (:mod:`.searches`), a warehouse's state (:mod:`.status`), the lineage a refresh
and a batch report (:mod:`.lineage`), where a DAG run may point Lakescout (:mod:`.allowed_roots`) and the demo lake
(:mod:`.demo_lake`).
"""
