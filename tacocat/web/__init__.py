"""Tacocat in the browser: `tacocat serve` (the `web` extra: Starlette and uvicorn).

Play against any agent, watch two agents, replay a game file; the table is the picture of
`tacocat.game.render` (the same scene as the `rgb_array` frames), drawn as SVG. `games` holds
the games and what each viewer may be sent (a player only their `PlayerView`, R7.3), `app`
the JSON API and the page, `server` uvicorn. Nothing in `agents` or `tacocat` imports
this package. docs/WEB.md describes the app and its API.
"""
