"""PySpark integration: the ``lance`` Python data source (Spark 4.x Python Data Source API)."""
