/* WIDER FACE detection AP with the official protocol, so numbers from our detectors
 * can be set beside published ones. The ground truth parser reads the official
 * wider_face_val_bbx_gt.txt format plus a difficulty file holding the per-setting
 * keep-lists of the official wider_{easy,medium,hard}_val.mat.
 *
 * The protocol, as the official MATLAB eval_tools (evaluation.m, image_evaluation,
 * image_pr_info, dataset_pr_info, boxoverlap.m, VOCap.m, norm_score.m, read_pred.m)
 * and its Python port (WiderFace-Evaluation) compute it:
 *  - Scores are normalised over the whole prediction set: (s - min) / (max - min).
 *    (MATLAB takes the true min and max; the Python port starts from min 1, max 0,
 *    which agrees for scores in [0, 1].)
 *  - Per image, detections are sorted by score, descending (MATLAB's stable sort).
 *  - Each detection in turn takes the ground-truth box of highest overlap among ALL
 *    boxes of the image (first on ties; boxes already taken included). If that
 *    overlap is >= 0.5: a box outside the setting's keep-list makes the detection
 *    "ignored" (not counted as a proposal at all); a kept box not yet recalled
 *    becomes recalled; a kept box already recalled leaves the detection a plain
 *    proposal, i.e. a false positive (duplicates are false positives).
 *  - At 1000 thresholds 1 - t/1000 (t = 1..1000) an image contributes, over its
 *    detections with normalised score >= threshold, the number of non-ignored
 *    proposals and the number of recalled kept boxes. Summed over images, precision =
 *    recalled / proposals and recall = recalled / (kept boxes of all images, images
 *    without detections included). Images without ground-truth boxes or without
 *    detections are skipped (their detections are not counted).
 *  - AP is the VOC area: recall framed by 0 and 1, precision by 0 and 0, precision
 *    made non-increasing from the right, sum of recall steps times precision.
 *  - Overlap: boxes become x1 = x, x2 = x + w (likewise y), and boxoverlap.m treats
 *    those as inclusive pixel coordinates, so every width and height gets +1:
 *      iw = min(ax2, bx2) - max(ax1, bx1) + 1,  ih likewise,  0 if iw or ih <= 0,
 *      IoU = iw*ih / ((aw + 1)(ah + 1) + (bw + 1)(bh + 1) - iw*ih).
 *    A w x h box therefore counts as (w + 1) x (h + 1) pixels; this inflates small
 *    boxes, which is part of the official numbers, so we keep it.
 * Where the official code would divide by zero (all scores equal) we put every
 * detection at normalised score 1 instead of producing NaN scores (and AP 0). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"
#include "face/eval.h"

#define WIDER_MAX_NAME 1024
#define WIDER_MAX_BOX_LINE 512

/* ---- line reading over a memory buffer ------------------------------------------------ */

typedef struct lines {
    const char *s;
    size_t len, pos;
    int lineno; /* of the line last returned */
} lines;

static int is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Next line without its end-of-line and surrounding blanks; 0 at the end. */
static int next_line(lines *L, const char **p, size_t *n)
{
    if (L->pos >= L->len) return 0;
    const char *start = L->s + L->pos;
    const char *nl = memchr(start, '\n', L->len - L->pos);
    size_t m = nl ? (size_t)(nl - start) : L->len - L->pos;
    L->pos += m + (nl ? 1 : 0);
    L->lineno++;
    while (m && is_blank(start[m - 1]))
        m--;
    while (m && is_blank(*start))
        start++, m--;
    *p = start;
    *n = m;
    return 1;
}

/* Next non-blank line; 0 at the end. */
static int next_content(lines *L, const char **p, size_t *n)
{
    while (next_line(L, p, n))
        if (*n) return 1;
    return 0;
}

/* A non-negative decimal integer filling the whole span. */
static int parse_uint(const char *p, size_t n, long max, long *v)
{
    if (n == 0 || n > 9) return 0;
    long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') return 0;
        x = x * 10 + (p[i] - '0');
    }
    if (x > max) return 0;
    *v = x;
    return 1;
}

/* Up to `cap` numbers separated by blanks, filling the whole line; returns how many,
 * -1 when something is not a number or there are more than cap. */
static int parse_numbers(const char *p, size_t n, double *v, int cap)
{
    char tmp[WIDER_MAX_BOX_LINE];
    if (n >= sizeof tmp) return -1;
    memcpy(tmp, p, n);
    tmp[n] = 0;
    const char *s = tmp, *end = tmp + n;
    int k = 0;
    for (;;) {
        while (s < end && is_blank(*s))
            s++;
        if (s >= end) break;
        if (k == cap) return -1;
        char *e = NULL;
        double x = core_strtod(s, &e);
        if (e == s || !isfinite(x) || fabs(x) > 1e7) return -1;
        if (e < end && !is_blank(*e)) return -1; /* also catches NUL bytes in the line */
        v[k++] = x;
        s = e;
    }
    return k;
}

/* Image names are used to build file paths: relative, printable, no "..". */
static int valid_name(const char *p, size_t n)
{
    if (n == 0 || n > WIDER_MAX_NAME || p[0] == '/') return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c <= ' ' || c == 0x7f) return 0;
        if (c == '.' && i + 1 < n && p[i + 1] == '.' && (i == 0 || p[i - 1] == '/') &&
            (i + 2 == n || p[i + 2] == '/'))
            return 0;
    }
    return 1;
}

/* ---- ground truth -------------------------------------------------------------------- */

void wider_gt_free(wider_gt *gt)
{
    if (!gt) return;
    ffu_arena_destroy(gt->arena);
    free(gt);
}

int wider_gt_count(const wider_gt *gt) { return gt ? gt->count : 0; }

const char *wider_gt_image_name(const wider_gt *gt, int i)
{
    return gt && i >= 0 && i < gt->count ? gt->images[i].name : NULL;
}

ffu_status wider_gt_image_path(const wider_gt *gt, int i, char *buf, size_t len)
{
    if (!buf || len == 0) return ffu_error_set(FFU_ERR_INVALID, "wider_gt_image_path: no buffer");
    buf[0] = 0;
    if (!gt || i < 0 || i >= gt->count)
        return ffu_error_set(FFU_ERR_INVALID, "wider_gt_image_path: image %d out of range", i);
    int w = gt->dir ? snprintf(buf, len, "%s/images/%s", gt->dir, gt->images[i].name)
                    : snprintf(buf, len, "%s", gt->images[i].name);
    if (w < 0 || (size_t)w >= len) {
        buf[0] = 0;
        return ffu_error_set(FFU_ERR_TOO_LARGE, "wider_gt_image_path: %zu bytes too few", len);
    }
    return FFU_OK;
}

/* Growable arrays used while parsing; copied into the arena at the end. */
typedef struct gt_build {
    wider_image *img;
    size_t nimg, capimg;
    size_t *first; /* index of each image's first face in face[] */
    size_t capfirst;
    wider_face *face;
    size_t nface, capface;
} gt_build;

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 1;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *np = realloc(*p, c * elem);
    if (!np) return 0;
    *p = np;
    *cap = c;
    return 1;
}

static ffu_status parse_gt_text(const char *text, size_t len, wider_gt *gt, gt_build *b)
{
    lines L = {text, len, 0, 0};
    const char *p;
    size_t n;
    while (next_content(&L, &p, &n)) {
        if (!valid_name(p, n))
            return ffu_error_set(FFU_ERR_FORMAT,
                                 "gt line %d: expected an image name like "
                                 "\"event/file.jpg\"",
                                 L.lineno);
        if (!grow((void **)&b->img, &b->capimg, b->nimg + 1, sizeof *b->img) ||
            !grow((void **)&b->first, &b->capfirst, b->nimg + 1, sizeof *b->first))
            return ffu_error_set(FFU_ERR_NOMEM, "gt: out of memory");
        wider_image *im = &b->img[b->nimg];
        im->name = ffu_arena_strndup(gt->arena, p, n);
        if (!im->name) return ffu_error_set(FFU_ERR_NOMEM, "gt: out of memory");
        im->faces = NULL;
        b->first[b->nimg] = b->nface;
        int name_line = L.lineno;

        long count;
        if (!next_content(&L, &p, &n))
            return ffu_error_set(FFU_ERR_FORMAT, "gt: %s (line %d): missing face count", im->name,
                                 name_line);
        if (!parse_uint(p, n, WIDER_MAX_FACES, &count))
            return ffu_error_set(FFU_ERR_FORMAT, "gt line %d: expected a face count 0..%d",
                                 L.lineno, WIDER_MAX_FACES);
        im->nfaces = (int)count;
        if (!grow((void **)&b->face, &b->capface, b->nface + (size_t)count, sizeof *b->face))
            return ffu_error_set(FFU_ERR_NOMEM, "gt: out of memory");
        for (long k = 0; k < count; k++) {
            double v[10] = {0};
            if (!next_content(&L, &p, &n))
                return ffu_error_set(FFU_ERR_FORMAT, "gt: %s: %ld of %ld face lines missing",
                                     im->name, count - k, count);
            int got = parse_numbers(p, n, v, 10);
            if (got < 4)
                return ffu_error_set(FFU_ERR_FORMAT,
                                     "gt line %d: expected \"x y w h\" and up to "
                                     "6 attributes",
                                     L.lineno);
            if (v[2] < 0 || v[3] < 0)
                return ffu_error_set(FFU_ERR_FORMAT, "gt line %d: negative box size", L.lineno);
            wider_face *f = &b->face[b->nface++];
            memset(f, 0, sizeof *f);
            f->x = (float)v[0];
            f->y = (float)v[1];
            f->w = (float)v[2];
            f->h = (float)v[3];
            uint8_t *attr[6] = {&f->blur,    &f->expression, &f->illumination,
                                &f->invalid, &f->occlusion,  &f->pose};
            for (int a = 0; a < 6; a++) {
                double x = v[4 + a];
                if (x < 0 || x > 255 || x != floor(x))
                    return ffu_error_set(FFU_ERR_FORMAT,
                                         "gt line %d: attribute %d is not a "
                                         "small integer",
                                         L.lineno, a + 1);
                *attr[a] = (uint8_t)x;
            }
        }
        if (count == 0) {
            /* The official file gives a zero-face image one all-zero placeholder line. */
            lines save = L;
            double v[10];
            if (next_content(&L, &p, &n)) {
                int got = parse_numbers(p, n, v, 10);
                if (got >= 4) {
                    for (int a = 0; a < got; a++)
                        if (v[a] != 0)
                            return ffu_error_set(FFU_ERR_FORMAT,
                                                 "gt line %d: face count 0 but "
                                                 "a non-zero box follows",
                                                 L.lineno);
                } else {
                    L = save; /* the next image's name */
                }
            }
        }
        b->nimg++;
        if (b->nimg > (size_t)1 << 24)
            return ffu_error_set(FFU_ERR_TOO_LARGE, "gt: more than %d images", 1 << 24);
    }
    return FFU_OK;
}

static int cmp_name_idx(const void *a, const void *b, void *ctx)
{
    const wider_image *im = ctx;
    return strcmp(im[*(const int *)a].name, im[*(const int *)b].name);
}

/* Finds the image named p[0..n) through the sorted index; -1 when absent. Compares
 * by length, not strncmp: the key may hold NUL bytes (hostile files). memcmp plus
 * "shorter first" is the order strcmp sorted by. */
static int find_image(const wider_gt *gt, const int *sorted, const char *p, size_t n)
{
    int lo = 0, hi = gt->count - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        const char *name = gt->images[sorted[mid]].name;
        size_t nl = strlen(name);
        int c = memcmp(name, p, nl < n ? nl : n);
        if (c == 0) c = (nl > n) - (nl < n);
        if (c == 0) return sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

/* One "key=LIST" token of a difficulty line for image `im`. */
static ffu_status parse_keep(wider_image *im, const char *p, size_t n, unsigned *seen, int lineno)
{
    static const char *const keys[WIDER_SETTINGS] = {"easy=", "medium=", "hard="};
    int s = -1;
    size_t kl = 0;
    for (int k = 0; k < WIDER_SETTINGS; k++) {
        kl = strlen(keys[k]);
        if (n >= kl && memcmp(p, keys[k], kl) == 0) {
            s = k;
            break;
        }
    }
    if (s < 0)
        return ffu_error_set(FFU_ERR_FORMAT,
                             "difficulty line %d: expected easy=, medium= or "
                             "hard=",
                             lineno);
    if (*seen & (1u << s))
        return ffu_error_set(FFU_ERR_FORMAT, "difficulty line %d: %.*s given twice", lineno,
                             (int)kl - 1, keys[s]);
    *seen |= 1u << s;
    p += kl;
    n -= kl;
    if (n == 1 && p[0] == '-') return FFU_OK;
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && p[j] != ',')
            j++;
        long idx;
        if (!parse_uint(p + i, j - i, WIDER_MAX_FACES, &idx) || idx < 1 || idx > im->nfaces)
            return ffu_error_set(FFU_ERR_FORMAT,
                                 "difficulty line %d: %s: bad face index in "
                                 "%.*s (the image has %d faces)",
                                 lineno, im->name, (int)kl - 1, keys[s], im->nfaces);
        wider_face *f = &im->faces[idx - 1];
        if (f->keep & (1u << s))
            return ffu_error_set(FFU_ERR_FORMAT, "difficulty line %d: face %ld listed twice",
                                 lineno, idx);
        f->keep |= (uint8_t)(1u << s);
        i = j + 1;
    }
    return FFU_OK;
}

/* The image indices of gt sorted by name (for find_image) into *sorted (malloc'ed), and
 * a zeroed per-image flag array into *done; FFU_ERR_FORMAT when a name is listed twice. */
static ffu_status name_index(const wider_gt *gt, const char *what, int **sorted,
                             unsigned char **done)
{
    *sorted = malloc(sizeof(int) * (size_t)(gt->count ? gt->count : 1));
    *done = calloc((size_t)(gt->count ? gt->count : 1), 1);
    if (!*sorted || !*done) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", what);
    for (int i = 0; i < gt->count; i++)
        (*sorted)[i] = i;
    qsort_r(*sorted, (size_t)gt->count, sizeof **sorted, cmp_name_idx, gt->images);
    for (int i = 1; i < gt->count; i++)
        if (strcmp(gt->images[(*sorted)[i - 1]].name, gt->images[(*sorted)[i]].name) == 0)
            return ffu_error_set(FFU_ERR_FORMAT, "gt: image %s listed twice",
                                 gt->images[(*sorted)[i]].name);
    return FFU_OK;
}

static ffu_status parse_difficulty(const char *text, size_t len, wider_gt *gt)
{
    int *sorted = NULL;
    unsigned char *done = NULL;
    ffu_status st = name_index(gt, "difficulty", &sorted, &done);
    if (st) goto out;

    lines L = {text, len, 0, 0};
    const char *p;
    size_t n;
    while (next_content(&L, &p, &n)) {
        size_t i = 0;
        while (i < n && !is_blank(p[i]))
            i++;
        int im = find_image(gt, sorted, p, i);
        if (im < 0) continue; /* an image outside this subset */
        if (done[im]) {
            st = ffu_error_set(FFU_ERR_FORMAT, "difficulty line %d: %s given twice", L.lineno,
                               gt->images[im].name);
            goto out;
        }
        done[im] = 1;
        unsigned seen = 0;
        for (;;) {
            while (i < n && is_blank(p[i]))
                i++;
            if (i >= n) break;
            size_t j = i;
            while (j < n && !is_blank(p[j]))
                j++;
            if ((st = parse_keep(&gt->images[im], p + i, j - i, &seen, L.lineno)) < 0) goto out;
            i = j;
        }
        if (seen != 7) {
            st = ffu_error_set(FFU_ERR_FORMAT,
                               "difficulty line %d: needs easy=, medium= and "
                               "hard=",
                               L.lineno);
            goto out;
        }
    }
    for (int i = 0; i < gt->count; i++)
        if (!done[i]) {
            st = ffu_error_set(FFU_ERR_FORMAT, "difficulty: no line for %s", gt->images[i].name);
            goto out;
        }
out:
    free(sorted);
    free(done);
    return st;
}

ffu_status wider_gt_parse(const char *gt_text, size_t gt_len, const char *diff_text,
                          size_t diff_len, const char *dir, wider_gt **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "wider_gt_parse: out is NULL");
    *out = NULL;
    if (!gt_text && gt_len)
        return ffu_error_set(FFU_ERR_INVALID, "wider_gt_parse: no ground-truth text");
    if (gt_len > WIDER_MAX_FILE_BYTES || diff_len > WIDER_MAX_FILE_BYTES)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "wider_gt_parse: text over %u bytes",
                             WIDER_MAX_FILE_BYTES);
    wider_gt *gt = calloc(1, sizeof *gt);
    gt_build b = {0};
    ffu_status st;
    if (!gt || ffu_arena_create(&gt->arena, 0) != FFU_OK) {
        st = ffu_error_set(FFU_ERR_NOMEM, "wider_gt_parse: out of memory");
        goto fail;
    }
    if (dir && !(gt->dir = ffu_arena_strdup(gt->arena, dir))) {
        st = ffu_error_set(FFU_ERR_NOMEM, "wider_gt_parse: out of memory");
        goto fail;
    }
    if ((st = parse_gt_text(gt_text ? gt_text : "", gt_len, gt, &b)) < 0) goto fail;

    gt->count = (int)b.nimg;
    gt->images = ffu_arena_zalloc(gt->arena, (b.nimg ? b.nimg : 1) * sizeof *gt->images);
    wider_face *faces = ffu_arena_zalloc(gt->arena, (b.nface ? b.nface : 1) * sizeof *faces);
    if (!gt->images || !faces) {
        st = ffu_error_set(FFU_ERR_NOMEM, "wider_gt_parse: out of memory");
        goto fail;
    }
    if (b.nface) memcpy(faces, b.face, b.nface * sizeof *faces);
    for (size_t i = 0; i < b.nimg; i++) {
        gt->images[i] = b.img[i];
        gt->images[i].faces = faces + b.first[i];
        if (!diff_text)
            for (int k = 0; k < b.img[i].nfaces; k++)
                gt->images[i].faces[k].keep = (1u << WIDER_SETTINGS) - 1;
    }
    if (diff_text && (st = parse_difficulty(diff_text, diff_len, gt)) < 0) goto fail;
    free(b.img);
    free(b.first);
    free(b.face);
    *out = gt;
    return FFU_OK;
fail:
    free(b.img);
    free(b.first);
    free(b.face);
    wider_gt_free(gt);
    return st;
}

void wider_dets_free(wider_dets *d)
{
    if (!d) return;
    free(d->preds);
    free(d->all);
    free(d);
}

ffu_status wider_dets_parse(const wider_gt *gt, const char *text, size_t len, wider_dets **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "wider_dets_parse: out is NULL");
    *out = NULL;
    if (!gt || (!text && len))
        return ffu_error_set(FFU_ERR_INVALID, "wider_dets_parse: no ground truth or text");
    if (len > WIDER_MAX_FILE_BYTES)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "detections: text over %u bytes",
                             WIDER_MAX_FILE_BYTES);
    int *sorted = NULL, *first = NULL;
    unsigned char *done = NULL;
    size_t ndet = 0, cap = 0;
    wider_dets *d = calloc(1, sizeof *d);
    ffu_status st = d ? name_index(gt, "detections", &sorted, &done)
                      : ffu_error_set(FFU_ERR_NOMEM, "detections: out of memory");
    if (!st && (!(d->preds = calloc((size_t)(gt->count ? gt->count : 1), sizeof *d->preds)) ||
                !(first = calloc((size_t)(gt->count ? gt->count : 1), sizeof *first))))
        st = ffu_error_set(FFU_ERR_NOMEM, "detections: out of memory");
    lines L = {text ? text : "", len, 0, 0};
    const char *p;
    size_t n;
    while (!st && next_content(&L, &p, &n)) {
        int im = find_image(gt, sorted, p, n);
        if (im < 0) {
            st = ffu_error_set(FFU_ERR_FORMAT,
                               "detections line %d: \"%.*s\" is not an image of the ground "
                               "truth",
                               L.lineno, (int)(n < 200 ? n : 200), p);
            break;
        }
        if (done[im]) {
            st = ffu_error_set(FFU_ERR_FORMAT, "detections line %d: %s given twice", L.lineno,
                               gt->images[im].name);
            break;
        }
        done[im] = 1;
        long count;
        if (!next_content(&L, &p, &n) || !parse_uint(p, n, WIDER_MAX_FACES, &count)) {
            st = ffu_error_set(FFU_ERR_FORMAT, "detections line %d: expected a count 0..%d",
                               L.lineno, WIDER_MAX_FACES);
            break;
        }
        if (ndet + (size_t)count > (size_t)1 << 26) {
            st = ffu_error_set(FFU_ERR_TOO_LARGE, "detections: more than %d", 1 << 26);
            break;
        }
        if (!grow((void **)&d->all, &cap, ndet + (size_t)count, sizeof *d->all)) {
            st = ffu_error_set(FFU_ERR_NOMEM, "detections: out of memory");
            break;
        }
        first[im] = (int)ndet;
        d->preds[im].count = (int)count;
        for (long k = 0; k < count && !st; k++) {
            double v[5];
            if (!next_content(&L, &p, &n) || parse_numbers(p, n, v, 5) != 5 || v[2] < 0 ||
                v[3] < 0)
                st = ffu_error_set(FFU_ERR_FORMAT,
                                   "detections line %d: expected \"x y w h score\" (w, h >= 0) "
                                   "for %s",
                                   L.lineno, gt->images[im].name);
            else
                d->all[ndet++] = (wider_det){(float)v[0], (float)v[1], (float)v[2], (float)v[3],
                                             (float)v[4]};
        }
    }
    if (!st) {
        for (int i = 0; i < gt->count; i++)
            if (d->preds[i].count) d->preds[i].dets = d->all + first[i];
        d->count = (int)ndet;
        *out = d;
        d = NULL;
    }
    wider_dets_free(d);
    free(sorted);
    free(done);
    free(first);
    return st;
}

ffu_status wider_gt_load(const char *dir, wider_gt **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "wider_gt_load: out is NULL");
    *out = NULL;
    if (!dir) return ffu_error_set(FFU_ERR_INVALID, "wider_gt_load: dir is NULL");
    char path[4096];
    char *g = NULL, *d = NULL;
    size_t gl, dl;
    ffu_status st;
    snprintf(path, sizeof path, "%s/gt.txt", dir);
    if ((st = ffu_file_read(path, WIDER_MAX_FILE_BYTES, (uint8_t **)&g, &gl)) < 0) return st;
    snprintf(path, sizeof path, "%s/difficulty.txt", dir);
    if ((st = ffu_file_read(path, WIDER_MAX_FILE_BYTES, (uint8_t **)&d, &dl)) < 0) {
        free(g);
        return st;
    }
    st = wider_gt_parse(g, gl, d, dl, dir, out);
    if (st < 0) ffu_error_prefix(st, dir); /* which dataset was bad */
    free(g);
    free(d);
    return st;
}

/* ---- evaluation ------------------------------------------------------------------- */

double wider_iou(const float a[4], const float b[4])
{
    /* boxoverlap.m on x2 = x + w boxes: inclusive coordinates, hence the +1s */
    double ax1 = a[0], ay1 = a[1], ax2 = ax1 + (double)a[2], ay2 = ay1 + (double)a[3];
    double bx1 = b[0], by1 = b[1], bx2 = bx1 + (double)b[2], by2 = by1 + (double)b[3];
    double iw = fmin(ax2, bx2) - fmax(ax1, bx1) + 1;
    if (!(iw > 0)) return 0;
    double ih = fmin(ay2, by2) - fmax(ay1, by1) + 1;
    if (!(ih > 0)) return 0;
    double ua = (ax2 - ax1 + 1) * (ay2 - ay1 + 1) + (bx2 - bx1 + 1) * (by2 - by1 + 1) - iw * ih;
    return ua > 0 ? iw * ih / ua : 0;
}

/* Descending score, then input order: the same permutation as a stable sort. */
static int cmp_det(const void *a, const void *b, void *ctx)
{
    const wider_det *d = ctx;
    int i = *(const int *)a, j = *(const int *)b;
    if (d[i].score > d[j].score) return -1;
    if (d[i].score < d[j].score) return 1;
    return (i > j) - (i < j);
}

static double voc_ap(const double *rec, const double *prec, int n)
{
    /* recall framed by 0 and 1, precision by 0 and 0, envelope from the right */
    double *mr = malloc(sizeof(double) * (size_t)(n + 2));
    double *mp = malloc(sizeof(double) * (size_t)(n + 2));
    if (!mr || !mp) {
        free(mr);
        free(mp);
        return NAN;
    }
    mr[0] = 0;
    mp[0] = 0;
    for (int i = 0; i < n; i++)
        mr[i + 1] = rec[i], mp[i + 1] = prec[i];
    mr[n + 1] = 1;
    mp[n + 1] = 0;
    for (int i = n; i >= 0; i--)
        mp[i] = fmax(mp[i], mp[i + 1]);
    double ap = 0;
    for (int i = 0; i <= n; i++)
        if (mr[i + 1] != mr[i]) ap += (mr[i + 1] - mr[i]) * mp[i + 1];
    free(mr);
    free(mp);
    return ap;
}

static double thresh_at(int t) { return 1.0 - (double)(t + 1) / WIDER_THRESHOLDS; }

static const float size_band_from[WIDER_SIZE_BANDS] = {0, 16, 24, WIDER_SMALL_FACE_PX, 64};

float wider_size_band_from(int b)
{
    return b >= 0 && b < WIDER_SIZE_BANDS ? size_band_from[b] : -1;
}

static int size_band(const wider_face *f)
{
    float side = fmaxf(f->w, f->h);
    int b = WIDER_SIZE_BANDS - 1;
    while (b > 0 && side < size_band_from[b])
        b--;
    return b;
}

ffu_status wider_eval(const wider_gt *gt, const wider_pred *preds, wider_result *r)
{
    if (!r) return ffu_error_set(FFU_ERR_INVALID, "wider_eval: result is NULL");
    memset(r, 0, sizeof *r);
    if (!gt) return ffu_error_set(FFU_ERR_INVALID, "wider_eval: ground truth is NULL");
    if (gt->count > 0 && !preds) return ffu_error_set(FFU_ERR_INVALID, "wider_eval: preds is NULL");

    /* validate, and find the normalisation range and scratch sizes */
    double smin = INFINITY, smax = -INFINITY;
    int maxdet = 0, maxface = 0, ndet = 0, nhard = 0;
    for (int i = 0; i < gt->count; i++) {
        const wider_pred *p = &preds[i];
        if (p->count < 0 || (p->count > 0 && !p->dets))
            return ffu_error_set(FFU_ERR_INVALID, "wider_eval: image %d: bad detection list", i);
        for (int k = 0; k < p->count; k++) {
            const wider_det *d = &p->dets[k];
            if (!isfinite(d->x) || !isfinite(d->y) || !isfinite(d->w) || !isfinite(d->h) ||
                !isfinite(d->score))
                return ffu_error_set(FFU_ERR_INVALID,
                                     "wider_eval: %s: detection %d is not "
                                     "finite",
                                     gt->images[i].name, k);
            if (d->w < 0 || d->h < 0)
                return ffu_error_set(FFU_ERR_INVALID,
                                     "wider_eval: %s: detection %d has a "
                                     "negative size",
                                     gt->images[i].name, k);
            smin = fmin(smin, d->score);
            smax = fmax(smax, d->score);
        }
        if (p->count > INT32_MAX - ndet)
            return ffu_error_set(FFU_ERR_TOO_LARGE, "wider_eval: too many detections");
        ndet += p->count;
        if (p->count > maxdet) maxdet = p->count;
        if (gt->images[i].nfaces > maxface) maxface = gt->images[i].nfaces;
        for (int k = 0; k < gt->images[i].nfaces; k++)
            nhard += (gt->images[i].faces[k].keep >> WIDER_HARD) & 1;
    }
    double range = smax - smin;

    /* scratch: det order, normalised score, matched box, cumulative counts; PR sums */
    size_t md = (size_t)(maxdet ? maxdet : 1), mf = (size_t)(maxface ? maxface : 1);
    int *order = malloc(md * sizeof *order);
    double *ns = malloc(md * sizeof *ns);
    int *match = malloc(md * sizeof *match);
    int *cprop = malloc(md * sizeof *cprop);
    int *ctp = malloc(md * sizeof *ctp);
    int *firsthit = malloc(md * sizeof *firsthit); /* recalled box index per det or -1 */
    signed char *state = malloc(mf);
    int *slotof = malloc(mf * sizeof *slotof); /* a face's slot in hardhit[], or -1 */
    double *psum = calloc((size_t)WIDER_SETTINGS * WIDER_THRESHOLDS, sizeof *psum);
    double *rsum = calloc((size_t)WIDER_SETTINGS * WIDER_THRESHOLDS, sizeof *rsum);
    /* per hard-setting face: the normalised score that recalled it (-1: none), its band */
    double *hardhit = malloc((size_t)(nhard ? nhard : 1) * sizeof *hardhit);
    signed char *band = malloc((size_t)(nhard ? nhard : 1));
    double *prec = malloc(WIDER_THRESHOLDS * sizeof *prec);
    double *rec = malloc(WIDER_THRESHOLDS * sizeof *rec);
    ffu_status st = FFU_OK;
    if (!order || !ns || !match || !cprop || !ctp || !firsthit || !state || !slotof || !psum ||
        !rsum || !hardhit || !band || !prec || !rec) {
        st = ffu_error_set(FFU_ERR_NOMEM, "wider_eval: out of memory");
        goto out;
    }

    int faces[WIDER_SETTINGS] = {0};
    int si = 0; /* next slot in hardhit[] */
    for (int i = 0; i < gt->count; i++) {
        const wider_image *im = &gt->images[i];
        const wider_pred *p = &preds[i];
        for (int k = 0; k < im->nfaces; k++)
            for (int s = 0; s < WIDER_SETTINGS; s++)
                if (im->faces[k].keep & (1u << s)) faces[s]++;
        for (int k = 0; k < im->nfaces; k++) {
            const wider_face *f = &im->faces[k];
            slotof[k] = -1;
            if (f->keep & (1u << WIDER_HARD)) {
                slotof[k] = si;
                band[si] = (signed char)size_band(f);
                hardhit[si++] = -1; /* never recalled (yet) */
            }
        }
        if (im->nfaces == 0 || p->count == 0) continue;

        int n = p->count;
        for (int h = 0; h < n; h++)
            order[h] = h;
        qsort_r(order, (size_t)n, sizeof *order, cmp_det, (void *)p->dets);
        for (int h = 0; h < n; h++) {
            const wider_det *d = &p->dets[order[h]];
            ns[h] = range > 0 ? (d->score - smin) / range : 1.0;
            float db[4] = {d->x, d->y, d->w, d->h};
            double best = 0;
            int bi = -1;
            for (int k = 0; k < im->nfaces; k++) {
                const wider_face *f = &im->faces[k];
                float gb[4] = {f->x, f->y, f->w, f->h};
                double o = wider_iou(db, gb);
                if (bi < 0 || o > best) best = o, bi = k;
            }
            match[h] = best >= 0.5 ? bi : -1;
        }
        for (int s = 0; s < WIDER_SETTINGS; s++) {
            memset(state, 0, (size_t)im->nfaces);
            int prop = 0, tp = 0;
            for (int h = 0; h < n; h++) {
                int m = match[h], is_prop = 1;
                firsthit[h] = -1;
                if (m >= 0) {
                    if (!(im->faces[m].keep & (1u << s))) {
                        state[m] = -1; /* an ignored box: the detection is no proposal */
                        is_prop = 0;
                    } else if (state[m] == 0) {
                        state[m] = 1;
                        tp++;
                        firsthit[h] = m;
                    }
                }
                prop += is_prop;
                cprop[h] = prop;
                ctp[h] = tp;
            }
            int cut = 0; /* detections with ns >= threshold: a prefix, growing with t */
            for (int t = 0; t < WIDER_THRESHOLDS; t++) {
                double th = thresh_at(t);
                while (cut < n && ns[cut] >= th)
                    cut++;
                if (cut > 0) {
                    psum[s * WIDER_THRESHOLDS + t] += cprop[cut - 1];
                    rsum[s * WIDER_THRESHOLDS + t] += ctp[cut - 1];
                }
            }
            if (s == WIDER_HARD) {
                /* remember at which normalised score each face got recalled */
                for (int h = 0; h < n; h++)
                    if (firsthit[h] >= 0 && slotof[firsthit[h]] >= 0)
                        hardhit[slotof[firsthit[h]]] = ns[h];
            }
        }
    }

    for (int s = 0; s < WIDER_SETTINGS; s++) {
        r->faces[s] = faces[s];
        if (faces[s] == 0) {
            r->ap[s] = NAN;
            continue;
        }
        for (int t = 0; t < WIDER_THRESHOLDS; t++) {
            double ps = psum[s * WIDER_THRESHOLDS + t], rs = rsum[s * WIDER_THRESHOLDS + t];
            /* 0/0 is NaN in the official code; it only happens at zero recall, where the
             * area never reads it, so 0 gives the same AP */
            prec[t] = ps > 0 ? rs / ps : 0;
            rec[t] = rs / faces[s];
        }
        r->ap[s] = voc_ap(rec, prec, WIDER_THRESHOLDS);
        if (s == WIDER_HARD) {
            int bt = -1;
            for (int t = 0; t < WIDER_THRESHOLDS; t++) {
                double f1 = prec[t] + rec[t] > 0 ? 2 * prec[t] * rec[t] / (prec[t] + rec[t]) : 0;
                if (f1 > r->best_f1) r->best_f1 = f1, bt = t;
            }
            if (bt < 0) bt = WIDER_THRESHOLDS - 1; /* nothing recalled: all detections */
            r->best_precision = prec[bt];
            r->best_recall = rec[bt];
            r->all_precision = prec[WIDER_THRESHOLDS - 1]; /* threshold 0: all */
            r->all_recall = rec[WIDER_THRESHOLDS - 1];
            double th = thresh_at(bt);
            r->best_score = ndet == 0 ? NAN : range > 0 ? smin + th * range : smin;
            int hits[WIDER_SIZE_BANDS] = {0}, found[WIDER_SIZE_BANDS] = {0};
            int small = 0, small_hits = 0;
            for (int k = 0; k < nhard; k++) {
                int hit = hardhit[k] >= th, b = band[k];
                r->size_faces[b]++;
                hits[b] += hit;
                found[b] += hardhit[k] >= 0;
                if (size_band_from[b] < WIDER_SMALL_FACE_PX) small++, small_hits += hit;
            }
            for (int b = 0; b < WIDER_SIZE_BANDS; b++) {
                int nb = r->size_faces[b];
                r->size_recall[b] = nb ? (double)hits[b] / nb : NAN;
                r->size_found[b] = nb ? (double)found[b] / nb : NAN;
            }
            r->small_faces = small;
            r->small_recall = small ? (double)small_hits / small : NAN;
        }
    }
    if (faces[WIDER_HARD] == 0) {
        r->best_score = NAN;
        r->all_precision = r->all_recall = NAN;
        r->small_recall = NAN;
        for (int b = 0; b < WIDER_SIZE_BANDS; b++)
            r->size_recall[b] = r->size_found[b] = NAN;
    }
    r->dets = ndet;
out:
    free(order);
    free(ns);
    free(match);
    free(cprop);
    free(ctp);
    free(firsthit);
    free(state);
    free(slotof);
    free(psum);
    free(rsum);
    free(hardhit);
    free(band);
    free(prec);
    free(rec);
    if (st < 0) memset(r, 0, sizeof *r);
    return st;
}
