"""The pyfunc model as code: ``log_numeric_diff_model`` logs this file, so nothing is pickled.

MLflow runs it when the model is loaded (with the package on the path through the model's
``code_paths``); the options come from the model config, read in ``load_context``.
"""

from mlflow.models import set_model

from numdiff_component.adapters.pyfunc import NumericDiffModel

set_model(NumericDiffModel())
