"""The Spark API (with the ``spark`` extra): the engine lives in
`numdiff_component.engines.spark` (groups in `numdiff_component.engines.spark_groups`); this
module is the public name of their API."""

from numdiff_component.engines.spark import (
    SparkEngine,
    aggregate_spark,
    load_spark_table,
    score_spark,
    spark_session,
)
from numdiff_component.engines.spark_groups import groups_spark

__all__ = [
    "SparkEngine",
    "aggregate_spark",
    "groups_spark",
    "load_spark_table",
    "score_spark",
    "spark_session",
]
