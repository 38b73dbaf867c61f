"""Train and evaluate a model from Python, without the command line (the library under ``symbolinv train`` and
``symbolinv evaluate``; every option of theirs is a field of the argument classes, with the same default):

    python examples/python_api.py DATA_DIR OUT_DIR [STEPS]

``DATA_DIR``: a ``prop-small`` dataset (``symbolinv data build prop-small --out DATA_DIR``).
"""

import sys

from hf_symbolinv import EvaluateArguments, TrainArguments, evaluate, train

data, output, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 2000
model = train(TrainArguments(task="prop", preset="prop-small", data=data, output=output, steps=steps))
# Only the correct answers are printed: the alpha-covariance (on by default: each of 100 inputs per symbol count
# renamed up to 120 ways) is left out, as `--alpha-symbols` with no value leaves it out of `symbolinv evaluate`.
report = evaluate(EvaluateArguments(model=model, data=data, beam=3, alpha_symbols=[]))
print(f"correct: {report['correct']:.1%} of {report['count']} test formulas")
