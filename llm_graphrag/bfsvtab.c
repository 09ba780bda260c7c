/*
** bfsvtab: breadth-first search over any edge table or view, as a SQLite
** virtual table. Written for datasette-graphrag; SPDX-License-Identifier:
** Apache-2.0.
**
** Table-valued use:
**
**   SELECT id, parent, distance, shortest_path, weight, path
**   FROM bfsvtab
**   WHERE tablename = 'graph_edges' AND fromcolumn = 'src'
**     AND tocolumn = 'dst' AND root = 1 AND distance <= 2;
**
** or with defaults fixed at creation time:
**
**   CREATE VIRTUAL TABLE bfs USING bfsvtab(graph_edges);
**   SELECT * FROM bfs WHERE start = 1 AND max_depth = 2;
**
** Semantics (the Python reference in tests/test_traversal.py is the same):
**  - an edge is a row whose from and to values are both non-NULL (and whose
**    relation is in `rels` when that filter is given); direction 'out'
**    follows from->to, 'in' follows to->from, 'both' follows either way;
**  - a root that is the end of no edge gives no rows; otherwise the root is
**    the first row (distance 0, parent NULL, weight 1.0);
**  - every reachable node within the depth limit is one row, ordered by
**    distance then id; `distance` is the fewest hops from the root;
**  - among the fewest-hop paths the reported one (parent, shortest_path,
**    path, weight) has the greatest product of edge weights; ties go to the
**    parent with the smallest id in SQLite's order (numbers, then text, then
**    blobs). Without a weight column, or when a weight is NULL, an edge
**    weighs 1.0;
**  - ids compare like SQLite values without affinity, except that a REAL
**    with an integral value is the same node as the INTEGER.
**
** Strategy: with a depth limit or a target, and when the query planner
** finds an index for "from = ?" (and "to = ?" for 'in'/'both'), each
** expanded node costs one index lookup. Otherwise every edge is read once
** into a compressed adjacency array (integer ids in a small range map
** directly, others go through a hash table) and the search runs in memory.
*/
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Visible and hidden columns of the virtual table. */
#define COL_ID 0
#define COL_PARENT 1
#define COL_DISTANCE 2
#define COL_SHORTEST_PATH 3
#define COL_WEIGHT 4
#define COL_PATH 5
#define COL_FIRST_ARG 6 /* tablename: first of the hidden argument columns */
#define COL_START 15    /* alias of root */

/* Argument slots, in the order of the hidden columns. */
#define ARG_TABLENAME 0
#define ARG_FROMCOLUMN 1
#define ARG_TOCOLUMN 2
#define ARG_ROOT 3
#define ARG_MAX_DEPTH 4
#define ARG_DIRECTION 5
#define ARG_RELCOLUMN 6
#define ARG_RELS 7
#define ARG_WEIGHTCOLUMN 8
#define N_ARG 9
#define IDX_TARGET (1 << N_ARG) /* idxNum bit: an id = ? constraint */
#define MAX_DIST_TERMS 8

static const char *azArgName[N_ARG] = {
    "tablename", "fromcolumn", "tocolumn",  "root",        "max_depth",
    "direction", "relcolumn",  "rels",      "weightcolumn"};

#define DIR_OUT 1
#define DIR_IN 2
#define DIR_BOTH 3

#define BFS_SCHEMA                                                          \
  "CREATE TABLE x(id, parent, distance INTEGER, shortest_path TEXT,"        \
  " weight REAL, path TEXT, tablename HIDDEN, fromcolumn HIDDEN,"           \
  " tocolumn HIDDEN, root HIDDEN, max_depth HIDDEN, direction HIDDEN,"      \
  " relcolumn HIDDEN, rels HIDDEN, weightcolumn HIDDEN, start HIDDEN)"

/* ------------------------------------------------------------------ */
/* Arena for the bytes of text and blob ids.                           */

typedef struct ArenaBlock ArenaBlock;
struct ArenaBlock {
  ArenaBlock *pNext;
};
typedef struct Arena {
  ArenaBlock *pHead;
  char *z;
  size_t nLeft;
} Arena;

static void *arenaAlloc(Arena *a, size_t n) {
  void *p;
  if (n > a->nLeft) {
    size_t sz = n > 65536 ? n : 65536;
    ArenaBlock *b = sqlite3_malloc64(sizeof(ArenaBlock) + sz);
    if (b == 0) return 0;
    b->pNext = a->pHead;
    a->pHead = b;
    a->z = (char *)(b + 1);
    a->nLeft = sz;
  }
  p = a->z;
  a->z += n;
  a->nLeft -= n;
  return p;
}

static void arenaFree(Arena *a) {
  while (a->pHead) {
    ArenaBlock *b = a->pHead;
    a->pHead = b->pNext;
    sqlite3_free(b);
  }
  a->z = 0;
  a->nLeft = 0;
}

/* ------------------------------------------------------------------ */
/* Node ids.                                                           */

#define KEY_INT 1
#define KEY_REAL 2
#define KEY_TEXT 3
#define KEY_BLOB 4

typedef struct Key {
  union {
    sqlite3_int64 i;
    double r;
  } u;
  const char *z; /* text or blob bytes */
  int n;         /* bytes in z */
  int type;      /* KEY_* */
} Key;

/* Fill *k from v; return 0 when v is NULL (not a node). */
static int keyFromValue(sqlite3_value *v, Key *k) {
  switch (sqlite3_value_type(v)) {
    case SQLITE_INTEGER:
      k->type = KEY_INT;
      k->u.i = sqlite3_value_int64(v);
      return 1;
    case SQLITE_FLOAT: {
      double r = sqlite3_value_double(v);
      if (r >= -9223372036854775808.0 && r < 9223372036854775808.0 &&
          r == (double)(sqlite3_int64)r) {
        k->type = KEY_INT;
        k->u.i = (sqlite3_int64)r;
      } else {
        k->type = KEY_REAL;
        k->u.r = r;
      }
      return 1;
    }
    case SQLITE_TEXT:
      k->type = KEY_TEXT;
      k->z = (const char *)sqlite3_value_text(v);
      k->n = sqlite3_value_bytes(v);
      if (k->z == 0) k->z = "";
      return 1;
    case SQLITE_BLOB:
      k->type = KEY_BLOB;
      k->z = (const char *)sqlite3_value_blob(v);
      k->n = sqlite3_value_bytes(v);
      if (k->z == 0) k->z = "";
      return 1;
    default:
      return 0;
  }
}

/* Like keyFromValue() for column i of the current row of p. */
static int keyFromColumn(sqlite3_stmt *p, int i, Key *k) {
  switch (sqlite3_column_type(p, i)) {
    case SQLITE_INTEGER:
      k->type = KEY_INT;
      k->u.i = sqlite3_column_int64(p, i);
      return 1;
    case SQLITE_FLOAT: {
      double r = sqlite3_column_double(p, i);
      if (r >= -9223372036854775808.0 && r < 9223372036854775808.0 &&
          r == (double)(sqlite3_int64)r) {
        k->type = KEY_INT;
        k->u.i = (sqlite3_int64)r;
      } else {
        k->type = KEY_REAL;
        k->u.r = r;
      }
      return 1;
    }
    case SQLITE_TEXT:
      k->type = KEY_TEXT;
      k->z = (const char *)sqlite3_column_text(p, i);
      k->n = sqlite3_column_bytes(p, i);
      if (k->z == 0) k->z = "";
      return 1;
    case SQLITE_BLOB:
      k->type = KEY_BLOB;
      k->z = (const char *)sqlite3_column_blob(p, i);
      k->n = sqlite3_column_bytes(p, i);
      if (k->z == 0) k->z = "";
      return 1;
    default:
      return 0;
  }
}

static unsigned int keyHash(const Key *k) {
  sqlite3_uint64 x;
  if (k->type == KEY_INT) {
    x = (sqlite3_uint64)k->u.i;
  } else if (k->type == KEY_REAL) {
    memcpy(&x, &k->u.r, sizeof(x));
    x ^= 0x9e3779b97f4a7c15ULL;
  } else {
    int i;
    x = 1469598103934665603ULL ^ (sqlite3_uint64)k->type;
    for (i = 0; i < k->n; i++) {
      x ^= (unsigned char)k->z[i];
      x *= 1099511628211ULL;
    }
  }
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  /* The low bit says "integer id", so a slot alone can settle integer keys. */
  return k->type == KEY_INT ? ((unsigned int)x | 1u) : ((unsigned int)x & ~1u);
}

static int keyEq(const Key *a, const Key *b) {
  if (a->type != b->type) return 0;
  switch (a->type) {
    case KEY_INT:
      return a->u.i == b->u.i;
    case KEY_REAL:
      return a->u.r == b->u.r;
    default:
      return a->n == b->n && (a->n == 0 || memcmp(a->z, b->z, a->n) == 0);
  }
}

/* Order of SQLite's ORDER BY: numbers, then text (BINARY), then blobs. */
static int keyCmp(const Key *a, const Key *b) {
  int ra = a->type <= KEY_REAL ? 0 : a->type - 2;
  int rb = b->type <= KEY_REAL ? 0 : b->type - 2;
  if (ra != rb) return ra < rb ? -1 : 1;
  if (ra == 0) {
    if (a->type == KEY_INT && b->type == KEY_INT) {
      return a->u.i < b->u.i ? -1 : (a->u.i > b->u.i);
    } else {
      double x = a->type == KEY_INT ? (double)a->u.i : a->u.r;
      double y = b->type == KEY_INT ? (double)b->u.i : b->u.r;
      return x < y ? -1 : (x > y);
    }
  } else {
    int n = a->n < b->n ? a->n : b->n;
    int c = n ? memcmp(a->z, b->z, n) : 0;
    if (c) return c;
    return a->n < b->n ? -1 : (a->n > b->n);
  }
}

static void keyResult(sqlite3_context *ctx, const Key *k) {
  switch (k->type) {
    case KEY_INT:
      sqlite3_result_int64(ctx, k->u.i);
      break;
    case KEY_REAL:
      sqlite3_result_double(ctx, k->u.r);
      break;
    case KEY_TEXT:
      sqlite3_result_text(ctx, k->z, k->n, SQLITE_TRANSIENT);
      break;
    default:
      sqlite3_result_blob(ctx, k->z, k->n, SQLITE_TRANSIENT);
      break;
  }
}

/* Bind k to ?1 of p; the bytes live in the arena for the whole search. */
static int keyBind(sqlite3_stmt *p, const Key *k) {
  switch (k->type) {
    case KEY_INT:
      return sqlite3_bind_int64(p, 1, k->u.i);
    case KEY_REAL:
      return sqlite3_bind_double(p, 1, k->u.r);
    case KEY_TEXT:
      return sqlite3_bind_text(p, 1, k->z, k->n, SQLITE_STATIC);
    default:
      return sqlite3_bind_blob(p, 1, k->z, k->n, SQLITE_STATIC);
  }
}

static void appendHex(sqlite3_str *s, const Key *k) {
  int i;
  for (i = 0; i < k->n; i++) sqlite3_str_appendf(s, "%02X", (unsigned char)k->z[i]);
}

/* The id as text, for the "/1/2/4/" form of shortest_path. */
static void keyAppendText(sqlite3_str *s, const Key *k) {
  switch (k->type) {
    case KEY_INT:
      sqlite3_str_appendf(s, "%lld", k->u.i);
      break;
    case KEY_REAL:
      sqlite3_str_appendf(s, "%!.15g", k->u.r);
      break;
    case KEY_TEXT:
      sqlite3_str_append(s, k->z, k->n);
      break;
    default:
      appendHex(s, k);
      break;
  }
}

/* The id as a JSON value, for the path column. */
static void keyAppendJson(sqlite3_str *s, const Key *k) {
  int i, start = 0;
  switch (k->type) {
    case KEY_INT:
      sqlite3_str_appendf(s, "%lld", k->u.i);
      return;
    case KEY_REAL:
      if (isfinite(k->u.r)) {
        sqlite3_str_appendf(s, "%!.17g", k->u.r);
      } else {
        sqlite3_str_appendall(s, "null");
      }
      return;
    case KEY_BLOB:
      sqlite3_str_appendchar(s, 1, '"');
      appendHex(s, k);
      sqlite3_str_appendchar(s, 1, '"');
      return;
  }
  sqlite3_str_appendchar(s, 1, '"');
  for (i = 0; i < k->n; i++) {
    unsigned char c = (unsigned char)k->z[i];
    if (c == '"' || c == '\\' || c < 0x20) {
      sqlite3_str_append(s, k->z + start, i - start);
      if (c == '"' || c == '\\') {
        sqlite3_str_appendchar(s, 1, '\\');
        sqlite3_str_appendchar(s, 1, (char)c);
      } else {
        sqlite3_str_appendf(s, "\\u%04x", c);
      }
      start = i + 1;
    }
  }
  sqlite3_str_append(s, k->z + start, k->n - start);
  sqlite3_str_appendchar(s, 1, '"');
}

/* ------------------------------------------------------------------ */
/* Graph: interned nodes, optional CSR adjacency, BFS state.           */

typedef struct Node {
  Key key;
  unsigned int h;
  int dist;   /* -1: not reached */
  int parent; /* node index, -1 for the root */
  double weight;
} Node;

/* A hash slot; for integer ids the id itself, to avoid touching the node. */
typedef struct Slot {
  sqlite3_int64 i;
  int idx; /* node index, -1 when empty */
  unsigned int h;
} Slot;

typedef struct Graph {
  Node *aNode;
  int nNode, nAlloc;
  Slot *aSlot; /* open addressing, at most half full */
  unsigned int mask;
  Arena arena;
  int *aStart; /* CSR (whole-table mode): edges of node i are */
  int *aAdj;   /*   aAdj[aStart[i] .. aStart[i+1]) */
  double *aAdjW;
  int *aOrder; /* BFS queue: node indices in discovery order */
  int nOrder, nOrderAlloc;
  int *aDense; /* whole-table mode, integer ids: id - iDenseMin -> node */
  sqlite3_int64 iDenseMin, nDense;
  int bSorted; /* node indices follow id order */
} Graph;

static void graphClear(Graph *g) {
  sqlite3_free(g->aNode);
  sqlite3_free(g->aSlot);
  sqlite3_free(g->aStart);
  sqlite3_free(g->aAdj);
  sqlite3_free(g->aAdjW);
  sqlite3_free(g->aOrder);
  sqlite3_free(g->aDense);
  arenaFree(&g->arena);
  memset(g, 0, sizeof(*g));
}

static int graphFind(const Graph *g, const Key *k, unsigned int h) {
  unsigned int i;
  const Slot *s;
  if (g->aDense) {
    sqlite3_uint64 off = (sqlite3_uint64)k->u.i - (sqlite3_uint64)g->iDenseMin;
    if (k->type != KEY_INT || k->u.i < g->iDenseMin || off >= (sqlite3_uint64)g->nDense) return -1;
    return g->aDense[off];
  }
  if (g->aSlot == 0) return -1;
  for (i = h & g->mask; (s = &g->aSlot[i])->idx >= 0; i = (i + 1) & g->mask) {
    if (s->h != h) continue;
    if (h & 1u) {
      if (s->i == k->u.i) return s->idx;
    } else if (keyEq(&g->aNode[s->idx].key, k)) {
      return s->idx;
    }
  }
  return -1;
}

static void slotSet(Slot *a, unsigned int mask, const Node *p, int idx) {
  unsigned int j = p->h & mask;
  while (a[j].idx >= 0) j = (j + 1) & mask;
  a[j].idx = idx;
  a[j].h = p->h;
  a[j].i = p->key.type == KEY_INT ? p->key.u.i : 0;
}

static int graphRehash(Graph *g) {
  sqlite3_uint64 n = g->aSlot ? ((sqlite3_uint64)g->mask + 1) * 2 : 256;
  Slot *a = sqlite3_malloc64(sizeof(Slot) * n);
  int i;
  if (a == 0) return SQLITE_NOMEM;
  for (i = 0; i < (int)n; i++) a[i].idx = -1;
  for (i = 0; i < g->nNode; i++) slotSet(a, (unsigned int)(n - 1), &g->aNode[i], i);
  sqlite3_free(g->aSlot);
  g->aSlot = a;
  g->mask = (unsigned int)(n - 1);
  return SQLITE_OK;
}

/* Add a node that graphFind() did not find; copies text and blob bytes. */
static int graphAdd(Graph *g, const Key *k, unsigned int h, int *pIdx) {
  Node *p;
  if (g->nNode >= 0x3fffffff) return SQLITE_TOOBIG;
  if (g->nNode >= g->nAlloc) {
    int n = g->nAlloc ? g->nAlloc * 2 : 64;
    Node *a = sqlite3_realloc64(g->aNode, sizeof(Node) * (sqlite3_uint64)n);
    if (a == 0) return SQLITE_NOMEM;
    g->aNode = a;
    g->nAlloc = n;
  }
  if (g->aSlot == 0 || ((sqlite3_uint64)g->nNode + 1) * 2 > (sqlite3_uint64)g->mask + 1) {
    int rc = graphRehash(g);
    if (rc != SQLITE_OK) return rc;
  }
  p = &g->aNode[g->nNode];
  p->key = *k;
  if (k->type >= KEY_TEXT) {
    char *z = arenaAlloc(&g->arena, k->n ? (size_t)k->n : 1);
    if (z == 0) return SQLITE_NOMEM;
    if (k->n) memcpy(z, k->z, k->n);
    p->key.z = z;
  }
  p->h = h;
  p->dist = -1;
  p->parent = -1;
  p->weight = 0.0;
  slotSet(g->aSlot, g->mask, p, g->nNode);
  *pIdx = g->nNode++;
  return SQLITE_OK;
}

static int graphIntern(Graph *g, const Key *k, int *pIdx) {
  unsigned int h = keyHash(k);
  *pIdx = graphFind(g, k, h);
  return *pIdx >= 0 ? SQLITE_OK : graphAdd(g, k, h, pIdx);
}

static int graphPush(Graph *g, int idx) {
  if (g->nOrder >= g->nOrderAlloc) {
    int n = g->nOrderAlloc ? g->nOrderAlloc * 2 : 64;
    int *a = sqlite3_realloc64(g->aOrder, sizeof(int) * (sqlite3_uint64)n);
    if (a == 0) return SQLITE_NOMEM;
    g->aOrder = a;
    g->nOrderAlloc = n;
  }
  g->aOrder[g->nOrder++] = idx;
  return SQLITE_OK;
}

static void graphResetSearch(Graph *g) {
  int i;
  for (i = 0; i < g->nNode; i++) {
    g->aNode[i].dist = -1;
    g->aNode[i].parent = -1;
    g->aNode[i].weight = 0.0;
  }
  g->nOrder = 0;
}

/* Edge u->v of weight w seen while expanding u (see the header comment). */
static int graphRelax(Graph *g, int u, int v, double w) {
  Node *pu = &g->aNode[u], *pv = &g->aNode[v];
  double cand = pu->weight * w;
  if (pv->dist < 0) {
    pv->dist = pu->dist + 1;
    pv->parent = u;
    pv->weight = cand;
    return graphPush(g, v);
  }
  if (pv->dist == pu->dist + 1 &&
      (cand > pv->weight ||
       (cand == pv->weight &&
        (g->bSorted ? u < pv->parent : keyCmp(&pu->key, &g->aNode[pv->parent].key) < 0)))) {
    pv->parent = u;
    pv->weight = cand;
  }
  return SQLITE_OK;
}

/* ------------------------------------------------------------------ */
/* Virtual table and cursor.                                           */

typedef struct BfsConfig {
  const char *azArg[N_ARG]; /* effective text of each argument (root unused) */
  int eDir;
  sqlite3_int64 maxDepth; /* -1: unlimited */
} BfsConfig;

typedef struct BfsVtab {
  sqlite3_vtab base;
  sqlite3 *db;
  char *azDefault[N_ARG]; /* from CREATE VIRTUAL TABLE arguments */
  /* Statements for the last configuration, keyed by zKey. */
  char *zKey;
  sqlite3_stmt *pFull;     /* every edge: SELECT from, to[, weight] */
  sqlite3_stmt *pOut;      /* neighbours along from->to of ?1 */
  sqlite3_stmt *pIn;       /* neighbours along to->from of ?1 */
  sqlite3_stmt *pRootFrom; /* ?1 as the from end of an edge */
  sqlite3_stmt *pRootTo;   /* ?1 as the to end of an edge */
  int bIndexed;            /* neighbour lookups search an index */
  int bBusy;               /* a search is running */
  sqlite3_stmt *pSchema;   /* PRAGMA schema_version: indexes may change */
} BfsVtab;

typedef struct BfsCursor {
  sqlite3_vtab_cursor base;
  Graph g;
  char *zGraphKey; /* configuration of a whole-table graph kept in g */
  sqlite3_int64 nGraphChanges;
  int *aRow; /* rows to return: node indices */
  int nRow, iRow;
  int iTarget;
  sqlite3_value *pRoot;     /* the root as given */
  sqlite3_value *pMaxDepth; /* max_depth as given */
  char *azArg[N_ARG];       /* effective text arguments, for hidden columns */
  int *aPath;               /* scratch for building paths */
  int nPathAlloc;
} BfsCursor;

static void vtabSetError(sqlite3_vtab *p, const char *zFormat, ...) {
  va_list ap;
  sqlite3_free(p->zErrMsg);
  va_start(ap, zFormat);
  p->zErrMsg = sqlite3_vmprintf(zFormat, ap);
  va_end(ap);
}

/*
** Report the connection's last error on the vtab, prefixed once, and return
** the code for xFilter. An interrupt (Datasette's time limit) keeps SQLite's
** own message, so that callers still recognise it.
*/
static int dbError(BfsVtab *t) {
  int rc = sqlite3_errcode(t->db);
  const char *z = sqlite3_errmsg(t->db);
  if (rc == SQLITE_INTERRUPT || rc == SQLITE_NOMEM) {
    vtabSetError(&t->base, "%s", z);
    return rc;
  }
  vtabSetError(&t->base, strncmp(z, "bfsvtab: ", 9) == 0 ? "%s" : "bfsvtab: %s", z);
  return SQLITE_ERROR;
}

static void bfsFinalizeStatements(BfsVtab *t) {
  sqlite3_finalize(t->pOut);
  sqlite3_finalize(t->pIn);
  sqlite3_finalize(t->pRootFrom);
  sqlite3_finalize(t->pRootTo);
  sqlite3_finalize(t->pFull);
  sqlite3_free(t->zKey);
  t->pOut = t->pIn = t->pRootFrom = t->pRootTo = t->pFull = 0;
  t->zKey = 0;
}

static int parseDirection(const char *z) {
  if (z == 0) return DIR_OUT;
  if (sqlite3_stricmp(z, "out") == 0) return DIR_OUT;
  if (sqlite3_stricmp(z, "in") == 0) return DIR_IN;
  if (sqlite3_stricmp(z, "both") == 0) return DIR_BOTH;
  return 0;
}

/* Parse a non-negative depth written as digits; -1 on failure. */
static sqlite3_int64 parseDepthText(const char *z) {
  sqlite3_int64 n = 0;
  if (z == 0) return -1;
  while (*z == ' ') z++;
  if (*z == '+') z++;
  if (*z < '0' || *z > '9') return -1;
  while (*z >= '0' && *z <= '9') {
    if (n > 100000000) return -1;
    n = n * 10 + (*z++ - '0');
  }
  while (*z == ' ') z++;
  return *z ? -1 : n;
}

/* max_depth from a value: NULL is unlimited (-1); -2 means invalid. */
static sqlite3_int64 parseDepthValue(sqlite3_value *v) {
  switch (sqlite3_value_type(v)) {
    case SQLITE_NULL:
      return -1;
    case SQLITE_INTEGER: {
      sqlite3_int64 n = sqlite3_value_int64(v);
      return n < 0 ? -2 : (n > 0x3fffffff ? 0x3fffffff : n);
    }
    case SQLITE_FLOAT: {
      double r = sqlite3_value_double(v);
      if (r < 0 || r != floor(r)) return -2;
      return r > 0x3fffffff ? 0x3fffffff : (sqlite3_int64)r;
    }
    case SQLITE_TEXT: {
      sqlite3_int64 n = parseDepthText((const char *)sqlite3_value_text(v));
      return n < 0 ? -2 : n;
    }
    default:
      return -2;
  }
}

/* Copy an argument of CREATE VIRTUAL TABLE, trimmed and dequoted. */
static char *dequoteArg(const char *z, int n) {
  char *zOut;
  int i, j;
  while (n > 0 && (z[0] == ' ' || z[0] == '\t' || z[0] == '\n' || z[0] == '\r')) z++, n--;
  while (n > 0 && (z[n - 1] == ' ' || z[n - 1] == '\t' || z[n - 1] == '\n' || z[n - 1] == '\r')) n--;
  zOut = sqlite3_malloc64((sqlite3_uint64)n + 1);
  if (zOut == 0) return 0;
  if (n >= 2 && (z[0] == '\'' || z[0] == '"' || z[0] == '`') && z[n - 1] == z[0]) {
    char q = z[0];
    for (i = 1, j = 0; i < n - 1; i++) {
      zOut[j++] = z[i];
      if (z[i] == q && i + 1 < n - 1 && z[i + 1] == q) i++;
    }
    zOut[j] = 0;
  } else if (n >= 2 && z[0] == '[' && z[n - 1] == ']') {
    memcpy(zOut, z + 1, n - 2);
    zOut[n - 2] = 0;
  } else {
    memcpy(zOut, z, n);
    zOut[n] = 0;
  }
  return zOut;
}

static int bfsDisconnect(sqlite3_vtab *pVtab) {
  BfsVtab *t = (BfsVtab *)pVtab;
  int i;
  bfsFinalizeStatements(t);
  sqlite3_finalize(t->pSchema);
  for (i = 0; i < N_ARG; i++) sqlite3_free(t->azDefault[i]);
  sqlite3_free(t);
  return SQLITE_OK;
}

/*
** Arguments: key=value pairs (tablename, fromcolumn, tocolumn, max_depth,
** direction, relcolumn, rels, weightcolumn); bare values fill tablename,
** fromcolumn and tocolumn in that order.
*/
static int bfsConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                      sqlite3_vtab **ppVtab, char **pzErr) {
  static const int aPositional[3] = {ARG_TABLENAME, ARG_FROMCOLUMN, ARG_TOCOLUMN};
  BfsVtab *t;
  int i, nPositional = 0, rc;
  (void)pAux;
  rc = sqlite3_declare_vtab(db, BFS_SCHEMA);
  if (rc != SQLITE_OK) return rc;
  t = sqlite3_malloc(sizeof(*t));
  if (t == 0) return SQLITE_NOMEM;
  memset(t, 0, sizeof(*t));
  t->db = db;
  *ppVtab = &t->base;
  for (i = 3; i < argc; i++) {
    const char *z = argv[i];
    const char *zEq = strchr(z, '=');
    char *zKey, *zVal;
    int iArg = -1, k;
    if (zEq && (z[0] == '\'' || z[0] == '"')) zEq = 0; /* a quoted bare value */
    zVal = dequoteArg(zEq ? zEq + 1 : z, (int)strlen(zEq ? zEq + 1 : z));
    if (zVal == 0) goto nomem;
    if (zEq == 0) {
      if (zVal[0] == 0) { /* an empty argument, e.g. after a trailing comma */
        sqlite3_free(zVal);
        continue;
      }
      if (nPositional >= 3) {
        *pzErr = sqlite3_mprintf("bfsvtab: too many positional arguments; use key=value");
        sqlite3_free(zVal);
        goto fail;
      }
      iArg = aPositional[nPositional++];
    } else {
      zKey = dequoteArg(z, (int)(zEq - z));
      if (zKey == 0) {
        sqlite3_free(zVal);
        goto nomem;
      }
      for (k = 0; k < N_ARG; k++) {
        if (k != ARG_ROOT && sqlite3_stricmp(zKey, azArgName[k]) == 0) iArg = k;
      }
      if (iArg < 0) {
        *pzErr = sqlite3_mprintf(
            "bfsvtab: unknown argument \"%s\"; expected tablename, fromcolumn, "
            "tocolumn, max_depth, direction, relcolumn, rels or weightcolumn",
            zKey);
        sqlite3_free(zKey);
        sqlite3_free(zVal);
        goto fail;
      }
      sqlite3_free(zKey);
    }
    if (iArg == ARG_DIRECTION && parseDirection(zVal) == 0) {
      *pzErr = sqlite3_mprintf("bfsvtab: direction must be 'out', 'in' or 'both', not '%s'", zVal);
      sqlite3_free(zVal);
      goto fail;
    }
    if (iArg == ARG_MAX_DEPTH && parseDepthText(zVal) < 0) {
      *pzErr = sqlite3_mprintf("bfsvtab: max_depth must be a non-negative integer, not '%s'", zVal);
      sqlite3_free(zVal);
      goto fail;
    }
    sqlite3_free(t->azDefault[iArg]);
    t->azDefault[iArg] = zVal;
  }
  return SQLITE_OK;
nomem:
  bfsDisconnect(&t->base);
  *ppVtab = 0;
  return SQLITE_NOMEM;
fail:
  bfsDisconnect(&t->base);
  *ppVtab = 0;
  return SQLITE_ERROR;
}

static int bfsBestIndex(sqlite3_vtab *tab, sqlite3_index_info *p) {
  int aIdx[N_ARG + 1]; /* constraint for each argument slot, then target */
  int aDist[MAX_DIST_TERMS];
  char zOps[MAX_DIST_TERMS + 1];
  int nDist = 0, bSeenRoot = 0, i, n = 1, bBounded;
  for (i = 0; i <= N_ARG; i++) aIdx[i] = -1;
  for (i = 0; i < p->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &p->aConstraint[i];
    int iCol = c->iColumn, iSlot = -1;
    if (iCol == COL_START) {
      iSlot = ARG_ROOT;
    } else if (iCol >= COL_FIRST_ARG && iCol < COL_FIRST_ARG + N_ARG) {
      iSlot = iCol - COL_FIRST_ARG;
    }
    if (iSlot == ARG_ROOT) bSeenRoot = 1;
    if (!c->usable) continue;
    if (c->op == SQLITE_INDEX_CONSTRAINT_EQ) {
      if (iSlot >= 0) {
        if (aIdx[iSlot] < 0) aIdx[iSlot] = i;
      } else if (iCol == COL_ID) {
        if (aIdx[N_ARG] < 0) aIdx[N_ARG] = i;
      } else if (iCol == COL_DISTANCE && nDist < MAX_DIST_TERMS) {
        aDist[nDist] = i;
        zOps[nDist++] = '=';
      }
    } else if (iCol == COL_DISTANCE && nDist < MAX_DIST_TERMS &&
               (c->op == SQLITE_INDEX_CONSTRAINT_LE || c->op == SQLITE_INDEX_CONSTRAINT_LT)) {
      aDist[nDist] = i;
      zOps[nDist++] = c->op == SQLITE_INDEX_CONSTRAINT_LE ? 'L' : '<';
    }
  }
  if (aIdx[ARG_ROOT] < 0) {
    if (bSeenRoot) return SQLITE_CONSTRAINT; /* usable in another plan */
    vtabSetError(tab, "bfsvtab: a root is required, e.g. WHERE root = 1");
    return SQLITE_ERROR;
  }
  p->idxNum = 0;
  for (i = 0; i <= N_ARG; i++) {
    if (aIdx[i] < 0) continue;
    p->idxNum |= 1 << i;
    p->aConstraintUsage[aIdx[i]].argvIndex = n++;
    p->aConstraintUsage[aIdx[i]].omit = i < N_ARG; /* SQLite re-checks id */
  }
  for (i = 0; i < nDist; i++) {
    p->aConstraintUsage[aDist[i]].argvIndex = n++;
  }
  zOps[nDist] = 0;
  if (nDist) {
    p->idxStr = sqlite3_mprintf("%s", zOps);
    if (p->idxStr == 0) return SQLITE_NOMEM;
    p->needToFreeIdxStr = 1;
  }
  bBounded = nDist > 0 || aIdx[ARG_MAX_DEPTH] >= 0 || aIdx[N_ARG] >= 0 ||
             ((BfsVtab *)tab)->azDefault[ARG_MAX_DEPTH] != 0;
  p->estimatedCost = bBounded ? 100.0 : 100000.0;
  p->estimatedRows = bBounded ? 100 : 100000;
  if (p->nOrderBy == 1 && p->aOrderBy[0].iColumn == COL_DISTANCE && !p->aOrderBy[0].desc) {
    p->orderByConsumed = 1; /* rows come by distance, then id */
  }
  return SQLITE_OK;
}

static int bfsOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  BfsCursor *c = sqlite3_malloc(sizeof(*c));
  (void)pVtab;
  if (c == 0) return SQLITE_NOMEM;
  memset(c, 0, sizeof(*c));
  *ppCursor = &c->base;
  return SQLITE_OK;
}

static void cursorResetArgs(BfsCursor *c) {
  int i;
  sqlite3_value_free(c->pRoot);
  sqlite3_value_free(c->pMaxDepth);
  c->pRoot = c->pMaxDepth = 0;
  for (i = 0; i < N_ARG; i++) {
    sqlite3_free(c->azArg[i]);
    c->azArg[i] = 0;
  }
}

static int bfsClose(sqlite3_vtab_cursor *cur) {
  BfsCursor *c = (BfsCursor *)cur;
  graphClear(&c->g);
  cursorResetArgs(c);
  sqlite3_free(c->zGraphKey);
  sqlite3_free(c->aPath);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* " AND `rel` IN ('a','b')" for a comma separated list; "" when empty. */
static char *relClause(const char *zQuotedCol, const char *zRels) {
  sqlite3_str *s;
  const char *z = zRels;
  int nItem = 0;
  if (zRels == 0) return sqlite3_mprintf("");
  s = sqlite3_str_new(0);
  while (*z) {
    const char *zEnd = strchr(z, ',');
    int n = zEnd ? (int)(zEnd - z) : (int)strlen(z);
    int a = 0, b = n;
    while (a < b && (z[a] == ' ' || z[a] == '\t')) a++;
    while (b > a && (z[b - 1] == ' ' || z[b - 1] == '\t')) b--;
    if (b > a) {
      char *zItem = sqlite3_mprintf("%.*s", b - a, z + a);
      if (zItem == 0) break;
      if (nItem == 0) {
        sqlite3_str_appendf(s, " AND %s IN (", zQuotedCol);
      } else {
        sqlite3_str_appendchar(s, 1, ',');
      }
      sqlite3_str_appendf(s, "%Q", zItem);
      sqlite3_free(zItem);
      nItem++;
    }
    z += n;
    if (*z == ',') z++;
  }
  if (nItem) sqlite3_str_appendchar(s, 1, ')');
  return sqlite3_str_finish(s);
}

static int prepareOne(BfsVtab *t, sqlite3_stmt **pp, const char *zFormat, ...) {
  va_list ap;
  char *zSql;
  int rc;
  va_start(ap, zFormat);
  zSql = sqlite3_vmprintf(zFormat, ap);
  va_end(ap);
  if (zSql == 0) return SQLITE_NOMEM;
  rc = sqlite3_prepare_v2(t->db, zSql, -1, pp, 0);
  if (rc != SQLITE_OK) rc = dbError(t);
  sqlite3_free(zSql);
  return rc;
}

/* Does the neighbour query of p search an index (no full scan)? */
static int usesIndex(BfsVtab *t, sqlite3_stmt *p, int *pbIndexed) {
  sqlite3_stmt *pPlan = 0;
  int rc = prepareOne(t, &pPlan, "EXPLAIN QUERY PLAN %s", sqlite3_sql(p));
  if (rc != SQLITE_OK) return rc;
  while (sqlite3_step(pPlan) == SQLITE_ROW) {
    const char *z = (const char *)sqlite3_column_text(pPlan, 3);
    if (z && strncmp(z, "SCAN ", 5) == 0 && strncmp(z, "SCAN CONSTANT", 13) != 0) {
      *pbIndexed = 0;
    }
  }
  return sqlite3_finalize(pPlan);
}

/* The schema cookie, so that a new or dropped index changes the plan. */
static sqlite3_int64 schemaVersion(BfsVtab *t) {
  sqlite3_int64 v = 0;
  if (t->pSchema == 0 &&
      sqlite3_prepare_v2(t->db, "PRAGMA schema_version", -1, &t->pSchema, 0) != SQLITE_OK) {
    return 0; /* e.g. an authorizer refuses pragmas: keep the first plan */
  }
  if (sqlite3_step(t->pSchema) == SQLITE_ROW) v = sqlite3_column_int64(t->pSchema, 0);
  sqlite3_reset(t->pSchema);
  return v;
}

/*
** An identifier in grave accents. Unlike "double quotes", which SQLite reads
** as a string literal when no column has the name, an unknown `name` is an
** error. Returns 0 when out of memory.
*/
static char *quoteId(const char *z) {
  sqlite3_str *s = sqlite3_str_new(0);
  sqlite3_str_appendchar(s, 1, '`');
  for (; *z; z++) {
    sqlite3_str_appendchar(s, *z == '`' ? 2 : 1, *z);
  }
  sqlite3_str_appendchar(s, 1, '`');
  return sqlite3_str_finish(s);
}

/*
** The looked-up id, as a scalar subquery rather than a bare ?1: with STAT4
** (pysqlite3 enables it) and an ANALYZEd table, a bare parameter makes SQLite
** re-prepare the statement after every new binding, which costs more than
** the lookup itself. The index is used all the same.
*/
#define LOOKUP "(SELECT ?1)"

/* Prepare (or keep) the statements for configuration cfg. */
static int bfsPrepare(BfsVtab *t, const BfsConfig *cfg) {
  const char *zW = cfg->azArg[ARG_WEIGHTCOLUMN];
  char *zKey, *zRel = 0, *zWeight = 0, *zTab, *zFrom, *zTo, *zRelCol;
  int rc = SQLITE_OK;
  zKey = sqlite3_mprintf("%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%d\x1f%lld",
                         cfg->azArg[ARG_TABLENAME], cfg->azArg[ARG_FROMCOLUMN],
                         cfg->azArg[ARG_TOCOLUMN], cfg->azArg[ARG_RELCOLUMN],
                         cfg->azArg[ARG_RELS] ? cfg->azArg[ARG_RELS] : "\x1e", zW ? zW : "\x1e",
                         cfg->eDir, schemaVersion(t));
  if (zKey == 0) return SQLITE_NOMEM;
  if (t->zKey && strcmp(t->zKey, zKey) == 0) {
    sqlite3_free(zKey);
    return SQLITE_OK;
  }
  bfsFinalizeStatements(t);
  zTab = quoteId(cfg->azArg[ARG_TABLENAME]);
  zFrom = quoteId(cfg->azArg[ARG_FROMCOLUMN]);
  zTo = quoteId(cfg->azArg[ARG_TOCOLUMN]);
  zRelCol = quoteId(cfg->azArg[ARG_RELCOLUMN]);
  if (zTab && zFrom && zTo && zRelCol) {
    zRel = relClause(zRelCol, cfg->azArg[ARG_RELS]);
    if (zW) {
      char *zQuoted = quoteId(zW);
      zWeight = zQuoted ? sqlite3_mprintf(", %s", zQuoted) : 0;
      sqlite3_free(zQuoted);
    } else {
      zWeight = sqlite3_mprintf("");
    }
  }
  if (zRel == 0 || zWeight == 0) {
    rc = SQLITE_NOMEM;
    goto done;
  }
  if (cfg->eDir & DIR_OUT) {
    rc = prepareOne(t, &t->pOut, "SELECT %s%s FROM %s WHERE %s = " LOOKUP "%s", zTo, zWeight, zTab,
                    zFrom, zRel);
    if (rc) goto done;
  }
  if (cfg->eDir & DIR_IN) {
    rc = prepareOne(t, &t->pIn, "SELECT %s%s FROM %s WHERE %s = " LOOKUP "%s", zFrom, zWeight, zTab,
                    zTo, zRel);
    if (rc) goto done;
  }
  rc = prepareOne(t, &t->pRootFrom, "SELECT %s FROM %s WHERE %s = " LOOKUP " AND %s IS NOT NULL%s LIMIT 1",
                  zFrom, zTab, zFrom, zTo, zRel);
  if (rc) goto done;
  rc = prepareOne(t, &t->pRootTo, "SELECT %s FROM %s WHERE %s = " LOOKUP " AND %s IS NOT NULL%s LIMIT 1",
                  zTo, zTab, zTo, zFrom, zRel);
  if (rc) goto done;
  rc = prepareOne(t, &t->pFull, "SELECT %s, %s%s FROM %s WHERE %s IS NOT NULL AND %s IS NOT NULL%s",
                  zFrom, zTo, zWeight, zTab, zFrom, zTo, zRel);
  if (rc) goto done;
  t->bIndexed = 1;
  if (t->pOut) rc = usesIndex(t, t->pOut, &t->bIndexed);
  if (rc == SQLITE_OK && t->pIn) rc = usesIndex(t, t->pIn, &t->bIndexed);
done:
  sqlite3_free(zTab);
  sqlite3_free(zFrom);
  sqlite3_free(zTo);
  sqlite3_free(zRelCol);
  sqlite3_free(zRel);
  sqlite3_free(zWeight);
  if (rc == SQLITE_OK) {
    t->zKey = zKey;
  } else {
    sqlite3_free(zKey);
    bfsFinalizeStatements(t);
  }
  return rc;
}

/* Report the error of statement p (after a failed step) on the vtab. */
static int stmtError(BfsVtab *t, sqlite3_stmt *p, int rc) {
  rc = dbError(t);
  sqlite3_reset(p);
  sqlite3_clear_bindings(p);
  return rc;
}

/*
** Find the stored form of the root: the from value of an edge starting at
** it, else the to value of an edge ending at it. *pbFound is 0 when the
** root is the end of no edge.
*/
static int resolveRoot(BfsVtab *t, const BfsConfig *cfg, const Key *kRoot, Key *kOut,
                       Graph *g, int bAdd, int *pIdx) {
  sqlite3_stmt *aStmt[2];
  int i, rc;
  aStmt[0] = cfg->eDir == DIR_IN ? t->pRootTo : t->pRootFrom;
  aStmt[1] = cfg->eDir == DIR_IN ? t->pRootFrom : t->pRootTo;
  *pIdx = -1;
  for (i = 0; i < 2 && *pIdx < 0; i++) {
    sqlite3_stmt *p = aStmt[i];
    rc = keyBind(p, kRoot);
    if (rc != SQLITE_OK) return stmtError(t, p, rc);
    rc = sqlite3_step(p);
    if (rc == SQLITE_ROW) {
      if (keyFromColumn(p, 0, kOut)) {
        if (bAdd) {
          rc = graphIntern(g, kOut, pIdx);
        } else {
          *pIdx = graphFind(g, kOut, keyHash(kOut));
          rc = SQLITE_OK;
        }
        if (rc != SQLITE_OK) {
          sqlite3_reset(p);
          sqlite3_clear_bindings(p);
          return rc;
        }
      }
    } else if (rc != SQLITE_DONE) {
      return stmtError(t, p, rc);
    }
    sqlite3_reset(p);
    sqlite3_clear_bindings(p);
  }
  return SQLITE_OK;
}

/* Merge sort a[0..n) of node indices by id, using tmp[0..n). */
static void sortById(const Graph *g, int *a, int n, int *tmp) {
  int m = n / 2, i = 0, j = m, k = 0;
  if (n < 2) return;
  sortById(g, a, m, tmp);
  sortById(g, a + m, n - m, tmp);
  while (i < m && j < n) {
    tmp[k++] = keyCmp(&g->aNode[a[j]].key, &g->aNode[a[i]].key) < 0 ? a[j++] : a[i++];
  }
  while (i < m) tmp[k++] = a[i++];
  while (j < n) tmp[k++] = a[j++];
  memcpy(a, tmp, sizeof(int) * n);
}

/* Growable edge list read from the table. */
typedef struct EdgeList {
  sqlite3_int64 *aI, *aJ; /* integer ids, while every id is an integer */
  int *aU, *aV;           /* node indices */
  double *aW;             /* weights, when a weight column is given */
  sqlite3_int64 n, nAlloc;
} EdgeList;

static void edgeListFree(EdgeList *e) {
  sqlite3_free(e->aI);
  sqlite3_free(e->aJ);
  sqlite3_free(e->aU);
  sqlite3_free(e->aV);
  sqlite3_free(e->aW);
  memset(e, 0, sizeof(*e));
}

/* Make room for one more edge in the arrays in use. */
static int edgeListGrow(EdgeList *e, int bInts, int bW) {
  sqlite3_int64 n = e->nAlloc ? e->nAlloc * 2 : 1024;
  void *p;
  if (e->n < e->nAlloc) return SQLITE_OK;
  if (n > 0x3fffffff) return SQLITE_TOOBIG;
  if (bInts) {
    if ((p = sqlite3_realloc64(e->aI, sizeof(sqlite3_int64) * n)) == 0) return SQLITE_NOMEM;
    e->aI = p;
    if ((p = sqlite3_realloc64(e->aJ, sizeof(sqlite3_int64) * n)) == 0) return SQLITE_NOMEM;
    e->aJ = p;
  } else {
    if ((p = sqlite3_realloc64(e->aU, sizeof(int) * n)) == 0) return SQLITE_NOMEM;
    e->aU = p;
    if ((p = sqlite3_realloc64(e->aV, sizeof(int) * n)) == 0) return SQLITE_NOMEM;
    e->aV = p;
  }
  if (bW) {
    if ((p = sqlite3_realloc64(e->aW, sizeof(double) * n)) == 0) return SQLITE_NOMEM;
    e->aW = p;
  }
  e->nAlloc = n;
  return SQLITE_OK;
}

/* Switch an all-integer edge list to node indices through the hash. */
static int edgeListIntern(EdgeList *e, Graph *g) {
  sqlite3_int64 i;
  int rc;
  e->aU = sqlite3_malloc64(sizeof(int) * (e->nAlloc ? e->nAlloc : 1));
  e->aV = sqlite3_malloc64(sizeof(int) * (e->nAlloc ? e->nAlloc : 1));
  if (e->aU == 0 || e->aV == 0) return SQLITE_NOMEM;
  for (i = 0; i < e->n; i++) {
    Key k;
    k.type = KEY_INT;
    k.u.i = e->aI[i];
    if ((rc = graphIntern(g, &k, &e->aU[i])) != SQLITE_OK) return rc;
    k.u.i = e->aJ[i];
    if ((rc = graphIntern(g, &k, &e->aV[i])) != SQLITE_OK) return rc;
  }
  sqlite3_free(e->aI);
  sqlite3_free(e->aJ);
  e->aI = e->aJ = 0;
  return SQLITE_OK;
}

/*
** Integer ids within a small range: number the nodes in id order through a
** direct map, no hashing. Returns SQLITE_DONE when the range is too wide.
*/
static int graphDense(Graph *g, EdgeList *e, sqlite3_int64 mn, sqlite3_int64 mx) {
  sqlite3_uint64 range, r;
  sqlite3_int64 i;
  int *aMap;
  if (mx < mn) return SQLITE_DONE;
  range = (sqlite3_uint64)mx - (sqlite3_uint64)mn; /* exact: mx - mn < 2^64 */
  if (range >= 0x3fffffff || range >= 8 * (sqlite3_uint64)e->n + 1024) return SQLITE_DONE;
  range++;
  aMap = sqlite3_malloc64(sizeof(int) * range);
  e->aU = sqlite3_malloc64(sizeof(int) * (e->nAlloc ? e->nAlloc : 1));
  e->aV = sqlite3_malloc64(sizeof(int) * (e->nAlloc ? e->nAlloc : 1));
  if (aMap == 0 || e->aU == 0 || e->aV == 0) {
    sqlite3_free(aMap);
    return SQLITE_NOMEM;
  }
  memset(aMap, 0xff, sizeof(int) * range);
  for (i = 0; i < e->n; i++) {
    aMap[e->aI[i] - mn] = 0;
    aMap[e->aJ[i] - mn] = 0;
  }
  for (r = 0; r < range; r++) {
    if (aMap[r] < 0) continue;
    if (g->nNode >= g->nAlloc) {
      int n = g->nAlloc ? g->nAlloc * 2 : 64;
      Node *a = sqlite3_realloc64(g->aNode, sizeof(Node) * (sqlite3_uint64)n);
      if (a == 0) {
        sqlite3_free(aMap);
        return SQLITE_NOMEM;
      }
      g->aNode = a;
      g->nAlloc = n;
    }
    memset(&g->aNode[g->nNode], 0, sizeof(Node));
    g->aNode[g->nNode].key.type = KEY_INT;
    g->aNode[g->nNode].key.u.i = mn + (sqlite3_int64)r;
    aMap[r] = g->nNode++;
  }
  for (i = 0; i < e->n; i++) {
    e->aU[i] = aMap[e->aI[i] - mn];
    e->aV[i] = aMap[e->aJ[i] - mn];
  }
  g->aDense = aMap;
  g->iDenseMin = mn;
  g->nDense = (sqlite3_int64)range;
  return SQLITE_OK;
}

/* Renumber hashed nodes in id order, so ties compare node indices. */
static int graphSortNodes(Graph *g, EdgeList *e) {
  int *aPerm = sqlite3_malloc64(sizeof(int) * ((sqlite3_uint64)g->nNode + 1));
  int *aTmp = sqlite3_malloc64(sizeof(int) * ((sqlite3_uint64)g->nNode + 1));
  Node *aNew = sqlite3_malloc64(sizeof(Node) * ((sqlite3_uint64)g->nNode + 1));
  sqlite3_int64 i;
  int rc = SQLITE_NOMEM;
  if (aPerm && aTmp && aNew) {
    for (i = 0; i < g->nNode; i++) aPerm[i] = (int)i;
    sortById(g, aPerm, g->nNode, aTmp);
    for (i = 0; i < g->nNode; i++) {
      aNew[i] = g->aNode[aPerm[i]];
      aTmp[aPerm[i]] = (int)i; /* old index -> new index */
    }
    for (i = 0; i < e->n; i++) {
      e->aU[i] = aTmp[e->aU[i]];
      e->aV[i] = aTmp[e->aV[i]];
    }
    sqlite3_free(g->aNode);
    g->aNode = aNew;
    g->nAlloc = g->nNode + 1;
    aNew = 0;
    sqlite3_free(g->aSlot);
    g->aSlot = 0;
    rc = graphRehash(g);
  }
  sqlite3_free(aPerm);
  sqlite3_free(aTmp);
  sqlite3_free(aNew);
  return rc;
}

/* Read every edge once and build the adjacency in c->g (kept while valid). */
static int loadWholeGraph(BfsVtab *t, BfsCursor *c, const BfsConfig *cfg) {
  Graph *g = &c->g;
  sqlite3_stmt *p = t->pFull;
  EdgeList e;
  int *aDeg = 0;
  sqlite3_int64 nAdj, i, mn = 0, mx = -1;
  int rc, bW = cfg->azArg[ARG_WEIGHTCOLUMN] != 0, bInts = 1;
  sqlite3_int64 nChanges = sqlite3_total_changes64(t->db);
  if (c->zGraphKey && strcmp(c->zGraphKey, t->zKey) == 0 && c->nGraphChanges == nChanges) {
    graphResetSearch(g);
    return SQLITE_OK;
  }
  graphClear(g);
  sqlite3_free(c->zGraphKey);
  c->zGraphKey = 0;
  memset(&e, 0, sizeof(e));
  while ((rc = sqlite3_step(p)) == SQLITE_ROW) {
    Key ku, kv;
    if (!keyFromColumn(p, 0, &ku) || !keyFromColumn(p, 1, &kv)) continue;
    if ((rc = edgeListGrow(&e, bInts, bW)) != SQLITE_OK) break;
    if (bInts && (ku.type != KEY_INT || kv.type != KEY_INT)) {
      bInts = 0;
      if ((rc = edgeListIntern(&e, g)) != SQLITE_OK) break;
    }
    if (bInts) {
      e.aI[e.n] = ku.u.i;
      e.aJ[e.n] = kv.u.i;
      if (mx < mn) mn = mx = ku.u.i;
      if (ku.u.i < mn) mn = ku.u.i;
      if (ku.u.i > mx) mx = ku.u.i;
      if (kv.u.i < mn) mn = kv.u.i;
      if (kv.u.i > mx) mx = kv.u.i;
    } else {
      if ((rc = graphIntern(g, &ku, &e.aU[e.n])) != SQLITE_OK) break;
      if ((rc = graphIntern(g, &kv, &e.aV[e.n])) != SQLITE_OK) break;
    }
    if (bW) e.aW[e.n] = sqlite3_column_type(p, 2) == SQLITE_NULL ? 1.0 : sqlite3_column_double(p, 2);
    e.n++;
  }
  if (rc == SQLITE_DONE) {
    rc = SQLITE_OK;
  } else if (rc != SQLITE_NOMEM && rc != SQLITE_TOOBIG) {
    rc = dbError(t);
  }
  sqlite3_reset(p);
  if (rc != SQLITE_OK) goto done;

  /* Node indices in id order. */
  if (bInts) {
    rc = graphDense(g, &e, mn, mx);
    if (rc == SQLITE_DONE) {
      rc = edgeListIntern(&e, g);
      if (rc == SQLITE_OK) rc = graphSortNodes(g, &e);
    }
  } else {
    rc = graphSortNodes(g, &e);
  }
  if (rc != SQLITE_OK) goto done;
  g->bSorted = 1;

  /* Compressed adjacency in the traversal direction. */
  nAdj = cfg->eDir == DIR_BOTH ? 2 * e.n : e.n;
  g->aStart = sqlite3_malloc64(sizeof(int) * ((sqlite3_uint64)g->nNode + 1));
  g->aAdj = sqlite3_malloc64(sizeof(int) * (nAdj ? nAdj : 1));
  g->aAdjW = bW ? sqlite3_malloc64(sizeof(double) * (nAdj ? nAdj : 1)) : 0;
  aDeg = sqlite3_malloc64(sizeof(int) * ((sqlite3_uint64)g->nNode + 1));
  if (g->aStart == 0 || g->aAdj == 0 || (bW && g->aAdjW == 0) || aDeg == 0) {
    rc = SQLITE_NOMEM;
    goto done;
  }
  memset(aDeg, 0, sizeof(int) * ((size_t)g->nNode + 1));
  for (i = 0; i < e.n; i++) {
    if (cfg->eDir & DIR_OUT) aDeg[e.aU[i]]++;
    if (cfg->eDir & DIR_IN) aDeg[e.aV[i]]++;
  }
  g->aStart[0] = 0;
  for (i = 0; i < g->nNode; i++) {
    g->aStart[i + 1] = g->aStart[i] + aDeg[i];
    aDeg[i] = g->aStart[i];
  }
  for (i = 0; i < e.n; i++) {
    if (cfg->eDir & DIR_OUT) {
      int j = aDeg[e.aU[i]]++;
      g->aAdj[j] = e.aV[i];
      if (bW) g->aAdjW[j] = e.aW[i];
    }
    if (cfg->eDir & DIR_IN) {
      int j = aDeg[e.aV[i]]++;
      g->aAdj[j] = e.aU[i];
      if (bW) g->aAdjW[j] = e.aW[i];
    }
  }
  graphResetSearch(g);
  c->zGraphKey = sqlite3_mprintf("%s", t->zKey);
  if (c->zGraphKey == 0) rc = SQLITE_NOMEM;
  c->nGraphChanges = nChanges;
done:
  edgeListFree(&e);
  sqlite3_free(aDeg);
  if (rc != SQLITE_OK) {
    graphClear(g);
    sqlite3_free(c->zGraphKey);
    c->zGraphKey = 0;
  }
  return rc;
}

/* Expand node u with one neighbour statement (index-lookup mode). */
static int expandWithStatement(BfsVtab *t, Graph *g, sqlite3_stmt *p, int u, int bW,
                               int iTarget, int bFound) {
  Key k = g->aNode[u].key;
  int rc = keyBind(p, &k);
  if (rc != SQLITE_OK) return stmtError(t, p, rc);
  while ((rc = sqlite3_step(p)) == SQLITE_ROW) {
    Key kv;
    unsigned int h;
    int v;
    double w = 1.0;
    if (!keyFromColumn(p, 0, &kv)) continue;
    if (bW && sqlite3_column_type(p, 1) != SQLITE_NULL) w = sqlite3_column_double(p, 1);
    h = keyHash(&kv);
    v = graphFind(g, &kv, h);
    if (bFound) {
      if (v != iTarget) continue; /* only parents of the target matter now */
    } else if (v < 0) {
      rc = graphAdd(g, &kv, h, &v);
      if (rc != SQLITE_OK) break;
    }
    rc = graphRelax(g, u, v, w);
    if (rc != SQLITE_OK) break;
  }
  if (rc == SQLITE_DONE || rc == SQLITE_NOMEM || rc == SQLITE_TOOBIG) {
    sqlite3_reset(p);
    sqlite3_clear_bindings(p);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
  }
  return stmtError(t, p, rc);
}

/*
** Breadth-first search from node iRoot, expanding nodes closer than
** maxDepth; stops one level after iTarget (>= 0) is reached.
*/
static int runSearch(BfsVtab *t, Graph *g, int bWhole, int bW, int iRoot, int iTarget,
                     sqlite3_int64 maxDepth) {
  int qi = 0, rc = SQLITE_OK, bFound = 0;
  g->aNode[iRoot].dist = 0;
  g->aNode[iRoot].weight = 1.0;
  rc = graphPush(g, iRoot);
  while (rc == SQLITE_OK && qi < g->nOrder) {
    int u = g->aOrder[qi++];
    int du = g->aNode[u].dist;
    if (maxDepth >= 0 && du >= maxDepth) break;
    if (bFound && du >= g->aNode[iTarget].dist) break;
    if (bWhole) {
      int j;
      for (j = g->aStart[u]; rc == SQLITE_OK && j < g->aStart[u + 1]; j++) {
        int v = g->aAdj[j];
        if (bFound && v != iTarget) continue;
        rc = graphRelax(g, u, v, g->aAdjW ? g->aAdjW[j] : 1.0);
      }
    } else {
      if (t->pOut) rc = expandWithStatement(t, g, t->pOut, u, bW, iTarget, bFound);
      if (rc == SQLITE_OK && t->pIn) {
        rc = expandWithStatement(t, g, t->pIn, u, bW, iTarget, bFound);
      }
    }
    if (iTarget >= 0 && g->aNode[iTarget].dist >= 0) bFound = 1;
  }
  return rc;
}

static int cmpInt(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return x < y ? -1 : (x > y);
}

/* Order the rows by distance, then id (BFS order already groups distances). */
static int sortLevels(Graph *g) {
  int *tmp = sqlite3_malloc64(sizeof(int) * ((sqlite3_uint64)g->nOrder + 1));
  int i = 0;
  if (tmp == 0) return SQLITE_NOMEM;
  while (i < g->nOrder) {
    int j = i + 1, d = g->aNode[g->aOrder[i]].dist;
    while (j < g->nOrder && g->aNode[g->aOrder[j]].dist == d) j++;
    if (g->bSorted) {
      qsort(g->aOrder + i, (size_t)(j - i), sizeof(int), cmpInt);
    } else {
      sortById(g, g->aOrder + i, j - i, tmp);
    }
    i = j;
  }
  sqlite3_free(tmp);
  return SQLITE_OK;
}

/* Lower the depth limit for a "distance <op> value" constraint. */
static void applyDistanceBound(char op, sqlite3_value *v, sqlite3_int64 *pMax, int *pbEmpty) {
  int eType = sqlite3_value_type(v);
  double r, bound;
  if (eType == SQLITE_NULL) {
    *pbEmpty = 1;
    return;
  }
  if (eType != SQLITE_INTEGER && eType != SQLITE_FLOAT) return; /* SQLite filters */
  r = sqlite3_value_double(v);
  bound = op == '<' ? ceil(r) - 1 : floor(r);
  if (bound < 0) {
    *pbEmpty = 1;
  } else if (bound < 0x3fffffff && (*pMax < 0 || bound < (double)*pMax)) {
    *pMax = (sqlite3_int64)bound;
  }
}

static int bfsFilterInner(BfsVtab *t, BfsCursor *c, int idxNum, const char *idxStr, int argc,
                          sqlite3_value **argv) {
  static const char *azBuiltin[N_ARG] = {0, "src", "dst", 0, 0, "out", "rel", 0, 0};
  sqlite3_value *aArg[N_ARG];
  sqlite3_value *pTarget = 0;
  BfsConfig cfg;
  Key kRoot, kTarget, kStored;
  int i, j = 0, rc, bEmpty = 0, bWhole, iRoot = -1, iTarget = -1, bHasTarget = 0;
  Graph *g = &c->g;

  for (i = 0; i < N_ARG; i++) aArg[i] = (idxNum & (1 << i)) && j < argc ? argv[j++] : 0;
  if ((idxNum & IDX_TARGET) && j < argc) pTarget = argv[j++];

  /* Effective configuration: constraint, else CREATE argument, else built-in. */
  memset(&cfg, 0, sizeof(cfg));
  for (i = 0; i < N_ARG; i++) {
    if (i == ARG_ROOT) continue;
    if (aArg[i] && sqlite3_value_type(aArg[i]) != SQLITE_NULL) {
      cfg.azArg[i] = (const char *)sqlite3_value_text(aArg[i]);
    } else if (t->azDefault[i]) {
      cfg.azArg[i] = t->azDefault[i];
    } else {
      cfg.azArg[i] = azBuiltin[i];
    }
    c->azArg[i] = cfg.azArg[i] ? sqlite3_mprintf("%s", cfg.azArg[i]) : 0;
  }
  if (cfg.azArg[ARG_RELS] && cfg.azArg[ARG_RELS][strspn(cfg.azArg[ARG_RELS], " \t,")] == 0) {
    cfg.azArg[ARG_RELS] = 0; /* an empty list is no filter */
  }
  if (aArg[ARG_ROOT]) c->pRoot = sqlite3_value_dup(aArg[ARG_ROOT]);
  if (aArg[ARG_MAX_DEPTH]) c->pMaxDepth = sqlite3_value_dup(aArg[ARG_MAX_DEPTH]);

  if (cfg.azArg[ARG_TABLENAME] == 0) {
    vtabSetError(&t->base, "bfsvtab: tablename is required, e.g. WHERE tablename = 'graph_edges'");
    return SQLITE_ERROR;
  }
  cfg.eDir = parseDirection(cfg.azArg[ARG_DIRECTION]);
  if (cfg.eDir == 0) {
    vtabSetError(&t->base, "bfsvtab: direction must be 'out', 'in' or 'both', not '%s'",
                 cfg.azArg[ARG_DIRECTION]);
    return SQLITE_ERROR;
  }
  if (aArg[ARG_MAX_DEPTH]) {
    cfg.maxDepth = parseDepthValue(aArg[ARG_MAX_DEPTH]);
  } else {
    cfg.maxDepth = t->azDefault[ARG_MAX_DEPTH] ? parseDepthText(t->azDefault[ARG_MAX_DEPTH]) : -1;
  }
  if (cfg.maxDepth == -2) {
    vtabSetError(&t->base, "bfsvtab: max_depth must be a non-negative integer or NULL");
    return SQLITE_ERROR;
  }
  for (i = 0; idxStr && idxStr[i] && j < argc; i++) {
    applyDistanceBound(idxStr[i], argv[j++], &cfg.maxDepth, &bEmpty);
  }
  if (c->azArg[ARG_TABLENAME] == 0) return SQLITE_NOMEM;

  rc = bfsPrepare(t, &cfg);
  if (rc != SQLITE_OK) return rc;

  if (bEmpty || c->pRoot == 0 || !keyFromValue(c->pRoot, &kRoot)) return SQLITE_OK;
  if (pTarget) {
    if (!keyFromValue(pTarget, &kTarget)) return SQLITE_OK; /* id = NULL */
    bHasTarget = 1;
  }

  bWhole = !t->bIndexed || (cfg.maxDepth < 0 && !bHasTarget);
  if (bWhole) {
    rc = loadWholeGraph(t, c, &cfg);
    if (rc != SQLITE_OK) return rc;
    iRoot = graphFind(g, &kRoot, keyHash(&kRoot));
    if (iRoot < 0) {
      /* The root may be stored under another type (affinity): look it up. */
      rc = resolveRoot(t, &cfg, &kRoot, &kStored, g, 0, &iRoot);
      if (rc != SQLITE_OK) return rc;
    }
    if (iRoot < 0) return SQLITE_OK;
  } else {
    if (c->zGraphKey) {
      sqlite3_free(c->zGraphKey);
      c->zGraphKey = 0;
    }
    graphClear(g);
    rc = resolveRoot(t, &cfg, &kRoot, &kStored, g, 1, &iRoot);
    if (rc != SQLITE_OK || iRoot < 0) return rc;
  }

  if (bHasTarget) {
    if (keyEq(&kTarget, &g->aNode[iRoot].key)) {
      iTarget = iRoot;
      cfg.maxDepth = 0;
    } else if (bWhole) {
      iTarget = graphFind(g, &kTarget, keyHash(&kTarget));
      if (iTarget < 0) return SQLITE_OK; /* not in the graph */
    } else {
      rc = graphIntern(g, &kTarget, &iTarget);
      if (rc != SQLITE_OK) return rc;
    }
  }

  rc = runSearch(t, g, bWhole, cfg.azArg[ARG_WEIGHTCOLUMN] != 0, iRoot, iTarget, cfg.maxDepth);
  if (rc != SQLITE_OK) return rc;
  if (bHasTarget) {
    c->iTarget = iTarget;
    c->aRow = &c->iTarget;
    c->nRow = g->aNode[iTarget].dist >= 0 ? 1 : 0;
  } else {
    rc = sortLevels(g);
    if (rc != SQLITE_OK) return rc;
    c->aRow = g->aOrder;
    c->nRow = g->nOrder;
  }
  return SQLITE_OK;
}

static int bfsFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv) {
  BfsCursor *c = (BfsCursor *)cur;
  BfsVtab *t = (BfsVtab *)cur->pVtab;
  int rc;
  c->nRow = c->iRow = 0;
  c->aRow = 0;
  cursorResetArgs(c);
  if (t->bBusy) {
    vtabSetError(&t->base, "bfsvtab: the edge table cannot itself query bfsvtab");
    return SQLITE_ERROR;
  }
  t->bBusy = 1;
  rc = bfsFilterInner(t, c, idxNum, idxStr, argc, argv);
  t->bBusy = 0;
  if (rc != SQLITE_OK) {
    c->nRow = 0;
    c->aRow = 0;
  }
  return rc;
}

static int bfsNext(sqlite3_vtab_cursor *cur) {
  ((BfsCursor *)cur)->iRow++;
  return SQLITE_OK;
}

static int bfsEof(sqlite3_vtab_cursor *cur) {
  BfsCursor *c = (BfsCursor *)cur;
  return c->iRow >= c->nRow;
}

/* shortest_path ("/1/2/4/") or path (JSON array) of node v. */
static int resultPath(BfsCursor *c, sqlite3_context *ctx, int v, int bJson) {
  Graph *g = &c->g;
  int n = g->aNode[v].dist + 1, i, u;
  sqlite3_str *s;
  char *z;
  if (n > c->nPathAlloc) {
    int *a = sqlite3_realloc64(c->aPath, sizeof(int) * (sqlite3_uint64)n);
    if (a == 0) return SQLITE_NOMEM;
    c->aPath = a;
    c->nPathAlloc = n;
  }
  for (i = n - 1, u = v; i >= 0; i--, u = g->aNode[u].parent) c->aPath[i] = u;
  s = sqlite3_str_new(0);
  sqlite3_str_appendchar(s, 1, bJson ? '[' : '/');
  for (i = 0; i < n; i++) {
    if (bJson) {
      if (i) sqlite3_str_appendchar(s, 1, ',');
      keyAppendJson(s, &g->aNode[c->aPath[i]].key);
    } else {
      keyAppendText(s, &g->aNode[c->aPath[i]].key);
      sqlite3_str_appendchar(s, 1, '/');
    }
  }
  if (bJson) sqlite3_str_appendchar(s, 1, ']');
  n = sqlite3_str_length(s);
  z = sqlite3_str_finish(s);
  if (z == 0) return SQLITE_NOMEM;
  sqlite3_result_text(ctx, z, n, sqlite3_free);
  return SQLITE_OK;
}

static int bfsColumn(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int iCol) {
  BfsCursor *c = (BfsCursor *)cur;
  const Node *p = &c->g.aNode[c->aRow[c->iRow]];
  int rc = SQLITE_OK;
  switch (iCol) {
    case COL_ID:
      keyResult(ctx, &p->key);
      break;
    case COL_PARENT:
      if (p->parent >= 0) keyResult(ctx, &c->g.aNode[p->parent].key);
      break;
    case COL_DISTANCE:
      sqlite3_result_int(ctx, p->dist);
      break;
    case COL_SHORTEST_PATH:
      rc = resultPath(c, ctx, c->aRow[c->iRow], 0);
      break;
    case COL_WEIGHT:
      sqlite3_result_double(ctx, p->weight);
      break;
    case COL_PATH:
      rc = resultPath(c, ctx, c->aRow[c->iRow], 1);
      break;
    case COL_START:
    case COL_FIRST_ARG + ARG_ROOT:
      if (c->pRoot) sqlite3_result_value(ctx, c->pRoot);
      break;
    case COL_FIRST_ARG + ARG_MAX_DEPTH:
      if (c->pMaxDepth) {
        sqlite3_result_value(ctx, c->pMaxDepth);
      } else if (((BfsVtab *)cur->pVtab)->azDefault[ARG_MAX_DEPTH]) {
        sqlite3_result_int64(ctx, parseDepthText(((BfsVtab *)cur->pVtab)->azDefault[ARG_MAX_DEPTH]));
      }
      break;
    default:
      if (iCol >= COL_FIRST_ARG && iCol < COL_FIRST_ARG + N_ARG && c->azArg[iCol - COL_FIRST_ARG]) {
        sqlite3_result_text(ctx, c->azArg[iCol - COL_FIRST_ARG], -1, SQLITE_TRANSIENT);
      }
      break;
  }
  if (rc == SQLITE_NOMEM) sqlite3_result_error_nomem(ctx);
  return rc;
}

static int bfsRowid(sqlite3_vtab_cursor *cur, sqlite_int64 *pRowid) {
  *pRowid = ((BfsCursor *)cur)->iRow;
  return SQLITE_OK;
}

static sqlite3_module bfsModule = {
    0,             /* iVersion */
    bfsConnect,    /* xCreate: also creatable with CREATE VIRTUAL TABLE */
    bfsConnect,    /* xConnect */
    bfsBestIndex,  /* xBestIndex */
    bfsDisconnect, /* xDisconnect */
    bfsDisconnect, /* xDestroy */
    bfsOpen,       /* xOpen */
    bfsClose,      /* xClose */
    bfsFilter,     /* xFilter */
    bfsNext,       /* xNext */
    bfsEof,        /* xEof */
    bfsColumn,     /* xColumn */
    bfsRowid,      /* xRowid */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};  /* xUpdate .. xShadowName */

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_bfsvtab_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  (void)pzErrMsg;
  return sqlite3_create_module(db, "bfsvtab", &bfsModule, 0);
}

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_extension_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  return sqlite3_bfsvtab_init(db, pzErrMsg, pApi);
}
