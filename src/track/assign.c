/* Minimum-cost assignment for track-detection association: the Hungarian method in
 * its shortest-augmenting-path form with row/column potentials (O(n^2 m) for n <= m).
 * ByteTrack solves the same problem with the Jonker-Volgenant solver; an optimal
 * assignment (rather than greedy by IoU) matters exactly when boxes overlap, e.g.
 * two faces crossing, where a greedy pass can hand the best-looking pair to the wrong
 * track and strand the other one. Frames hold tens of faces at most, so the cubic
 * bound is irrelevant. Pairs over the cost limit are priced prohibitively so that the
 * solver first maximises the number of allowed matches, then drops any such pair. */
#include <math.h>
#include <stdlib.h>

#include "track_internal.h"

#define FORBIDDEN 1e9

static ffu_status grow(ffu_tracker *t, int need)
{
    if (need <= t->cap_hu) return FFU_OK;
    int cap = need < 16 ? 16 : need * 2;
    double *u = realloc(t->hu_u, (size_t)cap * sizeof *u);
    if (u) t->hu_u = u;
    double *v = realloc(t->hu_v, (size_t)cap * sizeof *v);
    if (v) t->hu_v = v;
    double *mv = realloc(t->hu_minv, (size_t)cap * sizeof *mv);
    if (mv) t->hu_minv = mv;
    int *p = realloc(t->hu_p, (size_t)cap * sizeof *p);
    if (p) t->hu_p = p;
    int *w = realloc(t->hu_way, (size_t)cap * sizeof *w);
    if (w) t->hu_way = w;
    unsigned char *us = realloc(t->hu_used, (size_t)cap);
    if (us) t->hu_used = us;
    if (!u || !v || !mv || !p || !w || !us)
        return ffu_error_set(FFU_ERR_NOMEM, "tracker: assignment scratch for %d", need);
    t->cap_hu = cap;
    return FFU_OK;
}

ffu_status track_assign(ffu_tracker *t, const double *cost, int rows, int cols, double limit,
                        int *row_match, int *col_match)
{
    for (int i = 0; i < rows; i++)
        row_match[i] = -1;
    for (int j = 0; j < cols; j++)
        col_match[j] = -1;
    if (rows == 0 || cols == 0) return FFU_OK;
    /* The solver wants n <= m; solve the transpose when there are more rows. */
    int tr = rows > cols;
    int n = tr ? cols : rows, m = tr ? rows : cols;
    ffu_status st = grow(t, m + 1);
    if (st < 0) return st;
    double *u = t->hu_u, *v = t->hu_v, *minv = t->hu_minv;
    int *p = t->hu_p, *way = t->hu_way;
    unsigned char *used = t->hu_used;
    for (int j = 0; j <= m; j++)
        u[j] = v[j] = 0, p[j] = 0, way[j] = 0;

    for (int i = 1; i <= n; i++) {
        p[0] = i;
        int j0 = 0;
        for (int j = 0; j <= m; j++)
            minv[j] = INFINITY, used[j] = 0;
        do {
            used[j0] = 1;
            int i0 = p[j0], j1 = 0;
            double delta = INFINITY;
            for (int j = 1; j <= m; j++) {
                if (used[j]) continue;
                double c = tr ? cost[(size_t)(j - 1) * cols + (i0 - 1)]
                              : cost[(size_t)(i0 - 1) * cols + (j - 1)];
                if (!(c <= limit)) c = FORBIDDEN; /* also catches NaN */
                double cur = c - u[i0] - v[j];
                if (cur < minv[j]) minv[j] = cur, way[j] = j0;
                if (minv[j] < delta) delta = minv[j], j1 = j;
            }
            for (int j = 0; j <= m; j++) {
                if (used[j]) {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
        } while (p[j0] != 0);
        do {
            int j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
        } while (j0);
    }
    for (int j = 1; j <= m; j++) {
        if (!p[j]) continue;
        int r = tr ? j - 1 : p[j] - 1, c = tr ? p[j] - 1 : j - 1;
        double cv = cost[(size_t)r * cols + c];
        if (!(cv <= limit)) continue;
        row_match[r] = c;
        col_match[c] = r;
    }
    return FFU_OK;
}
