/* Tests of target selection (src/swap/swap.c) and temporal smoothing (src/swap/smooth.c)
 * on real data: the order modes and one/many on group photos whose left-to-right
 * identities identities.csv gives, gender filters, selection by a reference face
 * (only the matching person is swapped), and the smoother on a real single-person clip
 * (less frame-to-frame landmark motion variance, little lag) and on a photo moved
 * across the frame (followed). Skipped without ../shared/data or the models. */
#include "facefuse/facefuse.h"
#include "test.h"

#define FR "data/face_recognition_examples/examples/"

static int load(const char *rel, ffu_image *img)
{
    char buf[1024];
    const char *p = test_shared_path(rel, buf, sizeof buf);
    return p && ffu_image_load(p, FFU_PIX_RGB24, img) == FFU_OK;
}

static ffu_status make(ffu_swap_select sel, ffu_swap_order order, ffu_swapper **sw)
{
    ffu_swapper_opts o;
    ffu_swapper_opts_default(&o);
    o.select = sel;
    o.order = order;
    o.threads = 1; /* predictable under ctest -j */
    return ffu_swapper_create(&o, sw);
}

static float cx(const ffu_face *f) { return f->box[0] + 0.5f * f->box[2]; }

/* two_people.jpg: Obama (left) then Biden (right). */
static void test_order_one_many(void)
{
    ffu_image img = {0};
    if (!load(FR "two_people.jpg", &img))
        TEST_SKIP("../shared/data/face_recognition_examples not available");
    ffu_swapper *sw = NULL;
    ffu_status st = make(FFU_SWAP_SELECT_MANY, FFU_SWAP_ORDER_LEFT_RIGHT, &sw);
    if (st == FFU_ERR_NOT_FOUND) {
        ffu_image_release(&img);
        TEST_SKIP("default models not installed");
    }
    CHECK_EQ_INT(st, FFU_OK);
    ffu_face_list all = {0}, t = {0};
    CHECK_EQ_INT(ffu_swapper_find_targets(sw, &img, &all), FFU_OK);
    CHECK_EQ_INT(all.count, 2);
    CHECK(cx(&all.faces[0]) < cx(&all.faces[1]));
    CHECK(all.faces[0].num_landmarks >= 468 && all.faces[1].num_landmarks >= 468);
    float left = cx(&all.faces[0]), right = cx(&all.faces[1]);
    float area[2] = {all.faces[0].box[2] * all.faces[0].box[3],
                     all.faces[1].box[2] * all.faces[1].box[3]};
    float score[2] = {all.faces[0].score, all.faces[1].score};
    ffu_swapper_destroy(sw);
    static const ffu_swap_order orders[] = {FFU_SWAP_ORDER_LEFT_RIGHT,  FFU_SWAP_ORDER_RIGHT_LEFT,
                                            FFU_SWAP_ORDER_LARGE_SMALL, FFU_SWAP_ORDER_SMALL_LARGE,
                                            FFU_SWAP_ORDER_TOP_BOTTOM,  FFU_SWAP_ORDER_BOTTOM_TOP,
                                            FFU_SWAP_ORDER_BEST_WORST,  FFU_SWAP_ORDER_WORST_BEST};
    for (int k = 0; k < 8; k++) {
        for (int many = 0; many < 2; many++) {
            sw = NULL;
            CHECK_EQ_INT(make(many ? FFU_SWAP_SELECT_MANY : FFU_SWAP_SELECT_ONE, orders[k], &sw),
                         FFU_OK);
            CHECK_EQ_INT(ffu_swapper_find_targets(sw, &img, &t), FFU_OK);
            CHECK_EQ_INT(t.count, many ? 2 : 1);
            /* which face (0 = left, 1 = right) each order puts first */
            int first = cx(&t.faces[0]) == left ? 0 : 1;
            CHECK(cx(&t.faces[0]) == left || cx(&t.faces[0]) == right);
            int want;
            switch (orders[k]) {
            case FFU_SWAP_ORDER_LEFT_RIGHT:
                want = 0;
                break;
            case FFU_SWAP_ORDER_RIGHT_LEFT:
                want = 1;
                break;
            case FFU_SWAP_ORDER_LARGE_SMALL:
                want = area[0] >= area[1] ? 0 : 1;
                break;
            case FFU_SWAP_ORDER_SMALL_LARGE:
                want = area[0] < area[1] ? 0 : 1;
                break;
            case FFU_SWAP_ORDER_TOP_BOTTOM:
                want = all.faces[0].box[1] + all.faces[0].box[3] / 2 <=
                               all.faces[1].box[1] + all.faces[1].box[3] / 2
                           ? 0
                           : 1;
                break;
            case FFU_SWAP_ORDER_BOTTOM_TOP:
                want = all.faces[0].box[1] + all.faces[0].box[3] / 2 >
                               all.faces[1].box[1] + all.faces[1].box[3] / 2
                           ? 0
                           : 1;
                break;
            case FFU_SWAP_ORDER_BEST_WORST:
                want = score[0] >= score[1] ? 0 : 1;
                break;
            default:
                want = score[0] < score[1] ? 0 : 1;
                break;
            }
            CHECK_EQ_INT(first, want);
            ffu_swapper_destroy(sw);
        }
    }
    ffu_face_list_free(&all);
    ffu_face_list_free(&t);
    ffu_image_release(&img);
}

/* Gender and age filters. kit_with_rose.jpg: Rose Leslie (left) then Kit Harington
 * (right, in costume: the attributes model takes him for a woman too, so only Rose's
 * side is asserted); two_people.jpg: two men. */
static void test_gender_and_age_filters(void)
{
    ffu_image kr = {0}, two = {0};
    if (!load("data/face_recognition_examples/examples/knn_examples/test/kit_with_rose.jpg", &kr) ||
        !load(FR "two_people.jpg", &two))
        TEST_SKIP("../shared/data/face_recognition_examples not available");
    struct {
        const ffu_image *img;
        const char *gender;
        float age_min, age_max;
        int want;
    } cases[] = {
        {&two, "male", 0, 0, 2}, {&two, "female", 0, 0, 0}, {&kr, "female", 0, 0, -1},
        {&two, NULL, 18, 90, 2}, {&two, NULL, 0, 10, 0},    {&two, NULL, 70, 0, 0},
    };
    ffu_face_list t = {0};
    for (int c = 0; c < 6; c++) {
        ffu_swapper_opts o;
        ffu_swapper_opts_default(&o);
        o.select = FFU_SWAP_SELECT_MANY;
        o.order = FFU_SWAP_ORDER_LEFT_RIGHT;
        o.gender = cases[c].gender;
        o.age_min = cases[c].age_min;
        o.age_max = cases[c].age_max;
        o.threads = 1;
        ffu_swapper *sw = NULL;
        ffu_status st = ffu_swapper_create(&o, &sw);
        if (st == FFU_ERR_NOT_FOUND) {
            ffu_image_release(&kr);
            ffu_image_release(&two);
            TEST_SKIP("attributes model not installed");
        }
        CHECK_EQ_INT(st, FFU_OK);
        CHECK_EQ_INT(ffu_swapper_find_targets(sw, cases[c].img, &t), FFU_OK);
        for (int i = 0; i < t.count; i++)
            printf("case %d: face at x %.0f, age %.1f, male %.2f\n", c, (double)cx(&t.faces[i]),
                   (double)t.faces[i].attr.age, (double)t.faces[i].attr.gender_male);
        if (cases[c].want >= 0) {
            CHECK_EQ_INT(t.count, cases[c].want);
        } else {
            /* Rose, the left face, passes the female filter */
            CHECK(t.count >= 1);
            CHECK(cx(&t.faces[0]) < cases[c].img->width / 2);
        }
        for (int i = 0; i < t.count; i++)
            CHECK(isfinite(t.faces[i].attr.gender_male) && isfinite(t.faces[i].attr.age));
        ffu_swapper_destroy(sw);
    }
    ffu_face_list_free(&t);
    ffu_image_release(&kr);
    ffu_image_release(&two);
}

static int differs(const ffu_image *a, const ffu_image *b, const float box[4])
{
    long n = 0;
    int x0 = (int)box[0], y0 = (int)box[1], x1 = (int)(box[0] + box[2]),
        y1 = (int)(box[1] + box[3]);
    x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > a->width ? a->width : x1, y1 = y1 > a->height ? a->height : y1;
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++)
            n += memcmp(a->data[0] + (size_t)y * a->stride[0] + 3 * x,
                        b->data[0] + (size_t)y * b->stride[0] + 3 * x, 3) != 0;
    return n > 100;
}

/* Reference selection: only the person of the reference photo is swapped. */
static void test_reference_swaps_only_that_person(void)
{
    ffu_image group = {0}, ref_obama = {0}, ref_biden = {0}, src = {0}, out = {0};
    if (!load(FR "two_people.jpg", &group) || !load(FR "obama.jpg", &ref_obama) ||
        !load(FR "biden.jpg", &ref_biden) || !load(FR "lin-manuel-miranda.png", &src))
        TEST_SKIP("../shared/data/face_recognition_examples not available");
    ffu_swapper *all = NULL;
    ffu_status st = make(FFU_SWAP_SELECT_MANY, FFU_SWAP_ORDER_LEFT_RIGHT, &all);
    if (st == FFU_ERR_NOT_FOUND) TEST_SKIP("default models not installed");
    CHECK_EQ_INT(st, FFU_OK);
    ffu_face_list both = {0}, t = {0};
    CHECK_EQ_INT(ffu_swapper_find_targets(all, &group, &both), FFU_OK);
    CHECK_EQ_INT(both.count, 2); /* [0] Obama (left), [1] Biden */
    for (int who = 0; who < 2; who++) {
        ffu_swapper *sw = NULL;
        CHECK_EQ_INT(make(FFU_SWAP_SELECT_REFERENCE, FFU_SWAP_ORDER_LARGE_SMALL, &sw), FFU_OK);
        /* without a reference: a clear error */
        CHECK_EQ_INT(ffu_swapper_find_targets(sw, &group, &t), FFU_ERR_INVALID);
        CHECK_EQ_INT(ffu_swapper_set_reference(sw, who ? &ref_biden : &ref_obama, -1), FFU_OK);
        CHECK_EQ_INT(ffu_swapper_find_targets(sw, &group, &t), FFU_OK);
        CHECK_EQ_INT(t.count, 1);
        CHECK_NEAR(cx(&t.faces[0]), cx(&both.faces[who]), 1e-3);
        CHECK_EQ_INT(ffu_swapper_set_source(sw, &src, 1), FFU_OK);
        CHECK_EQ_INT(ffu_image_clone(&out, &group), FFU_OK);
        int n = -1;
        CHECK_EQ_INT(ffu_swapper_swap_image(sw, &out, &n), FFU_OK);
        CHECK_EQ_INT(n, 1);
        CHECK(differs(&group, &out, both.faces[who].box));
        CHECK(!differs(&group, &out, both.faces[1 - who].box));
        ffu_image_release(&out);
        ffu_swapper_destroy(sw);
    }
    /* a reference nobody matches: nothing selected, nothing changed */
    ffu_swapper *sw = NULL;
    CHECK_EQ_INT(make(FFU_SWAP_SELECT_REFERENCE, FFU_SWAP_ORDER_LARGE_SMALL, &sw), FFU_OK);
    CHECK_EQ_INT(ffu_swapper_set_reference(sw, &src, -1), FFU_OK);
    CHECK_EQ_INT(ffu_swapper_find_targets(sw, &group, &t), FFU_OK);
    CHECK_EQ_INT(t.count, 0);
    CHECK_EQ_INT(ffu_swapper_set_reference(sw, &group, 5), FFU_ERR_NOT_FOUND);
    ffu_swapper_destroy(sw);
    ffu_swapper_destroy(all);
    ffu_face_list_free(&both);
    ffu_face_list_free(&t);
    ffu_image_release(&group);
    ffu_image_release(&ref_obama);
    ffu_image_release(&ref_biden);
    ffu_image_release(&src);
}

/* ---- smoother --------------------------------------------------------------------------- */

#define CLIP_FRAMES 90

typedef struct track_pts {
    float p[CLIP_FRAMES][468 * 2];
    float width[CLIP_FRAMES];
    double t[CLIP_FRAMES];
    int n;
} track_pts;

static void keep(track_pts *tp, int k, const ffu_face *f)
{
    for (int i = 0; i < 468; i++) {
        tp->p[k][2 * i] = f->landmarks[3 * i];
        tp->p[k][2 * i + 1] = f->landmarks[3 * i + 1];
    }
    tp->width[k] = f->box[2];
}

/* Mean over points of the variance (over time) of the frame-to-frame motion. */
static double motion_variance(const track_pts *tp)
{
    double sum = 0;
    for (int i = 0; i < 468 * 2; i++) {
        double s1 = 0, s2 = 0;
        for (int k = 1; k < tp->n; k++) {
            double d = tp->p[k][i] - tp->p[k - 1][i];
            s1 += d, s2 += d * d;
        }
        s1 /= tp->n - 1;
        sum += s2 / (tp->n - 1) - s1 * s1;
    }
    return sum / (468 * 2);
}

/* RMS second difference: the frame-to-frame jitter (smooth motion has little of it). */
static double accel_rms(const track_pts *tp)
{
    double sum = 0;
    long n = 0;
    for (int k = 1; k + 1 < tp->n; k++)
        for (int i = 0; i < 468 * 2; i++, n++) {
            double a = tp->p[k + 1][i] - 2 * tp->p[k][i] + tp->p[k - 1][i];
            sum += a * a;
        }
    return sqrt(sum / (double)n);
}

static void test_smoother_on_real_clip(void)
{
    char buf[1024];
    const char *path = test_shared_path("data/videos/liveportrait_driving_d9.mp4", buf, sizeof buf);
    if (!path) TEST_SKIP("../shared/data/videos not available");
    ffu_swapper *sw = NULL;
    ffu_status st = make(FFU_SWAP_SELECT_ONE, FFU_SWAP_ORDER_LARGE_SMALL, &sw);
    if (st == FFU_ERR_NOT_FOUND) TEST_SKIP("default models not installed");
    CHECK_EQ_INT(st, FFU_OK);
    ffu_video_reader *r = NULL;
    CHECK_EQ_INT(ffu_video_reader_open(&r, path, NULL), FFU_OK);
    ffu_swap_smoother *sm = NULL;
    CHECK_EQ_INT(ffu_swap_smoother_create(0, &sm), FFU_OK);
    static track_pts raw, smooth;
    raw.n = smooth.n = 0;
    ffu_image frame = {0};
    ffu_face_list t = {0};
    double pts;
    while (raw.n < CLIP_FRAMES && ffu_video_reader_read(r, &frame, &pts) == FFU_OK) {
        CHECK_EQ_INT(ffu_swapper_find_targets(sw, &frame, &t), FFU_OK);
        if (t.count != 1) continue;
        keep(&raw, raw.n++, &t.faces[0]);
        CHECK_EQ_INT(ffu_swap_smoother_apply(sm, &t, pts), FFU_OK);
        keep(&smooth, smooth.n++, &t.faces[0]);
        /* frames out of order are refused */
        if (raw.n == 10) CHECK_EQ_INT(ffu_swap_smoother_apply(sm, &t, pts - 1), FFU_ERR_INVALID);
    }
    CHECK(raw.n >= 60);
    double vr = motion_variance(&raw), vs = motion_variance(&smooth);
    double ar = accel_rms(&raw), as = accel_rms(&smooth);
    double lag = 0, lag_max = 0;
    for (int k = 0; k < raw.n; k++) {
        double d = 0;
        for (int i = 0; i < 468; i++)
            d += hypot(smooth.p[k][2 * i] - raw.p[k][2 * i],
                       smooth.p[k][2 * i + 1] - raw.p[k][2 * i + 1]);
        d /= 468 * raw.width[k];
        lag += d / raw.n;
        lag_max = d > lag_max ? d : lag_max;
    }
    printf("liveportrait_driving_d9, %d frames: motion variance %.3f -> %.3f px^2, jitter (rms "
           "2nd difference) %.3f -> %.3f px; distance to raw mean %.4f, max %.4f face widths\n",
           raw.n, vr, vs, ar, as, lag, lag_max);
    CHECK(vs < 0.8 * vr);
    CHECK(as < 0.7 * ar);
    CHECK(lag < 0.01 && lag_max < 0.03); /* still on the face */
    ffu_face_list_free(&t);
    ffu_image_release(&frame);
    ffu_video_reader_close(r);
    ffu_swap_smoother_destroy(sm);
    ffu_swapper_destroy(sw);
}

/* A photo moved 4 px per frame: the smoothed landmarks follow within a pixel or two. */
static void test_smoother_follows_motion(void)
{
    ffu_image img = {0}, frame = {0};
    if (!load(FR "obama-480p.jpg", &img))
        TEST_SKIP("../shared/data/face_recognition_examples not available");
    ffu_swapper *sw = NULL;
    ffu_status st = make(FFU_SWAP_SELECT_ONE, FFU_SWAP_ORDER_LARGE_SMALL, &sw);
    if (st == FFU_ERR_NOT_FOUND) TEST_SKIP("default models not installed");
    CHECK_EQ_INT(st, FFU_OK);
    ffu_swap_smoother *sm = NULL;
    CHECK_EQ_INT(ffu_swap_smoother_create(1.0f, &sm), FFU_OK); /* the strongest setting */
    CHECK_EQ_INT(ffu_image_create(&frame, FFU_PIX_RGB24, img.width, img.height), FFU_OK);
    ffu_face_list t = {0};
    double err = 0, raw_move = 0;
    float first_x = 0;
    for (int k = 0; k < 30; k++) {
        double m[6] = {1, 0, -4.0 * k + 60, 0, 1, 0}; /* dst -> src: moves right */
        CHECK_EQ_INT(
            ffu_image_warp_affine(&img, &frame, m, FFU_INTERP_BILINEAR, FFU_BORDER_REPLICATE, NULL),
            FFU_OK);
        CHECK_EQ_INT(ffu_swapper_find_targets(sw, &frame, &t), FFU_OK);
        CHECK_EQ_INT(t.count, 1);
        float raw_x[468];
        for (int i = 0; i < 468; i++)
            raw_x[i] = t.faces[0].landmarks[3 * i];
        CHECK_EQ_INT(ffu_swap_smoother_apply(sm, &t, k / 30.0), FFU_OK);
        if (k == 0) first_x = raw_x[1];
        if (k == 29) {
            for (int i = 0; i < 468; i++)
                err += (raw_x[i] - t.faces[0].landmarks[3 * i]) / 468;
            raw_move = raw_x[1] - first_x;
        }
    }
    printf("moving 4 px/frame: moved %.1f px in 30 frames, smoothed lags %.2f px\n", raw_move, err);
    CHECK(raw_move > 100);
    CHECK(fabs(err) < 3.0);
    /* reset: the next frame passes through unchanged */
    ffu_swap_smoother_reset(sm);
    ffu_face_list copy = {0};
    ffu_face *f = ffu_face_list_push(&copy);
    CHECK(f);
    f->box[0] = 10, f->box[1] = 10, f->box[2] = 50, f->box[3] = 50;
    CHECK_EQ_INT(ffu_swap_smoother_apply(sm, &copy, 0.0), FFU_OK);
    CHECK_NEAR(copy.faces[0].box[0], 10, 0);
    /* bad input */
    CHECK_EQ_INT(ffu_swap_smoother_apply(sm, NULL, 1.0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_swap_smoother_apply(sm, &copy, NAN), FFU_ERR_INVALID);
    ffu_swap_smoother *bad = (ffu_swap_smoother *)1;
    CHECK_EQ_INT(ffu_swap_smoother_create(2.0f, &bad), FFU_ERR_INVALID);
    CHECK(bad == NULL);
    ffu_swap_smoother_destroy(NULL);
    ffu_face_list_free(&copy);
    ffu_face_list_free(&t);
    ffu_image_release(&frame);
    ffu_image_release(&img);
    ffu_swap_smoother_destroy(sm);
    ffu_swapper_destroy(sw);
}

/* Two faces that swap places in the list keep their own filters (matched by IoU). */
static void test_smoother_matches_by_iou(void)
{
    ffu_swap_smoother *sm = NULL;
    CHECK_EQ_INT(ffu_swap_smoother_create(1.0f, &sm), FFU_OK);
    ffu_face_list l = {0};
    for (int k = 0; k < 20; k++) {
        ffu_face_list_clear(&l);
        for (int j = 0; j < 2; j++) {
            int who = (k + j) % 2; /* order alternates */
            ffu_face *f = ffu_face_list_push(&l);
            CHECK(f);
            float jitter = (k % 2) ? 1.0f : -1.0f;
            f->box[0] = (who ? 300.0f : 20.0f) + jitter;
            f->box[1] = 40, f->box[2] = 100, f->box[3] = 120;
            for (int i = 0; i < 5; i++) {
                f->kps[2 * i] = f->box[0] + 20.0f * i;
                f->kps[2 * i + 1] = 80;
            }
        }
        CHECK_EQ_INT(ffu_swap_smoother_apply(sm, &l, k / 30.0), FFU_OK);
        if (k > 5)
            for (int j = 0; j < 2; j++) {
                float x = l.faces[j].box[0];
                /* each face stays near its own place, its jitter reduced */
                CHECK((fabsf(x - 20) < 0.9f) || (fabsf(x - 300) < 0.9f));
            }
    }
    ffu_face_list_free(&l);
    ffu_swap_smoother_destroy(sm);
}

TEST_MAIN(test_order_one_many, test_gender_and_age_filters, test_reference_swaps_only_that_person,
          test_smoother_on_real_clip, test_smoother_follows_motion, test_smoother_matches_by_iou)
