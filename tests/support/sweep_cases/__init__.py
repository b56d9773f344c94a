"""The bad-input sweep's cases for the surfaces added after the first sweep, one module per
surface; each module's ``cases(tmp)`` yields `support.sweep_cases.case.Case` objects."""
