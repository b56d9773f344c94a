"""Exact game-theoretic analysis of small rule presets: the game tree as arrays (`tree`), passes
over it level by level (`levels`), exact policy values, best responses and NashConv
(`best_response`), vectorized CFR / CFR+ (`cfr`), tree policies to and from OpenSpiel's tabular
policies (`tabular`), and the size check and on-disk cache of trees (`store`).

Needs the `[openspiel]` extra for enumeration (the tree is walked through `tacocat.game.openspiel`).
"""
