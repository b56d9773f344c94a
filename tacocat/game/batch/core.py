"""Rules R2-R6 as pure JAX functions over a fixed-shape state (the batch engine's core).

One game is a `State` of fixed-shape arrays; `init`, `step`, `observe` and `legal_mask` take
the compiled `Tables` of a ruleset as their first argument and use no Python control flow on
traced values, so they `jit` and `vmap`. Each function names the function of the reference
engine (`tacocat/game/engine.py`, `tacocat/game/observation.py`) it mirrors.

Written for `vmap`: a vmapped step computes every branch for every game, so `step` is one
straight pass that updates each field once, gated by the action's kind (no `lax.switch` over
whole states, no per-branch copies of the state), and a step deals at most once: a new round
(R6.4) and, in `step(..., autoreset=True)`, the next game share one shuffle. The backend-specific
work-arounds (short reductions and look-ups unrolled, values computed once, shuffles for the
dealing games only) are `tacocat.game.batch.xla`'s helpers, in their XLA:CPU or plain form.

The deck is shuffled once per round (R2.2, R6.4) and drawn from the top, as the reference
does. A shuffle is a permutation `rank` of the card slots (`Tables.deck_cards`): the card in
slot c is the `rank[c]`-th card of the shuffled deck. Player_0 is dealt ranks [0, size),
player_1 [size, 2 size); the draw pile holds the ranks from `deck_size - pile_size` on, its
top card the lowest of them. A position converted from the reference keeps its pile order,
so both engines draw the same cards until the next round.

Randomness comes from the key passed to `init`/`step`; the engine keeps no key of its own.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from pgx._src.struct import dataclass
from pgx.core import State as PgxState

from tacocat.game.batch import xla
from tacocat.game.batch.tables import ATTACK, DEFEND, DUEL, NONE, REPLACE, SACRIFICE, STOP, VOID, Tables

# phases, as tacocat.game.state.Phase
P_REPLACE, P_DUEL, P_ATTACK, P_ANSWER, P_OVER = range(5)
#: the kind of a step that changes no rules field (an illegal action, or a finished game)
_NO_MOVE = -1
_I32 = jnp.int32


@dataclass
class State(PgxState):
    """One game (or, with a leading batch axis, many). pgx's fields first, then the rules
    state. The rules fields hold hidden information (both hands, the deck order): give agents
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
    space: jax.Array = jnp.int32(0)  # Tacocat's space (last board space once in a goal)
    covered: jax.Array = jnp.zeros(0, jnp.bool_)  # (S,) tiles
    rounds_played: jax.Array = jnp.int32(0)
    phase: jax.Array = jnp.int32(0)  # P_REPLACE .. P_OVER
    hands: jax.Array = jnp.zeros((2, 0), _I32)  # (2, V) cards held, per value index
    set_aside: jax.Array = jnp.zeros((2, 0), _I32)  # (2, V) cards set aside in the replace step
    rank: jax.Array = jnp.zeros(0, _I32)  # (deck,) this round's deck order (hidden), see above
    pile_size: jax.Array = jnp.int32(0)
    discard: jax.Array = jnp.zeros(0, _I32)  # (V,) face-up cards of this round
    replace_left: jax.Array = jnp.int32(0)  # players still to replace (len(replace_queue))
    replace_cap: jax.Array = jnp.zeros(2, _I32)
    replaced: jax.Array = jnp.full(2, NONE, _I32)  # revealed replace counts, NONE until revealed
    duel: jax.Array = jnp.full(2, NONE, _I32)  # hidden duel cards
    last_duel: jax.Array = jnp.full(2, NONE, _I32)
    attacker: jax.Array = jnp.int32(NONE)
    attack: jax.Array = jnp.zeros(0, _I32)  # (A,) attack cards, highest first
    attack_len: jax.Array = jnp.int32(0)
    answers: jax.Array = jnp.zeros(0, _I32)  # (A,) answers so far
    answers_len: jax.Array = jnp.int32(0)
    winner: jax.Array = jnp.int32(NONE)
    last_round_winner: jax.Array = jnp.int32(NONE)  # NONE before any round ended, VOID after a void one

    @property
    def env_id(self) -> str:
        return "tacocat_v0"


# ---------------------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------------------
def _one_hot(index: jax.Array, size: int) -> jax.Array:
    """One-hot int32 vector of `index`; all zeros for NONE."""
    return (jnp.arange(size, dtype=_I32) == index).astype(_I32)


def _counts(cards: jax.Array, valid: jax.Array, n_values: int) -> jax.Array:
    """Count per value index of the `cards` whose `valid` flag is set."""
    values = jnp.arange(n_values, dtype=_I32)
    return xla.total([((values == cards[i]) & valid[i]).astype(_I32) for i in range(cards.shape[0])])


def _lowest(hand: jax.Array) -> jax.Array:
    """Index of the lowest held value (the last index for an empty hand, which no caller reads)."""
    return xla.first_where(lambda value: hand[value] > 0, hand.shape[0])


def _cards_ranked(t: Tables, rank: jax.Array, low: jax.Array, high: jax.Array) -> jax.Array:
    """(2, V): for each row, the count per value of the cards whose rank is in [low, high)."""
    inside = (rank[None, :] >= low[:, None]) & (rank[None, :] < high[:, None])
    slot_value = jnp.asarray(t.deck_cards)[:, None] == jnp.arange(t.n_values, dtype=_I32)[None, :]
    return jnp.dot(inside.astype(jnp.float32), slot_value.astype(jnp.float32)).astype(_I32)


def _shuffle(t: Tables, key: jax.Array, deal: jax.Array, half: jax.Array | None = None) -> jax.Array:
    """A random permutation of the card slots as ranks (R2.2), for a game that deals in this
    step (`deal`); the result is not used otherwise. With `half` (0 or 1), the shuffle is that
    of `jax.random.split(key)[half]`. Under `vmap` on XLA:CPU, only the dealing games of the
    batch are shuffled, the split included (see `_shuffler`)."""
    if half is None:
        return _shuffler(t.deck_size, None)(deal, _key_words(key), jnp.int32(0))
    impl = str(jax.random.key_impl(key)) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else "threefry2x32"
    return _shuffler(t.deck_size, impl)(deal, _key_words(key), half)


def _ranks(words: jax.Array, n: int) -> jax.Array:
    """The shuffle of `n` slots from a key's words: the rank of a slot is the number of slots
    with a lower sort key (`xla.sort_keys`, distinct, so the ranks are a permutation)."""
    return xla.ranks(xla.sort_keys(words, n))


@functools.cache
def _shuffler(n: int, split_impl: str | None) -> Callable[..., jax.Array]:
    """`shuffle(deal, words, half)`: `_ranks`, which `xla.packed_rows`' XLA:CPU form computes
    under `vmap` for the rows that deal only (a round starts in about one step in ten), in a
    buffer of a quarter of the batch from 64 rows on. Each row's shuffle depends on its own key
    only, so the games are the same either way.

    With `split_impl` (a PRNG implementation's name), it shuffles from
    `jax.random.split(key)[half]` (pgx's auto-reset splits every step's key; the split's
    threefry runs on the buffer's rows only); without, `half` is not read."""

    def ranks(words: jax.Array, half: jax.Array) -> jax.Array:
        if split_impl is not None:
            words = _key_words(jax.random.split(jax.random.wrap_key_data(words, impl=split_impl))[half])
        return _ranks(words, n)

    return xla.packed_rows(ranks, room=lambda size: size // 4 if size >= 64 else size)


def _key_words(key: jax.Array) -> jax.Array:
    """The uint32 words of a PRNG key (typed or raw)."""
    words = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    return words.reshape(-1).astype(jnp.uint32)


def pile_counts(t: Tables, state: State) -> jax.Array:
    """(V,) the draw pile (hidden, R7.1) as a count per value: the ranks from its top card on."""
    top = jnp.int32(t.deck_size) - state.pile_size
    return _cards_ranked(t, state.rank, jnp.stack([top, top]), jnp.full(2, t.deck_size, _I32))[0]


# ---------------------------------------------------------------------------------------
# set-up and rounds (engine.new_game, _start_round, open_replace)
# ---------------------------------------------------------------------------------------
def init(t: Tables, key: jax.Array) -> State:
    """A new game (R2): Tacocat on the centre, no tiles, first round dealt."""
    v, a, s = t.n_values, t.max_attack, t.n_spaces
    state = State(
        observation=jnp.zeros(t.obs_size, jnp.float32),
        legal_action_mask=jnp.zeros(t.n_actions, jnp.bool_),
        covered=jnp.zeros(s, jnp.bool_),
        hands=jnp.zeros((2, v), _I32),
        set_aside=jnp.zeros((2, v), _I32),
        rank=jnp.zeros(t.deck_size, _I32),
        discard=jnp.zeros(v, _I32),
        attack=jnp.full(a, NONE, _I32),
        answers=jnp.full(a, NONE, _I32),
    )
    state = _deal(t, state, jnp.bool_(True), jnp.bool_(True), key)
    return finish(t, state, jnp.bool_(False))


def _deal(
    t: Tables, state: State, deal: jax.Array, new_game: jax.Array, key: jax.Array, half: jax.Array | None = None
) -> State:
    """Where `deal`: shuffle all cards and deal a round on the Tacocat's space (R2.2, R6.4),
    after resetting the board for a new game where `new_game` (R2.1). Opens the replace step.
    With `half`, the shuffle comes from `jax.random.split(key)[half]` (see `step`)."""
    start = jnp.where(new_game, jnp.int32(t.centre), state.space)
    size = xla.lookup(t.board, start)
    rank = _shuffle(t, key, deal, half)
    # player_0 is dealt the first `size` cards, then player_1 (engine._start_round)
    dealt = _cards_ranked(t, rank, jnp.stack([0, size]), jnp.stack([size, 2 * size]))
    arrow = xla.lookup(t.arrows, start)
    both = arrow == NONE  # R4.1 two arrows: both replace, player_0 asked first
    seats = jnp.arange(2, dtype=_I32)
    cap = jnp.where(both | (seats == arrow), size, 0).astype(_I32)  # R4.2: the second's cap is set later

    def fresh(value, old):
        return jnp.where(deal, value, old)

    return state.replace(
        _step_count=jnp.where(new_game, 0, state._step_count),
        space=start,
        covered=state.covered & ~new_game,
        rounds_played=jnp.where(new_game, 0, state.rounds_played),
        winner=jnp.where(new_game, NONE, state.winner),
        last_round_winner=jnp.where(new_game, NONE, state.last_round_winner),
        rank=fresh(rank, state.rank),
        pile_size=fresh(jnp.int32(t.deck_size) - 2 * size, state.pile_size),
        hands=fresh(dealt, state.hands),
        set_aside=fresh(0, state.set_aside),
        discard=fresh(0, state.discard),
        duel=fresh(NONE, state.duel),
        last_duel=fresh(NONE, state.last_duel),
        attacker=fresh(NONE, state.attacker),
        attack=fresh(NONE, state.attack),
        attack_len=fresh(0, state.attack_len),
        answers=fresh(NONE, state.answers),
        answers_len=fresh(0, state.answers_len),
        replaced=fresh(NONE, state.replaced),
        phase=fresh(P_REPLACE, state.phase),
        replace_left=fresh(2, state.replace_left),
        replace_cap=fresh(cap, state.replace_cap),
        current_player=fresh(jnp.where(both, 0, arrow), state.current_player).astype(_I32),
    )


# ---------------------------------------------------------------------------------------
# legal actions (engine._compute_legal, _attack_actions)
# ---------------------------------------------------------------------------------------
def legal_mask(t: Tables, state: State) -> jax.Array:
    """(N,) bool: the legal actions of the player to act; all true once the game is over.

    Built block by block in the action codec's order (replace V, stop, duel V, attacks,
    defend V, sacrifice; `tables.check_codec_layout`)."""
    player = state.current_player
    phase = state.phase
    hand = xla.by_seat(state.hands, player)
    held = hand > 0
    room = jnp.where(
        player == 0,
        state.replace_cap[0] - xla.total(state.set_aside[0]),
        state.replace_cap[1] - xla.total(state.set_aside[1]),
    )
    replacing = phase == P_REPLACE
    # R5.3/R5.4: an attack needs its cards in hand and leaves the attacker one card
    need = jnp.asarray(t.attack_counts[t.kind == ATTACK])
    attack = xla.all_true(
        itertools.chain(
            [jnp.asarray(t.attack_len[t.kind == ATTACK]) <= xla.total(hand) - 1],
            (hand[value] >= need[:, value] for value in range(t.n_values)),
        )
    )
    answering = phase == P_ANSWER
    current = xla.lookup(state.attack, state.answers_len)
    blocks = [
        held & (room > 0) & replacing,
        replacing[None],  # R4.1-R4.3
        held & (phase == P_DUEL),  # R5.1
        attack & (phase == P_ATTACK),
        held & (jnp.arange(t.n_values) >= current) & answering,  # R5.5: a defence
        ((_lowest(hand) < current) & answering)[None],  # R5.5: a real sacrifice only
    ]
    return jnp.concatenate(blocks) | (phase == P_OVER)


# ---------------------------------------------------------------------------------------
# transitions (engine._apply_legal and the functions it calls)
# ---------------------------------------------------------------------------------------
def step(t: Tables, state: State, action: jax.Array, key: jax.Array, autoreset: bool = False) -> State:
    """Play `action` for the player to act (R4-R6); this step's rewards in `rewards`.

    pgx's policy: a game that is already over is returned unchanged with zero rewards; an
    illegal action (outside [0, N) or not in the mask) ends the game at once, -1 to the player
    who took it and +1 to the other, without applying it.

    With `autoreset`, pgx's `experimental.auto_reset(step, init)` in one step: the flags of the
    state passed in count as seen (a game shown with them set is the new game that the action
    plays); a game that ends in this step is replaced by `init` of a new game, keeping this
    step's rewards and flags. The key is split as pgx's wrapper splits it (the first half deals
    a new round, the second a new game), so both give the same games from the same keys; a new
    round and a new game never start in one step, so one shuffle serves both, and the split is
    computed inside it, for the dealing games only. A game that is
    over and was not replaced (passed in from `step`) is replaced without playing the action.
    """
    v, a = t.n_values, t.max_attack
    seats = jnp.arange(2, dtype=_I32)
    values = jnp.arange(v, dtype=_I32)
    slots = jnp.arange(a, dtype=_I32)
    player = state.current_player
    other = 1 - player
    mine = seats == player

    safe = jnp.clip(action, 0, t.n_actions - 1).astype(_I32)
    illegal = (action < 0) | (action >= t.n_actions) | ~state.legal_action_mask[safe]
    # with autoreset the flags passed in were seen: only a game whose play is over stays over
    over_before = (state.phase == P_OVER) if autoreset else (state.terminated | state.truncated)
    # one gather of the action's row of the codec tables (Tables.action_rows)
    row = jnp.asarray(t.action_rows)[safe]
    kind = jnp.where(over_before | illegal, _NO_MOVE, row[0])
    hand = xla.by_seat(state.hands, player)
    # R5.5: a sacrifice plays the lowest card
    card = jnp.where(kind == SACRIFICE, _lowest(hand), row[1])
    kind, card, row, illegal, over_before = xla.compute_once(
        (kind, card, row, illegal, over_before), state.rounds_played
    )
    is_replace, is_stop, is_duel = kind == REPLACE, kind == STOP, kind == DUEL
    is_attack, is_answer = kind == ATTACK, (kind == DEFEND) | (kind == SACRIFICE)
    one_card = (values == card).astype(_I32)
    leaving = jnp.where(is_attack, row[3 : 3 + v], jnp.where(is_replace | is_duel | is_answer, one_card, 0))
    hands = state.hands - jnp.where(mine[:, None], leaving[None, :], 0)
    set_aside = state.set_aside + jnp.where(mine[:, None] & is_replace, one_card[None, :], 0)
    discard = state.discard

    # -- stop replacing (engine._stop_replacing, _reveal_replacement; R4.1-R4.3) ----------
    left = state.replace_left - 1
    simultaneous = xla.lookup(t.arrows, state.space) == NONE
    wait = is_stop & simultaneous & (left > 0)  # R4.1: the first of two finished, nothing shown yet
    reveal = is_stop & ~wait  # the replacement(s) go face up, as many are drawn
    aside = jnp.stack([xla.total(state.set_aside[0]), xla.total(state.set_aside[1])])
    top = jnp.int32(t.deck_size) - state.pile_size
    low = top + jnp.stack([jnp.int32(0), aside[0]])  # player_0 draws first, then player_1
    drawn = _cards_ranked(t, state.rank, low, low + aside)
    hands = hands + jnp.where(reveal, drawn, 0)
    discard = discard + jnp.where(reveal, state.set_aside[0] + state.set_aside[1], 0)
    set_aside = jnp.where(reveal, 0, set_aside)
    pile_size = state.pile_size - jnp.where(reveal, aside[0] + aside[1], 0)
    first_of_two = ~simultaneous & (left > 0)
    cap = jnp.where(player == 0, aside[0], aside[1])  # R4.2: the second may replace at most as many
    to_second = reveal & first_of_two & (cap > 0)
    to_duel = reveal & ~to_second
    replaced = jnp.where(reveal & (simultaneous | mine), aside, state.replaced)
    replaced = jnp.where(to_duel & first_of_two & ~mine, 0, replaced)
    replace_left = jnp.where(wait | to_second, left, jnp.where(to_duel, 0, state.replace_left))
    replace_cap = jnp.where(to_second & ~mine, cap, state.replace_cap)

    # -- duel (engine._duel; R5.1, R5.2) ----------------------------------------------------
    duel = jnp.where(is_duel & mine, card, state.duel)
    shown = is_duel & (player == 1)  # both chose: reveal
    first, second = duel[0], duel[1]
    discard = discard + jnp.where(shown, _one_hot(first, v) + _one_hot(second, v), 0)
    last_duel = jnp.where(shown, duel, state.last_duel)
    duel = jnp.where(shown | to_duel, NONE, duel)
    duel_won = shown & (first != second)
    duel_attacker = jnp.where(first > second, 0, 1).astype(_I32)

    # -- attack (engine._attack; R5.3, R5.4) ------------------------------------------------
    attack = jnp.where(is_attack, row[3 + v :], state.attack)
    attack_len = jnp.where(is_attack, row[2], state.attack_len)
    answers = jnp.where(is_attack, NONE, state.answers)
    answers_len = jnp.where(is_attack, 0, state.answers_len)

    # -- answer (engine._answer; R5.5-R5.7) -------------------------------------------------
    answers = jnp.where(is_answer & (slots == answers_len), card, answers)
    answers_len = answers_len + is_answer
    trick_done = is_answer & (answers_len == attack_len)
    defended = xla.total(((slots < answers_len) & (answers < attack)).astype(_I32)) == 0
    trick_attacker = jnp.where(defended, player, other)
    on_table = slots < attack_len
    discard = discard + jnp.where(trick_done, _counts(attack, on_table, v) + _counts(answers, on_table, v), 0)
    attack = jnp.where(trick_done, NONE, attack)
    attack_len = jnp.where(trick_done, 0, attack_len)
    answers = jnp.where(trick_done, NONE, answers)
    answers_len = jnp.where(trick_done, 0, answers_len)

    attacker = jnp.where(duel_won, duel_attacker, jnp.where(trick_done, trick_attacker, state.attacker))
    phase = jnp.where(
        to_duel, P_DUEL, jnp.where(duel_won | trick_done, P_ATTACK, jnp.where(is_attack, P_ANSWER, state.phase))
    )
    to_act = jnp.select(
        [wait, to_second, to_duel | (shown & ~duel_won), is_duel & ~shown, duel_won, is_attack, trick_done],
        [jnp.int32(1), other, jnp.int32(0), jnp.int32(1), duel_attacker, other, trick_attacker],
        player,
    ).astype(_I32)

    hands, phase, duel, discard, to_act = xla.compute_once((hands, phase, duel, discard, to_act), state.rounds_played)

    # -- showdown (engine._showdown, _finish_round; R5.2, R5.7, R6.1-R6.4, R1.4, R1.5) -------
    # a revealed duel or a decided trick that leaves one card each goes to the showdown
    showdown = (
        ((phase == P_DUEL) | (phase == P_ATTACK))
        & (xla.total(hands[0]) == 1)
        & (xla.total(hands[1]) == 1)
        & (duel[0] == NONE)
    )
    last0, last1 = _lowest(hands[0]), _lowest(hands[1])
    discard = discard + jnp.where(showdown, _one_hot(last0, v) + _one_hot(last1, v), 0)
    hands = jnp.where(showdown, 0, hands)
    arrow = xla.lookup(t.arrows, state.space)
    tie = arrow if t.rules.config.tie_policy == "arrow_player_wins" else jnp.int32(NONE)
    round_winner = jnp.where(last0 < last1, 0, jnp.where(last1 < last0, 1, tie)).astype(_I32)
    rounds_played = state.rounds_played + showdown
    decisive = showdown & (round_winner != NONE)
    target = next_space(state.covered, state.space, round_winner)
    in_goal = decisive & ((target < 0) | (target >= t.n_spaces))
    out_of_rounds = showdown & ~in_goal & (rounds_played >= t.max_rounds)
    new_round = showdown & ~in_goal & ~out_of_rounds
    showdown, decisive, in_goal, out_of_rounds, new_round, round_winner, target = xla.compute_once(
        (showdown, decisive, in_goal, out_of_rounds, new_round, round_winner, target), state.rounds_played
    )
    phase = jnp.where(in_goal | out_of_rounds, P_OVER, phase)
    winner = jnp.where(in_goal, round_winner, state.winner)

    # -- rewards (engine.round_shaping + engine.returns, as the AEC env) -------------------
    for_winner = jnp.where(in_goal, t.win_reward, jnp.where(decisive, t.round_reward, jnp.float32(0)))
    paid = decisive & (for_winner != 0)  # zeros stay +0.0, as in the reference
    rewards = jnp.where(paid, jnp.where(seats == round_winner, 1, -1) * for_winner, jnp.float32(0))
    penalty = jnp.where(mine, jnp.float32(-1), jnp.float32(1))
    rewards = jnp.where(illegal & ~over_before, penalty, rewards).astype(jnp.float32)

    ended = phase == P_OVER
    # with autoreset, a game that was already over is simply replaced (its flags were seen)
    seen = jnp.bool_(not autoreset)
    terminated = jnp.where(over_before, state.terminated & seen, (ended & (winner != NONE)) | illegal)
    truncated = jnp.where(over_before, state.truncated & seen, ended & (winner == NONE))
    state = state.replace(
        _step_count=state._step_count + (kind != _NO_MOVE),
        rewards=rewards,
        terminated=terminated,
        truncated=truncated,
        current_player=to_act,
        space=jnp.where(decisive & ~in_goal, target, state.space).astype(_I32),
        covered=state.covered | (decisive & (jnp.arange(t.n_spaces) == state.space)),
        rounds_played=rounds_played,
        phase=phase,
        hands=hands,
        set_aside=set_aside,
        pile_size=pile_size,
        discard=discard,
        replace_left=replace_left,
        replace_cap=replace_cap,
        replaced=replaced,
        duel=duel,
        last_duel=last_duel,
        attacker=jnp.where(showdown, NONE, attacker),
        attack=attack,
        attack_len=attack_len,
        answers=answers,
        answers_len=answers_len,
        winner=winner,
        last_round_winner=jnp.where(showdown, jnp.where(decisive, round_winner, VOID), state.last_round_winner),
    )
    if not autoreset:
        state = _deal(t, state, new_round, jnp.bool_(False), key)
        return finish(t, state, terminated | truncated)
    restart = over_before | terminated | truncated
    state = _deal(t, state, new_round | restart, restart, key, half=restart.astype(_I32))
    return finish(t, state, jnp.bool_(False))


def finish(t: Tables, state: State, over: jax.Array) -> State:
    """The derived fields: the mask (all true once over) and the observation of the player to act."""
    state, over = xla.compute_once((state, over), state.rounds_played)
    state = state.replace(legal_action_mask=legal_mask(t, state) | over)
    return state.replace(observation=observe(t, state, state.current_player))


def next_space(covered: jax.Array, space: jax.Array, player: jax.Array) -> jax.Array:
    """engine.next_space (R6.3): one space towards `player`'s goal, skipping covered spaces;
    player_0's goal is -1, player_1's is S."""
    n = covered.shape[-1]
    # the nearest open space on each side
    towards_0 = xla.last_where(lambda i: ~covered[i] & (i < space), n, jnp.int32(-1))
    towards_1 = xla.first_where(lambda i: ~covered[i] & (i > space), n, jnp.int32(n))
    return jnp.where(player == 0, towards_0, towards_1).astype(_I32)


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

    hand, own_duel = xla.by_seat(state.hands, player), xla.by_seat(state.duel, player)
    own_set_aside = xla.by_seat(state.set_aside, player)
    own_aside = own_set_aside + (values == own_duel)
    index = jnp.arange(t.max_attack)
    on_table = index < state.attack_len
    answered = index < state.answers_len
    attack = _counts(state.attack, on_table, v)
    answers = _counts(state.answers, answered, v)
    failing = xla.total((answered & (state.answers < state.attack)).astype(_I32)) > 0
    current = jnp.where(phase == P_ANSWER, xla.lookup(state.attack, state.answers_len), NONE)
    arrow = xla.lookup(t.arrows, state.space)
    arrow_index = jnp.where(arrow == NONE, 2, jnp.where(arrow == player, 0, 1))
    role_index = jnp.where(arrow == NONE, 0, jnp.where(arrow == player, 1, 2))
    my_turn = (state.current_player == player) & ~over
    allowance = jnp.where(
        (phase == P_REPLACE) & my_turn, xla.by_seat(state.replace_cap, player) - xla.total(own_set_aside), 0
    )
    opp_size = (
        xla.total(xla.by_seat(state.hands, opp))
        + xla.total(xla.by_seat(state.set_aside, opp))
        + (xla.by_seat(state.duel, opp) != NONE)
    )
    my_size = xla.total(hand) + xla.total(own_set_aside) + (own_duel != NONE)
    # the board seen from my goal (observation._board_block)
    spaces = jnp.arange(t.n_spaces, dtype=_I32)
    ego = jnp.where(player == 0, spaces, t.n_spaces - 1 - spaces)
    tacocat = (ego == state.space) & ~over
    covered = jnp.where(player == 0, state.covered, state.covered[::-1])
    attacker_index = jnp.where(state.attacker == NONE, 2, jnp.where(state.attacker == player, 0, 1))
    f32 = jnp.float32
    parts = [
        hand,
        own_aside,
        state.discard,
        attack,
        answers,
        _one_hot(current, v),
        _one_hot(xla.by_seat(state.last_duel, player), v),
        _one_hot(xla.by_seat(state.last_duel, opp), v),
        failing[None],
        my_size[None],
        opp_size[None],
        state.pile_size[None],
        _one_hot(phase, 5),
        my_turn[None],
        allowance[None],
        jnp.maximum(xla.by_seat(state.replaced, player), 0)[None],
        jnp.maximum(xla.by_seat(state.replaced, opp), 0)[None],
        _one_hot(role_index, 3),
        tacocat,
        covered,
        moves_to_goal(state.covered, state.space, state.winner, player)[None],
        moves_to_goal(state.covered, state.space, state.winner, opp)[None],
        xla.lookup(t.board, state.space)[None],
        _one_hot(arrow_index, 3),
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
    moves = xla.total((beyond & ~covered).astype(_I32)) + 1
    return jnp.where(winner == NONE, moves, jnp.where(winner == player, 0, n + 1)).astype(_I32)
