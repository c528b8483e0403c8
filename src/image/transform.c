/* Transform estimation: the least-squares similarity and affine maps between two point
 * sets. Face alignment fits detected landmarks onto a template with these, then warps
 * with the inverse matrix (warp.c). Matrices are 2x3 row-major, forward (src -> dst).
 *
 * Both estimators work on centred coordinates: the translation then falls out of the
 * means, and the sums stay well conditioned for points far from the origin. */
#include <math.h>
#include <string.h>

#include "facefuse/image.h"

/* Means and centred second moments of the two point sets. */
typedef struct moments {
    double sx, sy, dx, dy; /* means of src and dst */
    double sxx, syy, sxy;  /* src covariance sums */
    double xu, yu, xv, yv; /* src-dst cross sums: x*u, y*u, x*v, y*v */
    double dvar;           /* sum |dst - mean|^2 */
} moments;

static void moments_compute(const float *s, const float *d, int n, moments *mo)
{
    memset(mo, 0, sizeof *mo);
    for (int i = 0; i < n; i++) {
        mo->sx += s[2 * i], mo->sy += s[2 * i + 1];
        mo->dx += d[2 * i], mo->dy += d[2 * i + 1];
    }
    mo->sx /= n, mo->sy /= n, mo->dx /= n, mo->dy /= n;
    for (int i = 0; i < n; i++) {
        double x = s[2 * i] - mo->sx, y = s[2 * i + 1] - mo->sy;
        double u = d[2 * i] - mo->dx, v = d[2 * i + 1] - mo->dy;
        mo->sxx += x * x, mo->syy += y * y, mo->sxy += x * y;
        mo->xu += x * u, mo->yu += y * u, mo->xv += x * v, mo->yv += y * v;
        mo->dvar += u * u + v * v;
    }
}

/* A spread this small next to the coordinates' magnitude is rounding noise of float
 * input, not a shape. */
static int negligible(double var, int n, double mx, double my)
{
    return !(var > 1e-12 * n * (1.0 + mx * mx + my * my));
}

static ffu_status check_args(const float *s, const float *d, int n, int min_n, double m[6])
{
    if (!m) return ffu_error_set(FFU_ERR_INVALID, "transform estimate: NULL output matrix");
    memset(m, 0, 6 * sizeof m[0]);
    if (!s || !d || n < min_n)
        return ffu_error_set(FFU_ERR_INVALID, "transform estimate needs >= %d point pairs, got %d",
                             min_n, n);
    return FFU_OK;
}

/* Umeyama (1991) for 2-D: with the rotation-scale written as [a -b; b a], the least
 * squares solution is a = sum(x u + y v) / var, b = sum(x v - y u) / var over centred
 * points. Umeyama's reflection check (sign of det of the SVD) is built in: this
 * parametrisation cannot express a reflection, and for reflected input it yields the
 * best proper rotation, as Umeyama's sign correction does. */
ffu_status ffu_estimate_similarity(const float *src_xy, const float *dst_xy, int n, double m[6])
{
    ffu_status st = check_args(src_xy, dst_xy, n, 2, m);
    if (st < 0) return st;
    moments mo;
    moments_compute(src_xy, dst_xy, n, &mo);
    double var = mo.sxx + mo.syy;
    if (negligible(var, n, mo.sx, mo.sy))
        return ffu_error_set(FFU_ERR_INVALID, "similarity estimate: all %d source points coincide",
                             n);
    if (negligible(mo.dvar, n, mo.dx, mo.dy))
        return ffu_error_set(FFU_ERR_INVALID,
                             "similarity estimate: all %d destination points coincide", n);
    double a = (mo.xu + mo.yv) / var, b = (mo.xv - mo.yu) / var;
    m[0] = a, m[1] = -b, m[2] = mo.dx - (a * mo.sx - b * mo.sy);
    m[3] = b, m[4] = a, m[5] = mo.dy - (b * mo.sx + a * mo.sy);
    return FFU_OK;
}

/* The normal equations of [x y 1] -> u (and -> v) are 3x3; centring decouples the
 * constant column, leaving one 2x2 system S L^T = C shared by both outputs. det / trace^2
 * approximates the inverse condition number of S: collinear points make it ~0. */
ffu_status ffu_estimate_affine(const float *src_xy, const float *dst_xy, int n, double m[6])
{
    ffu_status st = check_args(src_xy, dst_xy, n, 3, m);
    if (st < 0) return st;
    moments mo;
    moments_compute(src_xy, dst_xy, n, &mo);
    double tr = mo.sxx + mo.syy, det = mo.sxx * mo.syy - mo.sxy * mo.sxy;
    if (negligible(tr, n, mo.sx, mo.sy) || !(det > 1e-10 * tr * tr))
        return ffu_error_set(FFU_ERR_INVALID,
                             "affine estimate: the %d source points are (nearly) collinear", n);
    double i00 = mo.syy / det, i01 = -mo.sxy / det, i11 = mo.sxx / det;
    m[0] = i00 * mo.xu + i01 * mo.yu, m[1] = i01 * mo.xu + i11 * mo.yu;
    m[3] = i00 * mo.xv + i01 * mo.yv, m[4] = i01 * mo.xv + i11 * mo.yv;
    m[2] = mo.dx - (m[0] * mo.sx + m[1] * mo.sy);
    m[5] = mo.dy - (m[3] * mo.sx + m[4] * mo.sy);
    return FFU_OK;
}

void ffu_transform_point(const double m[6], float x, float y, float *ox, float *oy)
{
    double nx = m[0] * x + m[1] * y + m[2], ny = m[3] * x + m[4] * y + m[5];
    *ox = (float)nx;
    *oy = (float)ny;
}
