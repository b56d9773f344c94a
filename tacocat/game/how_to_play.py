"""How to play, written once for people: the web page's "How to play" panel and the terminal's
`?` both show `SECTIONS` (`as_text` for the terminal), and each group of moves is explained
where it is offered (`MOVE_GROUPS`, keyed by the group's name in the action codec: "replace",
"duel", "attack", "answer"). The rule numbers (R...) are those of the rules reference
(docs/RULES.md); the text describes the default rules (R1)."""

from __future__ import annotations

import textwrap

from tacocat.game.engine import new_game
from tacocat.game.render.text import BOARD_KEY, board_line

#: one line per group of moves, shown under its buttons (web) or above the moves (terminal)
MOVE_GROUPS: dict[str, str] = {
    "replace": (
        "Replace: discard cards one at a time to draw as many new ones, then stop. On a space with "
        "two arrows both players replace, unseen by each other; on a one-arrow space the player the "
        "arrow points at replaces first and the other may replace at most as many (R4)."
    ),
    "duel": (
        "Duel: both choose a card face down; the higher card attacks first, a tie duels again. "
        "Both duel cards are discarded (R5.1, R5.2)."
    ),
    "attack": (
        "Attack: a single card, a set (two or more cards of one value) or a sequence (three or more "
        "consecutive values). Keep at least one card for the showdown (R5.3, R5.4)."
    ),
    "answer": (
        "Answer each attack card, highest first: defend with an equal or higher card, or sacrifice "
        "(play your lowest card). Defend them all and you attack next; fail once and the attacker "
        "attacks again (R5.5, R5.6)."
    ),
}


def _example_boards() -> tuple[str, str]:
    """The default board at the start of a game, and after player_0 wins the first round."""
    start = new_game(None, 0)
    after = new_game(None, 0)
    after.covered[after.space] = True
    after.space -= 1
    return board_line(start), board_line(after)


_START, _AFTER = _example_boards()

#: (title, paragraphs); a paragraph starting with four spaces is drawn as is (monospace)
SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Goal",
        (
            "Two players, one Tacocat token. Bring the Tacocat into your own goal: player_0's goal is "
            "at the left end of the board (P0 GOAL), player_1's at the right (P1 GOAL). Between them "
            "lie seven spaces, numbered 1 to 7 from the left and lettered T A C O C A T; the number "
            "under the letter is how many cards each player is dealt while the Tacocat stands there "
            "(R0.1, R0.2).",
            "Each round you win moves the Tacocat one space towards your goal, and the space it left "
            "is covered by a tile: a covered space is never entered again, the Tacocat skips it "
            "(R6.3). The Tacocat starts on space 4 (O).",
        ),
    ),
    (
        "A round, phase by phase",
        (
            "1. Deal: both players get as many cards as the Tacocat's space shows (R2.2).",
            "2. Replace: discard cards to draw new ones. The arrows of the space say who replaces: "
            "two arrows, both players, unseen by each other; one arrow, the player it points at "
            "first, then the other at most as many (R4).",
            "3. Duel: both choose a card face down and reveal; the higher card attacks first. A tie: "
            "duel again (R5.1, R5.2).",
            "4. Play: attacks and answers until each player holds one card; none when the duel left "
            "each player one card (R5.2-R5.7).",
            "5. Showdown: both reveal their last card. The LOWER card wins the round (R6.1).",
            "6. The winner moves the Tacocat one space towards their goal; a tile covers the space it "
            "left. A new round is dealt on the new space, until the Tacocat enters a goal (R6.3, R6.4).",
        ),
    ),
    (
        "What wins a round",
        (
            "The lower last card wins. High cards win duels and tricks, but the round is decided by "
            "the card you keep to the end: keep a low one, and make the opponent spend theirs.",
            "Equal last cards: the round is void. The Tacocat stays, no tile is placed, and the round "
            "is dealt again on the same space (R6.2).",
        ),
    ),
    (
        "Attacks and answers",
        (
            "An attack is a single card, a set (two or more cards of the same value) or a sequence "
            "(three or more cards of consecutive values, one of each). It must leave the attacker at "
            "least one card (R5.3, R5.4).",
            "The defender answers each attack card, highest first, with one card: a defence is any "
            "card of equal or higher value; a sacrifice is the defender's lowest card, played when "
            'they cannot or will not defend. The history says "fails to defend" for an answer '
            "lower than its attack card (R5.5).",
            "If every answer defends, the defender takes the trick and attacks next; if even one "
            "fails, the attacker attacks again. Every card played is discarded face up (R5.6, R5.7).",
        ),
    ),
    (
        "An example",
        (
            "The start of a game (" + BOARD_KEY.strip("()") + "):",
            "    " + _START,
            "You are player_0 and hold 2 3 5 5 9 11 12; the opponent holds 1 4 6 7 8 10 10. Nobody "
            "replaces. Duel: your 12 beats their 10, so you attack. You attack with the set 5 5; they "
            "defend with 6 and 7, take the trick and attack with 10; you defend with 11 and attack "
            "with 9. They cannot beat it: they sacrifice their lowest card, the 1, and you attack "
            "again, with 3. They defend with 8. One card each: your 2 against their 4. The lower card "
            "wins: the round is yours, and the Tacocat moves from space 4 (O) to space 3 (C), "
            "towards your goal; a tile covers space 4:",
            "    " + _AFTER,
        ),
    ),
    (
        "Words on the table",
        (
            "Arrow: points at the player who replaces first; two arrows, both replace at once "
            "(R1.3). Goal: a player's end of the board. Covered: a space with a tile. Void: a round "
            "with equal last cards, dealt again. Set aside: cards you discard in the replace step, "
            "replaced once you stop. Face up: every card played this round.",
        ),
    ),
)


def as_text(width: int = 78) -> str:
    """The how-to-play text for a terminal: sections with underlined titles, paragraphs wrapped
    to `width` columns (drawings as they are)."""
    out: list[str] = ["HOW TO PLAY TACOCAT SPELLED BACKWARDS"]
    for title, paragraphs in SECTIONS:
        out += ["", title, "-" * len(title)]
        for paragraph in paragraphs:
            if paragraph.startswith("    "):  # a drawing
                out.append(paragraph)
            else:  # a numbered line's continuation is indented under its text
                out += textwrap.wrap(paragraph, width, subsequent_indent="   " if paragraph[0].isdigit() else "")
    return "\n".join(out)
