"""Rendering of a game, one module per output: text (`text`: a spectator's `render_text`, a
player's `render_view`, events in words), one picture of the table (`scene`), drawn as SVG
(`svg`) or as an RGB image and animated GIFs of whole games (`raster`).

The picture is one description, a `Scene` (a list of shapes in pixels) built by
`scene.table_scene` from `TableFacts`: a player's side (`view_facts`, from the `PlayerView`
alone, R7.3) or a spectator's (`state_facts`: public facts, or both hands with `reveal`). The
web app (`tacocat serve`) draws it as SVG (`svg.scene_svg`), `render_mode="rgb_array"` and GIF
frames as an image (`raster.scene_image`, matplotlib's Agg canvas), so both show the same
board, cards, duel and trick. The shapes are drawn by the project's own two small writers
rather than by rasterising SVG: a rasteriser (cairosvg, resvg) would add a native dependency to
the core package for what matplotlib, already a dependency, draws from the same shapes.
"""
