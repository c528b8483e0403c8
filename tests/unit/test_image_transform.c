/* Tests for the similarity / affine estimators: exact recovery, least-squares optimality
 * under noise, the ArcFace alignment case, reflections and degenerate input. */
#include "facefuse/image.h"
#include "test.h"

/* arcface_112_v2 template, in pixels of the 112 x 112 crop (shared/MODELS.md). */
static const float arcface112[10] = {38.2946f, 51.6963f, 73.5318f, 51.5014f, 56.0252f,
                                     71.7366f, 41.5493f, 92.3655f, 70.7299f, 92.2041f};

static void apply(const double m[6], const float *in, float *out, int n)
{
    for (int i = 0; i < n; i++)
        ffu_transform_point(m, in[2 * i], in[2 * i + 1], &out[2 * i], &out[2 * i + 1]);
}

static double residual(const double m[6], const float *s, const float *d, int n)
{
    double r = 0;
    for (int i = 0; i < n; i++) {
        double u = m[0] * s[2 * i] + m[1] * s[2 * i + 1] + m[2] - d[2 * i];
        double v = m[3] * s[2 * i] + m[4] * s[2 * i + 1] + m[5] - d[2 * i + 1];
        r += u * u + v * v;
    }
    return r;
}

static int all_zero(const double m[6])
{
    for (int i = 0; i < 6; i++)
        if (m[i] != 0) return 0;
    return 1;
}

static void test_transform_point(void)
{
    const double m[6] = {2, -1, 10, 0.5, 3, -4};
    float x, y;
    ffu_transform_point(m, 3, 5, &x, &y);
    CHECK_NEAR(x, 2 * 3 - 5 + 10, 0);
    CHECK_NEAR(y, 1.5 + 15 - 4, 0);
}

/* Small-integer points and dyadic coefficients: dst is exact in float, so the
 * estimate must match to rounding of the double arithmetic. n = 2 and 3 are the
 * minimal counts. */
static void test_similarity_exact(void)
{
    const double truth[6] = {1.5, -0.75, 10.25, 0.75, 1.5, -3.5};
    uint64_t seed = 11;
    for (int n = 2; n <= 13; n += 11) {
        float s[26], d[26];
        for (int i = 0; i < 2 * n; i++)
            s[i] = (float)(int)(test_rand_f(&seed) * 400) - 100;
        if (s[0] == s[2] && s[1] == s[3]) s[0] += 1;
        apply(truth, s, d, n);
        double m[6];
        CHECK_EQ_INT(ffu_estimate_similarity(s, d, n, m), FFU_OK);
        for (int k = 0; k < 6; k++)
            CHECK_NEAR(m[k], truth[k], 1e-6);
    }
}

static void test_affine_exact(void)
{
    const double truth[6] = {0.5, -1.25, 7, 0.75, 2, -3};
    uint64_t seed = 12;
    for (int n = 3; n <= 17; n += 14) {
        float s[34], d[34];
        for (int i = 0; i < 2 * n; i++)
            s[i] = (float)(int)(test_rand_f(&seed) * 300) - 50;
        apply(truth, s, d, n);
        double m[6];
        CHECK_EQ_INT(ffu_estimate_affine(s, d, n, m), FFU_OK);
        for (int k = 0; k < 6; k++)
            CHECK_NEAR(m[k], truth[k], 1e-6);
    }
}

/* Far from the origin (a 4K frame's corner) and with a generic angle: still tight. */
static void test_far_points(void)
{
    double th = 2.5, sc = 0.37;
    const double truth[6] = {sc * cos(th), -sc * sin(th), 3000.5,
                             sc * sin(th), sc * cos(th),  2000.25};
    float s[14], d[14];
    uint64_t seed = 13;
    for (int i = 0; i < 7; i++) {
        s[2 * i] = 3700 + 80 * test_rand_f(&seed);
        s[2 * i + 1] = 2050 + 80 * test_rand_f(&seed);
    }
    apply(truth, s, d, 7);
    double m[6], a[6];
    CHECK_EQ_INT(ffu_estimate_similarity(s, d, 7, m), FFU_OK);
    CHECK_EQ_INT(ffu_estimate_affine(s, d, 7, a), FFU_OK);
    for (int k = 0; k < 6; k++) {
        double tol = k == 2 || k == 5 ? 2e-2 : 1e-5; /* translation scales with |x| ~ 4000 */
        CHECK_NEAR(m[k], truth[k], tol);
        CHECK_NEAR(a[k], truth[k], tol * 10);
    }
    CHECK(residual(m, s, d, 7) < 1e-5);
}

/* With noise the least-squares fit beats the true transform on the data, lies close to
 * it, and is a minimum: nudging any coefficient makes the residual worse. */
static void test_noise_least_squares(void)
{
    const double sim[6] = {0.8, -0.6, 40, 0.6, 0.8, -25}; /* scale 1, angle ~36.9 deg */
    const double aff[6] = {1.1, 0.2, -5, -0.3, 0.9, 12};
    uint64_t seed = 14;
    enum { N = 68 };
    float s[2 * N], d1[2 * N], d2[2 * N];
    for (int i = 0; i < 2 * N; i++)
        s[i] = 200 * test_rand_f(&seed);
    apply(sim, s, d1, N);
    apply(aff, s, d2, N);
    for (int i = 0; i < 2 * N; i++) {
        d1[i] += test_rand_f(&seed) - 0.5f;
        d2[i] += test_rand_f(&seed) - 0.5f;
    }
    double m[6], a[6];
    CHECK_EQ_INT(ffu_estimate_similarity(s, d1, N, m), FFU_OK);
    CHECK_EQ_INT(ffu_estimate_affine(s, d2, N, a), FFU_OK);
    CHECK(residual(m, s, d1, N) <= residual(sim, s, d1, N));
    CHECK(residual(a, s, d2, N) <= residual(aff, s, d2, N));
    for (int k = 0; k < 6; k++) {
        double tol = k == 2 || k == 5 ? 0.3 : 3e-3;
        CHECK_NEAR(m[k], sim[k], tol);
        CHECK_NEAR(a[k], aff[k], tol);
    }
    CHECK_NEAR(m[0], m[4], 1e-12); /* a similarity: [a -b; b a] */
    CHECK_NEAR(m[1], -m[3], 1e-12);
    double r0 = residual(a, s, d2, N);
    for (int k = 0; k < 6; k++) {
        for (int sign = -1; sign <= 1; sign += 2) {
            double t[6];
            memcpy(t, a, sizeof t);
            t[k] += sign * (k == 2 || k == 5 ? 1e-2 : 1e-4);
            CHECK(residual(t, s, d2, N) > r0);
        }
    }
}

/* The alignment use: landmarks found in a frame are the template rotated, scaled and
 * moved; M = estimate(landmarks -> template) maps them back onto the template, and is
 * the inverse of the transform that placed them. */
static void test_arcface_alignment(void)
{
    double th = -0.35, sc = 2.7;
    const double place[6] = {sc * cos(th), -sc * sin(th), 310.2, sc * sin(th), sc * cos(th), 155.9};
    float lm[10], back[10];
    apply(place, arcface112, lm, 5);
    double m[6];
    CHECK_EQ_INT(ffu_estimate_similarity(lm, arcface112, 5, m), FFU_OK);
    apply(m, lm, back, 5);
    for (int i = 0; i < 10; i++)
        CHECK_NEAR(back[i], arcface112[i], 1e-3);
    CHECK_NEAR(m[0], cos(th) / sc, 1e-6);
    CHECK_NEAR(m[3], -sin(th) / sc, 1e-6);
    /* M applied to the placement is the identity. */
    double x = place[0] * 7 + place[1] * 9 + place[2], y = place[3] * 7 + place[4] * 9 + place[5];
    CHECK_NEAR(m[0] * x + m[1] * y + m[2], 7, 1e-3);
    CHECK_NEAR(m[3] * x + m[4] * y + m[5], 9, 1e-3);

    /* The template is its own fit: identity. */
    CHECK_EQ_INT(ffu_estimate_similarity(arcface112, arcface112, 5, m), FFU_OK);
    const double id[6] = {1, 0, 0, 0, 1, 0};
    for (int k = 0; k < 6; k++)
        CHECK_NEAR(m[k], id[k], 1e-5);
}

/* A mirrored point set gets the best proper rotation, never a reflection (Umeyama's
 * sign check); the affine fit does reproduce the mirror. */
static void test_reflection(void)
{
    float s[10], d[10];
    for (int i = 0; i < 5; i++) {
        s[2 * i] = arcface112[2 * i], s[2 * i + 1] = arcface112[2 * i + 1];
        d[2 * i] = 112 - s[2 * i], d[2 * i + 1] = s[2 * i + 1];
    }
    double m[6], a[6];
    CHECK_EQ_INT(ffu_estimate_similarity(s, d, 5, m), FFU_OK);
    CHECK(m[0] * m[4] - m[1] * m[3] > 0);
    CHECK_NEAR(m[0], m[4], 1e-12);
    CHECK_EQ_INT(ffu_estimate_affine(s, d, 5, a), FFU_OK);
    CHECK_NEAR(a[0], -1, 1e-5);
    CHECK_NEAR(a[4], 1, 1e-5);
    CHECK_NEAR(a[2], 112, 1e-3);
}

static void test_degenerate(void)
{
    float same[10] = {5, 7, 5, 7, 5, 7, 5, 7, 5, 7};
    float line[10] = {0, 0, 1, 2, 2, 4, 3, 6, 4, 8};
    float far_line[8] = {1000.5f, 2000, 1001.5f, 2001, 1002.5f, 2002, 1003.5f, 2003};
    double m[6] = {1, 1, 1, 1, 1, 1};
    CHECK_EQ_INT(ffu_estimate_similarity(same, arcface112, 5, m), FFU_ERR_INVALID);
    CHECK(all_zero(m));
    m[0] = 1;
    CHECK_EQ_INT(ffu_estimate_similarity(arcface112, same, 5, m), FFU_ERR_INVALID);
    CHECK(all_zero(m));
    CHECK_EQ_INT(ffu_estimate_similarity(arcface112, arcface112, 1, m), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_estimate_similarity(NULL, arcface112, 5, m), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_estimate_similarity(arcface112, arcface112, 5, NULL), FFU_ERR_INVALID);
    /* Two distinct points are enough for a similarity, not for an affine map. */
    CHECK_EQ_INT(ffu_estimate_similarity(line, arcface112, 5, m), FFU_OK);
    CHECK_EQ_INT(ffu_estimate_affine(arcface112, arcface112, 2, m), FFU_ERR_INVALID);
    m[0] = 1;
    CHECK_EQ_INT(ffu_estimate_affine(line, arcface112, 5, m), FFU_ERR_INVALID);
    CHECK(all_zero(m));
    CHECK_EQ_INT(ffu_estimate_affine(far_line, arcface112, 4, m), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_estimate_affine(same, arcface112, 5, m), FFU_ERR_INVALID);
    CHECK(strstr(ffu_error_message(), "collinear") != NULL);
    /* 1/1000 px off a 2000 px line is collinear for any practical purpose... */
    float thin[6] = {0, 0, 1000, 1000, 2000, 2000.001f};
    CHECK_EQ_INT(ffu_estimate_affine(thin, arcface112, 3, m), FFU_ERR_INVALID);
    /* ...1 px off a 100 px line is not. */
    float bent[6] = {0, 0, 50, 1, 100, 0};
    CHECK_EQ_INT(ffu_estimate_affine(bent, arcface112, 3, m), FFU_OK);
}

TEST_MAIN(test_transform_point, test_similarity_exact, test_affine_exact, test_far_points,
          test_noise_least_squares, test_arcface_alignment, test_reflection, test_degenerate)
