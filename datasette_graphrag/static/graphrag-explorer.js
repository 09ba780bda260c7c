/* datasette-graphrag graph explorer: search entities, expand neighbours, read the evidence.
 *
 * Plain JavaScript and SVG with a small force layout; data comes from the
 * /<database>/-/graphrag/<tool> JSON endpoints (entity_lookup, explain_entity, subgraph).
 */
(function () {
  "use strict";

  var SVG_NS = "http://www.w3.org/2000/svg";
  var GOLDEN_ANGLE = Math.PI * (3 - Math.sqrt(5));
  // Relations found by co-occurrence in a sentence, not by a typed pattern
  var COOCCURRENCE = "related_to";
  // Where a node's label may go, tried in order: right, left, above, below
  var LABEL_SPOTS = [
    { x: 15, y: 4, anchor: "start" },
    { x: -15, y: 4, anchor: "end" },
    { x: 0, y: -16, anchor: "middle" },
    { x: 0, y: 24, anchor: "middle" }
  ];

  /* DOM helpers ------------------------------------------------------------ */

  function h(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }

  function s(tag, attrs) {
    var node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }

  function setAttrs(node, attrs) {
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === null || value === undefined || value === false) return;
      if (key === "text") node.textContent = value;
      else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value);
    });
  }

  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
    else node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }

  function truncate(text, length) {
    return text.length > length ? text.slice(0, length - 1) + "\u2026" : text;
  }

  // Distinct colours, given to entity types in the order they appear (then reused)
  var PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2",
    "#edc948", "#ff9da7", "#9c755f", "#2f4b7c", "#a05195", "#bab0ac"];
  var typeColours = {};

  function typeColour(type) {
    if (!type) return "#b9bcc4";
    if (!(type in typeColours)) {
      typeColours[type] = PALETTE[Object.keys(typeColours).length % PALETTE.length];
    }
    return typeColours[type];
  }

  function fixed(value) {
    return typeof value === "number" ? value.toFixed(2) : "";
  }

  /* Force layout ----------------------------------------------------------- */

  function ForceLayout(onTick, onEnd) {
    this.alpha = 0;
    this.running = false;
    this.onTick = onTick;
    this.onEnd = onEnd;
  }

  ForceLayout.prototype.heat = function (alpha) {
    this.alpha = Math.max(this.alpha, alpha);
    if (!this.running) {
      this.running = true;
      window.requestAnimationFrame(this.frame.bind(this));
    }
  };

  ForceLayout.prototype.frame = function () {
    if (this.alpha < 0.02) {
      this.running = false;
      if (this.onEnd) this.onEnd();
      return;
    }
    this.onTick(this.alpha);
    this.alpha *= 0.97;
    window.requestAnimationFrame(this.frame.bind(this));
  };

  /* One step: node repulsion, edge springs, a pull to the centre, damping. The pull is
   * weaker across the longer side of the canvas, so the graph takes the canvas's shape. */
  ForceLayout.step = function (nodes, edges, centre, alpha) {
    var aspect = centre.x / centre.y || 1;
    var pullX = 0.006 * alpha * Math.min(1, 1 / aspect);
    var pullY = 0.006 * alpha * Math.min(1, aspect);
    var i, j, a, b, dx, dy, d2, d, f;
    for (i = 0; i < nodes.length; i++) {
      a = nodes[i];
      for (j = i + 1; j < nodes.length; j++) {
        b = nodes[j];
        dx = b.x - a.x;
        dy = b.y - a.y;
        d2 = dx * dx + dy * dy;
        if (d2 > 360000) continue;
        if (d2 < 1) { dx = 1; dy = (i - j) % 2; d2 = dx * dx + dy * dy; }
        d = Math.sqrt(d2);
        f = (2400 / d2) * alpha;
        a.vx -= (dx / d) * f; a.vy -= (dy / d) * f;
        b.vx += (dx / d) * f; b.vy += (dy / d) * f;
      }
    }
    edges.forEach(function (e) {
      dx = e.target.x - e.source.x;
      dy = e.target.y - e.source.y;
      d = Math.sqrt(dx * dx + dy * dy) || 1;
      f = (d - 130) * 0.04 * alpha;
      e.source.vx += (dx / d) * f; e.source.vy += (dy / d) * f;
      e.target.vx -= (dx / d) * f; e.target.vy -= (dy / d) * f;
    });
    nodes.forEach(function (n) {
      if (n.fx !== null) {
        n.x = n.fx; n.y = n.fy; n.vx = 0; n.vy = 0;
        return;
      }
      n.vx = (n.vx + (centre.x - n.x) * pullX) * 0.6;
      n.vy = (n.vy + (centre.y - n.y) * pullY) * 0.6;
      var speed = Math.sqrt(n.vx * n.vx + n.vy * n.vy);
      if (speed > 25) { n.vx *= 25 / speed; n.vy *= 25 / speed; }
      n.x += n.vx;
      n.y += n.vy;
    });
  };

  /* The explorer ----------------------------------------------------------- */

  function Explorer(root, config) {
    this.config = config;
    this.nodes = new Map();
    this.edges = new Map();
    this.selected = null;
    this.view = { x: 0, y: 0, k: 1 };
    this.size = { width: 800, height: 560 };
    this.searchToken = 0;
    this.svg = root.querySelector("#graphrag-graph");
    this.panel = root.querySelector("#graphrag-panel");
    this.status = root.querySelector("#graphrag-status");
    this.input = root.querySelector("#graphrag-search");
    this.results = root.querySelector("#graphrag-results");
    this.legend = root.querySelector("#graphrag-legend");
    this.userMoved = false;
    this.svg.appendChild(s("defs", {},
      s("marker", {
        id: "graphrag-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5,
        markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse"
      }, s("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "graphrag-arrow" }))));
    this.viewport = s("g", { class: "graphrag-viewport" });
    this.edgeLayer = s("g", { class: "graphrag-edges" });
    this.nodeLayer = s("g", { class: "graphrag-nodes" });
    this.viewport.appendChild(this.edgeLayer);
    this.viewport.appendChild(this.nodeLayer);
    this.svg.appendChild(this.viewport);
    this.layout = new ForceLayout(this.tick.bind(this), this.settle.bind(this));
    this.bindSearch(root);
    this.bindPanZoom();
    this.resize();
    if (window.ResizeObserver) new ResizeObserver(this.resize.bind(this)).observe(this.svg);
  }

  Explorer.prototype.api = function (tool, params) {
    var query = new URLSearchParams();
    Object.keys(params).forEach(function (key) {
      [].concat(params[key]).forEach(function (value) {
        if (value !== null && value !== undefined) query.append(key, value);
      });
    });
    return fetch(this.config.api + tool + "?" + query.toString(), {
      headers: { Accept: "application/json" },
      credentials: "same-origin"
    }).then(function (response) {
      return response.json().then(function (data) {
        if (!response.ok || data.ok === false) {
          throw new Error(data.error || tool + " failed with HTTP " + response.status);
        }
        return data;
      });
    });
  };

  Explorer.prototype.say = function (message) {
    this.status.textContent = message || "";
  };

  Explorer.prototype.resize = function () {
    var box = this.svg.getBoundingClientRect();
    this.size = { width: box.width || 800, height: box.height || 560 };
    this.svg.setAttribute("viewBox", "0 0 " + this.size.width + " " + this.size.height);
    if (this.layout && !this.layout.running && this.nodes.size) this.settle();
  };

  Explorer.prototype.centre = function () {
    return { x: this.size.width / 2, y: this.size.height / 2 };
  };

  /* Graph state ------------------------------------------------------------ */

  Explorer.prototype.addNode = function (kind, id, label, type, near) {
    var key = kind + ":" + id;
    var node = this.nodes.get(key);
    if (node) {
      if (label && !node.label) node.label = label;
      if (type && !node.type) this.setType(node, type);
      return node;
    }
    var origin = near || this.centre();
    var index = this.nodes.size;
    var radius = near ? 60 : 24 * Math.sqrt(index);
    node = {
      key: key, kind: kind, id: id, label: label || kind + " " + id, type: type || null,
      x: origin.x + radius * Math.cos(index * GOLDEN_ANGLE),
      y: origin.y + radius * Math.sin(index * GOLDEN_ANGLE),
      vx: 0, vy: 0, fx: null, fy: null, expanded: false
    };
    this.nodes.set(key, node);
    this.drawNode(node);
    this.drawLegend();
    return node;
  };

  Explorer.prototype.addEdge = function (source, target, type, extra) {
    var key = source.key + "|" + type + "|" + target.key;
    var edge = this.edges.get(key);
    if (!edge) {
      edge = { key: key, source: source, target: target, type: type };
      this.edges.set(key, edge);
      this.drawEdge(edge);
      this.drawLegend();
    }
    Object.assign(edge, extra || {});
    if (edge.fact) edge.title.textContent = edge.fact;
    return edge;
  };

  Explorer.prototype.setType = function (node, type) {
    node.type = type;
    if (node.shape) node.shape.setAttribute("fill", typeColour(type));
    if (node.tooltip) node.tooltip.textContent = node.label + " (" + type + ")";
    if (node.el) node.el.setAttribute("data-type", type);
    this.drawLegend();
  };

  Explorer.prototype.clear = function () {
    this.nodes.clear();
    this.edges.clear();
    this.selected = null;
    this.edgeLayer.textContent = "";
    this.nodeLayer.textContent = "";
    this.panel.textContent = "";
    this.panel.appendChild(h("p", { class: "graphrag-empty", text: "Search for an entity, then click nodes to explore." }));
    this.say("");
    this.view = { x: 0, y: 0, k: 1 };
    this.userMoved = false;
    this.drawLegend();
    this.paint();
  };

  /* Drawing ---------------------------------------------------------------- */

  Explorer.prototype.drawNode = function (node) {
    var self = this;
    var shape = node.kind === "entity"
      ? s("circle", { r: 11, fill: typeColour(node.type) })
      : s("rect", { x: -10, y: -10, width: 20, height: 20, rx: 3, fill: node.kind === "doc" ? "#556" : "#889" });
    node.tooltip = s("title", { text: node.label + (node.type ? " (" + node.type + ")" : "") });
    node.el = s("g", {
      class: "graphrag-node graphrag-node-" + node.kind,
      "data-key": node.key,
      "data-kind": node.kind,
      "data-entity-id": node.kind === "entity" ? node.id : null,
      "data-type": node.type,
      tabindex: 0,
      role: "button",
      "aria-label": node.label
    }, node.tooltip, shape, s("text", { class: "graphrag-node-label", x: 15, y: 4, text: truncate(node.label, 28) }));
    node.shape = shape;
    node.text = node.el.querySelector(".graphrag-node-label");
    node.el.addEventListener("keydown", function (event) {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        self.select(node);
      }
    });
    this.bindDrag(node);
    this.nodeLayer.appendChild(node.el);
  };

  Explorer.prototype.drawEdge = function (edge) {
    edge.line = s("line", { class: "graphrag-edge-line", "marker-end": "url(#graphrag-arrow)" });
    edge.label = s("text", { class: "graphrag-edge-label", text: edge.type });
    edge.title = s("title", { text: edge.type });
    var cooccurrence = edge.type === COOCCURRENCE;
    edge.el = s("g", {
      class: "graphrag-edge " + (cooccurrence ? "graphrag-edge-cooccurrence" : "graphrag-edge-typed"),
      "data-type": edge.type,
      "data-source": edge.source.key,
      "data-target": edge.target.key
    }, edge.title, edge.line, edge.label);
    this.edgeLayer.appendChild(edge.el);
  };

  Explorer.prototype.tick = function (alpha) {
    var nodes = Array.from(this.nodes.values());
    ForceLayout.step(nodes, Array.from(this.edges.values()), this.centre(), alpha);
    this.paint();
  };

  Explorer.prototype.paint = function () {
    this.nodes.forEach(function (n) {
      n.el.setAttribute("transform", "translate(" + n.x.toFixed(1) + "," + n.y.toFixed(1) + ")");
    });
    this.edges.forEach(function (e) {
      // Stop the line at the target's edge so the arrowhead stays visible
      var dx = e.target.x - e.source.x;
      var dy = e.target.y - e.source.y;
      var d = Math.sqrt(dx * dx + dy * dy) || 1;
      var gap = Math.min(14, d / 2);
      e.line.setAttribute("x1", e.source.x.toFixed(1));
      e.line.setAttribute("y1", e.source.y.toFixed(1));
      e.line.setAttribute("x2", (e.target.x - (dx / d) * gap).toFixed(1));
      e.line.setAttribute("y2", (e.target.y - (dy / d) * gap).toFixed(1));
      e.label.setAttribute("x", ((e.source.x + e.target.x) / 2).toFixed(1));
      e.label.setAttribute("y", ((e.source.y + e.target.y) / 2 - 3).toFixed(1));
    });
    this.viewport.setAttribute(
      "transform", "translate(" + this.view.x + "," + this.view.y + ") scale(" + this.view.k + ")"
    );
  };

  /* After the layout settles: fit the graph to the canvas (unless the user has panned or
   * zoomed since the last expansion), then place the labels. */
  Explorer.prototype.settle = function () {
    if (!this.userMoved) this.fit();
    this.paint();
    this.placeLabels();
  };

  Explorer.prototype.fit = function () {
    if (!this.nodes.size) return;
    var minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
    this.nodes.forEach(function (n) {
      minX = Math.min(minX, n.x); maxX = Math.max(maxX, n.x);
      minY = Math.min(minY, n.y); maxY = Math.max(maxY, n.y);
    });
    // Room for the nodes' labels, which mostly sit to their right
    var left = 40, right = this.size.width - 150, top = 30, bottom = this.size.height - 30;
    var k = Math.min(
      (right - left) / Math.max(maxX - minX, 1),
      (bottom - top) / Math.max(maxY - minY, 1),
      1.4
    );
    k = Math.max(k, 0.25);
    this.view = {
      x: (left + right) / 2 - k * (minX + maxX) / 2,
      y: (top + bottom) / 2 - k * (minY + maxY) / 2,
      k: k
    };
  };

  function overlaps(a, b) {
    return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  }

  /* Labels that never overlap each other or another node: each node's label goes to the
   * first free spot around it, most important nodes first (the selected one, expanded
   * ones, then by degree); a label with no free spot is hidden until its node is hovered.
   * The labels of the selected node's edges follow, where they fit. */
  Explorer.prototype.placeLabels = function () {
    var selected = this.selected;
    var degree = {};
    this.edges.forEach(function (e) {
      degree[e.source.key] = (degree[e.source.key] || 0) + 1;
      degree[e.target.key] = (degree[e.target.key] || 0) + 1;
    });
    function rank(n) {
      return (n === selected ? 1e6 : 0) + (n.expanded ? 1e3 : 0) + (degree[n.key] || 0);
    }
    var nodes = Array.from(this.nodes.values()).sort(function (a, b) { return rank(b) - rank(a); });
    var shapes = nodes.map(function (n) { return { node: n, box: n.shape.getBoundingClientRect() }; });
    var canvas = this.svg.getBoundingClientRect();
    var taken = [];
    function free(box, owner) {
      var inside = box.left >= canvas.left && box.right <= canvas.right &&
        box.top >= canvas.top && box.bottom <= canvas.bottom;
      return inside && !taken.some(function (t) { return overlaps(box, t); }) &&
        !shapes.some(function (s) { return s.node !== owner && overlaps(box, s.box); });
    }
    nodes.forEach(function (n) {
      n.text.classList.remove("graphrag-label-hidden");
      var placed = LABEL_SPOTS.some(function (spot) {
        n.text.setAttribute("x", spot.x);
        n.text.setAttribute("y", spot.y);
        n.text.setAttribute("text-anchor", spot.anchor);
        var box = n.text.getBoundingClientRect();
        if (!free(box, n)) return false;
        taken.push(box);
        return true;
      });
      if (!placed) {
        n.text.setAttribute("x", LABEL_SPOTS[0].x);
        n.text.setAttribute("y", LABEL_SPOTS[0].y);
        n.text.setAttribute("text-anchor", LABEL_SPOTS[0].anchor);
        n.text.classList.add("graphrag-label-hidden");
      }
    });
    this.edges.forEach(function (e) {
      e.label.classList.remove("graphrag-label-hidden");
      if (!e.el.classList.contains("graphrag-edge-active")) return;
      var box = e.label.getBoundingClientRect();
      if (free(box, null)) taken.push(box);
      else e.label.classList.add("graphrag-label-hidden");
    });
  };

  /* The legend: entity types by colour, relation types by line (co-occurrence dashed). */
  Explorer.prototype.drawLegend = function () {
    if (!this.legend) return;
    var types = {};
    var relations = {};
    this.nodes.forEach(function (n) {
      var name = n.kind === "entity" ? n.type || "untyped" : n.kind === "doc" ? "document" : "chunk";
      types[name] = types[name] || { kind: n.kind, type: n.type, count: 0 };
      types[name].count += 1;
    });
    this.edges.forEach(function (e) { relations[e.type] = (relations[e.type] || 0) + 1; });
    this.legend.textContent = "";
    this.legend.hidden = !this.nodes.size;
    if (!this.nodes.size) return;
    function line(dashed) {
      return s("svg", { width: 28, height: 8, "aria-hidden": "true" },
        s("line", { x1: 1, y1: 4, x2: 27, y2: 4, class: dashed ? "graphrag-legend-dashed" : "graphrag-legend-solid" }));
    }
    append(this.legend, [
      h("div", { class: "graphrag-legend-group" },
        h("span", { class: "graphrag-legend-title", text: "Entity types" }),
        h("ul", { class: "graphrag-legend-types" }, Object.keys(types).sort().map(function (name) {
          var t = types[name];
          return h("li", { "data-type": name, title: t.count + " in the graph" },
            h("span", {
              class: "graphrag-swatch graphrag-swatch-" + t.kind,
              style: "background: " + (t.kind === "entity" ? typeColour(t.type) : t.kind === "doc" ? "#556" : "#889"),
              "aria-hidden": "true"
            }), name);
        }))),
      Object.keys(relations).length
        ? h("div", { class: "graphrag-legend-group" },
          h("span", { class: "graphrag-legend-title", text: "Relations" }),
          h("ul", { class: "graphrag-legend-relations" }, Object.keys(relations).sort().map(function (rel) {
            var dashed = rel === COOCCURRENCE;
            return h("li", {
              "data-rel": rel,
              class: dashed ? "graphrag-legend-cooccurrence" : "graphrag-legend-typed",
              title: relations[rel] + " in the graph" + (dashed ? "; found by co-occurrence in a sentence" : "")
            }, line(dashed), dashed ? rel + " (co-occurrence)" : rel);
          })))
        : null
    ]);
  };

  Explorer.prototype.highlight = function () {
    var selected = this.selected;
    this.nodes.forEach(function (n) {
      n.el.classList.toggle("graphrag-selected", n === selected);
      n.el.classList.toggle("graphrag-expanded", n.expanded);
    });
    this.edges.forEach(function (e) {
      e.el.classList.toggle("graphrag-edge-active", e.source === selected || e.target === selected);
    });
  };

  /* Pointer: drag nodes, pan the background, zoom with the wheel ------------ */

  Explorer.prototype.toWorld = function (event) {
    var box = this.svg.getBoundingClientRect();
    return {
      x: (event.clientX - box.left - this.view.x) / this.view.k,
      y: (event.clientY - box.top - this.view.y) / this.view.k
    };
  };

  Explorer.prototype.bindDrag = function (node) {
    var self = this;
    var start = null;
    node.el.addEventListener("pointerdown", function (event) {
      if (event.button !== 0) return;
      event.stopPropagation();
      start = { x: event.clientX, y: event.clientY, dragging: false };
      node.el.setPointerCapture(event.pointerId);
    });
    node.el.addEventListener("pointermove", function (event) {
      if (!start) return;
      if (!start.dragging && Math.abs(event.clientX - start.x) + Math.abs(event.clientY - start.y) < 4) return;
      start.dragging = true;
      var p = self.toWorld(event);
      node.fx = p.x;
      node.fy = p.y;
      self.layout.heat(0.3);
    });
    node.el.addEventListener("pointerup", function () {
      if (!start) return;
      var clicked = !start.dragging;
      start = null;
      node.fx = null;
      node.fy = null;
      if (clicked) self.select(node);
    });
  };

  Explorer.prototype.bindPanZoom = function () {
    var self = this;
    var pan = null;
    this.svg.addEventListener("pointerdown", function (event) {
      if (event.button !== 0) return;
      pan = { x: event.clientX - self.view.x, y: event.clientY - self.view.y };
      self.svg.setPointerCapture(event.pointerId);
    });
    this.svg.addEventListener("pointermove", function (event) {
      if (!pan) return;
      self.view.x = event.clientX - pan.x;
      self.view.y = event.clientY - pan.y;
      self.userMoved = true;
      self.paint();
    });
    this.svg.addEventListener("pointerup", function () { pan = null; });
    this.svg.addEventListener("wheel", function (event) {
      event.preventDefault();
      var box = self.svg.getBoundingClientRect();
      var px = event.clientX - box.left;
      var py = event.clientY - box.top;
      var k = Math.min(4, Math.max(0.25, self.view.k * Math.exp(-event.deltaY * 0.0015)));
      self.view.x = px - (px - self.view.x) * (k / self.view.k);
      self.view.y = py - (py - self.view.y) * (k / self.view.k);
      self.view.k = k;
      self.userMoved = true;
      self.paint();
    }, { passive: false });
  };

  /* Search ----------------------------------------------------------------- */

  Explorer.prototype.bindSearch = function (root) {
    var self = this;
    var timer = null;
    this.input.addEventListener("input", function () {
      window.clearTimeout(timer);
      timer = window.setTimeout(function () { self.search(self.input.value); }, 150);
    });
    this.input.addEventListener("keydown", function (event) {
      if (event.key === "Enter") {
        event.preventDefault();
        window.clearTimeout(timer);
        self.search(self.input.value).then(function (entities) {
          if (entities && entities.length) self.pick(entities[0]);
        });
      } else if (event.key === "ArrowDown") {
        var first = self.results.querySelector("button");
        if (first) { event.preventDefault(); first.focus(); }
      } else if (event.key === "Escape") {
        self.results.textContent = "";
      }
    });
    this.results.addEventListener("keydown", function (event) {
      var item = event.target.closest("li");
      if (!item) return;
      var next = event.key === "ArrowDown" ? item.nextElementSibling : event.key === "ArrowUp" ? item.previousElementSibling : null;
      if (next) { event.preventDefault(); next.querySelector("button").focus(); }
      else if (event.key === "ArrowUp") { event.preventDefault(); self.input.focus(); }
    });
    root.querySelector("#graphrag-reset").addEventListener("click", function () {
      self.clear();
      self.input.value = "";
      self.results.textContent = "";
      window.history.replaceState(null, "", self.config.explore);
    });
  };

  Explorer.prototype.search = function (text) {
    var self = this;
    var q = text.trim();
    var token = ++this.searchToken;
    if (!q) {
      this.results.textContent = "";
      return Promise.resolve([]);
    }
    return this.api("entity_lookup", { q: q, limit: 8 }).then(function (data) {
      if (token !== self.searchToken) return data.entities;
      self.results.textContent = "";
      if (!data.entities.length) {
        self.results.appendChild(h("li", { class: "graphrag-empty", text: "No entity matches \u201c" + q + "\u201d" }));
      }
      data.entities.forEach(function (entity) {
        self.results.appendChild(h("li", { role: "option" },
          h("button", {
            type: "button",
            class: "graphrag-result",
            "data-entity-id": entity.id,
            onclick: function () { self.pick(entity); }
          }, entity.name, " ", h("span", { class: "graphrag-type", text: entity.type }))));
      });
      return data.entities;
    }, function (error) {
      self.say(error.message);
      return [];
    });
  };

  Explorer.prototype.pick = function (entity) {
    this.results.textContent = "";
    this.input.value = entity.name;
    var node = this.addNode("entity", entity.id, entity.name, entity.type, null);
    this.select(node);
  };

  /* Selecting and expanding ------------------------------------------------ */

  Explorer.prototype.select = function (node) {
    this.selected = node;
    this.userMoved = false;
    this.highlight();
    this.layout.heat(0.5);
    if (node.kind === "entity") {
      window.history.replaceState(null, "", this.config.explore + "?entity=" + node.id);
      return this.expandEntity(node);
    }
    if (node.kind === "doc") return this.expandDoc(node);
    this.showChunk(node);
    return Promise.resolve();
  };

  Explorer.prototype.expandEntity = function (node) {
    var self = this;
    this.panel.textContent = "";
    this.panel.appendChild(h("p", { class: "graphrag-loading", text: "Loading " + node.label + "\u2026" }));
    return Promise.allSettled([
      this.api("explain_entity", { entity_id: node.id, hops: 1 }),
      this.api("subgraph", { entity_names: node.label, max_hops: 1, limit: 30 })
    ]).then(function (settled) {
      if (settled[0].status === "rejected") {
        self.say(settled[0].reason.message);
        return;
      }
      var explained = settled[0].value;
      node.label = explained.entity.name;
      self.setType(node, explained.entity.type);
      explained.relations.forEach(function (r) {
        var source = self.addNode("entity", r.src, r.src_name, null, node);
        var target = self.addNode("entity", r.dst, r.dst_name, null, node);
        self.addEdge(source, target, r.rel, { fact: r.fact, confidence: r.confidence, weight: r.weight });
      });
      if (settled[1].status === "fulfilled") {
        settled[1].value.nodes.forEach(function (n) {
          var known = n.entity_id !== undefined && self.nodes.get("entity:" + n.entity_id);
          if (known && n.type) self.setType(known, n.type);
        });
      }
      node.expanded = true;
      self.say("");
      self.highlight();
      self.layout.heat(0.8);
      if (self.selected === node) self.showEntity(node, explained);
    });
  };

  function subgraphName(n) {
    var name = n.id.replace(/^Entity:/, "");
    var suffix = "#" + n.entity_id;
    return name.slice(-suffix.length) === suffix ? name.slice(0, -suffix.length) : name;
  }

  Explorer.prototype.expandDoc = function (node) {
    var self = this;
    return this.api("subgraph", { doc_id: node.id, max_hops: 1, limit: 30 }).then(function (graph) {
      var byId = {};
      graph.nodes.forEach(function (n) {
        if (n.label === "Doc") {
          node.label = n.title || n.path;
          node.path = n.path;
          byId[n.id] = node;
        } else if (n.label === "Entity") {
          byId[n.id] = self.addNode("entity", n.entity_id, subgraphName(n), n.type, node);
        }
      });
      graph.edges.forEach(function (e) {
        if (byId[e.source] && byId[e.target]) {
          self.addEdge(byId[e.source], byId[e.target], e.type, { weight: e.weight });
        }
      });
      node.expanded = true;
      self.highlight();
      self.layout.heat(0.8);
      if (self.selected === node) self.showDoc(node, graph);
    }, function (error) { self.say(error.message); });
  };

  /* Side panel ------------------------------------------------------------- */

  Explorer.prototype.entityButton = function (id, name, current) {
    var self = this;
    if (id === current) return h("strong", { text: name });
    return h("button", {
      type: "button",
      class: "graphrag-entity-button",
      "data-entity-id": id,
      onclick: function () {
        var node = self.nodes.get("entity:" + id) || self.addNode("entity", id, name, null, self.selected);
        self.select(node);
      }
    }, name);
  };

  Explorer.prototype.rowUrl = function (table, id) {
    return this.config.rows[table] + encodeURIComponent(id);
  };

  Explorer.prototype.showEntity = function (node, explained) {
    var self = this;
    var entity = explained.entity;
    this.panel.textContent = "";
    append(this.panel, [
      h("h2", { class: "graphrag-panel-title" },
        h("a", { href: this.config.entity + entity.id, text: entity.name }), " ",
        h("span", { class: "graphrag-type", text: entity.type })),
      h("p", { class: "graphrag-panel-links" },
        h("a", { href: this.config.entity + entity.id, text: "Entity page" }), " \u00b7 ",
        h("a", { href: this.rowUrl("entities", entity.id), text: "Entity row" })),
      explained.definition ? h("p", { class: "graphrag-definition", text: explained.definition }) : null,
      explained.aliases.length
        ? h("p", { class: "graphrag-aliases-line", text: "Also known as: " + explained.aliases.join(", ") })
        : null,
      h("h3", { text: "Relations" }),
      explained.relations.length
        ? h("ul", { class: "graphrag-panel-relations" }, explained.relations.map(function (r) {
          return h("li", {},
            self.entityButton(r.src, r.src_name, entity.id), " ",
            h("span", { class: "graphrag-rel", text: r.rel }), " ",
            self.entityButton(r.dst, r.dst_name, entity.id), " ",
            h("span", { class: "graphrag-confidence", title: "confidence", text: fixed(r.confidence) }),
            r.fact ? h("div", { class: "graphrag-fact", text: r.fact }) : null);
        }))
        : h("p", { class: "graphrag-empty", text: "No relations." }),
      h("h3", { text: "Sources" }),
      explained.sources.length
        ? h("ul", { class: "graphrag-panel-sources" }, explained.sources.map(function (src) {
          return h("li", {},
            h("a", { class: "graphrag-doc-link", href: self.rowUrl("docs", src.doc_id), text: src.path }), " \u00b7 ",
            h("a", { class: "graphrag-chunk-link", href: self.rowUrl("chunks", src.chunk_id), text: "chunk " + src.chunk_id }), " \u00b7 ",
            h("span", { class: "graphrag-confidence", title: "confidence", text: fixed(src.confidence) }),
            h("div", { class: "graphrag-snippet", text: src.snippet }));
        }))
        : h("p", { class: "graphrag-empty", text: "No sources." })
    ]);
  };

  Explorer.prototype.showDoc = function (node, graph) {
    var self = this;
    var entities = graph.nodes.filter(function (n) { return n.label === "Entity"; });
    this.panel.textContent = "";
    append(this.panel, [
      h("h2", { class: "graphrag-panel-title", text: node.label }),
      h("p", { class: "graphrag-panel-links" },
        h("a", { class: "graphrag-doc-link", href: this.rowUrl("docs", node.id), text: "Document row" }),
        node.path ? " \u00b7 " + node.path : null),
      h("h3", { text: "Entities mentioned" }),
      entities.length
        ? h("ul", { class: "graphrag-panel-entities" }, entities.map(function (n) {
          return h("li", {}, self.entityButton(n.entity_id, subgraphName(n), null), " ",
            h("span", { class: "graphrag-type", text: n.type }));
        }))
        : h("p", { class: "graphrag-empty", text: "No entities." })
    ]);
  };

  Explorer.prototype.showChunk = function (node) {
    var self = this;
    var chunk = node.chunk;
    this.panel.textContent = "";
    append(this.panel, [
      h("h2", { class: "graphrag-panel-title", text: node.label }),
      h("p", { class: "graphrag-panel-links" },
        h("a", { class: "graphrag-chunk-link", href: this.rowUrl("chunks", chunk.id), text: "Chunk row" }), " \u00b7 ",
        h("a", { class: "graphrag-doc-link", href: this.rowUrl("docs", chunk.doc_id), text: chunk.title || chunk.path })),
      chunk.section ? h("p", { class: "graphrag-section-name", text: chunk.section }) : null,
      h("div", { class: "graphrag-snippet", text: chunk.snippet }),
      h("h3", { text: "Entities mentioned" }),
      node.entities.length
        ? h("ul", { class: "graphrag-panel-entities" }, node.entities.map(function (e) {
          return h("li", {}, self.entityButton(e.id, e.name, null), " ",
            h("span", { class: "graphrag-type", text: e.type }));
        }))
        : h("p", { class: "graphrag-empty", text: "No entities." })
    ]);
  };

  /* Start from what the page preselected ----------------------------------- */

  Explorer.prototype.start = function (seed) {
    if (!seed) return;
    if (seed.kind === "entity") {
      this.select(this.addNode("entity", seed.entity.id, seed.entity.name, seed.entity.type, null));
    } else if (seed.kind === "doc") {
      this.select(this.addNode("doc", seed.doc.id, seed.doc.title || seed.doc.path, null, null));
    } else if (seed.kind === "chunk") {
      var self = this;
      var chunk = seed.chunk;
      var node = this.addNode("chunk", chunk.id, "chunk " + chunk.id, null, null);
      node.chunk = chunk;
      node.entities = seed.entities;
      var doc = this.addNode("doc", chunk.doc_id, chunk.title || chunk.path, null, node);
      this.addEdge(node, doc, "PART_OF");
      seed.entities.forEach(function (e) {
        self.addEdge(self.addNode("entity", e.id, e.name, e.type, node), node, "MENTIONED_IN");
      });
      this.select(node);
    }
  };

  function main() {
    var root = document.getElementById("graphrag-explorer");
    var configElement = document.getElementById("graphrag-config");
    if (!root || !configElement) return;
    var explorer = new Explorer(root, JSON.parse(configElement.textContent));
    window.graphragExplorer = explorer;
    explorer.start(explorer.config.seed);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
  else main();
})();
