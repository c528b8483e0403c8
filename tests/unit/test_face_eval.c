/* Tests for the evaluation metrics (src/face/eval_*.c): WIDER FACE AP under the
 * official protocol and LFW verification, on small cases worked out by hand, plus the
 * real ground-truth files of ../shared/data when they are there. */
#include "face/eval.h"
#include "test.h"

/* ---- WIDER: parsing -------------------------------------------------------------------- */

static const char gt_small[] = "0--Parade/a.jpg\n"
                               "2\n"
                               "10 20 30 40 2 0 1 0 0 0 \n"
                               "100 20 8 9 0 0 0 1 2 1\n"
                               "1--Handshaking/b.jpg\r\n"
                               "0\r\n"
                               "0 0 0 0 0 0 0 0 0 0\r\n"
                               "2--Demo/c.jpg\n"
                               "1\n"
                               "5 5 50 60\n";

static const char diff_small[] = "2--Demo/c.jpg easy=1 medium=1 hard=1\n"
                                 "0--Parade/a.jpg easy=1 medium=1 hard=1,2\n"
                                 "9--Other/not_in_gt.jpg easy=- medium=- hard=1\n"
                                 "1--Handshaking/b.jpg easy=- medium=- hard=-\n";

static void test_wider_parse(void)
{
    wider_gt *gt = NULL;
    CHECK_EQ_INT(
        wider_gt_parse(gt_small, strlen(gt_small), diff_small, strlen(diff_small), "/data/wf", &gt),
        FFU_OK);
    CHECK_EQ_INT(wider_gt_count(gt), 3);
    CHECK_STR(wider_gt_image_name(gt, 0), "0--Parade/a.jpg");
    CHECK_STR(wider_gt_image_name(gt, 1), "1--Handshaking/b.jpg");
    CHECK(wider_gt_image_name(gt, 3) == NULL);
    CHECK_EQ_INT(gt->images[0].nfaces, 2);
    CHECK_EQ_INT(gt->images[1].nfaces, 0); /* the placeholder line is dropped */
    CHECK_EQ_INT(gt->images[2].nfaces, 1);
    const wider_face *f = &gt->images[0].faces[1];
    CHECK(f->x == 100 && f->y == 20 && f->w == 8 && f->h == 9);
    CHECK(f->blur == 0 && f->invalid == 1 && f->occlusion == 2 && f->pose == 1);
    CHECK_EQ_INT(gt->images[0].faces[0].keep, 7);
    CHECK_EQ_INT(gt->images[0].faces[1].keep, 1 << WIDER_HARD);
    CHECK_EQ_INT(gt->images[2].faces[0].keep, 7);
    CHECK_EQ_INT(gt->images[2].faces[0].blur, 0); /* attributes absent: 0 */
    char path[64];
    CHECK_EQ_INT(wider_gt_image_path(gt, 2, path, sizeof path), FFU_OK);
    CHECK_STR(path, "/data/wf/images/2--Demo/c.jpg");
    CHECK_EQ_INT(wider_gt_image_path(gt, 2, path, 10), FFU_ERR_TOO_LARGE);
    CHECK_EQ_INT(wider_gt_image_path(gt, -1, path, sizeof path), FFU_ERR_INVALID);
    wider_gt_free(gt);

    /* no difficulty text: every face counts everywhere */
    CHECK_EQ_INT(wider_gt_parse(gt_small, strlen(gt_small), NULL, 0, NULL, &gt), FFU_OK);
    CHECK_EQ_INT(gt->images[0].faces[1].keep, 7);
    CHECK_EQ_INT(wider_gt_image_path(gt, 0, path, sizeof path), FFU_OK);
    CHECK_STR(path, "0--Parade/a.jpg");
    wider_gt_free(gt);
    wider_gt_free(NULL);
    CHECK_EQ_INT(wider_gt_count(NULL), 0);
}

static void test_wider_parse_errors(void)
{
    static const struct {
        const char *gt, *diff;
    } bad[] = {
        {"a/b.jpg\nx\n", NULL},                        /* count not a number */
        {"a/b.jpg\n2\n1 2 3 4\n", NULL},               /* a face line missing */
        {"a/b.jpg\n1\n1 2 -3 4\n", NULL},              /* negative size */
        {"a/b.jpg\n1\n1 2 3\n", NULL},                 /* too few numbers */
        {"a/b.jpg\n1\n1 2 3 4 0 0 0 0 0 0 7\n", NULL}, /* too many */
        {"a/b.jpg\n1\n1 2 3 4 0.5\n", NULL},           /* attribute not an integer */
        {"a/b.jpg\n1\n1 2 3 nan\n", NULL},             /* not finite */
        {"a/b.jpg\n0\n5 0 0 0 0 0 0 0 0 0\n", NULL},   /* count 0 with a real box */
        {"../b.jpg\n0\n", NULL},                       /* path escape */
        {"/etc/b.jpg\n0\n", NULL},                     /* absolute */
        {"a/b.jpg\n100001\n", NULL},                   /* over the cap */
        {"a/b.jpg\n1\n1 2 3 4\n", "a/b.jpg easy=2 medium=1 hard=1\n"},   /* index range */
        {"a/b.jpg\n1\n1 2 3 4\n", "a/b.jpg easy=1 medium=1\n"},          /* hard missing */
        {"a/b.jpg\n1\n1 2 3 4\n", "a/b.jpg easy=1 medium=1 hard=1,1\n"}, /* duplicate */
        {"a/b.jpg\n1\n1 2 3 4\n", "a/b.jpg easy=1 easy=1 medium=1 hard=1\n"},
        {"a/b.jpg\n1\n1 2 3 4\n", "a/b.jpg easy=1 medium=1 hard=1\n"
                                  "a/b.jpg easy=1 medium=1 hard=1\n"}, /* line twice */
        {"a/b.jpg\n1\n1 2 3 4\n", "c/d.jpg easy=- medium=- hard=-\n"}, /* image missing */
        {"a/b.jpg\n1\n1 2 3 4\n", "a/b.jpg easy=1 medium=x hard=1\n"},
        {"a/b.jpg\n1\n1 2 3 4\n", "a/b.jpg easy=1, medium=1 hard=1\n"},
        {"a/b.jpg\n0\na/b.jpg\n0\n", ""}, /* image twice */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wider_gt *gt = (wider_gt *)1;
        ffu_status st = wider_gt_parse(bad[i].gt, strlen(bad[i].gt), bad[i].diff,
                                       bad[i].diff ? strlen(bad[i].diff) : 0, NULL, &gt);
        if (st == FFU_OK) fprintf(stderr, "case %zu parsed\n", i);
        CHECK(st == FFU_ERR_FORMAT);
        CHECK(gt == NULL);
        CHECK(strlen(ffu_error_message()) > 10);
    }
    /* an empty file is an empty, valid set */
    wider_gt *gt = NULL;
    CHECK_EQ_INT(wider_gt_parse("", 0, "", 0, NULL, &gt), FFU_OK);
    CHECK_EQ_INT(wider_gt_count(gt), 0);
    wider_gt_free(gt);
    CHECK_EQ_INT(wider_gt_parse("a", 1, NULL, 0, NULL, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(wider_gt_load("/nonexistent/dir", &gt), FFU_ERR_NOT_FOUND);
    CHECK(gt == NULL);
}

/* ---- WIDER: the metric ---------------------------------------------------------------- */

/* Detections from a file (wider_dets_parse): blocks in any order, an image without a
 * block has none, the ground truth's own boxes score AP 1; names outside the ground
 * truth, a block twice, short or malformed lines and negative sizes are refused. */
static void test_wider_dets_parse(void)
{
    wider_gt *gt = NULL;
    CHECK_EQ_INT(wider_gt_parse(gt_small, strlen(gt_small), NULL, 0, NULL, &gt), FFU_OK);
    static const char ok[] = "2--Demo/c.jpg\n1\n5 5 50 60 0.9\n\n"
                             "0--Parade/a.jpg\r\n2\r\n100 20 8 9 0.5\r\n10 20 30 40 0.7\r\n";
    wider_dets *d = NULL;
    CHECK_EQ_INT(wider_dets_parse(gt, ok, strlen(ok), &d), FFU_OK);
    CHECK(d != NULL);
    if (d) {
        CHECK_EQ_INT(d->count, 3);
        CHECK_EQ_INT(d->preds[0].count, 2);
        CHECK_EQ_INT(d->preds[1].count, 0); /* no block: no detections */
        CHECK_EQ_INT(d->preds[2].count, 1);
        CHECK(d->preds[0].dets[1].x == 10 && d->preds[0].dets[1].h == 40);
        CHECK(fabsf(d->preds[0].dets[1].score - 0.7f) < 1e-6f);
        wider_result r;
        CHECK_EQ_INT(wider_eval(gt, d->preds, &r), FFU_OK);
        for (int k = 0; k < WIDER_SETTINGS; k++)
            CHECK(fabs(r.ap[k] - 1) < 1e-12);
    }
    wider_dets_free(d);
    wider_dets_free(NULL);
    /* an empty file: no detections at all */
    CHECK_EQ_INT(wider_dets_parse(gt, "", 0, &d), FFU_OK);
    CHECK(d && d->count == 0 && d->preds[0].count == 0);
    wider_dets_free(d);
    static const char *const bad[] = {
        "9--Other/x.jpg\n0\n",                  /* not in the ground truth */
        "2--Demo/c.jpg\n0\n2--Demo/c.jpg\n0\n", /* twice */
        "2--Demo/c.jpg\n2\n5 5 50 60 0.9\n",    /* a line short */
        "2--Demo/c.jpg\n1\n5 5 50 60\n",        /* no score */
        "2--Demo/c.jpg\n1\n5 5 50 60 0.9 7\n",  /* one number too many */
        "2--Demo/c.jpg\n1\n5 5 -50 60 0.9\n",   /* negative width */
        "2--Demo/c.jpg\nmany\n",                /* not a count */
        "2--Demo/c.jpg\n1\n5 5 50 nan 0.9\n",   /* not finite */
        "2--Demo/c.jpg\n",                      /* no count */
        "0--Parade/a.jpg/\n0\n",                /* a name that is not one */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        d = (wider_dets *)1;
        ffu_status st = wider_dets_parse(gt, bad[i], strlen(bad[i]), &d);
        if (st != FFU_ERR_FORMAT) fprintf(stderr, "  bad[%zu] gave %d\n", i, st);
        CHECK_EQ_INT(st, FFU_ERR_FORMAT);
        CHECK(d == NULL);
        CHECK(strstr(ffu_error_message(), "detections line") != NULL);
    }
    CHECK_EQ_INT(wider_dets_parse(NULL, "", 0, &d), FFU_ERR_INVALID);
    wider_gt_free(gt);
}

static void test_wider_iou_convention(void)
{
    float a[4] = {0, 0, 10, 10}, b[4] = {5, 0, 10, 10};
    /* x2 = x + w, inclusive: iw = 10 - 5 + 1 = 6, ih = 11, areas 11 x 11 */
    CHECK_NEAR(wider_iou(a, b), 66.0 / (121 + 121 - 66), 1e-12);
    CHECK_NEAR(wider_iou(a, a), 1.0, 1e-12);
    float touch[4] = {10, 0, 10, 10}; /* shares the column x = 10 */
    CHECK_NEAR(wider_iou(a, touch), 11.0 / (242 - 11), 1e-12);
    float apart[4] = {11, 0, 10, 10};
    CHECK(wider_iou(a, apart) == 0);
    float zero[4] = {3, 3, 0, 0}; /* a zero-size box is one pixel */
    CHECK_NEAR(wider_iou(zero, zero), 1.0, 1e-12);
}

static wider_gt *parse_or_null(const char *g, const char *d)
{
    wider_gt *gt = NULL;
    if (wider_gt_parse(g, strlen(g), d, d ? strlen(d) : 0, NULL, &gt) != FFU_OK) return NULL;
    return gt;
}

/* Detections exactly on every face, with distinct scores. */
static void test_wider_perfect(void)
{
    wider_gt *gt = parse_or_null(gt_small, diff_small);
    CHECK(gt);
    wider_det d0[2] = {{10, 20, 30, 40, 0.9f}, {100, 20, 8, 9, 0.3f}};
    wider_det d2[1] = {{5, 5, 50, 60, 0.6f}};
    wider_pred p[3] = {{d0, 2}, {NULL, 0}, {d2, 1}};
    wider_result r;
    CHECK_EQ_INT(wider_eval(gt, p, &r), FFU_OK);
    for (int s = 0; s < WIDER_SETTINGS; s++)
        CHECK_NEAR(r.ap[s], 1.0, 1e-12);
    CHECK_EQ_INT(r.faces[WIDER_EASY], 2);
    CHECK_EQ_INT(r.faces[WIDER_HARD], 3);
    CHECK_EQ_INT(r.dets, 3);
    CHECK_NEAR(r.best_f1, 1.0, 1e-12);
    CHECK_EQ_INT(r.small_faces, 1); /* the 8 x 9 face */
    CHECK_NEAR(r.small_recall, 1.0, 1e-12);
    /* by size: the 8 x 9 face under 16 px, the 30 x 40 and 50 x 60 ones in 32-64 */
    CHECK(wider_size_band_from(0) == 0 && wider_size_band_from(3) == 32 &&
          wider_size_band_from(WIDER_SIZE_BANDS) == -1);
    const int per_band[WIDER_SIZE_BANDS] = {1, 0, 0, 2, 0};
    for (int b = 0; b < WIDER_SIZE_BANDS; b++) {
        CHECK_EQ_INT(r.size_faces[b], per_band[b]);
        if (per_band[b])
            CHECK(r.size_recall[b] == 1.0 && r.size_found[b] == 1.0);
        else
            CHECK(isnan(r.size_recall[b]) && isnan(r.size_found[b]));
    }
    CHECK(r.best_score <= 0.3 + 1e-6); /* all three needed */

    /* all scores equal: the official code would divide by zero; we rank them together */
    d0[0].score = d0[1].score = d2[0].score = 0.5f;
    CHECK_EQ_INT(wider_eval(gt, p, &r), FFU_OK);
    for (int s = 0; s < WIDER_SETTINGS; s++)
        CHECK_NEAR(r.ap[s], 1.0, 1e-12);
    wider_gt_free(gt);
}

/* Two images worked by hand. Image A: faces G1, G2 (kept everywhere); image B: G3
 * (kept everywhere) and G4 (hard/medium only). Detections and their normalised
 * scores ((s - 0.6) / 0.3): d1 on G1 (1.0), d2 on nothing (0.667), d5 on G4 (0.5),
 * d3 on G3 (0.333), d4 on G3 again (0, a duplicate).
 * Hard (4 faces), in score order: TP FP TP TP FP -> (P, R) = (1, 1/4) (1/2, 1/4)
 *   (2/3, 2/4) (3/4, 3/4) (3/5, 3/4); envelope: 1 over [0, 1/4], 3/4 over (1/4, 3/4]:
 *   AP = 1/4 + (1/2)(3/4) = 0.625.
 * Easy (3 faces): d5 hits an ignored face and is no proposal: TP FP TP FP ->
 *   (1, 1/3) (1/2, 1/3) (2/3, 2/3) (1/2, 2/3): AP = 1/3 + (1/3)(2/3) = 5/9. */
static void test_wider_hand_worked(void)
{
    const char *g = "e/A.jpg\n2\n0 0 20 20\n100 0 20 20\n"
                    "e/B.jpg\n2\n0 0 20 20\n50 50 20 20\n";
    const char *d = "e/A.jpg easy=1,2 medium=1,2 hard=1,2\n"
                    "e/B.jpg easy=1 medium=1,2 hard=2,1\n";
    wider_gt *gt = parse_or_null(g, d);
    CHECK(gt);
    wider_det a[2] = {{300, 300, 20, 20, 0.8f}, {0, 0, 20, 20, 0.9f}}; /* unsorted on purpose */
    wider_det b[3] = {{0, 0, 20, 20, 0.7f}, {0, 0, 20, 20, 0.6f}, {50, 50, 20, 20, 0.75f}};
    wider_pred p[2] = {{a, 2}, {b, 3}};
    wider_result r;
    CHECK_EQ_INT(wider_eval(gt, p, &r), FFU_OK);
    CHECK_NEAR(r.ap[WIDER_HARD], 0.625, 1e-9);
    CHECK_NEAR(r.ap[WIDER_MEDIUM], 0.625, 1e-9);
    CHECK_NEAR(r.ap[WIDER_EASY], 5.0 / 9.0, 1e-9);
    CHECK_EQ_INT(r.faces[WIDER_EASY], 3);
    CHECK_EQ_INT(r.faces[WIDER_HARD], 4);
    /* best F1 on hard: P = R = 3/4 (thresholds 0.333 down to 0.001) */
    CHECK_NEAR(r.best_f1, 0.75, 1e-9);
    CHECK_NEAR(r.best_precision, 0.75, 1e-9);
    CHECK_NEAR(r.best_recall, 0.75, 1e-9);
    CHECK_NEAR(r.best_score, 0.6 + 0.333 * 0.3, 1e-6); /* first threshold <= 1/3 */
    /* every detection: 3 hits among 5 proposals (the 0.8 miss, B's second box on
     * face 1), 3 of 4 faces */
    CHECK_NEAR(r.all_precision, 3.0 / 5.0, 1e-12);
    CHECK_NEAR(r.all_recall, 3.0 / 4.0, 1e-12);
    CHECK_EQ_INT(r.small_faces, 4);                    /* all 20 x 20 */
    CHECK_NEAR(r.small_recall, 0.75, 1e-9);
    wider_gt_free(gt);
}

/* Recall by face size: a 100 px face found at the top score, then three false positives,
 * then one of two 20 px faces at the lowest score. Hard PR: (1, 1/3) (1/2, 1/3) (1/3, 1/3)
 * (1/4, 1/3) (2/5, 2/3): F1 0.5 at the first and the last threshold, so the best is the first (the
 * stricter): the 20 px band is recalled 0 of 2 there but found 1 of 2 at all. */
static void test_wider_size_bands(void)
{
    const char *g = "e/A.jpg\n3\n0 0 100 100\n200 0 20 20\n300 0 20 16\n";
    const char *d = "e/A.jpg easy=1 medium=1,2,3 hard=1,2,3\n";
    wider_gt *gt = parse_or_null(g, d);
    CHECK(gt);
    wider_det a[5] = {{0, 0, 100, 100, 0.9f},
                      {500, 0, 20, 20, 0.8f},
                      {600, 0, 20, 20, 0.7f},
                      {700, 0, 20, 20, 0.6f},
                      {200, 0, 20, 20, 0.1f}};
    wider_pred p[1] = {{a, 5}};
    wider_result r;
    CHECK_EQ_INT(wider_eval(gt, p, &r), FFU_OK);
    CHECK_NEAR(r.best_f1, 0.5, 1e-9);
    CHECK_NEAR(r.best_recall, 1.0 / 3.0, 1e-9);
    CHECK_NEAR(r.all_precision, 2.0 / 5.0, 1e-12); /* the curve's last point */
    CHECK_NEAR(r.all_recall, 2.0 / 3.0, 1e-12);
    CHECK_EQ_INT(r.size_faces[1], 2); /* 16-24 px */
    CHECK_EQ_INT(r.size_faces[4], 1); /* 64 px and up */
    CHECK_NEAR(r.size_recall[1], 0.0, 1e-12);
    CHECK_NEAR(r.size_found[1], 0.5, 1e-12);
    CHECK_NEAR(r.size_recall[4], 1.0, 1e-12);
    CHECK_NEAR(r.size_found[4], 1.0, 1e-12);
    CHECK(isnan(r.size_recall[0]) && isnan(r.size_recall[2]) && isnan(r.size_recall[3]));
    CHECK_EQ_INT(r.small_faces, 2);
    CHECK_NEAR(r.small_recall, 0.0, 1e-12);
    wider_gt_free(gt);
}

/* A face detected twice: the second is a false positive. Faces G1, G2; d1 on G1,
 * d2 on G1 again, d3 on G2, in that score order: (1, 1/2) (1/2, 1/2) (2/3, 1):
 * AP = 1/2 + (1/2)(2/3) = 5/6; without d2 it is 1. */
static void test_wider_duplicates(void)
{
    wider_gt *gt = parse_or_null("e/A.jpg\n2\n0 0 40 40\n200 0 40 40\n", NULL);
    CHECK(gt);
    wider_det d[3] = {{0, 0, 40, 40, 0.9f}, {1, 1, 40, 40, 0.8f}, {200, 0, 40, 40, 0.7f}};
    wider_pred p = {d, 3};
    wider_result r;
    CHECK_EQ_INT(wider_eval(gt, &p, &r), FFU_OK);
    for (int s = 0; s < WIDER_SETTINGS; s++)
        CHECK_NEAR(r.ap[s], 5.0 / 6.0, 1e-9);
    d[1] = d[2];
    p.count = 2;
    CHECK_EQ_INT(wider_eval(gt, &p, &r), FFU_OK);
    CHECK_NEAR(r.ap[WIDER_HARD], 1.0, 1e-12);
    wider_gt_free(gt);
}

/* Detections on faces outside a setting's keep-list are neither TP nor FP. */
static void test_wider_ignored(void)
{
    const char *g = "e/A.jpg\n4\n0 0 30 30\n100 0 30 30\n200 0 30 30\n300 0 30 30\n";
    const char *d = "e/A.jpg easy=1,3 medium=1,2,3 hard=1,2,3,4\n";
    wider_gt *gt = parse_or_null(g, d);
    CHECK(gt);
    /* on easy faces 1 and 3, one false positive between them, scores span 0.1..0.9 */
    wider_det base[3] = {{0, 0, 30, 30, 0.9f}, {500, 500, 30, 30, 0.5f}, {200, 0, 30, 30, 0.1f}};
    wider_pred p = {base, 3};
    wider_result r0, r1;
    CHECK_EQ_INT(wider_eval(gt, &p, &r0), FFU_OK);
    /* (1, 1/2) (1/2, 1/2) (2/3, 1): 1/2 + 1/3 */
    CHECK_NEAR(r0.ap[WIDER_EASY], 5.0 / 6.0, 1e-9);
    wider_det more[5] = {
        base[0], base[1], base[2], {100, 0, 30, 30, 0.95f}, {300, 0, 30, 30, 0.3f}};
    p.dets = more;
    p.count = 5;
    more[3].score = 0.7f; /* inside the same score range so normalisation is unchanged */
    CHECK_EQ_INT(wider_eval(gt, &p, &r1), FFU_OK);
    CHECK_NEAR(r1.ap[WIDER_EASY], r0.ap[WIDER_EASY], 1e-12);
    CHECK(r1.ap[WIDER_HARD] > r0.ap[WIDER_HARD]); /* there they are real hits */
    /* an ignored face hit by a detection is not a miss either: the count of easy faces
     * stays 2, and a detection with IoU >= 0.5 to it (not exactly on it) is still
     * ignored */
    more[3] = (wider_det){102, 1, 30, 30, 0.7f};
    CHECK_EQ_INT(wider_eval(gt, &p, &r1), FFU_OK);
    CHECK_NEAR(r1.ap[WIDER_EASY], r0.ap[WIDER_EASY], 1e-12);
    CHECK_EQ_INT(r1.faces[WIDER_EASY], 2);
    wider_gt_free(gt);
}

/* The +1 convention decides borderline matches: a 10 x 4.5 detection on a 10 x 10
 * face has plain IoU 0.45 but official IoU 11 * 5.5 / 121 = 0.5, a hit. */
static void test_wider_border_match(void)
{
    wider_gt *gt = parse_or_null("e/A.jpg\n1\n0 0 10 10\n", NULL);
    CHECK(gt);
    wider_det d = {0, 0, 10, 4.5f, 0.9f};
    wider_pred p = {&d, 1};
    wider_result r;
    CHECK_EQ_INT(wider_eval(gt, &p, &r), FFU_OK);
    CHECK_NEAR(r.ap[WIDER_HARD], 1.0, 1e-12);
    d.h = 4.4f;
    CHECK_EQ_INT(wider_eval(gt, &p, &r), FFU_OK);
    CHECK_NEAR(r.ap[WIDER_HARD], 0.0, 1e-12);
    wider_gt_free(gt);
}

/* Equal overlaps go to the first box (the official argmax), kept or not: two
 * identical boxes, the first kept for easy, the second not. One detection on them is
 * an easy hit; with the order of the boxes swapped it lands on the ignored one. */
static void test_wider_tie_first_box(void)
{
    const char *g = "e/A.jpg\n2\n0 0 20 20\n0 0 20 20\n";
    wider_gt *gt = parse_or_null(g, "e/A.jpg easy=1 medium=1,2 hard=1,2\n");
    CHECK(gt);
    wider_det d = {0, 0, 20, 20, 0.9f};
    wider_pred p = {&d, 1};
    wider_result r;
    CHECK_EQ_INT(wider_eval(gt, &p, &r), FFU_OK);
    CHECK_NEAR(r.ap[WIDER_EASY], 1.0, 1e-12);
    CHECK_NEAR(r.ap[WIDER_HARD], 0.5, 1e-12); /* the second box is never recalled */
    wider_gt_free(gt);
    gt = parse_or_null(g, "e/A.jpg easy=2 medium=1,2 hard=1,2\n");
    CHECK(gt);
    CHECK_EQ_INT(wider_eval(gt, &p, &r), FFU_OK);
    CHECK_NEAR(r.ap[WIDER_EASY], 0.0, 1e-12); /* ignored hit; the kept box is missed */
    wider_gt_free(gt);
}

/* Images without faces are skipped as in the official code (their detections do not
 * count); settings without faces give NAN; bad detections are refused. */
static void test_wider_edges(void)
{
    wider_gt *gt =
        parse_or_null("e/A.jpg\n1\n0 0 30 30\ne/Z.jpg\n0\n0 0 0 0 0 0 0 0 0 0\n",
                      "e/A.jpg easy=- medium=1 hard=1\ne/Z.jpg easy=- medium=- hard=-\n");
    CHECK(gt);
    wider_det a = {0, 0, 30, 30, 0.5f};
    wider_det z[2] = {{5, 5, 10, 10, 0.99f}, {50, 5, 10, 10, 0.98f}};
    wider_pred p[2] = {{&a, 1}, {z, 2}};
    wider_result r;
    CHECK_EQ_INT(wider_eval(gt, p, &r), FFU_OK);
    CHECK_NEAR(r.ap[WIDER_HARD], 1.0, 1e-12);
    CHECK(isnan(r.ap[WIDER_EASY]));
    CHECK_EQ_INT(r.faces[WIDER_EASY], 0);
    CHECK_EQ_INT(r.dets, 3);

    /* no detections at all: AP 0 */
    wider_pred none[2] = {{NULL, 0}, {NULL, 0}};
    CHECK_EQ_INT(wider_eval(gt, none, &r), FFU_OK);
    CHECK_NEAR(r.ap[WIDER_HARD], 0.0, 1e-12);
    CHECK(isnan(r.best_score));

    a.score = NAN;
    CHECK_EQ_INT(wider_eval(gt, p, &r), FFU_ERR_INVALID);
    CHECK(r.ap[WIDER_HARD] == 0 && r.dets == 0); /* zeroed */
    a.score = 0.5f;
    a.w = -1;
    CHECK_EQ_INT(wider_eval(gt, p, &r), FFU_ERR_INVALID);
    a.w = INFINITY;
    CHECK_EQ_INT(wider_eval(gt, p, &r), FFU_ERR_INVALID);
    CHECK_EQ_INT(wider_eval(gt, NULL, &r), FFU_ERR_INVALID);
    wider_pred badp[2] = {{NULL, 3}, {NULL, 0}};
    CHECK_EQ_INT(wider_eval(gt, badp, &r), FFU_ERR_INVALID);
    CHECK_EQ_INT(wider_eval(NULL, p, &r), FFU_ERR_INVALID);
    CHECK_EQ_INT(wider_eval(gt, p, NULL), FFU_ERR_INVALID);
    wider_gt_free(gt);
}

/* The shared 220-image subset: counts, a known box, and two protocol properties on
 * real crowds (detections on every box; extra detections on ignored boxes). */
static void test_wider_real_gt(void)
{
    char dir[4096];
    if (!test_shared_path("data/widerface/gt.txt", dir, sizeof dir))
        TEST_SKIP("../shared/data/widerface not present");
    test_shared_path("data/widerface", dir, sizeof dir);
    wider_gt *gt = NULL;
    CHECK_EQ_INT(wider_gt_load(dir, &gt), FFU_OK);
    CHECK_EQ_INT(wider_gt_count(gt), 220);
    CHECK_STR(wider_gt_image_name(gt, 0), "0--Parade/0_Parade_Parade_0_102.jpg");
    CHECK_EQ_INT(gt->images[0].nfaces, 39);
    const wider_face *f = &gt->images[0].faces[0];
    CHECK(f->x == 806 && f->y == 442 && f->w == 24 && f->h == 32 && f->blur == 2);
    char path[4096];
    CHECK_EQ_INT(wider_gt_image_path(gt, 0, path, sizeof path), FFU_OK);
    struct stat st;
    CHECK(stat(path, &st) == 0);
    /* first image: easy empty, medium {1}, hard 33 faces */
    int nk[WIDER_SETTINGS] = {0};
    for (int k = 0; k < gt->images[0].nfaces; k++)
        for (int s = 0; s < WIDER_SETTINGS; s++)
            nk[s] += (gt->images[0].faces[k].keep >> s) & 1;
    CHECK_EQ_INT(nk[WIDER_EASY], 0);
    CHECK_EQ_INT(nk[WIDER_MEDIUM], 1);
    CHECK_EQ_INT(nk[WIDER_HARD], 33);

    /* a detection on every face (hard-kept or not) with random scores */
    int total = 0;
    for (int i = 0; i < gt->count; i++)
        total += gt->images[i].nfaces;
    wider_det *all = malloc(sizeof *all * (size_t)total);
    wider_det *easy_only = malloc(sizeof *all * (size_t)total);
    wider_pred *pa = calloc((size_t)gt->count, sizeof *pa);
    wider_pred *pe = calloc((size_t)gt->count, sizeof *pe);
    CHECK(all && easy_only && pa && pe);
    uint64_t seed = 42;
    int na = 0, ne = 0;
    for (int i = 0; i < gt->count; i++) {
        pa[i].dets = all + na;
        pe[i].dets = easy_only + ne;
        for (int k = 0; k < gt->images[i].nfaces; k++) {
            const wider_face *g = &gt->images[i].faces[k];
            wider_det d = {g->x, g->y, g->w, g->h, 0.05f + 0.9f * test_rand_f(&seed)};
            all[na++] = d;
            pa[i].count++;
            if (g->keep & 1) {
                easy_only[ne++] = d;
                pe[i].count++;
            }
        }
    }
    /* keep the same score range in both sets so normalisation agrees */
    all[0].score = easy_only[0].score = 0.01f;
    all[1].score = easy_only[1].score = 0.99f;
    wider_result ra, re;
    ffu_status s1 = wider_eval(gt, pa, &ra), s2 = wider_eval(gt, pe, &re);
    int ok = s1 == FFU_OK && s2 == FFU_OK;
    printf("    real gt, a detection on every face: AP %.4f %.4f %.4f, faces %d %d %d, "
           "small %d\n",
           ra.ap[0], ra.ap[1], ra.ap[2], ra.faces[0], ra.faces[1], ra.faces[2], ra.small_faces);
    free(all);
    free(easy_only);
    free(pa);
    free(pe);
    wider_gt_free(gt);
    CHECK(ok);
    /* a box on every face recalls everything, precisely, except where two ground-truth
     * boxes coincide (the first takes both detections) */
    for (int s = 0; s < WIDER_SETTINGS; s++)
        CHECK(ra.ap[s] > 0.99 && ra.ap[s] <= 1.0);
    CHECK_NEAR(re.ap[WIDER_EASY], ra.ap[WIDER_EASY], 1e-12);
    CHECK(re.ap[WIDER_HARD] < ra.ap[WIDER_HARD]);
    CHECK(ra.faces[WIDER_EASY] > 0 && ra.faces[WIDER_EASY] < ra.faces[WIDER_MEDIUM] &&
          ra.faces[WIDER_MEDIUM] < ra.faces[WIDER_HARD]);
}

/* ---- LFW ------------------------------------------------------------------------------ */

static const char pairs_small[] = "2\t2\n"
                                  "Ann\t1\t2\n"
                                  "Bob\t3\t4\n"
                                  "Ann\t1\tCyd\t1\n"
                                  "Bob\t2\tCyd\t2\n"
                                  "Dee 1 2\n"
                                  "Eve 1 12\n"
                                  "Dee 1 Eve 1\n"
                                  "Cyd 1 Dee 2\n"
                                  "\n";

static void test_lfw_parse(void)
{
    lfw_pairs *p = NULL;
    CHECK_EQ_INT(lfw_pairs_parse(pairs_small, strlen(pairs_small), "/lfw", &p), FFU_OK);
    CHECK_EQ_INT(p->count, 8);
    CHECK_EQ_INT(p->folds, 2);
    CHECK_EQ_INT(p->per_fold, 2);
    CHECK(p->pairs[0].same && p->pairs[0].fold == 0 && p->pairs[0].num2 == 2);
    CHECK(!p->pairs[2].same);
    CHECK_STR(p->pairs[2].name2, "Cyd");
    CHECK_EQ_INT(p->pairs[5].fold, 1);
    char path[128];
    CHECK_EQ_INT(lfw_pair_path(p, 5, 1, path, sizeof path), FFU_OK);
    CHECK_STR(path, "/lfw/images/Eve/Eve_0012.jpg");
    CHECK_EQ_INT(lfw_pair_path(p, 3, 0, path, sizeof path), FFU_OK);
    CHECK_STR(path, "/lfw/images/Bob/Bob_0002.jpg");
    CHECK_EQ_INT(lfw_pair_path(p, 3, 2, path, sizeof path), FFU_ERR_INVALID);
    CHECK_EQ_INT(lfw_pair_path(p, 8, 0, path, sizeof path), FFU_ERR_INVALID);
    CHECK_EQ_INT(lfw_pair_path(p, 3, 0, path, 8), FFU_ERR_TOO_LARGE);
    lfw_pairs_free(p);
    lfw_pairs_free(NULL);

    static const char *const bad[] = {
        "",
        "2 2\nAnn 1 2\n",                       /* too few */
        "1 1\nAnn 1 2\nBob 1 Cyd 1\nDee 1 2\n", /* too many */
        "1 1\nAnn 1 Bob 2\nBob 1 Cyd 1\n",      /* fold has no same pair */
        "1 1\nAnn 1 2\nBob 1 ../x 1\n",         /* path escape */
        "1 1\nA/nn 1 2\nBob 1 Cyd 1\n",
        "1 1\nAnn 0 2\nBob 1 Cyd 1\n", /* image numbers are 1-based */
        "1 1\nAnn 1 2 3 4 5\nBob 1 Cyd 1\n",
        "11 1\n", /* too many folds */
        "x 1\n",
        "1 1\nAnn 1\nBob 1 Cyd 1\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = (lfw_pairs *)1;
        CHECK_EQ_INT(lfw_pairs_parse(bad[i], strlen(bad[i]), NULL, &p), FFU_ERR_FORMAT);
        CHECK(p == NULL);
    }
    CHECK_EQ_INT(lfw_pairs_load("/nonexistent", &p), FFU_ERR_NOT_FOUND);
}

static void test_lfw_separable(void)
{
    enum { N = 100 };
    uint8_t same[N];
    int fold[N];
    float sim[N];
    uint64_t seed = 7;
    for (int i = 0; i < N; i++) {
        same[i] = (uint8_t)(i % 2);
        fold[i] = i % 5;
        sim[i] = same[i] ? 0.6f + 0.3f * test_rand_f(&seed) : 0.1f + 0.3f * test_rand_f(&seed);
    }
    float maxd = 0, mins = 1;
    for (int i = 0; i < N; i++) {
        if (same[i])
            mins = fminf(mins, sim[i]);
        else
            maxd = fmaxf(maxd, sim[i]);
    }
    lfw_result r;
    CHECK_EQ_INT(lfw_eval_labels(N, same, fold, 5, sim, &r), FFU_OK);
    CHECK_EQ_INT(r.folds, 5);
    for (int k = 0; k < 5; k++)
        CHECK_NEAR(r.fold_acc[k], 1.0, 1e-12);
    CHECK_NEAR(r.acc_mean, 1.0, 1e-12);
    CHECK_NEAR(r.acc_std, 0.0, 1e-12);
    CHECK_NEAR(r.best_acc, 1.0, 1e-12);
    CHECK(r.best_thr > maxd && r.best_thr < mins);
    CHECK_NEAR(r.best_thr, 0.5 * ((double)maxd + mins), 1e-9);
    CHECK_NEAR(r.tar_far1e3, 1.0, 1e-12);
    CHECK_NEAR(r.tar_far1e2, 1.0, 1e-12);
    CHECK_NEAR(r.auc, 1.0, 1e-12);
    CHECK_EQ_INT(r.nan_same + r.nan_diff, 0);

    /* a pair without a face is a wrong decision, whichever kind it is */
    sim[0] = NAN; /* different */
    sim[1] = NAN; /* same */
    CHECK_EQ_INT(lfw_eval_labels(N, same, fold, 5, sim, &r), FFU_OK);
    CHECK_EQ_INT(r.nan_diff, 1);
    CHECK_EQ_INT(r.nan_same, 1);
    CHECK_NEAR(r.best_acc, (N - 2) / (double)N, 1e-12);
    CHECK_NEAR(r.fold_acc[0], (N / 5 - 1) / (double)(N / 5), 1e-12); /* pair 0 in fold 0 */
    CHECK_NEAR(r.fold_acc[1], (N / 5 - 1) / (double)(N / 5), 1e-12);
    CHECK_NEAR(r.fold_acc[2], 1.0, 1e-12);
    /* FAR floor 1/50 from the NAN different pair: no threshold reaches 1e-2 */
    CHECK_NEAR(r.tar_far1e2, 0.0, 1e-12);
    CHECK(isinf(r.thr_far1e2) && r.thr_far1e2 > 0);
}

/* Two folds where the threshold learned on one fold is wrong for the other:
 * fold 0: same {0.6, 0.7}, diff {0.3, 0.4}; fold 1: same {0.35, 0.9}, diff {0.1, 0.2}.
 * Trained on fold 1 the threshold is 0.275: fold 0 scores 2/4. Trained on fold 0 it is
 * 0.5: fold 1 scores 3/4. Mean 0.625, population std 0.125. */
static void test_lfw_kfold(void)
{
    uint8_t same[8] = {1, 1, 0, 0, 1, 1, 0, 0};
    int fold[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    float sim[8] = {0.6f, 0.7f, 0.3f, 0.4f, 0.35f, 0.9f, 0.1f, 0.2f};
    lfw_result r;
    CHECK_EQ_INT(lfw_eval_labels(8, same, fold, 2, sim, &r), FFU_OK);
    CHECK_NEAR(r.fold_thr[0], 0.5 * ((double)0.2f + 0.35f), 1e-9);
    CHECK_NEAR(r.fold_thr[1], 0.5 * ((double)0.4f + 0.6f), 1e-9);
    CHECK_NEAR(r.fold_acc[0], 0.5, 1e-12);
    CHECK_NEAR(r.fold_acc[1], 0.75, 1e-12);
    CHECK_NEAR(r.acc_mean, 0.625, 1e-12);
    CHECK_NEAR(r.acc_std, 0.125, 1e-12);
    /* on all pairs: sorted d.1 d.2 d.3 s.35 d.4 s.6 s.7 s.9; best 7/8 at two
     * candidates (0.325 and 0.5): the middle of the ties is the first (index 0 of 2) */
    CHECK_NEAR(r.best_acc, 7.0 / 8.0, 1e-12);
    CHECK(r.best_thr > 0.3 && r.best_thr < 0.6);
    /* without folds: k-fold part off, mean = best */
    CHECK_EQ_INT(lfw_eval_labels(8, same, NULL, 0, sim, &r), FFU_OK);
    CHECK_EQ_INT(r.folds, 0);
    CHECK_NEAR(r.acc_mean, 7.0 / 8.0, 1e-12);
    /* bad input */
    float inf[8];
    memcpy(inf, sim, sizeof inf);
    inf[3] = INFINITY;
    CHECK_EQ_INT(lfw_eval_labels(8, same, fold, 2, inf, &r), FFU_ERR_INVALID);
    uint8_t allsame[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_EQ_INT(lfw_eval_labels(8, allsame, fold, 2, sim, &r), FFU_ERR_INVALID);
    int badfold[8] = {0, 0, 0, 0, 1, 1, 1, 2};
    CHECK_EQ_INT(lfw_eval_labels(8, same, badfold, 2, sim, &r), FFU_ERR_INVALID);
    int onefold[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    CHECK_EQ_INT(lfw_eval_labels(8, same, onefold, 2, sim, &r), FFU_ERR_INVALID); /* fold 1 empty */
}

/* 1000 different pairs at 0.000, 0.001, ..., 0.999; 100 same pairs: 30 at 0.9995, 40
 * at 0.995, 30 at 0.5. FAR 1e-3 allows one different pair (0.999): TAR 0.30, threshold
 * midway 0.998..0.999. FAR 1e-2 allows ten (0.990..0.999): TAR 0.70, threshold midway
 * 0.989..0.990. */
static void test_lfw_tar_far(void)
{
    enum { ND = 1000, NS = 100, N = ND + NS + 2 };
    uint8_t same[N];
    float sim[N];
    for (int i = 0; i < ND; i++)
        same[i] = 0, sim[i] = (float)i / 1000.0f;
    for (int i = 0; i < NS; i++) {
        same[ND + i] = 1;
        sim[ND + i] = i < 30 ? 0.9995f : i < 70 ? 0.995f : 0.5f;
    }
    double tar, thr;
    CHECK_EQ_INT(lfw_tar_at_far(ND + NS, same, sim, 1e-3, &tar, &thr), FFU_OK);
    CHECK_NEAR(tar, 0.30, 1e-12);
    CHECK_NEAR(thr, 0.5 * ((double)0.998f + 0.999f), 1e-9);
    CHECK_EQ_INT(lfw_tar_at_far(ND + NS, same, sim, 1e-2, &tar, &thr), FFU_OK);
    CHECK_NEAR(tar, 0.70, 1e-12);
    CHECK_NEAR(thr, 0.5 * ((double)0.989f + 0.990f), 1e-9);
    CHECK_EQ_INT(lfw_tar_at_far(ND + NS, same, sim, 1.0, &tar, &thr), FFU_OK);
    CHECK_NEAR(tar, 1.0, 1e-12);
    CHECK_EQ_INT(lfw_tar_at_far(ND + NS, same, sim, 0.0, &tar, &thr), FFU_OK);
    CHECK_NEAR(tar, 0.30, 1e-12); /* 0.9995 is above every different pair */
    CHECK(thr > 0.999f && thr < 0.9995f);

    /* two different pairs without a face: always accepted, so FAR 1e-3 (1 of 1002)
     * is out of reach and FAR 1e-2 (10) leaves 8 finite ones: threshold 0.991..0.992 */
    same[N - 2] = same[N - 1] = 0;
    sim[N - 2] = sim[N - 1] = NAN;
    CHECK_EQ_INT(lfw_tar_at_far(N, same, sim, 1e-3, &tar, &thr), FFU_OK);
    CHECK_NEAR(tar, 0.0, 1e-12);
    CHECK(isinf(thr));
    CHECK_EQ_INT(lfw_tar_at_far(N, same, sim, 1e-2, &tar, &thr), FFU_OK);
    CHECK_NEAR(tar, 0.70, 1e-12);
    CHECK_NEAR(thr, 0.5 * ((double)0.991f + 0.992f), 1e-9);
    CHECK_EQ_INT(lfw_tar_at_far(N, same, sim, NAN, &tar, &thr), FFU_ERR_INVALID);
}

/* same {0.9, 0.7}, different {0.8, 0.1}: ROC (0,0) (0,1/2) (1/2,1/2) (1/2,1) (1,1),
 * AUC 3/4 = P(same > different). */
static void test_lfw_roc(void)
{
    uint8_t same[4] = {1, 1, 0, 0};
    float sim[4] = {0.9f, 0.7f, 0.8f, 0.1f};
    lfw_roc_point pts[5];
    int np = 0;
    CHECK_EQ_INT(lfw_roc(4, same, sim, pts, 5, &np), FFU_OK);
    CHECK_EQ_INT(np, 5);
    const double far[5] = {0, 0, 0.5, 0.5, 1}, tar[5] = {0, 0.5, 0.5, 1, 1};
    for (int i = 0; i < 5; i++) {
        CHECK_NEAR(pts[i].far, far[i], 1e-12);
        CHECK_NEAR(pts[i].tar, tar[i], 1e-12);
    }
    CHECK(isinf(pts[0].thr));
    CHECK_NEAR(pts[2].thr, 0.8f, 1e-12);
    /* a different pair without a face is accepted at every threshold: the curve starts
     * at FAR 1/3 (it is one of three different pairs now) and loses area */
    uint8_t same5[5] = {1, 1, 0, 0, 0};
    float sim5[5] = {0.9f, 0.7f, 0.8f, 0.1f, NAN};
    CHECK_EQ_INT(lfw_roc(5, same5, sim5, pts, 5, &np), FFU_OK);
    CHECK_EQ_INT(np, 5);
    CHECK_NEAR(pts[0].far, 1.0 / 3, 1e-12);
    CHECK_NEAR(pts[4].far, 1.0, 1e-12);
    lfw_result r5;
    CHECK_EQ_INT(lfw_eval_labels(5, same5, NULL, 0, sim5, &r5), FFU_OK);
    /* (1/3,0) (1/3,1/2) (2/3,1/2) (2/3,1) (1,1): 1/6 + 1/3 */
    CHECK_NEAR(r5.auc, 0.5, 1e-12);
    CHECK_NEAR(r5.best_acc, 3.0 / 5, 1e-12);
    /* equally good thresholds 0.15, 0.35, 0.55 (4 of 6 right): the middle one is taken */
    uint8_t same6[6] = {0, 1, 0, 1, 0, 1};
    float sim6[6] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f};
    CHECK_EQ_INT(lfw_eval_labels(6, same6, NULL, 0, sim6, &r5), FFU_OK);
    CHECK_NEAR(r5.best_acc, 4.0 / 6, 1e-12);
    CHECK_NEAR(r5.best_thr, 0.5 * ((double)0.3f + 0.4f), 1e-12);
    /* too small a buffer: filled as far as it goes, full size reported */
    CHECK_EQ_INT(lfw_roc(4, same, sim, pts, 2, &np), FFU_OK);
    CHECK_EQ_INT(np, 5);
    lfw_result r;
    CHECK_EQ_INT(lfw_eval_labels(4, same, NULL, 0, sim, &r), FFU_OK);
    CHECK_NEAR(r.auc, 0.75, 1e-12);
    CHECK_NEAR(r.best_acc, 0.75, 1e-12);
}

static void test_lfw_real_pairs(void)
{
    char dir[4096];
    if (!test_shared_path("data/lfw/pairs.txt", dir, sizeof dir))
        TEST_SKIP("../shared/data/lfw not present");
    test_shared_path("data/lfw", dir, sizeof dir);
    lfw_pairs *p = NULL;
    CHECK_EQ_INT(lfw_pairs_load(dir, &p), FFU_OK);
    int same = 0;
    for (int i = 0; i < p->count; i++)
        same += p->pairs[i].same;
    int ok = p->count == 3000 && same == 1500 && p->folds == 5 && p->per_fold == 300 &&
             strcmp(p->pairs[0].name1, "Abel_Pacheco") == 0 && p->pairs[0].num2 == 4 &&
             p->pairs[2999].fold == 4 && !p->pairs[2999].same;
    char path[4096];
    int paths_ok = 1;
    for (int i = 0; i < p->count; i += 97)
        for (int w = 0; w < 2; w++) {
            struct stat st;
            paths_ok &= lfw_pair_path(p, i, w, path, sizeof path) == FFU_OK && stat(path, &st) == 0;
        }
    /* a similarity that is exactly the label: perfect everywhere */
    float *sim = malloc(sizeof *sim * (size_t)p->count);
    lfw_result r;
    ffu_status st = FFU_ERR_NOMEM;
    if (sim) {
        for (int i = 0; i < p->count; i++)
            sim[i] = p->pairs[i].same ? 0.8f : 0.2f;
        st = lfw_eval(p, sim, &r);
    }
    free(sim);
    lfw_pairs_free(p);
    CHECK(ok);
    CHECK(paths_ok);
    CHECK_EQ_INT(st, FFU_OK);
    CHECK_EQ_INT(r.folds, 5);
    CHECK_NEAR(r.acc_mean, 1.0, 1e-12);
    CHECK_NEAR(r.best_thr, 0.5, 1e-6);
}

/* Liveness rates on a hand-worked case: live 0.9 0.8 0.4, spoof 0.6 0.3 0.2. AUC =
 * 8 of 9 pairs ordered; at 0.5 one spoof passes and one live face fails (1/3 each);
 * the best ACER is 1/6, at 0.8 and at 0.4, and the tie goes to the lower threshold. */
static void test_pad_rates(void)
{
    const float s[6] = {0.9f, 0.6f, 0.8f, 0.3f, 0.4f, 0.2f};
    const int live[6] = {1, 0, 1, 0, 1, 0};
    eval_pad r = eval_pad_rates(s, live, 6, 0.5);
    CHECK_NEAR(r.auc, 8.0 / 9, 1e-12);
    CHECK_NEAR(r.apcer, 1.0 / 3, 1e-12);
    CHECK_NEAR(r.bpcer, 1.0 / 3, 1e-12);
    CHECK_NEAR(r.acer, 1.0 / 3, 1e-12);
    CHECK_NEAR(r.best_acer, 1.0 / 6, 1e-12);
    CHECK_NEAR(r.best_thr, 0.4f, 1e-7);
    CHECK_NEAR(r.best_apcer, 1.0 / 3, 1e-12);
    CHECK_NEAR(r.best_bpcer, 0, 1e-12);
    /* a set without spoofs: no AUC, no APCER */
    const int all_live[3] = {1, 1, 1};
    r = eval_pad_rates(s, all_live, 3, 0.5);
    CHECK(isnan(r.auc) && isnan(r.apcer));
    CHECK_NEAR(r.bpcer, 0, 1e-12);
}

TEST_MAIN(test_pad_rates, test_wider_parse, test_wider_parse_errors, test_wider_dets_parse,
          test_wider_iou_convention, test_wider_perfect, test_wider_hand_worked,
          test_wider_size_bands, test_wider_duplicates, test_wider_ignored, test_wider_border_match,
          test_wider_tie_first_box, test_wider_edges, test_wider_real_gt, test_lfw_parse,
          test_lfw_separable, test_lfw_kfold, test_lfw_tar_far, test_lfw_roc, test_lfw_real_pairs)
