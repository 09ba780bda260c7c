"""Tool results that show themselves in Jupyter.

Each result is the tool's JSON, a ``dict`` left as the tool returned it, with
``_repr_html_`` (a table) or ``_repr_svg_`` (a picture drawn offline) and
``to_pandas()``, which needs pandas (``pip install 'datasette-graphrag[notebook]'``).
"""

import html

from .drawing import force_layout, graph_svg, row_layout


def _pandas():
    try:
        import pandas
    except ImportError as ex:
        raise ImportError(
            "to_pandas() needs pandas: pip install pandas "
            "(or pip install 'datasette-graphrag[notebook]')"
        ) from ex
    return pandas


def _cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


class Table:
    """Rows with named columns: an HTML table in Jupyter, a DataFrame with ``to_pandas``."""

    def __init__(self, columns, rows, caption=None):
        self.columns = list(columns)
        self.rows = [list(row) for row in rows]
        self.caption = caption

    @classmethod
    def from_dicts(cls, dicts, columns=None, caption=None):
        dicts = list(dicts)
        columns = columns or list(dict.fromkeys(key for d in dicts for key in d))
        return cls(columns, [[d.get(c) for c in columns] for d in dicts], caption)

    def to_dicts(self):
        return [dict(zip(self.columns, row)) for row in self.rows]

    def to_pandas(self):
        return _pandas().DataFrame(self.rows, columns=self.columns)

    def _repr_html_(self):
        parts = ["<table>"]
        if self.caption:
            parts.append(f"<caption>{html.escape(self.caption)}</caption>")
        parts.append(
            "<thead><tr>"
            + "".join(f"<th>{html.escape(str(c))}</th>" for c in self.columns)
            + "</tr></thead><tbody>"
        )
        for row in self.rows:
            parts.append(
                "<tr>" + "".join(f"<td>{html.escape(_cell(v))}</td>" for v in row) + "</tr>"
            )
        parts.append("</tbody></table>")
        return "".join(parts)

    def __len__(self):
        return len(self.rows)

    def __repr__(self):
        return f"<Table {len(self.rows)} rows: {', '.join(self.columns)}>"


class Result(dict):
    """A tool's JSON. Subclasses say how it becomes a table (``table``)."""

    def table(self):
        raise NotImplementedError

    def _repr_html_(self):
        return self.table()._repr_html_()

    def to_pandas(self):
        return self.table().to_pandas()


class QueryResult(Result):
    """``hybrid_query``: ranked chunks with their explanations."""

    def table(self):
        rows = [
            dict(chunk, rank=rank, why=why)
            for rank, (chunk, why) in enumerate(zip(self["chunks"], self["explanations"]), 1)
        ]
        columns = ["rank", "score", "path", "section", "snippet", "why"]
        return Table.from_dicts(rows, columns, caption=f"{len(rows)} chunks ({self.get('mode')})")

    def to_pandas(self):
        rows = [
            dict(chunk, explanation=why)
            for chunk, why in zip(self["chunks"], self["explanations"])
        ]
        return Table.from_dicts(rows).to_pandas()


class EntityList(Result):
    """``entity_lookup``: entities best first."""

    def table(self):
        return Table.from_dicts(
            self["entities"], ["id", "name", "type", "aliases", "popularity", "score"]
        )


class Explanation(Result):
    """``explain_entity``: an entity, its definition, relations and sources."""

    def table(self):
        """The relations, nearest and strongest first."""
        return Table.from_dicts(
            self["relations"],
            ["src_name", "rel", "dst_name", "weight", "confidence", "distance", "fact"],
            caption="Relations",
        )

    def _repr_html_(self):
        e = self["entity"]
        esc = html.escape
        parts = [
            f"<h4>{esc(e['name'])}</h4>",
            f"<p>{esc(e['type'])} · entity {e['id']} · {e['popularity']} mentions</p>",
        ]
        if self["definition"]:
            parts.append(f"<p><b>Definition:</b> {esc(self['definition'])}</p>")
        if self["aliases"]:
            parts.append(f"<p><b>Aliases:</b> {esc(', '.join(self['aliases']))}</p>")
        if self["relations"]:
            parts.append(self.table()._repr_html_())
        if self["sources"]:
            parts.append(
                Table.from_dicts(
                    self["sources"],
                    ["confidence", "mentions", "path", "chunk_id", "snippet"],
                    caption="Sources",
                )._repr_html_()
            )
        return "".join(parts)


def _graph_node(node, size=None):
    """A subgraph or path node as ``graph_svg`` draws it."""
    if node["label"] == "Doc":
        name = node.get("title") or node.get("path") or node["id"]
        return {"id": node["id"], "label": name, "kind": "document", "size": 1.0,
                "title": f"{name} ({node['id']})"}
    name = str(node["id"]).split(":", 1)[-1]
    suffix = f"#{node.get('entity_id')}"
    if name.endswith(suffix):
        name = name[: -len(suffix)]
    return {
        "id": node["id"],
        "label": name,
        "kind": node.get("type") or "entity",
        "size": node.get("salience", 0.5) if size is None else size,
        "title": f"{name} ({node.get('type')}, entity {node.get('entity_id')})",
    }


class Subgraph(Result):
    """``subgraph``: drawn as a picture; ``to_pandas`` gives its edges."""

    def table(self):
        return Table.from_dicts(self["edges"], ["source", "type", "target", "weight"])

    def svg(self, width=720, height=480):
        nodes = [_graph_node(n) for n in self["nodes"]]
        index = {n["id"]: i for i, n in enumerate(nodes)}
        links = [
            (index[e["source"]], index[e["target"]])
            for e in self["edges"]
            if e["source"] in index and e["target"] in index
        ]
        edges = [dict(e, label=e["type"]) for e in self["edges"]]
        return graph_svg(
            nodes, edges, force_layout(len(nodes), links), width, height,
            message="No entities found",
        )

    def _repr_svg_(self):
        return self.svg()

    _repr_html_ = None  # the picture, not a table

    def mermaid(self):
        from .evidence import mermaid

        return mermaid(self)


class GraphPath(Result):
    """``path``: drawn left to right; ``to_pandas`` gives its edges."""

    def table(self):
        return Table.from_dicts(self["edges"], ["source", "type", "target", "weight", "fact"])

    def svg(self):
        nodes = [_graph_node(n, size=0.5) for n in self["path"]]
        edges = [dict(e, label=f"{e['type']} ({e['weight']:.2f})") for e in self["edges"]]
        width = max(2, len(nodes)) * 170
        message = f"No path within {self['meta']['max_length']} hops"
        return graph_svg(nodes, edges, row_layout(len(nodes)), width, 120, 60, message=message)

    def _repr_svg_(self):
        return self.svg()

    _repr_html_ = None

    def mermaid(self):
        from .evidence import mermaid

        return mermaid(self)


class ResearchResult(Result):
    """``deep_research`` (seed 000): ranked results from every sub-query."""

    def table(self):
        return Table.from_dicts(
            self["results"], ["score", "name", "source", "hop_distance", "sub_query_ids", "snippet"],
            caption=self.get("query"),
        )


class TopDocuments(Result):
    """``topn``: documents with their scores and reasons."""

    def table(self):
        rows = [dict(item, rank=rank) for rank, item in enumerate(self["items"], 1)]
        return Table.from_dicts(
            rows, ["rank", "score", "title", "path", "updated_at", "reasons"]
        )


class Status(Result):
    """``status``: row counts per table, the model and the last ingest."""

    def table(self):
        return Table(["table", "rows"], list(self["counts"].items()), caption="Rows per table")

    def _repr_html_(self):
        last = self["last_ingest"] or {}
        error = self["last_error"]
        about = Table(
            ["setting", "value"],
            [
                ("embedding model", self["embedding_model"]),
                ("dimensions", self["dimensions"]),
                ("schema version", self["schema_version"]),
                ("last ingest", last.get("finished_at")),
                ("last file", self["last_file"]),
                ("last error", error and f"{error['path']}: {error['error']}"),
            ],
        )
        return self.table()._repr_html_() + about._repr_html_()


class IngestResult(Result):
    """``ingest_docs``: what an ingest did, and the files it could not read."""

    def table(self):
        counts = {k: v for k, v in self.items() if not isinstance(v, (list, dict))}
        counts.update(self.get("extraction") or {})
        return Table(["", "count"], list(counts.items()))

    def _repr_html_(self):
        html_ = self.table()._repr_html_()
        if self["errors"]:
            html_ += Table.from_dicts(self["errors"], ["path", "error"], "Errors")._repr_html_()
        return html_


class EvalReport(Result):
    """``run_eval``: recall per mode and cut-off; ``plot`` draws R@k for each mode."""

    def table(self):
        rows = []
        for mode, result in self["modes"].items():
            row = {"mode": mode}
            for k, recall in result["recall"].items():
                row[f"R@{k} any"] = recall["any"]
                row[f"R@{k} both"] = recall["both"]
            row["p50 ms"] = result["latency_ms"]["p50"]
            row["p95 ms"] = result["latency_ms"]["p95"]
            rows.append(row)
        caption = f"{self['queries']} questions over {self['corpus']} texts"
        return Table.from_dicts(rows, caption=caption)

    def recall_rows(self):
        """One row per mode and k: ``{"mode", "k", "any", "both"}``."""
        return [
            {"mode": mode, "k": int(k), "any": recall["any"], "both": recall["both"]}
            for mode, result in self["modes"].items()
            for k, recall in result["recall"].items()
        ]

    def to_pandas(self):
        return Table.from_dicts(self.recall_rows()).to_pandas()

    def plot(self, axes=None, title=None):
        """R@k any and R@k both against k, one line per mode (matplotlib); returns the axes."""
        import matplotlib.pyplot as plt

        if axes is None:
            _, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
        rows = self.recall_rows()
        for ax, which in zip(axes, ("any", "both")):
            for mode in self["modes"]:
                points = [(r["k"], r[which]) for r in rows if r["mode"] == mode]
                ax.plot(*zip(*points), marker="o", label=mode)
            ax.set_xlabel("k")
            ax.set_title(f"R@k {which}" if title is None else f"{title}: R@k {which}")
            ax.set_ylim(0, 1)
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("recall")
        axes[0].legend(title="mode")
        return axes
