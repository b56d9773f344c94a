"""The batch engine: Tacocat's rules in JAX with pgx's interface (imports jax; import it only
when needed: `import tacocat` does not import this package).

    from tacocat.game.batch import TacocatBatch
    env = TacocatBatch()                       # or TacocatBatch(config), TacocatBatch(round_reward=0.1)
    state = jax.jit(jax.vmap(env.init))(keys)  # a batch of games
    state = jax.jit(jax.vmap(env.step))(state, actions, keys)

Exact against the reference engine (same action ids, observations, rewards and flags); see
docs/BATCH.md for how that is tested.
"""

from tacocat.game.batch.core import State
from tacocat.game.batch.env import TacocatBatch
from tacocat.game.batch.tables import ConfigNotCompilableError

__all__ = ["ConfigNotCompilableError", "State", "TacocatBatch"]
