"""MLflow: `boundary` (the one place runs start and end, MLflow's failures as `TrackingError`,
each call within its deadline; logging a job's run and reading one back) and `settings` (the
tracking settings read from the environment, checked before any work; no MLflow)."""
