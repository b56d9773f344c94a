"""The picture of the table as SVG: `scene_svg` draws a `Scene`, `render_svg` a game's table (the
web page's picture)."""

from __future__ import annotations

from xml.sax.saxutils import escape

from tacocat.game.render.scene import Circle, Polygon, Rect, Scene, narrow_scene, table_facts, table_scene
from tacocat.game.state import GameState
from tacocat.game.view import PlayerView


def _attr(value: object) -> str:
    return escape(str(value), {'"': "&quot;"})


def scene_svg(scene: Scene) -> str:
    """The scene as an SVG document (a string; text escaped, classes from the tags)."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {scene.width:g} {scene.height:g}" '
        f'width="{scene.width:g}" height="{scene.height:g}" font-family="DejaVu Sans, Verdana, sans-serif" '
        f'role="img" aria-label="{_attr(scene.summary or "the Tacocat table")}">',
        f"<title>{escape(scene.summary or 'the Tacocat table')}</title>",
        f'<rect width="100%" height="100%" fill="{scene.background}"/>',
    ]
    for shape in scene.shapes:
        cls = f' class="{_attr(shape.tag)}"' if shape.tag else ""
        if isinstance(shape, Rect):
            rounded = f' rx="{shape.radius:.1f}"' if shape.radius else ""
            out.append(
                f'<rect{cls} x="{shape.x:.1f}" y="{shape.y:.1f}" width="{shape.w:.1f}" height="{shape.h:.1f}"'
                f'{rounded} fill="{shape.fill}" stroke="{shape.stroke}"/>'
            )
        elif isinstance(shape, Circle):
            out.append(
                f'<circle{cls} cx="{shape.cx:.1f}" cy="{shape.cy:.1f}" r="{shape.r:.1f}" fill="{shape.fill}" '
                f'stroke="{shape.stroke}"/>'
            )
        elif isinstance(shape, Polygon):
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in shape.points)
            out.append(f'<polygon{cls} points="{points}" fill="{shape.fill}" stroke="{shape.stroke}"/>')
        else:
            weight = ' font-weight="bold"' if shape.bold else ""
            out.append(
                f'<text{cls} x="{shape.x:.1f}" y="{shape.y:.1f}" font-size="{shape.size:.1f}" '
                f'text-anchor="{shape.anchor}" dominant-baseline="central" fill="{shape.fill}"{weight}>'
                f"{escape(shape.text)}</text>"
            )
    out.append("</svg>")
    return "".join(out)


def render_svg(
    subject: GameState | PlayerView, reveal: bool = False, names: tuple[str, str] | None = None, narrow: bool = False
) -> str:
    """The table as SVG: a `PlayerView` from that player's side, a `GameState` as a spectator
    sees it (public facts; `reveal=True`: both hands, for finished games and agent-only ones);
    `narrow`: the stacked picture for narrow screens."""
    facts = table_facts(subject, reveal, names)
    return scene_svg(narrow_scene(facts) if narrow else table_scene(facts))
