"""Pictures of graphs as SVG, drawn here with no renderer installed.

``force_layout`` places nodes with a deterministic force-directed layout in numpy
(Fruchterman and Reingold, started from a circle, so the same graph always gets the same
picture); ``row_layout`` puts a path's nodes left to right; ``graph_svg`` draws nodes,
labelled edges and a legend of node kinds.
"""

import html
import math

import numpy as np

# Colours of node kinds, in the order kinds first appear (Tableau 10)
PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
)
MAX_LABEL = 24
# Pull towards the centre: strong enough that nodes without links stay among the others
# instead of at the rim (measured on sample-corpus subgraphs: nearest neighbours about
# 70 px apart on a 720 x 480 picture, against 16 px with a tenth of it)
GRAVITY = 4.0
# A white outline under text keeps labels readable where lines cross them
HALO = ' stroke="white" stroke-width="3" paint-order="stroke"'


def force_layout(count, links, iterations=150):
    """Positions in the unit square for ``count`` nodes joined by ``links`` (index pairs).

    Nodes repel each other, links pull their ends together and a weak pull to the centre
    keeps unconnected parts in view. The result is an array of shape ``(count, 2)``.
    """
    if count == 0:
        return np.zeros((0, 2))
    if count == 1:
        return np.array([[0.5, 0.5]])
    angles = 2 * math.pi * np.arange(count) / count
    pos = 0.5 + 0.4 * np.column_stack([np.cos(angles), np.sin(angles)])
    ideal = 1 / math.sqrt(count)
    links = np.array([(a, b) for a, b in links if a != b], dtype=int).reshape(-1, 2)
    for step in range(iterations):
        delta = pos[:, None, :] - pos[None, :, :]
        distance = np.maximum(np.linalg.norm(delta, axis=2), 0.01)
        np.fill_diagonal(distance, np.inf)
        move = (delta / distance[:, :, None] * (ideal**2 / distance)[:, :, None]).sum(axis=1)
        if len(links):
            along = pos[links[:, 0]] - pos[links[:, 1]]
            length = np.maximum(np.linalg.norm(along, axis=1), 0.01)
            pull = along * (length / ideal)[:, None]
            np.add.at(move, links[:, 0], -pull)
            np.add.at(move, links[:, 1], pull)
        move += (0.5 - pos) * GRAVITY
        size = np.maximum(np.linalg.norm(move, axis=1), 1e-9)
        temperature = 0.1 * (1 - step / iterations)
        pos = pos + move / size[:, None] * np.minimum(size, temperature)[:, None]
    low, high = pos.min(axis=0), pos.max(axis=0)
    span = np.where(high - low > 1e-9, high - low, 1.0)
    return (pos - low) / span


def row_layout(count):
    """Positions of ``count`` nodes in a row, left to right, in the unit square."""
    if count == 1:
        return np.array([[0.5, 0.5]])
    return np.column_stack([np.arange(count) / max(count - 1, 1), np.full(count, 0.5)])


def _esc(text):
    return html.escape(str(text), quote=True)


def _short(text):
    text = str(text)
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


def _number(value):
    return f"{value:.1f}".rstrip("0").rstrip(".")


def graph_svg(nodes, edges, positions, width=720, height=480, margin=70, message=None):
    """SVG text of a graph.

    ``nodes``: dicts with ``id``, ``label`` (shown), ``kind`` (coloured, in the legend),
    optional ``title`` (tooltip) and ``size`` (0 to 1). ``edges``: dicts with ``source``,
    ``target`` (node ids) and ``label``; edges between the same two nodes are drawn as one
    line with their labels joined, with an arrow when they all point the same way.
    ``positions``: one ``(x, y)`` in the unit square per node. ``message``: text drawn in
    the middle instead of a graph when there are no nodes.
    """
    index = {node["id"]: i for i, node in enumerate(nodes)}
    xy = [
        (margin + x * (width - 2 * margin), margin + y * (height - 2 * margin))
        for x, y in (positions if len(nodes) else [])
    ]
    kinds = list(dict.fromkeys(node.get("kind") or "" for node in nodes))
    colour = {kind: PALETTE[i % len(PALETTE)] for i, kind in enumerate(kinds)}
    radius = [6 + 8 * min(max(node.get("size", 0.5), 0), 1) for node in nodes]
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#888"/></marker></defs>',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    pairs = {}
    for edge in edges:
        a, b = index.get(edge["source"]), index.get(edge["target"])
        if a is None or b is None or a == b:
            continue
        pairs.setdefault((min(a, b), max(a, b)), []).append((a, b, edge.get("label") or ""))
    for (a, b), group in pairs.items():
        directions = {(s, t) for s, t, _ in group}
        s, t = group[0][:2] if len(directions) == 1 else (a, b)
        (x1, y1), (x2, y2) = xy[s], xy[t]
        length = math.hypot(x2 - x1, y2 - y1) or 1.0
        ux, uy = (x2 - x1) / length, (y2 - y1) / length
        start = (x1 + ux * radius[s], y1 + uy * radius[s])
        end = (x2 - ux * (radius[t] + 2), y2 - uy * (radius[t] + 2))
        arrow = ' marker-end="url(#arrow)"' if len(directions) == 1 else ""
        label = ", ".join(dict.fromkeys(label for _, _, label in group if label))
        out.append(
            f'<line x1="{_number(start[0])}" y1="{_number(start[1])}" x2="{_number(end[0])}" '
            f'y2="{_number(end[1])}" stroke="#999" stroke-width="1.2"{arrow}>'
            f"<title>{_esc(label)}</title></line>"
        )
        if label:
            out.append(
                f'<text x="{_number((x1 + x2) / 2)}" y="{_number((y1 + y2) / 2 - 3)}" '
                f'text-anchor="middle" fill="#666" font-size="9"{HALO}>{_esc(_short(label))}</text>'
            )
    for i, node in enumerate(nodes):
        x, y = xy[i]
        title = node.get("title") or node["label"]
        out.append(
            f'<g class="node"><title>{_esc(title)}</title><circle cx="{_number(x)}" cy="{_number(y)}" '
            f'r="{_number(radius[i])}" fill="{colour[node.get("kind") or ""]}" stroke="white"/>'
            f'<text x="{_number(x)}" y="{_number(y + radius[i] + 12)}" text-anchor="middle"{HALO}>'
            f"{_esc(_short(node['label']))}</text></g>"
        )
    legend = [
        f'<circle cx="12" cy="{14 + 16 * i}" r="5" fill="{colour[kind]}"/>'
        f'<text x="22" y="{18 + 16 * i}" fill="#444">{_esc(kind)}</text>'
        for i, kind in enumerate(kinds)
        if kind
    ]
    if legend:
        out.append('<g class="legend">' + "".join(legend) + "</g>")
    if not nodes and message:
        out.append(
            f'<text x="{width // 2}" y="{height // 2}" text-anchor="middle" fill="#666">'
            f"{_esc(message)}</text>"
        )
    out.append("</svg>")
    return "\n".join(out)
