"""The surfaces floor: where users and schedulers reach Lakescout, besides the public face at the package's root
(``discovery.open``, :mod:`discovery.api`, :mod:`discovery.client`).

The CLI (:mod:`.cli`), query batches in process and on Spark (:mod:`.batch`, :mod:`.batch_share`), standing queries
(:mod:`.standing`), writing answers as tables (:mod:`.materialize`), warehouse maintenance (:mod:`.maintenance`), the
long-running server behind the page and the JSON API (:mod:`.serving`), the Spark launcher (:mod:`.submit`) and
Airflow's connections (:mod:`.connections`).
"""
