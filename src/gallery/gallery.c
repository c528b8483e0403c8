/* The gallery in memory: identities (name + a run of templates), a name index, and the
 * search. Templates are normalised once when added, so a search only normalises the
 * probe and then takes plain dot products over one contiguous matrix; the max within
 * each identity's run of rows is its score, and a small insertion list keeps the best
 * k. Nothing is allocated per search, so many threads can search one gallery. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gallery_internal.h"

static const ffu_class gallery_class = {"gallery", NULL};

/* ---- text checks and the name index -------------------------------------------------- */

const char *gallery_check_name(const char *s, size_t len, size_t max)
{
    if (len == 0)
        return "empty";
    if (len >= max)
        return "too long";
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return "not printable (it holds a control character)";
    }
    return NULL;
}

/* FNV-1a: names are short and few collide; the table is rebuilt when it grows. */
static uint32_t name_hash(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* Slot of `name` in the index: the slot holding it, or the empty slot where it goes. */
static int hash_slot(const ffu_gallery *g, const char *name, size_t len)
{
    unsigned mask = (unsigned)g->hash_cap - 1;
    unsigned i = name_hash(name, len) & mask;
    for (;;) {
        int id = g->hash[i];
        if (id < 0)
            return (int)i;
        if (strlen(g->ids[id].name) == len && !memcmp(g->ids[id].name, name, len))
            return (int)i;
        i = (i + 1) & mask;
    }
}

static int find_len(const ffu_gallery *g, const char *name, size_t len)
{
    if (!g->hash_cap)
        return -1;
    return g->hash[hash_slot(g, name, len)];
}

static ffu_status hash_rebuild(ffu_gallery *g, int cap)
{
    int *h = malloc(sizeof *h * (size_t)cap);
    if (!h)
        return ffu_error_set(FFU_ERR_NOMEM, "gallery: name index of %d slots", cap);
    for (int i = 0; i < cap; i++)
        h[i] = -1;
    free(g->hash);
    g->hash = h;
    g->hash_cap = cap;
    for (int id = 0; id < g->nid; id++) {
        size_t len = strlen(g->ids[id].name);
        g->hash[hash_slot(g, g->ids[id].name, len)] = id;
    }
    return FFU_OK;
}

/* ---- life cycle and getters ------------------------------------------------------------ */

ffu_status ffu_gallery_create(int dim, const char *model, ffu_gallery **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_create: NULL output");
    *out = NULL;
    if (dim < 1 || dim > GALLERY_MAX_DIM)
        return ffu_error_set(FFU_ERR_INVALID, "gallery: dim %d is outside 1..%d", dim,
                             GALLERY_MAX_DIM);
    if (!model)
        return ffu_error_set(FFU_ERR_INVALID, "gallery: no model name");
    const char *why = gallery_check_name(model, strlen(model), GALLERY_MODEL_MAX);
    if (why)
        return ffu_error_set(FFU_ERR_INVALID, "gallery: model name is %s", why);
    ffu_gallery *g = calloc(1, sizeof *g);
    if (!g)
        return ffu_error_set(FFU_ERR_NOMEM, "gallery");
    g->cls = &gallery_class;
    g->dim = dim;
    strcpy(g->model, model); /* length checked above */
    *out = g;
    return FFU_OK;
}

void ffu_gallery_destroy(ffu_gallery *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->ntpl; i++)
        free(g->src[i]);
    free(g->src);
    free(g->tpl);
    free(g->ids);
    free(g->hash);
    free(g);
}

int ffu_gallery_dim(const ffu_gallery *g) { return g ? g->dim : 0; }
const char *ffu_gallery_model(const ffu_gallery *g) { return g ? g->model : NULL; }
int ffu_gallery_identity_count(const ffu_gallery *g) { return g ? g->nid : 0; }
int ffu_gallery_template_count(const ffu_gallery *g) { return g ? g->ntpl : 0; }

const char *ffu_gallery_name(const ffu_gallery *g, int identity)
{
    if (!g || identity < 0 || identity >= g->nid)
        return NULL;
    return g->ids[identity].name;
}

int ffu_gallery_find(const ffu_gallery *g, const char *name)
{
    if (!g || !name)
        return -1;
    return find_len(g, name, strlen(name));
}

/* ---- adding ----------------------------------------------------------------------------- */

int gallery_normalize(const float *v, int dim, float *out)
{
    double ss = 0;
    for (int i = 0; i < dim; i++)
        ss += (double)v[i] * v[i];
    if (!(ss > 0) || !isfinite(ss))
        return 0;
    double inv = 1.0 / sqrt(ss);
    for (int i = 0; i < dim; i++)
        out[i] = (float)(v[i] * inv);
    return 1;
}

static int grow_to(int have, int need)
{
    int cap = have ? have : 16;
    while (cap < need)
        cap = cap > (1 << 29) ? need : cap * 2;
    return cap;
}

ffu_status gallery_reserve(ffu_gallery *g, int more_ids, int more_tpl)
{
    if (more_ids < 0 || more_tpl < 0 || more_ids > GALLERY_MAX_IDENTITIES - g->nid ||
        more_tpl > GALLERY_MAX_TEMPLATES - g->ntpl)
        return ffu_error_set(FFU_ERR_TOO_LARGE,
                             "gallery: more than %d identities or %d templates",
                             GALLERY_MAX_IDENTITIES, GALLERY_MAX_TEMPLATES);
    int need_ids = g->nid + more_ids, need_tpl = g->ntpl + more_tpl;
    if ((uint64_t)need_tpl * (uint64_t)g->dim * sizeof(float) > GALLERY_MAX_TEMPLATE_BYTES)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "gallery: %d templates of %d floats exceed %llu bytes",
                             need_tpl, g->dim, (unsigned long long)GALLERY_MAX_TEMPLATE_BYTES);
    if (need_ids > g->id_cap) {
        int cap = grow_to(g->id_cap, need_ids);
        gallery_identity *ids = realloc(g->ids, sizeof *ids * (size_t)cap);
        if (!ids)
            return ffu_error_set(FFU_ERR_NOMEM, "gallery: %d identities", cap);
        g->ids = ids;
        g->id_cap = cap;
    }
    if (need_tpl > g->tpl_cap) {
        int cap = grow_to(g->tpl_cap, need_tpl);
        size_t row = (size_t)g->dim * sizeof(float);
        size_t bytes = (row * (size_t)cap + 63) & ~(size_t)63;
        float *tpl = aligned_alloc(64, bytes);
        char **src = tpl ? realloc(g->src, sizeof *src * (size_t)cap) : NULL;
        if (!src) {
            free(tpl);
            return ffu_error_set(FFU_ERR_NOMEM, "gallery: %d templates", cap);
        }
        if (g->ntpl)
            memcpy(tpl, g->tpl, row * (size_t)g->ntpl);
        free(g->tpl);
        g->tpl = tpl;
        g->src = src;
        g->tpl_cap = cap;
    }
    if ((int64_t)need_ids * 2 > g->hash_cap) {
        int cap = 64;
        while (cap < need_ids * 2)
            cap *= 2;
        ffu_status st = hash_rebuild(g, cap);
        if (st)
            return st;
    }
    return FFU_OK;
}

int gallery_insert(ffu_gallery *g, const char *name, size_t name_len, const float *unit,
                   char *src)
{
    int slot = hash_slot(g, name, name_len);
    int id = g->hash[slot];
    if (id < 0) {
        id = g->nid++;
        gallery_identity *e = &g->ids[id];
        memcpy(e->name, name, name_len);
        e->name[name_len] = '\0';
        e->first = g->ntpl;
        e->count = 0;
        g->hash[slot] = id;
    }
    gallery_identity *e = &g->ids[id];
    size_t row = (size_t)g->dim;
    int at = e->first + e->count;
    if (at < g->ntpl) {
        /* keep the identity's rows together: shift the later identities down one row */
        memmove(g->tpl + (size_t)(at + 1) * row, g->tpl + (size_t)at * row,
                sizeof(float) * row * (size_t)(g->ntpl - at));
        memmove(g->src + at + 1, g->src + at, sizeof *g->src * (size_t)(g->ntpl - at));
        for (int j = id + 1; j < g->nid; j++)
            g->ids[j].first++;
    }
    memcpy(g->tpl + (size_t)at * row, unit, sizeof(float) * row);
    g->src[at] = src;
    e->count++;
    g->ntpl++;
    return id;
}

ffu_status ffu_gallery_add(ffu_gallery *g, const char *name, const float *embedding,
                           const char *source, int *identity)
{
    if (identity)
        *identity = -1;
    if (!g || !name || !embedding)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_add: NULL argument");
    size_t len = strlen(name);
    const char *why = gallery_check_name(name, len, FFU_GALLERY_NAME_MAX);
    if (why)
        return ffu_error_set(FFU_ERR_INVALID, "gallery: identity name \"%.40s\" is %s", name, why);
    float unit[GALLERY_MAX_DIM];
    if (!gallery_normalize(embedding, g->dim, unit))
        return ffu_error_set(FFU_ERR_INVALID,
                             "gallery: embedding for \"%s\" is all zero or not finite", name);
    char *src = NULL;
    if (source) {
        size_t slen = strlen(source);
        if (slen >= GALLERY_SOURCE_MAX)
            return ffu_error_set(FFU_ERR_INVALID, "gallery: source of \"%s\" longer than %d bytes",
                                 name, GALLERY_SOURCE_MAX - 1);
        src = malloc(slen + 1);
        if (!src)
            return ffu_error_set(FFU_ERR_NOMEM, "gallery: source");
        memcpy(src, source, slen + 1);
    }
    ffu_status st = gallery_reserve(g, find_len(g, name, len) < 0, 1);
    if (st) {
        free(src);
        return st;
    }
    int id = gallery_insert(g, name, len, unit, src);
    if (identity)
        *identity = id;
    return FFU_OK;
}

/* ---- search ----------------------------------------------------------------------------- */

float gallery_dot_c(const float *a, const float *b, int n)
{
    /* 16 independent sums: the compiler keeps them in vector registers without
     * needing permission to reassociate one long sum */
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++)
            acc[j] += a[i + j] * b[i + j];
    float s = 0;
    for (; i < n; i++)
        s += a[i] * b[i];
    for (int j = 0; j < 16; j++)
        s += acc[j];
    return s;
}

void gallery_dots_c(const float *probe, const float *rows, int n, int dim, float *sims)
{
    for (int r = 0; r < n; r++)
        sims[r] = gallery_dot_c(probe, rows + (size_t)r * (size_t)dim, dim);
}

gallery_dots_fn gallery_dots_pick(void)
{
    unsigned need = FFU_CPU_AVX2 | FFU_CPU_FMA;
    return (ffu_cpu_features() & need) == need ? gallery_dots_avx2 : gallery_dots_c;
}

/* Rows are scored in blocks into a stack buffer, then each identity takes the max of
 * its rows; the block keeps the kernel's loops long whatever the templates per person. */
#define SEARCH_BLOCK 256

int ffu_gallery_search(const ffu_gallery *g, const float *probe, ffu_gallery_match *out,
                       int k)
{
    if (!out || k <= 0)
        return 0;
    for (int i = 0; i < k; i++) {
        out[i].identity = -1;
        out[i].similarity = -1.0f;
    }
    if (!g || !probe) {
        ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_search: NULL argument");
        return 0;
    }
    float unit[GALLERY_MAX_DIM];
    if (!gallery_normalize(probe, g->dim, unit)) {
        ffu_error_set(FFU_ERR_INVALID, "gallery: probe is all zero or not finite");
        return 0;
    }
    gallery_dots_fn dots = gallery_dots_pick();
    float sims[SEARCH_BLOCK];
    int blk = 0, blk_n = 0; /* sims[j] holds row blk + j */
    int n = 0, dim = g->dim;
    for (int id = 0; id < g->nid; id++) {
        const gallery_identity *e = &g->ids[id];
        float best = -INFINITY;
        for (int r = e->first; r < e->first + e->count; r++) {
            if (r >= blk + blk_n) {
                blk = r;
                blk_n = g->ntpl - r < SEARCH_BLOCK ? g->ntpl - r : SEARCH_BLOCK;
                dots(unit, g->tpl + (size_t)blk * (size_t)dim, blk_n, dim, sims);
            }
            float s = sims[r - blk];
            best = s > best ? s : best;
        }
        best = best > 1.0f ? 1.0f : best < -1.0f ? -1.0f : best; /* rounding */
        if (n == k && !(best > out[k - 1].similarity))
            continue; /* ties keep the lower index, which came first */
        int p = n < k ? n++ : k - 1;
        while (p > 0 && out[p - 1].similarity < best) {
            out[p] = out[p - 1];
            p--;
        }
        out[p].identity = id;
        out[p].similarity = best;
    }
    return n;
}
