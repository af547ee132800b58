"""Spark drivers of the refresh stages.  Each module is a spark-submit entry point; transforms live in discovery."""
