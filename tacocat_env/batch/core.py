"""Rules R2-R6 as pure JAX functions over a fixed-shape state (the batch engine's core).

One game is a `State` of fixed-shape arrays; `init`, `step`, `observe` and `legal_mask` take
the compiled `Tables` of a ruleset as their first argument and use no Python control flow on
traced values, so they `jit` and `vmap`. Every function mirrors a function of the reference
engine (`tacocat_env/engine.py`, `tacocat_env/observation.py`) line by line; the comments
name them. Player-valued fields use NONE (-1) where the reference has None.

Randomness comes from the key passed to `init`/`step`; the engine keeps no key of its own.
The draw pile is kept as counts per value. Shuffling a whole deck on every step (a vmapped
step computes every branch) cost more than the rest of a step, so a round is dealt (R2.2,
R6.4) and replacements are drawn (R4.3) card by card, uniformly at random from the pile's
counts: the same distribution as drawing from the top of a shuffled pile. A position
converted from the reference keeps its pile order (`pile_ordered`): until its next round,
cards are drawn from the top of `pile` exactly as the reference draws them, so both engines
play on identically from any converted position.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from pgx._src.struct import dataclass
from pgx.core import State as PgxState

from tacocat_env.batch.tables import ATTACK, DEFEND, DUEL, NONE, REPLACE, SACRIFICE, STOP, VOID, Tables

# phases, as tacocat_env.engine.Phase
P_REPLACE, P_DUEL, P_ATTACK, P_ANSWER, P_OVER = range(5)
_I32 = jnp.int32


@dataclass
class State(PgxState):
    """One game (or, with a leading batch axis, many). pgx's fields first, then the rules
    state. The rules fields hold hidden information (both hands, the draw pile): give agents
    `observation` / `observe(state, p)` only (R7.3).

    `current_player` is the player to act; once the game is over it keeps the last actor's
    id (the reference has None there). `legal_action_mask` is all true once the game is over
    (pgx's convention).
    """

    current_player: jax.Array = jnp.int32(0)
    observation: jax.Array = jnp.zeros(0, jnp.float32)
    rewards: jax.Array = jnp.zeros(2, jnp.float32)
    terminated: jax.Array = jnp.bool_(False)
    truncated: jax.Array = jnp.bool_(False)
    legal_action_mask: jax.Array = jnp.zeros(0, jnp.bool_)
    _step_count: jax.Array = jnp.int32(0)
    # -- rules state (GameState's fields) --------------------------------------------------
    space: jax.Array = jnp.int32(0)                 # Tacocat's space (last board space once in a goal)
    covered: jax.Array = jnp.zeros(0, jnp.bool_)    # (S,) tiles
    rounds_played: jax.Array = jnp.int32(0)
    phase: jax.Array = jnp.int32(0)                 # P_REPLACE .. P_OVER
    hands: jax.Array = jnp.zeros((2, 0), _I32)      # (2, V) cards held, per value index
    set_aside: jax.Array = jnp.zeros((2, 0), _I32)  # (2, V) cards set aside in the replace step
    pile_counts: jax.Array = jnp.zeros(0, _I32)     # (V,) draw pile, count per value (hidden)
    pile_size: jax.Array = jnp.int32(0)
    pile_ordered: jax.Array = jnp.bool_(False)      # True: draw from the top of `pile` (converted)
    pile: jax.Array = jnp.zeros(0, _I32)            # (deck,) ordered pile, top card at pile_size - 1
    discard: jax.Array = jnp.zeros(0, _I32)         # (V,) face-up cards of this round
    replace_left: jax.Array = jnp.int32(0)          # players still to replace (len(replace_queue))
    replace_cap: jax.Array = jnp.zeros(2, _I32)
    replaced: jax.Array = jnp.full(2, NONE, _I32)   # revealed replace counts, NONE until revealed
    duel: jax.Array = jnp.full(2, NONE, _I32)       # hidden duel cards
    last_duel: jax.Array = jnp.full(2, NONE, _I32)
    attacker: jax.Array = jnp.int32(NONE)
    attack: jax.Array = jnp.zeros(0, _I32)          # (A,) attack cards, highest first
    attack_len: jax.Array = jnp.int32(0)
    answers: jax.Array = jnp.zeros(0, _I32)         # (A,) answers so far
    answers_len: jax.Array = jnp.int32(0)
    winner: jax.Array = jnp.int32(NONE)
    last_round_winner: jax.Array = jnp.int32(NONE)  # NONE before any round ended, VOID after a void one

    @property
    def env_id(self) -> str:
        return "tacocat_v0"


def _counts(cards: jax.Array, valid: jax.Array, n_values: int) -> jax.Array:
    """Count per value index of the `cards` whose `valid` flag is set."""
    one_hot = cards[:, None] == jnp.arange(n_values, dtype=_I32)[None, :]
    return jnp.sum(one_hot & valid[:, None], axis=0, dtype=_I32)


def _lowest(hand: jax.Array) -> jax.Array:
    """Index of the lowest held value (hand non-empty)."""
    return jnp.argmax(hand > 0).astype(_I32)


# ---------------------------------------------------------------------------------------
# set-up and rounds (engine.new_game, _start_round, _open_replace)
# ---------------------------------------------------------------------------------------
def init(t: Tables, key: jax.Array) -> State:
    """A new game (R2): Tacocat on the centre, no tiles, first round dealt."""
    v, a = t.n_values, t.max_attack
    state = State(
        observation=jnp.zeros(t.obs_size, jnp.float32),
        legal_action_mask=jnp.zeros(t.n_actions, jnp.bool_),
        space=jnp.int32(t.centre),
        covered=jnp.zeros(t.n_spaces, jnp.bool_),
        hands=jnp.zeros((2, v), _I32),
        set_aside=jnp.zeros((2, v), _I32),
        pile=jnp.zeros(t.deck_size, _I32),
        pile_counts=jnp.zeros(v, _I32),
        discard=jnp.zeros(v, _I32),
        attack=jnp.full(a, NONE, _I32),
        answers=jnp.full(a, NONE, _I32),
    )
    state = _start_round(t, state, key)
    return _finish_step(t, state)


def _start_round(t: Tables, state: State, key: jax.Array) -> State:
    """R2.2/R6.4: shuffle all cards, deal the space's deal size to both, open the replace step."""
    size = jnp.asarray(t.board)[state.space]
    deck = jnp.asarray(t.rules.copies, _I32)
    key0, key1 = jax.random.split(key)
    # player_0 is dealt `size` cards, then player_1 (engine._start_round)
    hand0 = _draw(deck, size, key0, t.max_deal)
    hand1 = _draw(deck - hand0, size, key1, t.max_deal)
    state = state.replace(
        pile_counts=deck - hand0 - hand1,
        pile_size=jnp.int32(t.deck_size) - 2 * size,
        pile_ordered=jnp.bool_(False),
        hands=jnp.stack([hand0, hand1]),
        set_aside=jnp.zeros_like(state.set_aside),
        discard=jnp.zeros_like(state.discard),
        duel=jnp.full(2, NONE, _I32),
        last_duel=jnp.full(2, NONE, _I32),
        attacker=jnp.int32(NONE),
        attack=jnp.full_like(state.attack, NONE),
        attack_len=jnp.int32(0),
        answers=jnp.full_like(state.answers, NONE),
        answers_len=jnp.int32(0),
        replaced=jnp.full(2, NONE, _I32),
    )
    return _open_replace(t, state)


def _open_replace(t: Tables, state: State) -> State:
    size = jnp.asarray(t.board)[state.space]
    arrow = jnp.asarray(t.arrows)[state.space]
    both = arrow == NONE  # R4.1 two arrows: both replace, player_0 asked first
    first = jnp.where(both, 0, arrow)
    cap = jnp.where(both | (jnp.arange(2) == arrow), size, 0).astype(_I32)  # R4.2: second's cap set later
    return state.replace(phase=jnp.int32(P_REPLACE), replace_left=jnp.int32(2), replace_cap=cap,
                         current_player=first.astype(_I32))


# ---------------------------------------------------------------------------------------
# legal actions (engine._compute_legal, _attack_actions)
# ---------------------------------------------------------------------------------------
def legal_mask(t: Tables, state: State) -> jax.Array:
    """(N,) bool: the legal actions of the player to act; all true once the game is over."""
    player = state.current_player
    hand = _hand(state.hands, player)
    kind = jnp.asarray(t.kind)
    held = hand[jnp.asarray(t.card)] > 0
    room = jnp.where(player == 0, state.replace_cap[0] - jnp.sum(state.set_aside[0]),
                     state.replace_cap[1] - jnp.sum(state.set_aside[1]))
    replace = ((kind == REPLACE) & held & (room > 0)) | (kind == STOP)
    duel = (kind == DUEL) & held
    most = jnp.sum(hand) - 1  # R5.4: an attack leaves the attacker one card
    attack = (kind == ATTACK) & jnp.all(hand[None, :] >= jnp.asarray(t.attack_counts), axis=1) & (
        jnp.asarray(t.attack_len) <= most)
    current = state.attack[jnp.minimum(state.answers_len, t.max_attack - 1)]
    answer = ((kind == DEFEND) & held & (jnp.asarray(t.card) >= current)) | (
        (kind == SACRIFICE) & (_lowest(hand) < current))  # R5.5: a real sacrifice only
    phase = state.phase
    return jnp.where(phase == P_REPLACE, replace, jnp.where(phase == P_DUEL, duel, jnp.where(
        phase == P_ATTACK, attack, jnp.where(phase == P_ANSWER, answer, True))))


# ---------------------------------------------------------------------------------------
# transitions (engine._apply_legal and the functions it calls)
# ---------------------------------------------------------------------------------------
def step(t: Tables, state: State, action: jax.Array, key: jax.Array) -> State:
    """Play a legal `action` for the player to act (R4-R6); rewards of this step in `rewards`."""
    rounds_before = state.rounds_played
    stop_key, key = jax.random.split(key)
    branch = jnp.asarray(t.kind)[action]
    state = jax.lax.switch(
        branch,
        [
            lambda s: _set_aside(t, s, action),
            lambda s: _stop_replacing(t, s, stop_key),
            lambda s: _duel(t, s, action),
            lambda s: _attack(t, s, action),
            lambda s: _answer(t, s, jnp.asarray(t.card)[action]),
            lambda s: _answer(t, s, _lowest(_hand(s.hands, s.current_player))),
        ],
        state,
    )
    # R5.2/R5.7: a revealed duel or a decided trick that leaves one card each goes to the
    # showdown (the reference calls _showdown from _duel and _answer; one call here deals
    # at most once per step). Mid-trick or mid-duel, the hands are never both down to one.
    showdown = ((state.phase == P_DUEL) | (state.phase == P_ATTACK)) & (jnp.sum(state.hands[0]) == 1) & (
        jnp.sum(state.hands[1]) == 1) & (state.duel[0] == NONE)
    state = _select(showdown, _showdown(t, state, key), state)
    state = state.replace(rewards=_rewards(t, state, rounds_before))
    return _finish_step(t, state)


def _finish_step(t: Tables, state: State) -> State:
    over = state.phase == P_OVER
    return state.replace(
        terminated=over & (state.winner != NONE),
        truncated=over & (state.winner == NONE),
        legal_action_mask=legal_mask(t, state),
    )


def _rewards(t: Tables, state: State, rounds_before: jax.Array) -> jax.Array:
    """engine.round_shaping + engine.returns, computed once in float64 (tables) as the AEC env."""
    winner = state.last_round_winner
    decisive = (state.rounds_played != rounds_before) & (winner >= 0)
    game_won = state.winner != NONE
    for_winner = jnp.where(game_won, t.win_reward, jnp.where(decisive, t.round_reward, jnp.float32(0)))
    sign = jnp.where(jnp.arange(2) == winner, jnp.float32(1), jnp.float32(-1))
    paid = decisive & (for_winner != 0)  # zeros stay +0.0, as in the reference
    return jnp.where(paid, sign * for_winner, jnp.zeros(2, jnp.float32))


def _set_aside(t: Tables, state: State, action: jax.Array) -> State:
    card = jnp.asarray(t.card)[action]
    player = state.current_player
    card_row = _row(player, _one_hot(card, t.n_values))
    return state.replace(hands=state.hands - card_row, set_aside=state.set_aside + card_row)


def _stop_replacing(t: Tables, state: State, key: jax.Array) -> State:
    """engine._stop_replacing: R4.1 reveals both at the end, R4.2 caps the second replacer."""
    player = state.current_player
    left = state.replace_left - 1
    simultaneous = jnp.asarray(t.arrows)[state.space] == NONE
    # R4.1, first of two: nothing is revealed until both finished
    wait = state.replace(replace_left=left, current_player=jnp.int32(1))
    # R4.1, both finished: reveal player_0's then player_1's replacement; R4.2: reveal the
    # player who stopped (the other's set-aside is empty then)
    n = jnp.sum(state.set_aside, axis=1)
    key0, key1 = jax.random.split(key)
    shown = _reveal(t, _reveal(t, state, 0, n[0], key0), 1, n[1], key1)
    shown = shown.replace(replaced=jnp.where(simultaneous | (jnp.arange(2) == player), n, state.replaced))
    # R4.2: the second may replace at most as many as the first
    second = 1 - player
    cap = n[player]
    second_turn = shown.replace(replace_left=left, replace_cap=jnp.where(jnp.arange(2) == second, cap,
                                                                       shown.replace_cap), current_player=second)
    first_of_two = ~simultaneous & (left > 0)
    duel_next = shown.replace(replaced=jnp.where(first_of_two & (jnp.arange(2) == second), 0, shown.replaced),
                              replace_left=jnp.int32(0))
    duel_next = _open_duel(duel_next)
    to_second = first_of_two & (cap > 0)
    to_wait = simultaneous & (left > 0)
    return _select(to_wait, wait, _select(to_second, second_turn, duel_next))


def _reveal(t: Tables, state: State, player: int, n: jax.Array, key: jax.Array) -> State:
    """engine._reveal_replacement (R4.3) for `player` when n > 0 (n = the cards it set aside):
    they go face up; it draws as many, from the top of an ordered pile or at random."""
    position = jnp.arange(t.deck_size, dtype=_I32)
    from_top = _counts(state.pile, (position < state.pile_size) & (position >= state.pile_size - n), t.n_values)
    drawn = jnp.where(state.pile_ordered, from_top, _draw(state.pile_counts, n, key, t.max_deal))
    revealing = n > 0
    return state.replace(
        discard=state.discard + state.set_aside[player],
        hands=state.hands + _row(player, drawn),
        pile_counts=state.pile_counts - drawn,
        pile_size=state.pile_size - n,
        set_aside=jnp.where(revealing, state.set_aside * _row(1 - player, 1), state.set_aside),
    )


def _draw(counts: jax.Array, n: jax.Array, key: jax.Array, max_n: int) -> jax.Array:
    """Counts per value of `n` (<= max_n) cards drawn uniformly without replacement from a pile
    of `counts` cards, one card at a time (a shuffle's top n cards have this distribution)."""
    bits = jax.random.bits(key, (max_n,), jnp.uint32)
    v = counts.shape[-1]
    # running totals by comparisons, not jnp.cumsum (a slow reduce-window on XLA:CPU)
    upto = jnp.arange(v)[:, None] >= jnp.arange(v)[None, :]  # upto[i, j]: j <= i
    drawn = jnp.zeros_like(counts)
    for i in range(max_n):
        left = counts - drawn
        total = jnp.maximum(jnp.sum(left), 1).astype(jnp.uint32)
        pick = (bits[i] % total).astype(_I32)  # modulo bias < deck size / 2**32
        running = jnp.sum(jnp.where(upto, left[None, :], 0), axis=1)
        card = jnp.sum(running <= pick)  # the first value whose running total exceeds pick
        drawn = drawn + ((jnp.arange(v) == card) & (i < n))
    return drawn


def _row(player: jax.Array | int, values: jax.Array | int) -> jax.Array:
    """A (2, V)-broadcastable array: `values` in `player`'s row, 0 in the other."""
    return jnp.where((jnp.arange(2) == player)[:, None], values, 0)


def _hand(hands: jax.Array, player: jax.Array) -> jax.Array:
    return jnp.where(player == 0, hands[0], hands[1])


def _one_hot(index: jax.Array, size: int) -> jax.Array:
    """One-hot int32 vector of `index`; all zeros for NONE."""
    return (jnp.arange(size, dtype=_I32) == index).astype(_I32)


def _open_duel(state: State) -> State:
    return state.replace(phase=jnp.int32(P_DUEL), duel=jnp.full(2, NONE, _I32), current_player=jnp.int32(0))


def _duel(t: Tables, state: State, action: jax.Array) -> State:
    """engine._duel (R5.1/R5.2): hidden choices; the higher card attacks; a tie duels again."""
    card = jnp.asarray(t.card)[action]
    player = state.current_player
    state = state.replace(hands=state.hands - _row(player, _one_hot(card, t.n_values)),
                          duel=jnp.where(jnp.arange(2) == player, card, state.duel))
    first_chose = state.replace(current_player=jnp.int32(1))
    first, second = state.duel[0], state.duel[1]
    revealed = state.replace(
        duel=jnp.full(2, NONE, _I32),
        discard=state.discard + _one_hot(first, t.n_values) + _one_hot(second, t.n_values),
        last_duel=jnp.stack([first, second]),
    )
    attacker = jnp.where(first > second, 0, 1).astype(_I32)
    fight = _select(
        first == second,
        revealed.replace(current_player=jnp.int32(0)),
        revealed.replace(attacker=attacker, phase=jnp.int32(P_ATTACK), current_player=attacker),
    )
    return _select(player == 0, first_chose, fight)


def _attack(t: Tables, state: State, action: jax.Array) -> State:
    player = state.current_player
    return state.replace(
        hands=state.hands - _row(player, jnp.asarray(t.attack_counts)[action]),
        attack=jnp.asarray(t.attack_cards)[action],
        attack_len=jnp.asarray(t.attack_len)[action],
        answers=jnp.full_like(state.answers, NONE),
        answers_len=jnp.int32(0),
        phase=jnp.int32(P_ANSWER),
        current_player=1 - player,
    )


def _answer(t: Tables, state: State, card: jax.Array) -> State:
    """engine._answer (R5.5-R5.7): one answer per attack card; the trick is decided at the end."""
    defender = state.current_player
    state = state.replace(
        hands=state.hands - _row(defender, _one_hot(card, t.n_values)),
        answers=jnp.where(jnp.arange(t.max_attack) == state.answers_len, card, state.answers),
        answers_len=state.answers_len + 1,
    )
    index = jnp.arange(t.max_attack)
    answered = index < state.answers_len
    defended = jnp.all(~answered | (state.answers >= state.attack))
    on_table = index < state.attack_len
    attacker = jnp.where(defended, defender, 1 - defender).astype(_I32)
    done = state.replace(
        discard=state.discard + _counts(state.attack, on_table, t.n_values)
        + _counts(state.answers, on_table, t.n_values),
        attack=jnp.full_like(state.attack, NONE),
        attack_len=jnp.int32(0),
        answers=jnp.full_like(state.answers, NONE),
        answers_len=jnp.int32(0),
        attacker=attacker,
    )
    next_trick = done.replace(phase=jnp.int32(P_ATTACK), current_player=attacker)
    return _select(state.answers_len < state.attack_len, state, next_trick)


def _showdown(t: Tables, state: State, key: jax.Array) -> State:
    """engine._showdown (R6.1/R6.2/R1.4): the lower last card wins; equal cards per tie_policy."""
    last0, last1 = _lowest(state.hands[0]), _lowest(state.hands[1])
    state = state.replace(
        hands=state.hands - jnp.stack([_one_hot(last0, t.n_values), _one_hot(last1, t.n_values)]),
        discard=state.discard + _one_hot(last0, t.n_values) + _one_hot(last1, t.n_values),
    )
    tie = jnp.asarray(t.arrows)[state.space] if t.rules.config.tie_policy == "arrow_player_wins" else NONE
    winner = jnp.where(last0 < last1, 0, jnp.where(last1 < last0, 1, tie)).astype(_I32)
    return _finish_round(t, state, winner, key)


def _finish_round(t: Tables, state: State, winner: jax.Array, key: jax.Array) -> State:
    """engine._finish_round (R6.2-R6.4, R1.5): move the Tacocat and cover, or void the round."""
    rounds = state.rounds_played + 1
    decisive = winner != NONE
    start = state.space
    target = next_space(state.covered, start, winner)
    in_goal = decisive & ((target < 0) | (target >= t.n_spaces))
    state = state.replace(
        rounds_played=rounds,
        last_round_winner=jnp.where(decisive, winner, VOID).astype(_I32),
        attacker=jnp.int32(NONE),
        covered=state.covered | (decisive & (jnp.arange(t.n_spaces) == start)),
        space=jnp.where(decisive & ~in_goal, target, start).astype(_I32),
    )
    won = state.replace(winner=winner, phase=jnp.int32(P_OVER))
    truncated = state.replace(phase=jnp.int32(P_OVER))
    new_round = _start_round(t, state, key)
    return _select(in_goal, won, _select(rounds >= t.max_rounds, truncated, new_round))


def next_space(covered: jax.Array, space: jax.Array, player: jax.Array) -> jax.Array:
    """engine.next_space (R6.3): one space towards `player`'s goal, skipping covered spaces;
    player_0's goal is -1, player_1's is S."""
    n = covered.shape[-1]
    spaces = jnp.arange(n, dtype=_I32)
    towards_0 = jnp.max(jnp.where(~covered & (spaces < space), spaces, -1))
    towards_1 = jnp.min(jnp.where(~covered & (spaces > space), spaces, n))
    return jnp.where(player == 0, towards_0, towards_1).astype(_I32)


def _select(pred: jax.Array, on_true: State, on_false: State) -> State:
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), on_true, on_false)


# ---------------------------------------------------------------------------------------
# observation (observation.encode)
# ---------------------------------------------------------------------------------------
def observe(t: Tables, state: State, player: jax.Array) -> jax.Array:
    """The egocentric observation vector of `player`, bit-identical to `observation.encode`.

    Reads only `player`'s private fields and public ones (R7.3): never the opponent's hand,
    set-aside or duel card, nor the draw pile's order.
    """
    v = t.n_values
    player = jnp.asarray(player, _I32)
    opp = 1 - player
    phase = state.phase
    over = phase == P_OVER
    values = jnp.arange(v, dtype=_I32)

    hand = state.hands[player]
    own_duel = state.duel[player]
    own_aside = state.set_aside[player] + (values == own_duel)
    index = jnp.arange(t.max_attack)
    on_table = index < state.attack_len
    answered = index < state.answers_len
    attack = _counts(state.attack, on_table, v)
    answers = _counts(state.answers, answered, v)
    failing = jnp.any(answered & (state.answers < state.attack))
    current = jnp.where(phase == P_ANSWER, state.attack[jnp.minimum(state.answers_len, t.max_attack - 1)], NONE)
    arrow = jnp.asarray(t.arrows)[state.space]
    arrow_index = jnp.where(arrow == NONE, 2, jnp.where(arrow == player, 0, 1))
    role_index = jnp.where(arrow == NONE, 0, jnp.where(arrow == player, 1, 2))
    my_turn = (state.current_player == player) & ~over
    allowance = jnp.where((phase == P_REPLACE) & my_turn,
                          state.replace_cap[player] - jnp.sum(state.set_aside[player]), 0)
    opp_size = jnp.sum(state.hands[opp]) + jnp.sum(state.set_aside[opp]) + (state.duel[opp] != NONE)
    my_size = jnp.sum(hand) + jnp.sum(state.set_aside[player]) + (own_duel != NONE)
    # the board seen from my goal (observation._board_block)
    spaces = jnp.arange(t.n_spaces, dtype=_I32)
    ego = jnp.where(player == 0, spaces, t.n_spaces - 1 - spaces)
    tacocat = (ego == state.space) & ~over
    covered = state.covered[ego]
    attacker_index = jnp.where(state.attacker == NONE, 2, jnp.where(state.attacker == player, 0, 1))
    f32 = jnp.float32
    parts = [
        hand, own_aside, state.discard, attack, answers,
        _one_hot(current, v), _one_hot(state.last_duel[player], v), _one_hot(state.last_duel[opp], v),
        failing[None], my_size[None], opp_size[None], state.pile_size[None],
        _one_hot(phase, 5), my_turn[None], allowance[None],
        jnp.maximum(state.replaced[player], 0)[None], jnp.maximum(state.replaced[opp], 0)[None],
        _one_hot(role_index, 3), tacocat, covered,
        moves_to_goal(state.covered, state.space, state.winner, player)[None],
        moves_to_goal(state.covered, state.space, state.winner, opp)[None],
        jnp.asarray(t.board)[state.space][None], _one_hot(arrow_index, 3),
        _one_hot(attacker_index, 3),
        jnp.asarray(t.round_fraction)[jnp.minimum(state.rounds_played, t.max_rounds)][None],
    ]
    return jnp.concatenate([jnp.asarray(p).astype(f32) for p in parts])


def moves_to_goal(covered: jax.Array, space: jax.Array, winner: jax.Array, player: jax.Array) -> jax.Array:
    """engine.moves_to_goal: decisive rounds `player` must still win (0 once they won, S + 1
    once the opponent won): one per uncovered space beyond the Tacocat, plus the goal."""
    n = covered.shape[-1]
    spaces = jnp.arange(n, dtype=_I32)
    beyond = jnp.where(player == 0, spaces < space, spaces > space)
    moves = jnp.sum(beyond & ~covered, dtype=_I32) + 1
    return jnp.where(winner == NONE, moves, jnp.where(winner == player, 0, n + 1)).astype(_I32)
