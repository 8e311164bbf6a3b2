"""The Spark API (with the ``spark`` extra): the engine lives in
`numdiff_component.engines.spark`; this module is the public name of its `__all__`."""

from numdiff_component.engines.spark import (
    SparkEngine,
    aggregate_spark,
    load_spark_table,
    score_spark,
    spark_session,
)

__all__ = ["SparkEngine", "aggregate_spark", "load_spark_table", "score_spark", "spark_session"]
