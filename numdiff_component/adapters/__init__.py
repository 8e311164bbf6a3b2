"""The core inside MLflow's own entry points: `evaluate` (the metric for
``mlflow.models.evaluate``, the scorer for ``mlflow.genai.evaluate``), `pyfunc` (the pyfunc
model) and `model_code` (the model as code MLflow runs when the model is loaded)."""
