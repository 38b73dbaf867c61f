"""The package's utilities, in plain Python (none imports torch when imported): writing files safely (``files``),
symbol rules (``symbols``) and bracketed trees (``trees``) whose Hub copies the families carry, the copies' check
(``check_copies``), model cards (``model_card``), torch threads for small inputs (``threads``) and the machine a
figure was measured on (``machine``)."""
