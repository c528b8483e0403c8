/* The GPU gallery search's host side: the device snapshot of a gallery (templates as
 * float or binary16, identity row ranges), the workspace plan, the search driver that
 * runs a batch in passes on one stream, and the host reference that replays the device
 * algorithm (for the tests). The kernels are in cuda/gallery_search.cu; without CUDA the
 * launcher is gallery_gpu_stub.c's and ffu_gpu_open already fails, so nothing here
 * needs an #if. Only ffu_gpu_* calls touch the device: copies use CUDA's unified
 * addressing, so probes and answers may live on either side. */
#include <stdlib.h>
#include <string.h>

#include "gallery_gpu_internal.h"
#include "gallery_internal.h"

static const ffu_class gallery_gpu_class = {"gallery_gpu", NULL};

struct ffu_gallery_gpu {
    const ffu_class *cls; /* first: log lines name the object */
    ffu_gpu *gpu;         /* borrowed */
    ffu_gallery_gpu_storage storage;
    int dim, nid, ntpl;
    void *d_tpl;    /* ntpl x dim floats or halves; NULL when ntpl == 0 */
    int *d_ranges;  /* first[nid] then count[nid]; NULL when nid == 0 */
    size_t workspace; /* scratch budget of one pass */
};

/* ---- the plan ------------------------------------------------------------------------ */

static size_t align_up(size_t n) { return (n + GALLERY_GPU_ALIGN - 1) & ~(size_t)(GALLERY_GPU_ALIGN - 1); }

/* Lays out the buffers for `chunk` queries; returns the total. */
static size_t plan_layout(gallery_gpu_plan *p, int chunk, int k, int ntpl, int dim)
{
    size_t c = (size_t)chunk, off = 0, lists = c * (size_t)p->nseg;
#define PLAN_TAKE(field, bytes) (p->field = off, off += align_up(bytes))
    PLAN_TAKE(off_probes, c * (size_t)dim * sizeof(float));
    PLAN_TAKE(off_unit, c * (size_t)dim * sizeof(float));
    PLAN_TAKE(off_valid, c * sizeof(int));
    PLAN_TAKE(off_sims, c * (size_t)ntpl * sizeof(float));
    PLAN_TAKE(off_cand[0], lists * (size_t)k * sizeof(ffu_gallery_match));
    PLAN_TAKE(off_cand[1], lists * (size_t)k * sizeof(ffu_gallery_match));
    PLAN_TAKE(off_cnt[0], lists * sizeof(int));
    PLAN_TAKE(off_cnt[1], lists * sizeof(int));
    PLAN_TAKE(off_out, c * (size_t)k * sizeof(ffu_gallery_match));
    PLAN_TAKE(off_counts, c * sizeof(int));
#undef PLAN_TAKE
    return off;
}

ffu_status gallery_gpu_plan_make(int nq, int k, int nid, int ntpl, int dim, size_t budget,
                                 gallery_gpu_plan *plan)
{
    if (!plan)
        return ffu_error_set(FFU_ERR_INVALID, "gallery gpu plan: NULL output");
    memset(plan, 0, sizeof *plan);
    if (nq < 1 || k < 1 || k > FFU_GALLERY_GPU_MAX_K || nid < 0 || ntpl < nid ||
        (nid == 0) != (ntpl == 0) || dim < 1 || dim > GALLERY_MAX_DIM)
        return ffu_error_set(FFU_ERR_INVALID,
                             "gallery gpu plan: bad sizes (%d queries, k %d, %d identities, "
                             "%d templates, dim %d)", nq, k, nid, ntpl, dim);
    plan->seg = gallery_gpu_segment_size(k);
    plan->nseg = (int)(((int64_t)nid + plan->seg - 1) / plan->seg);
    /* per query without alignment; the largest chunk that fits is at most budget / raw
     * and misses by at most the ten buffers' alignment slack, so few steps find it */
    size_t raw = sizeof(float) * (2 * (size_t)dim + (size_t)ntpl) + 2 * sizeof(int) +
                 (size_t)plan->nseg * (2 * (size_t)k * sizeof(ffu_gallery_match) + 2 * sizeof(int)) +
                 (size_t)k * sizeof(ffu_gallery_match);
    int chunk = nq < GALLERY_GPU_MAX_CHUNK ? nq : GALLERY_GPU_MAX_CHUNK;
    if ((size_t)chunk > budget / raw)
        chunk = budget / raw > 0 ? (int)(budget / raw) : 1;
    size_t bytes = plan_layout(plan, chunk, k, ntpl, dim);
    while (chunk > 1 && bytes > budget)
        bytes = plan_layout(plan, --chunk, k, ntpl, dim);
    plan->chunk = chunk;
    plan->bytes = bytes;
    return FFU_OK;
}

/* ---- the snapshot -------------------------------------------------------------------- */

ffu_status ffu_gallery_gpu_sync(ffu_gallery_gpu *gg, const ffu_gallery *g)
{
    if (!gg || !g)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_gpu_sync: NULL argument");
    if (g->dim != gg->dim)
        return ffu_error_set(FFU_ERR_INVALID, "gallery gpu: gallery dim %d, snapshot dim %d",
                             g->dim, gg->dim);
    ffu_status st = ffu_gpu_make_current(gg->gpu);
    if (st < 0)
        return st;
    int f16 = gg->storage == FFU_GALLERY_GPU_F16;
    size_t n = (size_t)g->ntpl * (size_t)g->dim;
    size_t tpl_bytes = n * (f16 ? sizeof(uint16_t) : sizeof(float));
    size_t range_bytes = 2 * (size_t)g->nid * sizeof(int);
    void *d_tpl = NULL, *staging = NULL;
    int *d_ranges = NULL, *ranges = NULL;
    /* the new copy is complete before the old one goes, so an error keeps the old */
    if (tpl_bytes && (st = ffu_gpu_alloc(gg->gpu, tpl_bytes, &d_tpl)) < 0)
        goto fail;
    if (range_bytes && (st = ffu_gpu_alloc(gg->gpu, range_bytes, (void **)&d_ranges)) < 0)
        goto fail;
    if (range_bytes) {
        ranges = malloc(range_bytes);
        if (!ranges) {
            st = ffu_error_set(FFU_ERR_NOMEM, "gallery gpu: %d identity ranges", g->nid);
            goto fail;
        }
        for (int i = 0; i < g->nid; i++) {
            ranges[i] = g->ids[i].first;
            ranges[g->nid + i] = g->ids[i].count;
        }
        if ((st = ffu_gpu_copy(NULL, d_ranges, ranges, range_bytes)) < 0)
            goto fail;
    }
    if (tpl_bytes) {
        const void *src = g->tpl;
        if (f16) {
            uint16_t *h = malloc(tpl_bytes);
            if (!h) {
                st = ffu_error_set(FFU_ERR_NOMEM, "gallery gpu: %zu bytes of fp16 staging",
                                   tpl_bytes);
                goto fail;
            }
            for (size_t i = 0; i < n; i++)
                h[i] = gallery_gpu_f32_to_f16(g->tpl[i]);
            src = staging = h;
        }
        if ((st = ffu_gpu_copy(NULL, d_tpl, src, tpl_bytes)) < 0)
            goto fail;
    }
    free(ranges);
    free(staging);
    ffu_gpu_free(gg->gpu, gg->d_tpl);
    ffu_gpu_free(gg->gpu, gg->d_ranges);
    gg->d_tpl = d_tpl;
    gg->d_ranges = d_ranges;
    gg->nid = g->nid;
    gg->ntpl = g->ntpl;
    return FFU_OK;
fail:
    free(ranges);
    free(staging);
    ffu_gpu_free(gg->gpu, d_tpl);
    ffu_gpu_free(gg->gpu, d_ranges);
    return st;
}

ffu_status ffu_gallery_gpu_create(ffu_gpu *gpu, const ffu_gallery *g,
                                  ffu_gallery_gpu_storage storage, ffu_gallery_gpu **out)
{
    if (!out)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_gpu_create: NULL output");
    *out = NULL;
    if (!gpu || !g)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_gpu_create: NULL argument");
    if ((unsigned)storage >= FFU_GALLERY_GPU_STORAGE_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "gallery gpu: storage %d is not a "
                             "ffu_gallery_gpu_storage", (int)storage);
    ffu_gallery_gpu *gg = calloc(1, sizeof *gg);
    if (!gg)
        return ffu_error_set(FFU_ERR_NOMEM, "gallery gpu");
    gg->cls = &gallery_gpu_class;
    gg->gpu = gpu;
    gg->storage = storage;
    gg->dim = g->dim;
    gg->workspace = GALLERY_GPU_WORKSPACE;
    ffu_status st = ffu_gallery_gpu_sync(gg, g);
    if (st < 0) {
        free(gg);
        return st;
    }
    *out = gg;
    return FFU_OK;
}

void ffu_gallery_gpu_destroy(ffu_gallery_gpu *gg)
{
    if (!gg)
        return;
    ffu_gpu_free(gg->gpu, gg->d_tpl);
    ffu_gpu_free(gg->gpu, gg->d_ranges);
    free(gg);
}

int ffu_gallery_gpu_identity_count(const ffu_gallery_gpu *gg) { return gg ? gg->nid : 0; }
int ffu_gallery_gpu_template_count(const ffu_gallery_gpu *gg) { return gg ? gg->ntpl : 0; }
int ffu_gallery_gpu_dim(const ffu_gallery_gpu *gg) { return gg ? gg->dim : 0; }

void gallery_gpu_set_workspace(ffu_gallery_gpu *gg, size_t bytes)
{
    if (gg)
        gg->workspace = bytes;
}

/* ---- search -------------------------------------------------------------------------- */

ffu_status ffu_gallery_gpu_search(ffu_gallery_gpu *gg, ffu_gpu_stream *s, const float *probes,
                                  int nq, int k, ffu_gallery_match *out, int *counts)
{
    if (!gg || nq < 0 || (nq > 0 && (!probes || !out)))
        return ffu_error_set(FFU_ERR_INVALID, "ffu_gallery_gpu_search: NULL argument or "
                             "%d queries", nq);
    if (k < 1 || k > FFU_GALLERY_GPU_MAX_K)
        return ffu_error_set(FFU_ERR_INVALID, "gallery gpu: k %d is outside 1..%d", k,
                             FFU_GALLERY_GPU_MAX_K);
    if (nq == 0)
        return FFU_OK;
    if (s && ffu_gpu_stream_gpu(s) != gg->gpu)
        return ffu_error_set(FFU_ERR_INVALID, "gallery gpu: the stream belongs to device %d, "
                             "the gallery to device %d", ffu_gpu_index(ffu_gpu_stream_gpu(s)),
                             ffu_gpu_index(gg->gpu));
    ffu_status st = ffu_gpu_make_current(gg->gpu);
    if (st < 0)
        return st;
    gallery_gpu_plan plan;
    if ((st = gallery_gpu_plan_make(nq, k, gg->nid, gg->ntpl, gg->dim, gg->workspace, &plan)) < 0)
        return st;
    uint8_t *ws = NULL;
    if ((st = ffu_gpu_alloc(gg->gpu, plan.bytes, (void **)&ws)) < 0)
        return st;
    void *stream = s ? ffu_gpu_stream_handle(s) : NULL;
    size_t row = (size_t)gg->dim * sizeof(float);
    for (int q0 = 0; q0 < nq && st >= 0; q0 += plan.chunk) {
        int n = nq - q0 < plan.chunk ? nq - q0 : plan.chunk;
        gallery_gpu_launch_args a = {
            .probes = (const float *)(ws + plan.off_probes),
            .nq = n,
            .dim = gg->dim,
            .unit = (float *)(ws + plan.off_unit),
            .valid = (int *)(ws + plan.off_valid),
            .tpl = gg->d_tpl,
            .f16 = gg->storage == FFU_GALLERY_GPU_F16,
            .ntpl = gg->ntpl,
            .first = gg->d_ranges,
            .count = gg->d_ranges ? gg->d_ranges + gg->nid : NULL,
            .nid = gg->nid,
            .sims = (float *)(ws + plan.off_sims),
            .seg = plan.seg,
            .nseg = plan.nseg,
            .k = k,
            .cand = {(ffu_gallery_match *)(ws + plan.off_cand[0]),
                     (ffu_gallery_match *)(ws + plan.off_cand[1])},
            .cnt = {(int *)(ws + plan.off_cnt[0]), (int *)(ws + plan.off_cnt[1])},
            .out = (ffu_gallery_match *)(ws + plan.off_out),
            .counts = (int *)(ws + plan.off_counts),
        };
        /* probes are copied even from the device: a small copy buys one code path and
         * leaves the caller's buffer free as soon as the pass is queued */
        if ((st = ffu_gpu_copy(s, ws + plan.off_probes, probes + (size_t)q0 * (size_t)gg->dim,
                               row * (size_t)n)) < 0)
            break;
        if ((st = gallery_gpu_launch(stream, &a)) < 0)
            break;
        if ((st = ffu_gpu_copy(s, out + (size_t)q0 * (size_t)k, a.out,
                               sizeof *out * (size_t)k * (size_t)n)) < 0)
            break;
        if (counts && (st = ffu_gpu_copy(s, counts + q0, a.counts, sizeof *counts * (size_t)n)) < 0)
            break;
    }
    /* The workspace goes back to the pool only once the device is done with it. On the
     * default stream a blocking copy to the host is the barrier: it waits for the
     * kernels and copies queued before it (a device-to-device copy would not). */
    ffu_status st2;
    if (s) {
        st2 = ffu_gpu_stream_sync(s);
    } else {
        int last;
        st2 = ffu_gpu_copy(NULL, &last, ws + plan.off_counts, sizeof last);
    }
    if (st >= 0)
        st = st2;
    ffu_gpu_free(gg->gpu, ws);
    return st < 0 ? st : FFU_OK;
}

/* ---- the host replay of the device algorithm ------------------------------------------ */

ffu_status gallery_gpu_reference_search(const ffu_gallery *g, ffu_gallery_gpu_storage storage,
                                        const float *probes, int nq, int k,
                                        ffu_gallery_match *out, int *counts)
{
    if (!g || nq < 0 || (nq > 0 && (!probes || !out)) || k < 1 ||
        k > FFU_GALLERY_GPU_MAX_K || (unsigned)storage >= FFU_GALLERY_GPU_STORAGE_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "gallery gpu reference: bad arguments");
    int dim = g->dim, nid = g->nid, ntpl = g->ntpl, f16 = storage == FFU_GALLERY_GPU_F16;
    int seg = gallery_gpu_segment_size(k), nseg = (nid + seg - 1) / seg;
    size_t nl = (size_t)(nseg ? nseg : 1);
    float *unit = malloc(sizeof *unit * (size_t)dim);
    float *sims = malloc(sizeof *sims * (size_t)(ntpl ? ntpl : 1));
    ffu_gallery_match *cand[2] = {malloc(sizeof(ffu_gallery_match) * nl * (size_t)k),
                                  malloc(sizeof(ffu_gallery_match) * nl * (size_t)k)};
    int *cnt[2] = {malloc(sizeof(int) * nl), malloc(sizeof(int) * nl)};
    int *first = malloc(sizeof(int) * (size_t)(nid ? nid : 1));
    int *count = malloc(sizeof(int) * (size_t)(nid ? nid : 1));
    uint16_t *half = f16 ? malloc(sizeof *half * ((size_t)ntpl * (size_t)dim + 1)) : NULL;
    ffu_status st = FFU_OK;
    if (!unit || !sims || !cand[0] || !cand[1] || !cnt[0] || !cnt[1] || !first || !count ||
        (f16 && !half)) {
        st = ffu_error_set(FFU_ERR_NOMEM, "gallery gpu reference");
        goto done;
    }
    for (int i = 0; i < nid; i++) {
        first[i] = g->ids[i].first;
        count[i] = g->ids[i].count;
    }
    if (f16)
        for (size_t i = 0; i < (size_t)ntpl * (size_t)dim; i++)
            half[i] = gallery_gpu_f32_to_f16(g->tpl[i]);
    for (int q = 0; q < nq; q++) {
        int valid = gallery_gpu_normalize(probes + (size_t)q * (size_t)dim, dim, unit);
        if (!valid)
            memset(unit, 0, sizeof *unit * (size_t)dim); /* as the normalise kernel does */
        for (int r = 0; r < ntpl; r++)
            sims[r] = f16 ? gallery_gpu_dot_f16(unit, half + (size_t)r * (size_t)dim, dim)
                          : gallery_gpu_dot_f32(unit, g->tpl + (size_t)r * (size_t)dim, dim);
        for (int sg = 0; sg < nseg; sg++)
            cnt[0][sg] = gallery_gpu_select_segment(sims, first, count, nid, sg, seg, k,
                                                    cand[0] + (size_t)sg * (size_t)k);
        int src = 0;
        for (int w = 1; w < nseg; w *= 2) {
            for (int p = 0; p < gallery_gpu_merge_pairs(nseg, w); p++)
                gallery_gpu_merge_pair(cand[src], cnt[src], cand[!src], cnt[!src], nseg, k, w, p);
            src = !src;
        }
        int c = gallery_gpu_finish(cand[src], nseg ? cnt[src][0] : 0, valid, k,
                                   out + (size_t)q * (size_t)k);
        if (counts)
            counts[q] = c;
    }
done:
    free(unit);
    free(sims);
    free(cand[0]);
    free(cand[1]);
    free(cnt[0]);
    free(cnt[1]);
    free(first);
    free(count);
    free(half);
    return st;
}
