/* DepthToSpace (DCR and CRD modes) and SpaceToDepth: shape inference and reference
 * kernels on 4-D NCHW data of any element type (moved by element size). */
#include <string.h>

#include "ops_internal.h"

static ffu_status space_check(const nn_graph *g, const nn_node *n, int64_t *bs)
{
    ffu_status e = nn_check_inputs(g, n, 1, 1);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if (!ffu_dtype_size(x->dtype))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(x->dtype));
    *bs = nn_attr_int(n, "blocksize", 0);
    if (*bs < 1) return nn_node_error(n, FFU_ERR_FORMAT, "blocksize is missing or < 1");
    if (x->shape.rank >= 0 && x->shape.rank != 4)
        return nn_node_error(n, FFU_ERR_FORMAT, "input of rank %d (expects 4)", x->shape.rank);
    return FFU_OK;
}

/* ---- DepthToSpace ---------------------------------------------------------------------------- */

static int crd_mode(const nn_node *n, ffu_status *e)
{
    const char *m = nn_attr_string(n, "mode", "DCR");
    *e = FFU_OK;
    if (strcmp(m, "CRD") == 0) return 1;
    if (strcmp(m, "DCR") != 0) *e = nn_node_error(n, FFU_ERR_FORMAT, "mode '%s'", m);
    return 0;
}

static ffu_status depth_to_space_infer(nn_graph *g, nn_node *n)
{
    int64_t bs;
    ffu_status e = space_check(g, n, &bs);
    if (e < 0) return e;
    crd_mode(n, &e);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if (x->shape.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    nn_shape s = x->shape;
    if (s.d[1] >= 0 && s.d[1] % (bs * bs) != 0)
        return nn_node_error(n, FFU_ERR_FORMAT, "%lld channels are not a multiple of %lld",
                             (long long)s.d[1], (long long)(bs * bs));
    if (s.d[1] >= 0) s.d[1] /= bs * bs;
    if (s.d[2] >= 0) s.d[2] *= bs;
    if (s.d[3] >= 0) s.d[3] *= bs;
    return nn_set_out(g, n, 0, x->dtype, &s);
}

/* out[b, c, h*bs + i, w*bs + j] = in[b, ch, h, w] with ch = (i*bs + j)*C + c (DCR) or
 * c*bs*bs + i*bs + j (CRD), C the output channels. */
static ffu_status depth_to_space_run(const nn_graph *g, const nn_node *n, void *const *in,
                                     void *const *out, void *scratch)
{
    (void)scratch;
    int64_t bs;
    ffu_status e;
    int crd = crd_mode(n, &e);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    bs = nn_attr_int(n, "blocksize", 1);
    size_t esz = ffu_dtype_size(x->dtype);
    int64_t N = x->shape.d[0], IC = x->shape.d[1], H = x->shape.d[2], W = x->shape.d[3];
    int64_t C = IC / (bs * bs), OH = H * bs, OW = W * bs;
    const unsigned char *X = in[0];
    unsigned char *Y = out[0];
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t i = oh % bs, j = ow % bs;
                    int64_t ch = crd ? c * bs * bs + i * bs + j : (i * bs + j) * C + c;
                    int64_t src = ((b * IC + ch) * H + oh / bs) * W + ow / bs;
                    int64_t dst = ((b * C + c) * OH + oh) * OW + ow;
                    memcpy(Y + (size_t)dst * esz, X + (size_t)src * esz, esz);
                }
    return FFU_OK;
}

const nn_op_def nn_op_def_depth_to_space = {depth_to_space_infer, depth_to_space_run, NULL, 0};

/* ---- SpaceToDepth ---------------------------------------------------------------------------- */

static ffu_status space_to_depth_infer(nn_graph *g, nn_node *n)
{
    int64_t bs;
    ffu_status e = space_check(g, n, &bs);
    if (e < 0) return e;
    const nn_tensor *x = nn_in(g, n, 0);
    if (x->shape.rank < 0) return nn_set_out(g, n, 0, x->dtype, NULL);
    nn_shape s = x->shape;
    for (int i = 2; i < 4; i++)
        if (s.d[i] >= 0 && s.d[i] % bs != 0)
            return nn_node_error(n, FFU_ERR_FORMAT, "dim %d (%lld) is not a multiple of %lld", i,
                                 (long long)s.d[i], (long long)bs);
    if (s.d[1] >= 0) s.d[1] *= bs * bs;
    if (s.d[2] >= 0) s.d[2] /= bs;
    if (s.d[3] >= 0) s.d[3] /= bs;
    return nn_set_out(g, n, 0, x->dtype, &s);
}

/* out[b, (i*bs + j)*C + c, h, w] = in[b, c, h*bs + i, w*bs + j] */
static ffu_status space_to_depth_run(const nn_graph *g, const nn_node *n, void *const *in,
                                     void *const *out, void *scratch)
{
    (void)scratch;
    const nn_tensor *x = nn_in(g, n, 0);
    int64_t bs = nn_attr_int(n, "blocksize", 1);
    size_t esz = ffu_dtype_size(x->dtype);
    int64_t N = x->shape.d[0], C = x->shape.d[1], H = x->shape.d[2], W = x->shape.d[3];
    int64_t OC = C * bs * bs, OH = H / bs, OW = W / bs;
    const unsigned char *X = in[0];
    unsigned char *Y = out[0];
    for (int64_t b = 0; b < N; b++)
        for (int64_t oc = 0; oc < OC; oc++) {
            int64_t c = oc % C, blk = oc / C, i = blk / bs, j = blk % bs;
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    int64_t src = ((b * C + c) * H + oh * bs + i) * W + ow * bs + j;
                    int64_t dst = ((b * OC + oc) * OH + oh) * OW + ow;
                    memcpy(Y + (size_t)dst * esz, X + (size_t)src * esz, esz);
                }
        }
    return FFU_OK;
}

const nn_op_def nn_op_def_space_to_depth = {space_to_depth_infer, space_to_depth_run, NULL, 0};
