"""The package's utilities, in plain Python (none imports torch): writing files safely (``files``), symbol rules
(``symbols``) and bracketed trees (``trees``) whose Hub copies the families carry, the copies' check
(``check_copies``), and model cards (``model_card``)."""
