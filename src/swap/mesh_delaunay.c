/* Constrained Delaunay triangulation of a few hundred points, for the mesh swapper's
 * fixed triangulation of the 468 FaceMesh points. tools/swap_mesh runs it once over the
 * canonical layout and commits the result (mesh_tables.c); test_swap_mesh runs it again
 * to check that the committed table is what this code gives.
 *
 * Method: Bowyer-Watson insertion inside a large super-triangle; each constraint ring's
 * edges forced in by flipping the edges that cross them (Sloan 1993); Lawson flips to
 * make every other edge locally Delaunay again; then only triangles inside the outer
 * ring kept. Brute-force neighbour search (a linear scan per lookup): for ~900 triangles
 * this takes a few milliseconds and keeps the code short. The in-circle test runs in
 * long double, exact for integer coordinates below 2^15 (the committed layout). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mesh_internal.h"

typedef struct tri_set {
    int (*t)[3];
    int n, cap;
    const double *xy; /* n points + 3 super vertices */
} tri_set;

static double orient(const double *xy, int a, int b, int c)
{
    const double *pa = xy + 2 * a, *pb = xy + 2 * b, *pc = xy + 2 * c;
    return (pb[0] - pa[0]) * (pc[1] - pa[1]) - (pb[1] - pa[1]) * (pc[0] - pa[0]);
}

/* > 0 when d lies strictly inside the circle through the counter-clockwise a, b, c. */
static long double incircle(const double *xy, int a, int b, int c, int d)
{
    long double dx = xy[2 * d], dy = xy[2 * d + 1];
    long double adx = xy[2 * a] - dx, ady = xy[2 * a + 1] - dy;
    long double bdx = xy[2 * b] - dx, bdy = xy[2 * b + 1] - dy;
    long double cdx = xy[2 * c] - dx, cdy = xy[2 * c + 1] - dy;
    return (adx * adx + ady * ady) * (bdx * cdy - cdx * bdy) +
           (bdx * bdx + bdy * bdy) * (cdx * ady - adx * cdy) +
           (cdx * cdx + cdy * cdy) * (adx * bdy - bdx * ady);
}

static int push_tri(tri_set *s, int a, int b, int c)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 256;
        void *p = realloc(s->t, (size_t)cap * sizeof *s->t);
        if (!p) return -1;
        s->t = p;
        s->cap = cap;
    }
    s->t[s->n][0] = a;
    s->t[s->n][1] = b;
    s->t[s->n][2] = c;
    s->n++;
    return 0;
}

/* Triangle holding the directed edge u -> v, its slot k (t[k] = u), or -1. */
static int find_edge(const tri_set *s, int u, int v, int *k)
{
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < 3; j++)
            if (s->t[i][j] == u && s->t[i][(j + 1) % 3] == v) {
                *k = j;
                return i;
            }
    return -1;
}

/* Flips the edge u -> v when its two triangles form a strictly convex quad; 1 if done. */
static int flip(tri_set *s, int u, int v, int *p_out, int *q_out)
{
    int k1 = 0, k2 = 0;
    int t1 = find_edge(s, u, v, &k1), t2 = find_edge(s, v, u, &k2);
    if (t1 < 0 || t2 < 0) return 0;
    int p = s->t[t1][(k1 + 2) % 3], q = s->t[t2][(k2 + 2) % 3];
    /* the quad u, q, v, p is counter-clockwise; the new diagonal is q - p */
    if (!(orient(s->xy, u, q, p) > 0) || !(orient(s->xy, q, v, p) > 0)) return 0;
    s->t[t1][0] = u, s->t[t1][1] = q, s->t[t1][2] = p;
    s->t[t2][0] = q, s->t[t2][1] = v, s->t[t2][2] = p;
    if (p_out) *p_out = p, *q_out = q;
    return 1;
}

static int segments_cross(const double *xy, int a, int b, int u, int v)
{
    double o1 = orient(xy, a, b, u), o2 = orient(xy, a, b, v);
    double o3 = orient(xy, u, v, a), o4 = orient(xy, u, v, b);
    return ((o1 > 0 && o2 < 0) || (o1 < 0 && o2 > 0)) && ((o3 > 0 && o4 < 0) || (o3 < 0 && o4 > 0));
}

static int is_ring_edge(const mesh_ring *rings, int n_rings, int u, int v)
{
    for (int r = 0; r < n_rings; r++)
        for (int i = 0; i < rings[r].n; i++) {
            int a = rings[r].idx[i], b = rings[r].idx[(i + 1) % rings[r].n];
            if ((a == u && b == v) || (a == v && b == u)) return 1;
        }
    return 0;
}

static ffu_status bowyer_watson(tri_set *s, double *xy, int n)
{
    double x0 = xy[0], x1 = xy[0], y0 = xy[1], y1 = xy[1];
    for (int i = 1; i < n; i++) {
        x0 = fmin(x0, xy[2 * i]), x1 = fmax(x1, xy[2 * i]);
        y0 = fmin(y0, xy[2 * i + 1]), y1 = fmax(y1, xy[2 * i + 1]);
    }
    double d = fmax(fmax(x1 - x0, y1 - y0), 1.0), cx = 0.5 * (x0 + x1), cy = 0.5 * (y0 + y1);
    /* far enough that no super vertex lies in a circumcircle that matters */
    xy[2 * n] = cx - 40 * d, xy[2 * n + 1] = cy - 20 * d;
    xy[2 * n + 2] = cx + 40 * d, xy[2 * n + 3] = cy - 20 * d;
    xy[2 * n + 4] = cx, xy[2 * n + 5] = cy + 40 * d;
    if (push_tri(s, n, n + 1, n + 2))
        return ffu_error_set(FFU_ERR_NOMEM, "triangulation: out of memory");
    int *bad = NULL, (*edges)[2] = NULL;
    ffu_status st = FFU_OK;
    for (int p = 0; p < n; p++) {
        free(bad);
        free(edges);
        bad = malloc((size_t)s->n * sizeof *bad);
        edges = malloc((size_t)s->n * 3 * sizeof *edges);
        if (!bad || !edges) {
            st = ffu_error_set(FFU_ERR_NOMEM, "triangulation: out of memory");
            break;
        }
        int nb = 0, ne = 0;
        for (int i = 0; i < s->n; i++)
            if (incircle(xy, s->t[i][0], s->t[i][1], s->t[i][2], p) > 0) bad[nb++] = i;
        if (nb == 0) {
            /* p is on a circle or an edge only: degenerate input (duplicates) */
            st = ffu_error_set(FFU_ERR_INVALID, "triangulation: point %d duplicates another", p);
            break;
        }
        /* cavity boundary: edges of bad triangles whose reverse is not in another one */
        for (int i = 0; i < nb; i++) {
            const int *t = s->t[bad[i]];
            for (int j = 0; j < 3; j++) {
                int u = t[j], v = t[(j + 1) % 3], shared = 0;
                for (int m = 0; m < nb && !shared; m++) {
                    const int *o = s->t[bad[m]];
                    for (int q = 0; q < 3; q++)
                        if (o[q] == v && o[(q + 1) % 3] == u) shared = 1;
                }
                if (!shared) {
                    edges[ne][0] = u;
                    edges[ne][1] = v;
                    ne++;
                }
            }
        }
        /* remove bad triangles (descending so the swap-with-last keeps indices valid) */
        for (int i = nb - 1; i >= 0; i--)
            memcpy(s->t[bad[i]], s->t[--s->n], sizeof s->t[0]);
        for (int i = 0; i < ne; i++)
            if (push_tri(s, edges[i][0], edges[i][1], p)) {
                st = ffu_error_set(FFU_ERR_NOMEM, "triangulation: out of memory");
                break;
            }
        if (st) break;
    }
    free(bad);
    free(edges);
    return st;
}

static ffu_status force_edge(tri_set *s, int npts, int a, int b)
{
    int k = 0;
    if (find_edge(s, a, b, &k) >= 0 || find_edge(s, b, a, &k) >= 0) return FFU_OK;
    /* no other point may lie on the open segment a-b */
    const double *xy = s->xy;
    double abx = xy[2 * b] - xy[2 * a], aby = xy[2 * b + 1] - xy[2 * a + 1];
    for (int i = 0; i < npts; i++) {
        if (i == a || i == b || orient(xy, a, b, i) != 0) continue;
        double t = ((xy[2 * i] - xy[2 * a]) * abx + (xy[2 * i + 1] - xy[2 * a + 1]) * aby) /
                   (abx * abx + aby * aby);
        if (t > 0 && t < 1)
            return ffu_error_set(FFU_ERR_INVALID,
                                 "triangulation: point %d lies on constraint edge %d-%d", i, a, b);
    }
    /* queue of the edges crossing a-b, each undirected edge once (the direction with
     * u < v; an edge on the hull has only one direction, but a-b joins two points and
     * the hull is the super-triangle's, so every crossing edge has both) */
    int cap = 64, n = 0, head = 0;
    int(*q)[2] = malloc((size_t)cap * sizeof *q);
    if (!q) return ffu_error_set(FFU_ERR_NOMEM, "triangulation: out of memory");
    for (int i = 0; i < s->n; i++)
        for (int j = 0; j < 3; j++) {
            int u = s->t[i][j], v = s->t[i][(j + 1) % 3];
            if (u < v && segments_cross(xy, a, b, u, v)) {
                if (n == cap) {
                    void *p = realloc(q, (size_t)(cap *= 2) * sizeof *q);
                    if (!p) {
                        free(q);
                        return ffu_error_set(FFU_ERR_NOMEM, "triangulation: out of memory");
                    }
                    q = p;
                }
                q[n][0] = u;
                q[n][1] = v;
                n++;
            }
        }
    /* a ring buffer of at most n live entries: each flip removes one crossing edge or
     * replaces it by one; the guard stops a loop on input we cannot handle */
    long guard = 0;
    int live = n;
    while (live > 0) {
        if (++guard > 100000L) {
            free(q);
            return ffu_error_set(FFU_ERR_INVALID, "triangulation: cannot force edge %d-%d", a, b);
        }
        int u = q[head][0], v = q[head][1];
        head = (head + 1) % cap;
        live--;
        int p, r;
        if (!flip(s, u, v, &p, &r) && !flip(s, v, u, &p, &r)) {
            /* not convex yet: try again after the others */
            int tail = (head + live) % cap;
            q[tail][0] = u, q[tail][1] = v;
            live++;
            continue;
        }
        if (segments_cross(xy, a, b, p, r)) {
            int tail = (head + live) % cap;
            q[tail][0] = p, q[tail][1] = r;
            live++;
        }
    }
    free(q);
    if (find_edge(s, a, b, &k) < 0 && find_edge(s, b, a, &k) < 0)
        return ffu_error_set(FFU_ERR_INVALID, "triangulation: edge %d-%d did not appear", a, b);
    return FFU_OK;
}

static void lawson(tri_set *s, const mesh_ring *rings, int n_rings)
{
    for (int pass = 0; pass < 1000; pass++) {
        int changed = 0;
        for (int i = 0; i < s->n; i++)
            for (int j = 0; j < 3; j++) {
                int u = s->t[i][j], v = s->t[i][(j + 1) % 3], p = s->t[i][(j + 2) % 3];
                if (is_ring_edge(rings, n_rings, u, v)) continue;
                int k = 0, t2 = find_edge(s, v, u, &k);
                if (t2 < 0) continue;
                int q = s->t[t2][(k + 2) % 3];
                if (incircle(s->xy, u, v, p, q) > 0 && flip(s, u, v, NULL, NULL)) {
                    changed = 1;
                    break; /* triangle i changed: move on */
                }
            }
        if (!changed) return;
    }
}

static int inside_ring(const double *xy, const mesh_ring *r, double px, double py)
{
    int wn = 0;
    for (int i = 0; i < r->n; i++) {
        const double *a = xy + 2 * r->idx[i], *b = xy + 2 * r->idx[(i + 1) % r->n];
        double c = (b[0] - a[0]) * (py - a[1]) - (b[1] - a[1]) * (px - a[0]);
        if (a[1] <= py) {
            if (b[1] > py && c > 0) wn++;
        } else if (b[1] <= py && c < 0) {
            wn--;
        }
    }
    return wn != 0;
}

static int cmp_tri(const void *a, const void *b)
{
    const int *x = a, *y = b;
    for (int i = 0; i < 3; i++)
        if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
    return 0;
}

ffu_status mesh_triangulate(const double *xy_in, int n, const mesh_ring *rings, int n_rings,
                            int **tri, int *n_tri)
{
    if (tri) *tri = NULL;
    if (n_tri) *n_tri = 0;
    if (!xy_in || n < 3 || !tri || !n_tri || (n_rings > 0 && !rings))
        return ffu_error_set(FFU_ERR_INVALID, "triangulation: bad arguments");
    for (int r = 0; r < n_rings; r++)
        for (int i = 0; i < rings[r].n; i++)
            if (rings[r].idx[i] < 0 || rings[r].idx[i] >= n)
                return ffu_error_set(FFU_ERR_INVALID, "triangulation: ring %d index out of range",
                                     r);
    for (int i = 0; i < 2 * n; i++)
        if (!isfinite(xy_in[i]))
            return ffu_error_set(FFU_ERR_INVALID, "triangulation: non-finite point");
    double *xy = malloc((size_t)(n + 3) * 2 * sizeof *xy);
    if (!xy) return ffu_error_set(FFU_ERR_NOMEM, "triangulation: out of memory");
    memcpy(xy, xy_in, (size_t)n * 2 * sizeof *xy);
    tri_set s = {.xy = xy};
    ffu_status st = bowyer_watson(&s, xy, n);
    for (int r = 0; r < n_rings && !st; r++)
        for (int i = 0; i < rings[r].n && !st; i++)
            st = force_edge(&s, n, rings[r].idx[i], rings[r].idx[(i + 1) % rings[r].n]);
    if (!st) {
        lawson(&s, rings, n_rings);
        int m = 0;
        for (int i = 0; i < s.n; i++) {
            int *t = s.t[i];
            if (t[0] >= n || t[1] >= n || t[2] >= n) continue;
            double cx = (xy[2 * t[0]] + xy[2 * t[1]] + xy[2 * t[2]]) / 3;
            double cy = (xy[2 * t[0] + 1] + xy[2 * t[1] + 1] + xy[2 * t[2] + 1]) / 3;
            if (n_rings > 0 && !inside_ring(xy, &rings[0], cx, cy)) continue;
            /* rotate so the smallest index comes first (orientation kept) */
            int r0 = t[0] < t[1] ? (t[0] < t[2] ? 0 : 2) : (t[1] < t[2] ? 1 : 2);
            int a = t[r0], b = t[(r0 + 1) % 3], c = t[(r0 + 2) % 3];
            s.t[m][0] = a, s.t[m][1] = b, s.t[m][2] = c;
            m++;
        }
        qsort(s.t, (size_t)m, sizeof s.t[0], cmp_tri);
        int *out = malloc((size_t)(m ? m : 1) * 3 * sizeof *out);
        if (!out) {
            st = ffu_error_set(FFU_ERR_NOMEM, "triangulation: out of memory");
        } else {
            memcpy(out, s.t, (size_t)m * 3 * sizeof *out);
            *tri = out;
            *n_tri = m;
        }
    }
    free(s.t);
    free(xy);
    return st;
}
