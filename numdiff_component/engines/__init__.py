"""The engines that score a job's table: `pandas_engine` (this machine, streamed) and `spark`
(a Spark session, with `spark_cluster` for what a cluster needs). They meet the job only in
the `Engine` protocol of `numdiff_component.task.config`."""
