/* The recurrent ops RNN, GRU and LSTM (ONNX opset 7..14), on ref, in double.
 *
 * X is [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1); W, R and B hold
 * the gates of each direction stacked in ONNX's order (RNN: one; GRU: z, r, h; LSTM: i,
 * o, f, c); B is W's biases then R's. One step of direction d for batch item b, with
 * f, g, h the direction's activations (defaults Tanh; Sigmoid, Tanh; Sigmoid, Tanh, Tanh)
 * and every activation's input clipped to [-clip, clip] when `clip` is given:
 *   RNN   H = f(x W^T + H R^T + Wb + Rb)
 *   GRU   z = f(x Wz^T + H Rz^T + Wbz + Rbz), r likewise,
 *         n = g(x Wh^T + (r . H) Rh^T + Rbh + Wbh), or with linear_before_reset
 *             g(x Wh^T + r . (H Rh^T + Rbh) + Wbh);  H = (1 - z) . n + z . H
 *   LSTM  i = f(.. + Pi . C), f = f(.. + Pf . C) (1 - i with input_forget),
 *         c = g(..), C = f . C + i . c, o = f(.. + Po . C), H = o . h(C)
 * A batch item with sequence_lens[b] = L runs L steps (backwards from L - 1 in the
 * reverse direction); Y is 0 at its steps from L on, and Y_h / Y_c hold its last state. */
#include <math.h>
#include <strings.h>

#include "ops_internal.h"

enum { RNN_MAX_ACTS = 6 };

typedef struct rnn_act {
    int kind; /* index into act_names */
    double alpha, beta;
} rnn_act;

static const char *const act_names[] = {
    "Tanh",        "Sigmoid", "Relu",     "LeakyRelu", "ThresholdedRelu", "ScaledTanh",
    "HardSigmoid", "Elu",     "Softsign", "Softplus",  "Affine"};

/* Each activation's defaults (the ONNX ops' own) */
static const double act_alpha[] = {0, 0, 0, 0.01, 1.0, 1.0, 0.2, 1.0, 0, 0, 1.0};
static const double act_beta[] = {0, 0, 0, 0, 0, 1.0, 0.5, 0, 0, 0, 0};

static double act_apply(const rnn_act *a, double x)
{
    switch (a->kind) {
    case 0:
        return tanh(x);
    case 1:
        return 1 / (1 + exp(-x));
    case 2:
        return x > 0 ? x : 0;
    case 3:
        return x >= 0 ? x : a->alpha * x;
    case 4:
        return x > a->alpha ? x : 0;
    case 5:
        return a->alpha * tanh(a->beta * x);
    case 6:
        return fmax(0, fmin(1, a->alpha * x + a->beta));
    case 7:
        return x >= 0 ? x : a->alpha * (exp(x) - 1);
    case 8:
        return x / (1 + fabs(x));
    case 9:
        return log1p(exp(x));
    default:
        return a->alpha * x + a->beta;
    }
}

/* Gates per op and activations per direction */
static int gates_of(nn_op op) { return op == NN_OP_RNN ? 1 : op == NN_OP_GRU ? 3 : 4; }
static int acts_of(nn_op op) { return op == NN_OP_RNN ? 1 : op == NN_OP_GRU ? 2 : 3; }

/* 0 forward, 1 reverse, 2 bidirectional; -1 otherwise */
static int direction_of(const nn_node *n)
{
    const char *d = nn_attr_string(n, "direction", "forward");
    return !strcmp(d, "forward")         ? 0
           : !strcmp(d, "reverse")       ? 1
           : !strcmp(d, "bidirectional") ? 2
                                         : -1;
}

/* The activations of both directions (the first set again when only one is given). */
static ffu_status parse_acts(const nn_node *n, rnn_act *acts, int ndir)
{
    static const int defaults[3][3] = {{0}, {1, 0}, {1, 0, 0}};
    int na = acts_of(n->op), cnt = 0, ca = 0, cb = 0;
    const nn_attr *at = nn_node_attr(n, "activations");
    const float *al = nn_attr_floats(n, "activation_alpha", &ca);
    const float *be = nn_attr_floats(n, "activation_beta", &cb);
    if (at) cnt = at->n;
    if (at && cnt != na && cnt != na * ndir)
        return nn_node_error(n, FFU_ERR_FORMAT, "%d activations for %d per direction", cnt, na);
    for (int k = 0; k < na * ndir; k++) {
        int j = cnt ? k % cnt : k % na, kind = -1;
        if (cnt) {
            for (int i = 0; i < (int)(sizeof act_names / sizeof act_names[0]); i++)
                if (at->strings[j] && !strcasecmp(at->strings[j], act_names[i])) kind = i;
            if (kind < 0)
                return nn_node_error(n, FFU_ERR_UNSUPPORTED, "activation '%s'",
                                     at->strings[j] ? at->strings[j] : "");
        } else {
            kind = defaults[na - 1][j];
        }
        acts[k].kind = kind;
        acts[k].alpha = j < ca ? al[j] : act_alpha[kind];
        acts[k].beta = j < cb ? be[j] : act_beta[kind];
    }
    return FFU_OK;
}

/* hidden_size, or R's last dim; -1 when neither is known */
static int64_t hidden_of(const nn_graph *g, const nn_node *n)
{
    const nn_tensor *r = nn_in(g, n, 2);
    return nn_attr_int(n, "hidden_size", r && r->shape.rank == 3 ? r->shape.d[2] : -1);
}

static ffu_status rnn_infer(nn_graph *g, nn_node *n)
{
    int lstm = n->op == NN_OP_LSTM;
    ffu_status st = nn_check_inputs(g, n, 3, lstm ? 8 : 6);
    if (st < 0) return st;
    const nn_tensor *x = nn_in(g, n, 0), *w = nn_in(g, n, 1), *r = nn_in(g, n, 2);
    ffu_dtype dt = x->dtype;
    if (dt != FFU_DTYPE_F32 && dt != FFU_DTYPE_F16 && dt != FFU_DTYPE_F64)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(dt));
    for (int i = 1; i < (lstm ? 8 : 6); i++) {
        const nn_tensor *t = nn_in(g, n, i);
        if (t && i != 4 && t->dtype != dt)
            return nn_node_error(n, FFU_ERR_FORMAT, "input %d is %s, X is %s", i,
                                 ffu_dtype_name(t->dtype), ffu_dtype_name(dt));
    }
    const nn_tensor *sl = nn_in(g, n, 4);
    if (sl && !nn_dtype_is_int(sl->dtype))
        return nn_node_error(n, FFU_ERR_FORMAT, "sequence_lens of type %s",
                             ffu_dtype_name(sl->dtype));
    int dir = direction_of(n), layout = (int)nn_attr_int(n, "layout", 0);
    if (dir < 0 || (layout != 0 && layout != 1))
        return nn_node_error(n, FFU_ERR_FORMAT, "direction '%s', layout %d",
                             nn_attr_string(n, "direction", ""), layout);
    int D = dir == 2 ? 2 : 1, G = gates_of(n->op);
    rnn_act acts[RNN_MAX_ACTS];
    if ((st = parse_acts(n, acts, D)) < 0) return st;
    int64_t H = hidden_of(g, n);
    if (x->shape.rank >= 0 && x->shape.rank != 3)
        return nn_node_error(n, FFU_ERR_FORMAT, "X is not 3-D");
    if (w->shape.rank >= 0 && (w->shape.rank != 3 || (w->shape.d[0] >= 0 && w->shape.d[0] != D) ||
                               (H > 0 && w->shape.d[1] >= 0 && w->shape.d[1] != G * H) ||
                               (x->shape.rank == 3 && x->shape.d[2] >= 0 && w->shape.d[2] >= 0 &&
                                w->shape.d[2] != x->shape.d[2])))
        return nn_node_error(n, FFU_ERR_FORMAT, "W is not [%d, %d x hidden, input]", D, G);
    if (r->shape.rank >= 0 &&
        (r->shape.rank != 3 || (H > 0 && ((r->shape.d[1] >= 0 && r->shape.d[1] != G * H) ||
                                          (r->shape.d[2] >= 0 && r->shape.d[2] != H)))))
        return nn_node_error(n, FFU_ERR_FORMAT, "R is not [%d, %d x hidden, hidden]", D, G);
    if (H < 1 || H > (1 << 16))
        return nn_node_error(n, FFU_ERR_FORMAT, "hidden_size %lld", (long long)H);
    int64_t S = -1, B = -1;
    if (x->shape.rank == 3) S = x->shape.d[layout], B = x->shape.d[1 - layout];
    nn_shape y = {.rank = 4}, yh = {.rank = 3};
    if (layout == 0) {
        y.d[0] = S, y.d[1] = D, y.d[2] = B, y.d[3] = H;
        yh.d[0] = D, yh.d[1] = B, yh.d[2] = H;
    } else {
        y.d[0] = B, y.d[1] = S, y.d[2] = D, y.d[3] = H;
        yh.d[0] = B, yh.d[1] = D, yh.d[2] = H;
    }
    if ((st = nn_set_out(g, n, 0, dt, &y)) < 0) return st;
    if (nn_out(g, n, 1) && (st = nn_set_out(g, n, 1, dt, &yh)) < 0) return st;
    if (lstm && nn_out(g, n, 2) && (st = nn_set_out(g, n, 2, dt, &yh)) < 0) return st;
    return FFU_OK;
}

/* Scratch: the state h and c, the 4 gates' pre-activations, the new h */
static size_t rnn_scratch(const nn_graph *g, const nn_node *n)
{
    int64_t H = hidden_of(g, n);
    return H > 0 ? (size_t)(H * 7) * sizeof(double) : 0;
}

static double clipped(double v, double c) { return c > 0 ? fmax(-c, fmin(c, v)) : v; }

static ffu_status rnn_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                          void *scratch)
{
    const nn_tensor *x = nn_in(g, n, 0), *sl = nn_in(g, n, 4);
    ffu_dtype dt = x->dtype;
    int op_lstm = n->op == NN_OP_LSTM, op_gru = n->op == NN_OP_GRU, G = gates_of(n->op);
    int dir = direction_of(n), layout = (int)nn_attr_int(n, "layout", 0), D = dir == 2 ? 2 : 1;
    int na = acts_of(n->op), lbr = (int)nn_attr_int(n, "linear_before_reset", 0);
    int couple = op_lstm && nn_attr_int(n, "input_forget", 0);
    double clip = nn_node_attr(n, "clip") ? nn_attr_float(n, "clip", 0) : 0;
    int64_t S = x->shape.d[layout], B = x->shape.d[1 - layout], I = x->shape.d[2];
    int64_t H = hidden_of(g, n);
    rnn_act acts[RNN_MAX_ACTS];
    ffu_status st = parse_acts(n, acts, D);
    if (st < 0) return st;
    const void *W = in[1], *R = in[2], *Bs = nn_in(g, n, 3) ? in[3] : NULL;
    const void *h0 = nn_in(g, n, 5) ? in[5] : NULL;
    const void *c0 = op_lstm && nn_in(g, n, 6) ? in[6] : NULL;
    const void *P = op_lstm && nn_in(g, n, 7) ? in[7] : NULL;
    double *h = scratch, *c = h + H, *a = c + H, *hn = a + 4 * H; /* rnn_scratch */
    for (int64_t i = 0; i < nn_numel(nn_out(g, n, 0)); i++)
        nn_store_f64(out[0], dt, i, 0);
    for (int d = 0; d < D; d++) {
        int reverse = dir == 1 || d == 1;
        const rnn_act *f = &acts[d * na], *ga = f + (na > 1), *ha = f + (na > 2 ? 2 : 0);
        for (int64_t b = 0; b < B; b++) {
            int64_t len = sl ? nn_load_int(in[4], sl->dtype, b) : S;
            if (len < 0 || len > S)
                return nn_node_error(n, FFU_ERR_INVALID, "sequence length %lld of %lld steps",
                                     (long long)len, (long long)S);
            int64_t hs = layout ? (b * D + d) * H : (d * B + b) * H; /* state index */
            for (int64_t u = 0; u < H; u++) {
                h[u] = h0 ? nn_load_f64(h0, dt, hs + u) : 0;
                c[u] = c0 ? nn_load_f64(c0, dt, hs + u) : 0;
            }
            for (int64_t s = 0; s < len; s++) {
                int64_t t = reverse ? len - 1 - s : s;
                int64_t xi = layout ? (b * S + t) * I : (t * B + b) * I;
                /* x W^T + Wb + Rb and H R^T per gate unit; GRU's h gate takes its R term
                 * (and with linear_before_reset its Rb) once every r is known */
                for (int64_t k = 0; k < G * H; k++) {
                    const int64_t wr = (d * G * H + k);
                    double v = 0;
                    if (Bs)
                        v += nn_load_f64(Bs, dt, d * 2 * G * H + k) +
                             (op_gru && k >= 2 * H && lbr
                                  ? 0
                                  : nn_load_f64(Bs, dt, d * 2 * G * H + G * H + k));
                    for (int64_t i = 0; i < I; i++)
                        v += nn_load_f64(in[0], dt, xi + i) * nn_load_f64(W, dt, wr * I + i);
                    if (!(op_gru && k >= 2 * H))
                        for (int64_t j = 0; j < H; j++)
                            v += h[j] * nn_load_f64(R, dt, wr * H + j);
                    a[k] = v;
                }
                for (int64_t u = 0; u < H; u++) {
                    if (n->op == NN_OP_RNN) {
                        hn[u] = act_apply(f, clipped(a[u], clip));
                    } else if (op_gru) {
                        hn[u] = act_apply(f, clipped(a[u], clip));    /* z: blended below */
                        a[u] = act_apply(f, clipped(a[H + u], clip)); /* r */
                        if (lbr) {                                    /* r . (H Rh^T + Rbh) */
                            const int64_t wr = (d * G * H + 2 * H + u) * H;
                            double rh =
                                Bs ? nn_load_f64(Bs, dt, d * 2 * G * H + G * H + 2 * H + u) : 0;
                            for (int64_t j = 0; j < H; j++)
                                rh += h[j] * nn_load_f64(R, dt, wr + j);
                            a[2 * H + u] += a[u] * rh;
                        }
                    } else { /* LSTM: i o f c */
                        double i_ = a[u] + (P ? nn_load_f64(P, dt, d * 3 * H + u) * c[u] : 0);
                        double f_ = a[2 * H + u] +
                                    (P ? nn_load_f64(P, dt, d * 3 * H + 2 * H + u) * c[u] : 0);
                        i_ = act_apply(f, clipped(i_, clip));
                        f_ = couple ? 1 - i_ : act_apply(f, clipped(f_, clip));
                        double cc = act_apply(ga, clipped(a[3 * H + u], clip));
                        double cn = f_ * c[u] + i_ * cc;
                        double o_ = a[H + u] + (P ? nn_load_f64(P, dt, d * 3 * H + H + u) * cn : 0);
                        o_ = act_apply(f, clipped(o_, clip));
                        hn[u] = o_ * act_apply(ha, cn);
                        a[3 * H + u] = cn; /* the new cell, kept until every unit is done */
                    }
                }
                if (op_gru) { /* every r is known now: (r . H) Rh^T, then the blend */
                    for (int64_t u = 0; u < H; u++) {
                        double pre = a[2 * H + u];
                        if (!lbr) {
                            const int64_t wr = (d * G * H + 2 * H + u) * H;
                            for (int64_t j = 0; j < H; j++)
                                pre += a[j] * h[j] * nn_load_f64(R, dt, wr + j);
                        }
                        double nn_ = act_apply(ga, clipped(pre, clip)), z = hn[u];
                        hn[u] = (1 - z) * nn_ + z * h[u];
                    }
                }
                for (int64_t u = 0; u < H; u++) {
                    h[u] = hn[u];
                    if (op_lstm) c[u] = a[3 * H + u];
                    int64_t yi =
                        layout ? ((b * S + t) * D + d) * H + u : ((t * D + d) * B + b) * H + u;
                    nn_store_f64(out[0], dt, yi, h[u]);
                }
            }
            for (int64_t u = 0; u < H; u++) {
                if (n->noutputs > 1 && n->outputs[1] >= 0) nn_store_f64(out[1], dt, hs + u, h[u]);
                if (op_lstm && n->noutputs > 2 && n->outputs[2] >= 0)
                    nn_store_f64(out[2], dt, hs + u, c[u]);
            }
        }
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_rnn = {rnn_infer, rnn_run, rnn_scratch, 0};
const nn_op_def nn_op_def_gru = {rnn_infer, rnn_run, rnn_scratch, 0};
const nn_op_def nn_op_def_lstm = {rnn_infer, rnn_run, rnn_scratch, 0};
