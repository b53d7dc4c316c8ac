"""bustle-view: pictures (PNG/SVG) and a live page of a Bustle city."""
