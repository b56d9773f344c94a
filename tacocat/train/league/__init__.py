"""League self-play on the batch engine: a jitted PPO (PureJaxRL style) whose opponents are the
current policy, frozen snapshots of it and JAX ports of the heuristic ladder (docs/LEAGUE.md)."""
