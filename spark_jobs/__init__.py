"""Spark drivers of the refresh stages.  Each module is a spark-submit entry point; transforms live in discovery.

Importing the package takes Spark's bundled archives off ``sys.path`` (:mod:`spark_jobs.archives`): every driver and
worker daemon of a Lakescout application imports it before PySpark, which it then imports from the installed package
instead of compiling it from ``pyspark.zip`` at every start.
"""
from .archives import drop_spark_archives

drop_spark_archives()
