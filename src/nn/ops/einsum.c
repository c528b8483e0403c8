/* Einsum(inputs...): Einstein summation over an equation such as "bij,bjk->bik".
 * Exported PyTorch models carry it wherever the source called torch.einsum: attention
 * products, a vector quantiser's code distances (restoration networks), inner products.
 *
 * nn_einsum_geom resolves the equation against the operand shapes once: every distinct
 * index (a letter, or one of the dims an ellipsis stands for) becomes a label with a
 * size and, per operand, the element step that label takes there. The reference kernel
 * then walks the output's labels and, for each output element, the summed labels,
 * multiplying one element of every operand: a plain loop nest with no transposes and no
 * scratch. Diagonals ("ii->i") fall out of the steps (a repeated letter adds its dims'
 * strides); size-1 dims broadcast with a step of 0. Floats are summed in double,
 * integers in 64-bit wrapping arithmetic. The cpu backend runs the contractions of two
 * f32 operands as one oneDNN matmul (cpu_dense.c) from the same geometry.
 *
 * Semantics are numpy's, which the ONNX reference uses: letters a-z and A-Z, spaces
 * ignored, at most one "..." per term; ellipsis dims broadcast across operands
 * (right-aligned); without "->" the output is the ellipsis dims, then every letter used
 * exactly once in alphabetical (ASCII) order; an explicit output must keep the ellipsis
 * when the ellipsis stands for any dim. */
#include <string.h>

#include "ops_internal.h"

/* ---- the equation --------------------------------------------------------------------- */

/* One term of the equation: letters (or ELLIPSIS for "...") in order. */
#define ELLIPSIS (-2)
typedef struct term {
    int n, ell;                 /* entries; index of the ellipsis in c[], or -1 */
    int c[FFU_NN_MAX_RANK + 1]; /* letter code (0..51) or ELLIPSIS */
} term;

static int letter_code(char ch)
{
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return 26 + ch - 'a';
    return -1;
}

/* Parses one term from *p up to ',', '-' or the end; advances *p. */
static ffu_status parse_term(const nn_node *n, const char **p, term *t)
{
    t->n = 0, t->ell = -1;
    const char *s = *p;
    for (; *s && *s != ',' && *s != '-'; s++) {
        if (*s == ' ') continue;
        int code;
        if (*s == '.') {
            if (strncmp(s, "...", 3) != 0 || t->ell >= 0)
                return nn_node_error(n, FFU_ERR_FORMAT,
                                     "equation: a lone '.' or a second '...' in one term");
            t->ell = t->n;
            code = ELLIPSIS;
            s += 2;
        } else if ((code = letter_code(*s)) < 0) {
            return nn_node_error(n, FFU_ERR_FORMAT, "equation: '%c' is not a letter", *s);
        }
        if (t->n > FFU_NN_MAX_RANK)
            return nn_node_error(n, FFU_ERR_UNSUPPORTED, "equation: a term of more than %d dims",
                                 FFU_NN_MAX_RANK);
        t->c[t->n++] = code;
    }
    *p = s;
    return FFU_OK;
}

ffu_status nn_einsum_geom(const nn_graph *g, const nn_node *n, nn_einsum *e)
{
    memset(e, 0, sizeof *e);
    e->out.rank = -1;
    if (n->ninputs < 1 || n->ninputs > NN_EINSUM_MAX_IN)
        return nn_node_error(n, n->ninputs < 1 ? FFU_ERR_FORMAT : FFU_ERR_UNSUPPORTED,
                             "has %d inputs (1..%d)", n->ninputs, NN_EINSUM_MAX_IN);
    ffu_status st = nn_check_inputs(g, n, n->ninputs, n->ninputs);
    if (st < 0) return st;
    const char *eq = nn_attr_string(n, "equation", NULL);
    if (!eq) return nn_node_error(n, FFU_ERR_FORMAT, "no equation");
    ffu_dtype dt = nn_in(g, n, 0)->dtype;
    if (!nn_dtype_is_float(dt) && !nn_dtype_is_int(dt))
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "type %s", ffu_dtype_name(dt));
    e->nin = n->ninputs;

    term in[NN_EINSUM_MAX_IN], out;
    const char *p = eq;
    int nterms = 0, explicit_out = 0;
    for (;;) {
        if (nterms == e->nin)
            return nn_node_error(n, FFU_ERR_FORMAT,
                                 "equation '%s' has more terms than the %d inputs", eq, e->nin);
        if ((st = parse_term(n, &p, &in[nterms++])) < 0) return st;
        if (*p == ',') {
            p++;
            continue;
        }
        if (*p == '-') {
            if (p[1] != '>') return nn_node_error(n, FFU_ERR_FORMAT, "equation: '-' without '>'");
            p += 2;
            if ((st = parse_term(n, &p, &out)) < 0) return st;
            if (*p) return nn_node_error(n, FFU_ERR_FORMAT, "equation: text after the output term");
            explicit_out = 1;
        }
        break;
    }
    if (nterms != e->nin)
        return nn_node_error(n, FFU_ERR_FORMAT, "equation '%s' has %d input terms for %d inputs",
                             eq, nterms, e->nin);

    /* the ellipsis: its dim count per operand, broadcast right-aligned to E dims */
    int known = 1, E = 0, ecount[NN_EINSUM_MAX_IN];
    for (int k = 0; k < e->nin; k++) {
        const nn_tensor *x = nn_in(g, n, k);
        if (x->dtype != dt)
            return nn_node_error(n, FFU_ERR_FORMAT, "inputs 0 and %d differ in type", k);
        if (x->shape.rank < 0) {
            known = 0;
            continue;
        }
        int letters = in[k].n - (in[k].ell >= 0);
        ecount[k] = x->shape.rank - letters;
        if (ecount[k] < 0 || (in[k].ell < 0 && ecount[k] != 0))
            return nn_node_error(n, FFU_ERR_FORMAT, "input %d has rank %d for term %d of '%s'", k,
                                 x->shape.rank, k, eq);
        if (ecount[k] > E) E = ecount[k];
    }
    if (!known) return FFU_OK; /* the output's rank waits for the inputs' */

    /* labels: letters get slots by code, ellipsis dims 52.. */
    enum { NLET = 52 };
    int uses[NLET] = {0}, slot_of[NLET + FFU_NN_MAX_RANK];
    int64_t size[NLET + FFU_NN_MAX_RANK];
    for (int l = 0; l < NLET + FFU_NN_MAX_RANK; l++)
        size[l] = -2, slot_of[l] = -1; /* -2: unused */
    for (int k = 0; k < e->nin; k++) {
        const nn_shape *s = &nn_in(g, n, k)->shape;
        for (int j = 0, dim = 0; j < in[k].n; j++) {
            int cnt = in[k].c[j] == ELLIPSIS ? ecount[k] : 1;
            for (int q = 0; q < cnt; q++, dim++) {
                int l = in[k].c[j] == ELLIPSIS ? NLET + E - ecount[k] + q : in[k].c[j];
                if (l < NLET) uses[l]++;
                int64_t d = s->d[dim], cur = size[l];
                /* equal sizes, or 1 broadcasting; -1 (unknown) gives way to a size */
                if (cur == -2 || cur == -1 || (cur == 1 && d != -1))
                    size[l] = d;
                else if (d != -1 && d != 1 && d != cur)
                    return nn_node_error(n, FFU_ERR_FORMAT,
                                         "equation '%s': sizes %lld and %lld for one index", eq,
                                         (long long)cur, (long long)d);
            }
        }
    }
    /* a letter repeated within one term takes one dim's size: the dims must be equal */
    for (int k = 0; k < e->nin; k++) {
        const nn_shape *s = &nn_in(g, n, k)->shape;
        int64_t seen[NLET];
        for (int l = 0; l < NLET; l++)
            seen[l] = -2;
        for (int j = 0, dim = 0; j < in[k].n; dim += in[k].c[j] == ELLIPSIS ? ecount[k] : 1, j++) {
            int l = in[k].c[j];
            if (l == ELLIPSIS) continue;
            if (seen[l] != -2) {
                e->diag[k] = 1;
                if (seen[l] >= 0 && s->d[dim] >= 0 && seen[l] != s->d[dim])
                    return nn_node_error(n, FFU_ERR_FORMAT,
                                         "equation '%s': a diagonal of a %lldx%lld block", eq,
                                         (long long)seen[l], (long long)s->d[dim]);
            }
            seen[l] = s->d[dim];
        }
    }

    /* the output's labels: the explicit term, or the ellipsis then letters used once */
    int order[NLET + FFU_NN_MAX_RANK], nout = 0;
    if (explicit_out) {
        if (out.ell < 0 && E > 0)
            return nn_node_error(n, FFU_ERR_FORMAT,
                                 "equation '%s': the output drops the ellipsis's %d dims", eq, E);
        for (int j = 0; j < out.n; j++) {
            if (out.c[j] == ELLIPSIS) {
                for (int q = 0; q < E; q++)
                    order[nout++] = NLET + q;
                continue;
            }
            int l = out.c[j];
            if (!uses[l])
                return nn_node_error(n, FFU_ERR_FORMAT,
                                     "equation '%s': output index '%c' is in no input", eq,
                                     l < 26 ? 'A' + l : 'a' + l - 26);
            if (slot_of[l] >= 0)
                return nn_node_error(n, FFU_ERR_FORMAT, "equation '%s': output index '%c' repeats",
                                     eq, l < 26 ? 'A' + l : 'a' + l - 26);
            slot_of[l] = nout;
            order[nout++] = l;
        }
        for (int i = 0; i < nout; i++)
            slot_of[order[i]] = i;
    } else {
        for (int q = 0; q < E; q++)
            slot_of[NLET + q] = nout, order[nout++] = NLET + q;
        for (int l = 0; l < NLET; l++)
            if (uses[l] == 1) slot_of[l] = nout, order[nout++] = l;
    }
    if (nout > FFU_NN_MAX_RANK)
        return nn_node_error(n, FFU_ERR_UNSUPPORTED, "output of %d dims", nout);
    /* then the summed labels, letters before ellipsis dims an explicit output dropped */
    int nl = nout;
    for (int l = 0; l < NLET + E; l++)
        if (slot_of[l] < 0 && (l >= NLET || uses[l])) slot_of[l] = nl, order[nl++] = l;
    e->nlabels = nl, e->nout = nout;
    e->out.rank = nout;
    for (int i = 0; i < nl; i++) {
        e->size[i] = size[order[i]];
        if (i < nout) e->out.d[i] = e->size[i];
    }
    /* each operand's steps: a dim's element stride added to its label's step (twice for
     * a diagonal), nothing for a size-1 dim that broadcasts */
    for (int k = 0; k < e->nin; k++) {
        const nn_shape *s = &nn_in(g, n, k)->shape;
        int64_t stride = 1;
        for (int j = in[k].n - 1, dim = s->rank - 1; j >= 0; j--) {
            int cnt = in[k].c[j] == ELLIPSIS ? ecount[k] : 1;
            for (int q = cnt - 1; q >= 0; q--, dim--) {
                int l = in[k].c[j] == ELLIPSIS ? NLET + E - ecount[k] + q : in[k].c[j];
                int i = slot_of[l];
                e->has[k][i] = 1;
                if (s->d[dim] != 1) e->step[k][i] += stride;
                stride *= s->d[dim] > 0 ? s->d[dim] : 1;
            }
        }
    }
    return FFU_OK;
}

/* ---- shape inference and the reference kernel ------------------------------------------ */

static ffu_status einsum_infer(nn_graph *g, nn_node *n)
{
    nn_einsum e;
    ffu_status st = nn_einsum_geom(g, n, &e);
    if (st < 0) return st;
    return nn_set_out(g, n, 0, nn_in(g, n, 0)->dtype, e.out.rank >= 0 ? &e.out : NULL);
}

/* Moves the odometer over labels [lo, hi) one step (the last label fastest), keeping
 * each operand's offset; wraps to all zeros after the last combination. */
static void step_labels(const nn_einsum *e, int lo, int hi, int64_t *idx, int64_t *off)
{
    for (int l = hi - 1; l >= lo; l--) {
        for (int k = 0; k < e->nin; k++)
            off[k] += e->step[k][l];
        if (++idx[l] < e->size[l]) return;
        for (int k = 0; k < e->nin; k++)
            off[k] -= e->step[k][l] * e->size[l];
        idx[l] = 0;
    }
}

static ffu_status einsum_run(const nn_graph *g, const nn_node *n, void *const *in, void *const *out,
                             void *scratch)
{
    (void)scratch;
    nn_einsum e;
    ffu_status st = nn_einsum_geom(g, n, &e);
    if (st < 0) return st;
    ffu_dtype dt = nn_in(g, n, 0)->dtype;
    int fl = nn_dtype_is_float(dt);
    int64_t outer = 1, inner = 1;
    for (int l = 0; l < e.nlabels; l++)
        *(l < e.nout ? &outer : &inner) *= e.size[l];
    int64_t idx[NN_EINSUM_MAX_LABELS] = {0}, off[NN_EINSUM_MAX_IN] = {0};
    for (int64_t o = 0; o < outer; o++) {
        double acc = 0;
        uint64_t iacc = 0;
        for (int64_t s = 0; s < inner; s++) {
            if (fl) {
                double v = nn_load_f64(in[0], dt, off[0]);
                for (int k = 1; k < e.nin; k++)
                    v *= nn_load_f64(in[k], dt, off[k]);
                acc += v;
            } else {
                uint64_t v = (uint64_t)nn_load_int(in[0], dt, off[0]);
                for (int k = 1; k < e.nin; k++)
                    v *= (uint64_t)nn_load_int(in[k], dt, off[k]);
                iacc += v;
            }
            step_labels(&e, e.nout, e.nlabels, idx, off);
        }
        if (fl)
            nn_store_f64(out[0], dt, o, acc);
        else
            nn_store_wrapped(out[0], dt, o, iacc);
        step_labels(&e, 0, e.nout, idx, off);
    }
    return FFU_OK;
}

const nn_op_def nn_op_def_einsum = {einsum_infer, einsum_run, NULL, 0};
