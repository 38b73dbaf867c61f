"""Make the test-only oracle module (``logic_oracle.py`` beside this file) importable under any
pytest import mode."""

import pathlib
import sys

_HERE = str(pathlib.Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
