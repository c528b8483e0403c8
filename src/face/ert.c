/* dlib's ensemble-of-regression-trees shape predictor: the file reader and the
 * cascade. Written from the published algorithm (Kazemi & Sullivan, "One Millisecond
 * Face Alignment with an Ensemble of Regression Trees", CVPR 2014) and the facts of
 * dlib's serialisation recorded in MODELS.md; the arithmetic follows dlib's order
 * where it decides which side of a split a face falls on, so the points match dlib's.
 *
 * Reading: the file is mapped and parsed twice by one function. The first pass checks
 * everything and counts; the second fills arrays allocated once, to the exact size, so
 * a hostile count can never make us allocate more than the file can back.
 *
 * Running, per cascade: the similarity transform (rotation + scale) that takes the
 * initial (mean) shape to the current shape moves each feature pixel's offset from its
 * anchor landmark; the result, in the normalised box space, is mapped into the image
 * and rounded to a pixel whose grey value is read (0 outside the image). Every tree of
 * the cascade sees the same pixels, so all leaves are found first and then summed in
 * tree order (as dlib adds them), with the next leaves prefetched: the leaves are the
 * bulk of the model (~70 MB for the 68-point file) and summing them is a memory
 * stream, not arithmetic. */
#include "face/ert.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#endif

/* floats per leaf: 2 * parts rounded up to a 64-byte line, zero padded */
#define LEAF_ALIGN 16
#define MAX_STRIDE (((2 * ERT_MAX_PARTS) + LEAF_ALIGN - 1) / LEAF_ALIGN * LEAF_ALIGN)
/* Trees whose leaves are found (and prefetched) together, one block ahead of the sum.
 * Tuning knob (-D...): on an AMD Turin host 16 against 64 measured 0.90-1.00x per face
 * and 8 against 16 1.03-1.05x, both builds in one process (docs/BENCHMARKS.md; 64 had
 * looked best on another host in separate runs, 8-128 the same on an Intel one). Where
 * the rows are prefetched to depends on the CPU (ert_model.pf_l2). */
#ifndef TREE_BLOCK
#define TREE_BLOCK 16
#endif

/* dlib goes to the left child when pixel[idx1] - pixel[idx2] > thresh (a float). The
 * difference of two 8-bit pixels is an integer in [-255, 255], so the test is the same
 * as difference > floor(thresh), with floor(thresh) clamped to [-256, 255]: integer
 * compares only, no conversions, and the same answers.
 *
 * A split is one 32-bit word: idx1 in bits 0-10, idx2 in bits 11-21 (ERT_MAX_FEATURES
 * is 2^11) and floor(thresh) + 256 in bits 22-31. A tree's splits are followed by one
 * unused word, so that a depth-4 tree (15 splits) takes exactly one 64-byte line, line
 * aligned. The splits are evicted between faces by everything else a program does (in
 * bench/ert, by dlib's own cascade): read from memory, dlib's 8-byte form spread a
 * tree over 2-3 lines, 1.3 MB per face beside 4.3 MB of leaf rows, and flushing them
 * before each face cost 60 us of a 220 us face on the Turin host (docs/BENCHMARKS.md,
 * "dlib 68-point ERT"). */
typedef uint32_t ert_split;
#define SPLIT_IDX_BITS 11
#define SPLIT_IDX_MASK ((1u << SPLIT_IDX_BITS) - 1)
#define SPLIT_THRESH_SHIFT (2 * SPLIT_IDX_BITS)
#define SPLIT_THRESH_BIAS 256
_Static_assert(ERT_MAX_FEATURES <= 1u << SPLIT_IDX_BITS, "a split index must fit its field");

typedef struct ert_tree {
    uint32_t split0;  /* first split in m->splits (the tree takes nsplits + 1 words) */
    uint32_t nsplits; /* complete binary tree: nsplits + 1 leaves, a power of two */
    uint32_t leaf0;   /* first leaf (index of a stride-float row in m->leaves) */
} ert_tree;

typedef struct ert_cascade {
    uint32_t tree0, ntrees;
    uint32_t feat0, nfeat;
    uint32_t idx_end; /* largest split index + 1, 0 without splits (checked <= nfeat) */
} ert_cascade;

struct ert_model {
    int num_parts;
    int stride; /* floats per shape / leaf row */
    int num_cascades;
    float *initial; /* stride floats */
    ert_cascade cascades[ERT_MAX_CASCADES];
    /* feature pixels, all cascades': offset from the anchor in the initial shape's
     * normalised space, 2 * the anchor's part index (ert_feature_job) */
    float *feat_dx, *feat_dy;
    uint32_t *feat_anchor2;
    ert_split *splits;
    ert_tree *trees;
    float *leaves; /* 64-byte aligned, nleaves rows of stride floats */
    size_t nfeat, nsplits, ntrees, nleaves;
    double init_norm; /* sum of squared centred initial coordinates */
    double init_mean[2];
    uint32_t uniform_ns;    /* splits per tree when all trees agree, else UINT32_MAX */
    uint32_t uniform_depth; /* log2(uniform_ns + 1) */
    /* Prefetch leaf rows into L2 (prefetcht1) rather than L1 (prefetcht0): chosen at
     * load by timing both (choose_row_prefetch). */
    int pf_l2;
};

static int choose_row_prefetch(const ert_model *m);

/* ---- reading dlib's serialisation ------------------------------------------------ */

typedef struct rd {
    const uint8_t *base, *p, *end;
} rd;

static ffu_status bad(const rd *r, const char *what)
{
    return ffu_error_set(FFU_ERR_FORMAT, "dlib shape predictor: %s (byte %zu)", what,
                         (size_t)(r->p - r->base));
}

static size_t left(const rd *r) { return (size_t)(r->end - r->p); }

/* An integer: a control byte (0x80 = negative, low nibble = byte count, the other bits
 * zero; dlib's pre-binary text format set them) then the magnitude, little-endian. */
static int rd_raw(rd *r, uint64_t *mag, int *neg, unsigned maxbytes)
{
    if (r->p >= r->end) return -1;
    unsigned c = r->p[0], n = c & 0x0f;
    if ((c & 0x70) || n > maxbytes || left(r) < 1 + (size_t)n) return -1;
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (left(r) >= 9) { /* one load, the bytes past n masked off (16 million numbers) */
        memcpy(&v, r->p + 1, 8);
        v = n ? v & (~(uint64_t)0 >> (64 - 8 * n)) : 0;
    } else
#endif
        for (unsigned i = 0; i < n; i++)
            v |= (uint64_t)r->p[1 + i] << (8 * i);
    r->p += 1 + n;
    *mag = v;
    *neg = (c & 0x80) != 0;
    return 0;
}

static ffu_status rd_u64(rd *r, uint64_t *v, const char *what)
{
    int neg;
    const uint8_t *at = r->p;
    if (rd_raw(r, v, &neg, 8) < 0 || (neg && *v)) {
        r->p = at;
        return bad(r, what);
    }
    return FFU_OK;
}

static ffu_status rd_i64(rd *r, int64_t *v, unsigned maxbytes, const char *what)
{
    uint64_t mag;
    int neg;
    const uint8_t *at = r->p;
    *v = 0; /* on errors too */
    if (rd_raw(r, &mag, &neg, maxbytes) < 0 || mag > (uint64_t)INT64_MAX) {
        r->p = at;
        return bad(r, what);
    }
    *v = neg ? -(int64_t)mag : (int64_t)mag;
    return FFU_OK;
}

/* A float: int64 mantissa then int16 exponent, value = m * 2^e. Exponents 32000..32002
 * stand for +inf, -inf and NaN; a model holding any of them is refused. */
static ffu_status rd_float(rd *r, float *v, const char *what)
{
    int64_t m, e;
    const uint8_t *at = r->p;
    ffu_status st;
    if ((st = rd_i64(r, &m, 8, what)) < 0 || (st = rd_i64(r, &e, 2, what)) < 0) return st;
    if (e > 32767 || e < -32768) {
        r->p = at;
        return bad(r, what);
    }
    if (e >= 32000 && e <= 32002) {
        r->p = at;
        return bad(r, "non-finite number");
    }
    double d;
    if (e >= -1022 && e <= 1023) {
        /* ldexp without the libm call (the file holds 16 million floats): 2^e built
         * from its bits; the product is exact or rounds as ldexp would */
        uint64_t bits = (uint64_t)(e + 1023) << 52;
        double p2;
        memcpy(&p2, &bits, sizeof p2);
        d = (double)m * p2;
    } else {
        d = ldexp((double)m, (int)e);
    }
    if (!(fabs(d) <= FLT_MAX)) {
        r->p = at;
        return bad(r, "number out of float range");
    }
    *v = (float)d;
    return FFU_OK;
}

/* A container size: at most cap (else FFU_ERR_TOO_LARGE) and at most what the rest of
 * the file can hold at min_bytes per element. */
static ffu_status rd_count(rd *r, uint64_t *n, uint64_t cap, size_t min_bytes, const char *what)
{
    ffu_status st = rd_u64(r, n, what);
    if (st < 0) return st;
    if (*n > cap)
        return ffu_error_set(
            FFU_ERR_TOO_LARGE, "dlib shape predictor: %s: %llu is over the cap of %llu (byte %zu)",
            what, (unsigned long long)*n, (unsigned long long)cap, (size_t)(r->p - r->base));
    if (*n > left(r) / min_bytes) return bad(r, "count larger than the rest of the file");
    return FFU_OK;
}

/* A column vector's header: rows and columns (negated by dlib's current writer). */
static ffu_status rd_column(rd *r, uint64_t want_rows, uint64_t *rows, const char *what)
{
    int64_t nr, nc;
    ffu_status st;
    if ((st = rd_i64(r, &nr, 8, what)) < 0 || (st = rd_i64(r, &nc, 8, what)) < 0) return st;
    if (nr < 0) nr = -nr;
    if (nc < 0) nc = -nc;
    if (nc != 1) return bad(r, "shape matrix is not a column vector");
    if (want_rows && (uint64_t)nr != want_rows) return bad(r, "leaf size differs from the shape's");
    if ((uint64_t)nr > left(r) / 2) return bad(r, "matrix larger than the rest of the file");
    *rows = (uint64_t)nr;
    return FFU_OK;
}

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

/* One pass over the file. With fill == 0 it checks and counts into m; with fill == 1
 * it writes into the arrays sized by the first pass (and re-checks the bounds, so a
 * difference between the passes can only fail, never overflow). */
static ffu_status parse(const uint8_t *data, size_t size, ert_model *m, int fill)
{
    rd r = {data, data, data + size};
    ffu_status st;
    int64_t version;
    uint64_t n, rows;
    size_t nsplit = 0, ntree = 0, nleaf = 0, nfeat = 0;

    if ((st = rd_i64(&r, &version, 8, "version")) < 0) return st;
    if (version != 1) return bad(&r, "unsupported version (not 1)");

    if ((st = rd_column(&r, 0, &rows, "initial shape")) < 0) return st;
    if (rows == 0 || rows % 2) return bad(&r, "initial shape has an odd or zero length");
    if (rows > 2 * ERT_MAX_PARTS)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "dlib shape predictor: %llu parts, cap %d",
                             (unsigned long long)(rows / 2), ERT_MAX_PARTS);
    if (!fill) {
        m->num_parts = (int)(rows / 2);
        m->stride = (int)((rows + LEAF_ALIGN - 1) / LEAF_ALIGN * LEAF_ALIGN);
    } else if (rows != 2 * (uint64_t)m->num_parts) {
        return bad(&r, "file changed while reading");
    }
    for (uint64_t i = 0; i < rows; i++) {
        float v;
        if ((st = rd_float(&r, &v, "initial shape value")) < 0) return st;
        if (fill) m->initial[i] = v;
    }

    if ((st = rd_count(&r, &n, ERT_MAX_CASCADES, 1, "cascades")) < 0) return st;
    if (n == 0) return bad(&r, "no cascades");
    if (!fill)
        m->num_cascades = (int)n;
    else if ((int)n != m->num_cascades)
        return bad(&r, "file changed while reading");
    for (int c = 0; c < m->num_cascades; c++) {
        ert_cascade *cas = &m->cascades[c];
        if ((st = rd_count(&r, &n, ERT_MAX_TREES, 2, "trees in a cascade")) < 0) return st;
        if (!fill) {
            cas->tree0 = (uint32_t)ntree;
            cas->ntrees = (uint32_t)n;
            cas->idx_end = 0;
        } else if (n != cas->ntrees || cas->tree0 != ntree) {
            return bad(&r, "file changed while reading");
        }
        for (uint32_t t = 0; t < cas->ntrees; t++) {
            uint64_t ns, nl;
            /* a split is two integers and a float: at least 4 bytes */
            if ((st = rd_count(&r, &ns, ERT_MAX_SPLITS, 4, "splits in a tree")) < 0) return st;
            if (fill) {
                if (ntree >= m->ntrees || nsplit + ns + 1 > m->nsplits)
                    return bad(&r, "file changed while reading");
                m->trees[ntree].split0 = (uint32_t)nsplit;
                m->trees[ntree].nsplits = (uint32_t)ns;
                m->trees[ntree].leaf0 = (uint32_t)nleaf;
            }
            for (uint64_t s = 0; s < ns; s++) {
                uint64_t i1, i2;
                float th;
                if ((st = rd_u64(&r, &i1, "split index")) < 0 ||
                    (st = rd_u64(&r, &i2, "split index")) < 0 ||
                    (st = rd_float(&r, &th, "split threshold")) < 0)
                    return st;
                if (i1 >= ERT_MAX_FEATURES || i2 >= ERT_MAX_FEATURES)
                    return bad(&r, "split index beyond the feature cap");
                if (!fill) {
                    if (i1 >= cas->idx_end) cas->idx_end = (uint32_t)i1 + 1;
                    if (i2 >= cas->idx_end) cas->idx_end = (uint32_t)i2 + 1;
                } else {
                    int32_t ft = th >= 255.0f ? 255 : th < -256.0f ? -256 : (int32_t)floorf(th);
                    m->splits[nsplit + s] = (uint32_t)i1 | (uint32_t)i2 << SPLIT_IDX_BITS |
                                            (uint32_t)(ft + SPLIT_THRESH_BIAS)
                                                << SPLIT_THRESH_SHIFT;
                }
            }
            nsplit += ns + 1; /* and the unused word that aligns the next tree */
            /* a leaf is at least a matrix header and two floats */
            if ((st = rd_count(&r, &nl, (uint64_t)ERT_MAX_SPLITS + 1, 4, "leaves in a tree")) < 0)
                return st;
            if (nl != ns + 1 || !is_pow2(nl))
                return bad(&r, "tree is not complete (leaves != splits + 1 or not a power of 2)");
            if (!fill && (nleaf + nl) > ERT_MAX_LEAF_BYTES / ((size_t)m->stride * sizeof(float)))
                return ffu_error_set(FFU_ERR_TOO_LARGE,
                                     "dlib shape predictor: leaves over the %u MiB cap",
                                     ERT_MAX_LEAF_BYTES >> 20);
            if (fill && nleaf + nl > m->nleaves) return bad(&r, "file changed while reading");
            for (uint64_t l = 0; l < nl; l++) {
                if ((st = rd_column(&r, 2 * (uint64_t)m->num_parts, &rows, "leaf")) < 0) return st;
                float *row = fill ? m->leaves + (nleaf + l) * (size_t)m->stride : NULL;
                for (uint64_t i = 0; i < rows; i++) {
                    float v;
                    if ((st = rd_float(&r, &v, "leaf value")) < 0) return st;
                    if (row) row[i] = v;
                }
            }
            nleaf += nl;
            ntree++;
        }
    }

    /* anchor_idx: per cascade, the landmark each feature pixel hangs from */
    if ((st = rd_count(&r, &n, ERT_MAX_CASCADES, 1, "anchor lists")) < 0) return st;
    if ((int)n != m->num_cascades) return bad(&r, "anchor lists do not match the cascades");
    for (int c = 0; c < m->num_cascades; c++) {
        ert_cascade *cas = &m->cascades[c];
        if ((st = rd_count(&r, &n, ERT_MAX_FEATURES, 1, "feature pixels in a cascade")) < 0)
            return st;
        if (!fill) {
            cas->feat0 = (uint32_t)nfeat;
            cas->nfeat = (uint32_t)n;
            if (cas->idx_end > cas->nfeat)
                return bad(&r, "a split names a feature pixel the cascade does not have");
        } else if (n != cas->nfeat || cas->feat0 != nfeat) {
            return bad(&r, "file changed while reading");
        }
        for (uint64_t i = 0; i < n; i++) {
            uint64_t a;
            if ((st = rd_u64(&r, &a, "anchor index")) < 0) return st;
            if (a >= (uint64_t)m->num_parts) return bad(&r, "anchor index is not a part");
            if (fill) m->feat_anchor2[nfeat + i] = 2 * (uint32_t)a;
        }
        nfeat += n;
    }

    /* deltas: per cascade, each feature pixel's offset from its anchor */
    if ((st = rd_count(&r, &n, ERT_MAX_CASCADES, 1, "delta lists")) < 0) return st;
    if ((int)n != m->num_cascades) return bad(&r, "delta lists do not match the cascades");
    for (int c = 0; c < m->num_cascades; c++) {
        const ert_cascade *cas = &m->cascades[c];
        if ((st = rd_count(&r, &n, ERT_MAX_FEATURES, 4, "deltas in a cascade")) < 0) return st;
        if (n != cas->nfeat) return bad(&r, "deltas do not match the anchors");
        for (uint64_t i = 0; i < n; i++) {
            float dx, dy;
            if ((st = rd_float(&r, &dx, "delta")) < 0 || (st = rd_float(&r, &dy, "delta")) < 0)
                return st;
            if (fill) {
                m->feat_dx[cas->feat0 + i] = dx;
                m->feat_dy[cas->feat0 + i] = dy;
            }
        }
    }
    /* Bytes after the predictor are left alone, as dlib's reader does. */
    if (!fill) {
        m->nfeat = nfeat;
        m->nsplits = nsplit;
        m->ntrees = ntree;
        m->nleaves = nleaf;
    }
    return FFU_OK;
}

void ert_model_free(ert_model *m)
{
    if (!m) return;
    free(m->initial);
    free(m->feat_dx);
    free(m->feat_dy);
    free(m->feat_anchor2);
    free(m->splits);
    free(m->trees);
    free(m->leaves);
    free(m);
}

static void *alloc_lines(size_t bytes)
{
    if (bytes == 0) bytes = 64;
    bytes = (bytes + 63) / 64 * 64;
    void *p = ffu_alloc_large(bytes); /* the leaves: 65 MB on huge pages, a quicker load */
    if (p) memset(p, 0, bytes);
    return p;
}

ffu_status ert_model_load_mem(const void *data, size_t size, ert_model **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ert_model_load_mem: out is NULL");
    *out = NULL;
    if (!data && size) return ffu_error_set(FFU_ERR_INVALID, "ert_model_load_mem: data is NULL");
    if (size > ERT_MAX_FILE_BYTES)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "dlib shape predictor: %zu bytes, cap %zu", size,
                             ERT_MAX_FILE_BYTES);
    ert_model *m = calloc(1, sizeof *m);
    if (!m) return ffu_error_set(FFU_ERR_NOMEM, "dlib shape predictor: out of memory");
    ffu_status st = parse(data, size, m, 0);
    if (st < 0) goto fail;
    m->initial = alloc_lines((size_t)m->stride * sizeof(float));
    m->feat_dx = alloc_lines(m->nfeat * sizeof(float));
    m->feat_dy = alloc_lines(m->nfeat * sizeof(float));
    m->feat_anchor2 = alloc_lines(m->nfeat * sizeof(uint32_t));
    m->splits = alloc_lines(m->nsplits * sizeof(ert_split));
    m->trees = alloc_lines(m->ntrees * sizeof(ert_tree));
    m->leaves = alloc_lines(m->nleaves * (size_t)m->stride * sizeof(float));
    if (!m->initial || !m->feat_dx || !m->feat_dy || !m->feat_anchor2 || !m->splits || !m->trees ||
        !m->leaves) {
        st = ffu_error_set(FFU_ERR_NOMEM, "dlib shape predictor: out of memory for %zu leaves",
                           m->nleaves);
        goto fail;
    }
    if ((st = parse(data, size, m, 1)) < 0) goto fail;

    /* The initial shape's centred energy is the denominator of every cascade's
     * similarity fit; a shape with all parts on one point has no rotation or scale. */
    double mx = 0, my = 0, e = 0;
    for (int i = 0; i < m->num_parts; i++) {
        mx += m->initial[2 * i];
        my += m->initial[2 * i + 1];
    }
    mx /= m->num_parts;
    my /= m->num_parts;
    for (int i = 0; i < m->num_parts; i++) {
        double dx = m->initial[2 * i] - mx, dy = m->initial[2 * i + 1] - my;
        e += dx * dx + dy * dy;
    }
    m->init_norm = e;
    m->uniform_ns = m->ntrees ? m->trees[0].nsplits : UINT32_MAX;
    for (size_t t = 0; t < m->ntrees; t++)
        if (m->trees[t].nsplits != m->uniform_ns) m->uniform_ns = UINT32_MAX;
    for (uint32_t v = m->uniform_ns + 1; m->uniform_ns != UINT32_MAX && v > 1; v >>= 1)
        m->uniform_depth++;
    m->init_mean[0] = mx;
    m->init_mean[1] = my;
    m->pf_l2 = choose_row_prefetch(m);
    *out = m;
    return FFU_OK;
fail:
    ert_model_free(m);
    return st;
}

ffu_status ert_model_load(const char *path, ert_model **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ert_model_load: out is NULL");
    *out = NULL;
    if (!path) return ffu_error_set(FFU_ERR_INVALID, "ert_model_load: path is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ffu_error_set(errno == ENOENT ? FFU_ERR_NOT_FOUND : FFU_ERR_IO, "%s: %s", path,
                             strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ffu_error_set(FFU_ERR_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)sb.st_size > ERT_MAX_FILE_BYTES) {
        close(fd);
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%s: %lld bytes, cap %zu", path,
                             (long long)sb.st_size, ERT_MAX_FILE_BYTES);
    }
    size_t size = (size_t)sb.st_size;
    if (size == 0) {
        close(fd);
        return ffu_error_set(FFU_ERR_FORMAT, "%s: empty file", path);
    }
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return ffu_error_set(FFU_ERR_IO, "%s: mmap: %s", path, strerror(errno));
    madvise(map, size, MADV_SEQUENTIAL);
    ffu_status st = ert_model_load_mem(map, size, out);
    munmap(map, size);
    if (st < 0) return ffu_error_prefix(st, path);
    return FFU_OK;
}

int ert_model_num_parts(const ert_model *m) { return m ? m->num_parts : 0; }

int ert_model_num_cascades(const ert_model *m) { return m ? m->num_cascades : 0; }

const float *ert_model_mean_shape(const ert_model *m) { return m ? m->initial : NULL; }

size_t ert_model_num_trees(const ert_model *m) { return m ? m->ntrees : 0; }

size_t ert_model_num_leaves(const ert_model *m) { return m ? m->nleaves : 0; }

/* ---- prediction ------------------------------------------------------------------- */

/* Where grey values come from: one byte per pixel, or the sum of the first three bytes
 * divided by three (dlib's RGB -> grey; channel order does not change a sum). */
typedef struct grey_src {
    const uint8_t *data;
    ptrdiff_t stride;
    int bpp, w, h;
} grey_src;

static inline int grey_of(const uint8_t *p, int bpp)
{
    if (bpp == 1) return p[0];
    return ((unsigned)p[0] + p[1] + p[2]) / 3;
}

/* The least-squares rotation + scale [[a, -b], [b, a]] taking the initial shape to the
 * current one (both centred). This is the closed form of the fit dlib makes by SVD
 * (Umeyama); computed in double and rounded to float as dlib does. */
static void fit_similarity(const ert_model *m, const float *cur, float *a, float *b)
{
    const int n = m->num_parts;
    if (n < 2 || m->init_norm == 0) {
        *a = 1;
        *b = 0;
        return;
    }
    double cx = 0, cy = 0;
    for (int i = 0; i < n; i++) {
        cx += cur[2 * i];
        cy += cur[2 * i + 1];
    }
    cx /= n;
    cy /= n;
    const double mx = m->init_mean[0], my = m->init_mean[1];
    double sa = 0, sb = 0;
    for (int i = 0; i < n; i++) {
        double fx = m->initial[2 * i] - mx, fy = m->initial[2 * i + 1] - my;
        double tx = cur[2 * i] - cx, ty = cur[2 * i + 1] - cy;
        sa += fx * tx + fy * ty;
        sb += fx * ty - fy * tx;
    }
    *a = (float)(sa / m->init_norm);
    *b = (float)(sb / m->init_norm);
}

/* Normalised box space -> image: (0,0) -> (left, top), (1,1) -> (right, bottom). */
typedef struct box_map {
    double ox, oy, sx, sy;
} box_map;

void ert_feature_xy_c(const ert_feature_job *j, int32_t *px, int32_t *py)
{
    for (uint32_t i = 0; i < j->n; i++) {
        /* dlib keeps the 2x2 in float and forms m*d in float, one product then the
         * other added; the anchor is added last */
        float vx = j->a00 * j->dx[i];
        vx += j->a01 * j->dy[i];
        float vy = j->a10 * j->dx[i];
        vy += j->a11 * j->dy[i];
        vx += j->shape[j->anchor2[i]];
        vy += j->shape[j->anchor2[i] + 1];
        /* dlib maps to the image in double and rounds half up */
        double x = floor(j->ox + j->sx * (double)vx + 0.5);
        double y = floor(j->oy + j->sy * (double)vy + 0.5);
        /* NaN fails both tests, so an absurd shape reads zeros, never out of bounds */
        if (x >= 0 && x < j->w && y >= 0 && y < j->h) {
            px[i] = (int32_t)x;
            py[i] = (int32_t)y;
        } else {
            px[i] = -1;
            py[i] = 0;
        }
    }
}

/* The fastest version this CPU runs (honours FFU_CPU_MASK). */
static ert_feature_xy_fn ert_feature_xy_pick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned f = ffu_cpu_features();
    if (f & FFU_CPU_AVX512F) return ert_feature_xy_avx512;
    if (f & FFU_CPU_AVX2) return ert_feature_xy_avx2;
#endif
    return ert_feature_xy_c;
}

/* Where each feature pixel of cascade cas falls for the current shape: its address in
 * the image, NULL outside it; each address is prefetched. */
static void feature_pixels(const ert_model *m, ert_feature_xy_fn xy, const ert_cascade *cas,
                           const float *shape, const grey_src *g, const box_map *bm,
                           const uint8_t **at)
{
    float a, b;
    fit_similarity(m, shape, &a, &b);
    /* dlib's 2x2 is [[a, -b], [b, a]] */
    const ert_feature_job j = {.dx = m->feat_dx + cas->feat0,
                               .dy = m->feat_dy + cas->feat0,
                               .anchor2 = m->feat_anchor2 + cas->feat0,
                               .n = cas->nfeat,
                               .shape = shape,
                               .a00 = a,
                               .a01 = -b,
                               .a10 = b,
                               .a11 = a,
                               .ox = bm->ox,
                               .oy = bm->oy,
                               .sx = bm->sx,
                               .sy = bm->sy,
                               .w = g->w,
                               .h = g->h};
    _Alignas(64) int32_t px[ERT_MAX_FEATURES], py[ERT_MAX_FEATURES];
    xy(&j, px, py);
    for (uint32_t i = 0; i < cas->nfeat; i++) {
        if (px[i] >= 0) {
            at[i] = g->data + (ptrdiff_t)py[i] * g->stride + (ptrdiff_t)px[i] * g->bpp;
            __builtin_prefetch(at[i], 0, 3);
        } else {
            at[i] = NULL;
        }
    }
}

static inline uint32_t go(const ert_split *sp, const uint8_t *pix)
{
    /* 0 = left child (difference above the threshold), 1 = right */
    const uint32_t s = *sp;
    return (int)pix[s & SPLIT_IDX_MASK] - (int)pix[(s >> SPLIT_IDX_BITS) & SPLIT_IDX_MASK] +
               SPLIT_THRESH_BIAS <=
           (int)(s >> SPLIT_THRESH_SHIFT);
}

/* The splits of the TREE_BLOCK trees from global tree g on (those after the block whose
 * leaves are being found, into the next cascade at its end), prefetched into L1: a
 * descent is a chain of dependent loads, and the leaf rows streamed since the trees'
 * cascade last ran have pushed them out of cache. */
static void prefetch_splits(const ert_model *m, size_t g)
{
    size_t ge = g + TREE_BLOCK < m->ntrees ? g + TREE_BLOCK : m->ntrees;
    if (g >= ge) return;
    const char *a = (const char *)(m->splits + m->trees[g].split0);
    const ert_tree *last = &m->trees[ge - 1];
    const char *e = (const char *)(m->splits + last->split0 + last->nsplits);
    for (; a < e; a += 64)
        __builtin_prefetch(a, 0, 3);
}

/* pf_l2 is a constant in each instance of find_leaves below */
static inline __attribute__((always_inline)) void prefetch_row(const float *row, size_t stride,
                                                               int pf_l2)
{
    if (pf_l2)
        for (size_t c = 0; c < stride; c += 16) __builtin_prefetch(row + c, 0, 2);
    else
        for (size_t c = 0; c < stride; c += 16) __builtin_prefetch(row + c, 0, 3);
}

/* Leaf rows of trees [t0, t0 + n) of a cascade, prefetched. When every tree has the
 * same depth, eight trees descend side by side: a descent is a chain of dependent
 * loads and the eight chains overlap. */
static inline __attribute__((always_inline)) void
find_leaves_in(const ert_model *m, const ert_cascade *cas, const uint8_t *pix, uint32_t t0,
               uint32_t n, const float **rows, int pf_l2)
{
    const size_t stride = (size_t)m->stride;
    const ert_tree *t = m->trees + cas->tree0 + t0;
    uint32_t k = 0;
    if (m->uniform_ns != UINT32_MAX) {
        const uint32_t ns = m->uniform_ns;
        for (; k + 8 <= n; k += 8) {
            uint32_t node[8] = {0};
            for (uint32_t d = 0; d < m->uniform_depth; d++)
                for (int j = 0; j < 8; j++)
                    node[j] = 2 * node[j] + 1 + go(m->splits + t[k + j].split0 + node[j], pix);
            for (int j = 0; j < 8; j++) {
                const float *row = m->leaves + (t[k + j].leaf0 + node[j] - ns) * stride;
                prefetch_row(row, stride, pf_l2);
                rows[k + j] = row;
            }
        }
    }
    for (; k < n; k++) {
        const ert_split *s = m->splits + t[k].split0;
        uint32_t i = 0, ns = t[k].nsplits;
        while (i < ns)
            i = 2 * i + 1 + go(s + i, pix);
        const float *row = m->leaves + (t[k].leaf0 + i - ns) * stride;
        prefetch_row(row, stride, pf_l2);
        rows[k] = row;
    }
}

static void find_leaves(const ert_model *m, const ert_cascade *cas, const uint8_t *pix, uint32_t t0,
                        uint32_t n, const float **rows)
{
    prefetch_splits(m, cas->tree0 + t0 + n);
    if (m->pf_l2)
        find_leaves_in(m, cas, pix, t0, n, rows, 1);
    else
        find_leaves_in(m, cas, pix, t0, n, rows, 0);
}

void ert_sum_rows_c(float *restrict shape, const float *const *rows, int n, int stride)
{
    for (int r = 0; r < n; r++) {
        const float *restrict row = rows[r];
        for (int j = 0; j < stride; j++)
            shape[j] += row[j];
    }
}

ert_sum_rows_fn ert_sum_rows_pick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned f = ffu_cpu_features();
    if (f & FFU_CPU_AVX512F) return ert_sum_rows_avx512;
    if (f & FFU_CPU_AVX2) return ert_sum_rows_avx2;
#endif
    return ert_sum_rows_c;
}

/* Which prefetch hint streams leaf rows faster on this CPU: 1 for prefetcht1 (into L2),
 * 0 for prefetcht0 (into L1). The answer differs between CPUs, by a lot: in bench/ert
 * (docs/BENCHMARKS.md) prefetcht1 took 10% less time per face than prefetcht0 on an
 * Intel Xeon (Emerald Rapids), 30-45% less on an AMD EPYC of family 25 (Zen 4), and
 * 5-7% more on an AMD Turin (Zen 5). So it is measured, once, at load: the rows of
 * CAL_ROWS trees spread over the model, one leaf of each at random (fixed seed), are
 * flushed from the caches and then summed as ert_predict sums them, a block ahead
 * prefetched, with one hint and then the other, CAL_TRIALS times each (about 10 ms for
 * the 68-point model); the lower minimum wins. The minimum, and that many trials,
 * because the first milliseconds after a load can be slow for one hint: on the family-25
 * host prefetcht1 ran at prefetcht0's speed for up to 23 trials in a row after some
 * loads, and then at its own. The points are the same either way; only the time
 * differs. Models whose leaves could sit in a cache (under CAL_MIN_BYTES) keep
 * prefetcht0: their rows do not come from memory, and a fuzzed file loads quickly. */
#define CAL_ROWS 2048
#define CAL_TRIALS 40
#define CAL_MIN_BYTES ((size_t)8 << 20)

#if defined(__x86_64__) || defined(__i386__)
/* Nanoseconds to sum rows[0..n) in blocks of TREE_BLOCK, each block's rows prefetched
 * while the block before is summed, after the rows were flushed from every cache. */
static int64_t time_rows(const ert_model *m, ert_sum_rows_fn sum, const float *const *rows,
                         size_t n, int pf_l2, float *shape)
{
    const size_t stride = (size_t)m->stride;
    for (size_t r = 0; r < n; r++)
        for (size_t c = 0; c < stride; c += 16)
            _mm_clflush(rows[r] + c);
    _mm_mfence();
    int64_t t0 = ffu_clock_ns();
    for (size_t r = 0; r < TREE_BLOCK && r < n; r++)
        prefetch_row(rows[r], stride, pf_l2);
    for (size_t b = 0; b < n; b += TREE_BLOCK) {
        for (size_t r = b + TREE_BLOCK; r < b + 2 * TREE_BLOCK && r < n; r++)
            prefetch_row(rows[r], stride, pf_l2);
        sum(shape, rows + b, (int)(n - b < TREE_BLOCK ? n - b : TREE_BLOCK), m->stride);
    }
    return ffu_clock_ns() - t0;
}

static int choose_row_prefetch(const ert_model *m)
{
    if (m->nleaves * (size_t)m->stride * sizeof(float) < CAL_MIN_BYTES || m->ntrees < TREE_BLOCK)
        return 0;
    const float *rows[CAL_ROWS];
    size_t n = m->ntrees < CAL_ROWS ? m->ntrees : CAL_ROWS;
    uint64_t seed = 0x2545f4914f6cdd1du;
    for (size_t i = 0; i < n; i++) {
        const ert_tree *t = &m->trees[i * m->ntrees / n];
        seed = seed * 6364136223846793005u + 1442695040888963407u;
        rows[i] = m->leaves + (t->leaf0 + (seed >> 33) % (t->nsplits + 1)) * (size_t)m->stride;
    }
    ert_sum_rows_fn sum = ert_sum_rows_pick();
    _Alignas(64) float shape[MAX_STRIDE] = {0};
    int64_t best[2] = {INT64_MAX, INT64_MAX};
    for (int k = 0; k < CAL_TRIALS; k++)
        for (int pf = 0; pf < 2; pf++) {
            int64_t t = time_rows(m, sum, rows, n, pf, shape);
            if (t < best[pf]) best[pf] = t;
        }
    return best[1] < best[0];
}
#else
static int choose_row_prefetch(const ert_model *m)
{
    (void)m;
    return 0; /* prefetch_row's hints are x86 ones */
}
#endif

int ert_model_row_prefetch_l2(const ert_model *m) { return m ? m->pf_l2 : 0; }

void ert_model_set_row_prefetch_l2(ert_model *m, int l2)
{
    if (m) m->pf_l2 = l2 != 0;
}

/* double -> float without the undefined behaviour of an out-of-range conversion (a
 * hostile model's leaves can sum past FLT_MAX) */
static float to_float(double v)
{
    if (isnan(v)) return NAN;
    if (v > FLT_MAX) return INFINITY;
    if (v < -FLT_MAX) return -INFINITY;
    return (float)v;
}

ffu_status ert_predict(const ert_model *m, const ffu_image *img, const float box[4], float *pts)
{
    if (!m || !img || !box || !pts)
        return ffu_error_set(FFU_ERR_INVALID, "ert_predict: NULL argument");
    grey_src g = {img->data[0], img->stride[0], 1, img->width, img->height};
    switch (img->fmt) {
    case FFU_PIX_GRAY8:
    case FFU_PIX_NV12:
    case FFU_PIX_YUV420P:
        g.bpp = 1;
        break;
    case FFU_PIX_RGB24:
    case FFU_PIX_BGR24:
        g.bpp = 3;
        break;
    case FFU_PIX_RGBA32:
        g.bpp = 4;
        break;
    default:
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "ert_predict: pixel format %s",
                             ffu_pixfmt_name(img->fmt));
    }
    if (!g.data || g.w <= 0 || g.h <= 0)
        return ffu_error_set(FFU_ERR_INVALID, "ert_predict: empty image");
    for (int i = 0; i < 4; i++)
        if (!isfinite(box[i]) || fabsf(box[i]) > 1e7f)
            return ffu_error_set(FFU_ERR_INVALID, "ert_predict: box value %d is not finite", i);
    if (!(box[2] > 0) || !(box[3] > 0))
        return ffu_error_set(FFU_ERR_INVALID, "ert_predict: box %gx%g is empty", box[2], box[3]);

    ert_sum_rows_fn sum = ert_sum_rows_pick();
    ert_feature_xy_fn xy = ert_feature_xy_pick();
    const box_map bm = {box[0], box[1], (double)box[2] - 1, (double)box[3] - 1};
    _Alignas(64) float shape[MAX_STRIDE];
    uint8_t pix[ERT_MAX_FEATURES];
    const uint8_t *at[ERT_MAX_FEATURES]; /* each feature's pixel, NULL outside the image */
    const float *rows[2][TREE_BLOCK];
    memcpy(shape, m->initial, (size_t)m->stride * sizeof(float));

    for (int c = 0; c < m->num_cascades; c++) {
        const ert_cascade *cas = &m->cascades[c];
        feature_pixels(m, xy, cas, shape, &g, &bm, at);
        /* The pixels are read once all are asked for: the leaf rows of the cascade
         * before have pushed the image out of cache, and reading each as it was found
         * waited on one miss after another (a quarter of perf's samples in ert_predict
         * and its callees). */
        for (uint32_t i = 0; i < cas->nfeat; i++)
            pix[i] = at[i] ? (uint8_t)grey_of(at[i], g.bpp) : 0;
        /* The leaves of one block of trees are found (and prefetched) while the block
         * before is summed. Sums go tree by tree in file order, as dlib adds them, so
         * the floats come out the same. */
        const uint32_t nt = cas->ntrees;
        uint32_t nb = (nt + TREE_BLOCK - 1) / TREE_BLOCK;
        if (nb) find_leaves(m, cas, pix, 0, nt < TREE_BLOCK ? nt : TREE_BLOCK, rows[0]);
        for (uint32_t bi = 0; bi < nb; bi++) {
            uint32_t t0 = bi * TREE_BLOCK, n = nt - t0 < TREE_BLOCK ? nt - t0 : TREE_BLOCK;
            if (bi + 1 < nb) {
                uint32_t t1 = t0 + TREE_BLOCK;
                find_leaves(m, cas, pix, t1, nt - t1 < TREE_BLOCK ? nt - t1 : TREE_BLOCK,
                            rows[(bi + 1) & 1]);
            }
            sum(shape, rows[bi & 1], (int)n, m->stride);
        }
    }
    for (int i = 0; i < m->num_parts; i++) {
        pts[2 * i] = to_float(bm.ox + bm.sx * (double)shape[2 * i]);
        pts[2 * i + 1] = to_float(bm.oy + bm.sy * (double)shape[2 * i + 1]);
    }
    return FFU_OK;
}
