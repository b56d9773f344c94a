"""Exact game-theoretic analysis of small rule presets: the game tree as arrays (`tree`),
vectorized CFR / CFR+ (`cfr`) and exact best responses and NashConv (`best_response`).

Needs the `[openspiel]` extra for enumeration (the tree is walked through `tacocat_env.openspiel`).
"""
