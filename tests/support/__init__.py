"""Test scaffolding, kept out of the `tacocat` package: the lockstep check of the batch engine
(`lockstep`), the golden recorders (`goldens`, `training_goldens`), the bad-input sweep
(`bad_input_sweep` and its `sweep_cases`) and the smoke configs the tests train (`configs/`).

The tests import it as `support.<module>` (pytest puts tests/ on `sys.path`); each recorder and
check also runs as a script, e.g. ``.venv/bin/python tests/support/goldens.py --record``."""
