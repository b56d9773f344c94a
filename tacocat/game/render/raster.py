"""The picture of the table as an RGB image (`scene_image`, `render_image`: `rgb_array` and GIF
frames, matplotlib's Agg canvas) and animated GIFs of whole games (`save_gif`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np

from tacocat.game.render.scene import Circle, Label, Rect, Scene, table_facts, table_scene
from tacocat.game.state import GameState
from tacocat.game.view import PlayerView

if TYPE_CHECKING:
    from matplotlib.transforms import Transform

_HA: dict[str, Literal["left", "center", "right"]] = {"start": "left", "middle": "center", "end": "right"}


class _Common(TypedDict):
    """What every artist of a scene is drawn with."""

    transform: Transform
    zorder: int


class _Style(_Common):
    """What every shape but a label is drawn with."""

    facecolor: str
    edgecolor: str
    linewidth: float


def scene_image(scene: Scene, width: int | None = None, height: int | None = None) -> np.ndarray:
    """The scene as an RGB image, shape (height, width, 3), uint8: drawn with matplotlib's Agg
    canvas (no pyplot, no display), scaled to fit `width` x `height` pixels and centred
    (default: the scene's own size; one of them given: the other follows the scene's aspect)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle as CirclePatch
    from matplotlib.patches import FancyBboxPatch, Patch, Rectangle
    from matplotlib.patches import Polygon as PolygonPatch
    from matplotlib.text import Text

    if width is None:
        if height is None:
            width, height = round(scene.width), round(scene.height)
        else:
            width = round(scene.width * height / scene.height)
    elif height is None:
        height = round(scene.height * width / scene.width)
    scale = min(width / scene.width, height / scene.height)
    dpi = 100
    fig = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, facecolor=scene.background)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))  # only for its transform from scene pixels to the image
    pad_x, pad_y = (width / scale - scene.width) / 2, (height / scale - scene.height) / 2
    ax.set_xlim(-pad_x, scene.width + pad_x)
    ax.set_ylim(scene.height + pad_y, -pad_y)  # y grows downwards, as in the SVG
    ax.axis("off")
    # the shapes are the figure's own artists, in the scene's order (one z-order: the order they
    # are added in), unclipped: the axes' limit and clipping bookkeeping cost most of a frame
    common: _Common = {"transform": ax.transData, "zorder": 1}
    points = 72 / dpi * scale  # a size in scene pixels, in points
    for shape in scene.shapes:
        if isinstance(shape, Label):
            fig.add_artist(
                Text(
                    shape.x,
                    shape.y,
                    shape.text,
                    ha=_HA[shape.anchor],
                    va="center_baseline",
                    color=shape.fill,
                    fontsize=shape.size * points,
                    fontweight="bold" if shape.bold else "normal",
                    **common,
                )
            )
            continue
        style: _Style = {
            "facecolor": shape.fill,
            "edgecolor": "none" if shape.stroke == "none" else shape.stroke,
            "linewidth": 0.8 * scale,
            **common,
        }
        patch: Patch
        if isinstance(shape, Rect) and shape.radius:
            patch = FancyBboxPatch(
                (shape.x, shape.y), shape.w, shape.h, boxstyle=f"round,pad=0,rounding_size={shape.radius}", **style
            )
        elif isinstance(shape, Rect):
            patch = Rectangle((shape.x, shape.y), shape.w, shape.h, **style)
        elif isinstance(shape, Circle):
            patch = CirclePatch((shape.cx, shape.cy), shape.r, **style)
        else:
            patch = PolygonPatch(shape.points, closed=True, **style)
        fig.add_artist(patch)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[:, :, :3].copy()


def render_image(
    state: GameState | PlayerView,
    width: int | None = 800,
    height: int | None = 280,
    *,
    reveal: bool = False,
    names: tuple[str, str] | None = None,
) -> np.ndarray:
    """The table as an RGB image, shape (height, width, 3), dtype uint8: the same picture as
    `render_svg` (one `Scene`), for `rgb_array` and GIF frames (None, None: the picture's own
    1120 x 392). A `GameState` is drawn as a spectator sees it (no hidden cards) unless
    `reveal`; a `PlayerView` from its player's side."""
    return scene_image(table_scene(table_facts(state, reveal, names)), width, height)


def save_gif(frames: Iterable[np.ndarray], path: str | Path, seconds_per_frame: float = 0.8) -> Path:
    """Write RGB frames (as from `render_image`) as an animated GIF that loops; returns the path."""
    from PIL import Image

    images = [Image.fromarray(frame) for frame in frames]
    if not images:
        raise ValueError("no frames to write")
    path = Path(path)
    images[0].save(path, save_all=True, append_images=images[1:], duration=int(seconds_per_frame * 1000), loop=0)
    return path
