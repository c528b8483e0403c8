/* Writes the small ONNX models that bench/nn/ops times against ONNX Runtime: ops whose
 * speed the face models do not show, built here with the tests' ONNX builder
 * (tests/fuzz/onnx_builder.h) so that the benchmark needs nothing from outside the repo.
 *
 *   einsum_vq.onnx    Einsum "bd,dn->bn": 256 features against a constant codebook of
 *                     1024 entries of 256 (a vector quantiser's distances)
 *   einsum_attn.onnx  Einsum "bhqd,bhkd->bhqk": attention scores, 8 heads of 256 x 64
 *   nms.onnx          NonMaxSuppression over 4420 boxes of one class (UltraFace
 *                     RFB-320's count), at most 200 kept, IoU 0.3, score above 0.05
 *
 * usage: op_models DIR */
#include <stdio.h>

#include "onnx_builder.h"

static int save(ob_model *b, const char *dir, const char *name)
{
    size_t size;
    uint8_t *data = ob_pack(b, &size);
    ob_free(b);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    free(data);
    if (!ok) fprintf(stderr, "op_models: cannot write %s\n", path);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    int bad = 0;
    {
        enum { B = 256, D = 256, N = 1024 };
        static float w[D * N];
        for (int i = 0; i < D * N; i++)
            w[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
        ob_model *b = ob_new(12);
        ob_input(b, "x", OB_F32, (int64_t[]){B, D}, 2);
        ob_initializer(b, ob_const_f32(b, "codebook", (int64_t[]){D, N}, 2, w, D * N));
        Onnx__NodeProto *n = ob_node(b, "Einsum", "vq", "x,codebook", "y");
        ob_attr_string(b, n, "equation", "bd,dn->bn");
        ob_output(b, "y", OB_F32, (int64_t[]){B, N}, 2);
        bad |= save(b, argv[1], "einsum_vq.onnx");
    }
    {
        int64_t qd[] = {1, 8, 256, 64};
        ob_model *b = ob_new(12);
        ob_input(b, "q", OB_F32, qd, 4);
        ob_input(b, "k", OB_F32, qd, 4);
        Onnx__NodeProto *n = ob_node(b, "Einsum", "scores", "q,k", "s");
        ob_attr_string(b, n, "equation", "bhqd,bhkd->bhqk");
        ob_output(b, "s", OB_F32, (int64_t[]){1, 8, 256, 256}, 4);
        bad |= save(b, argv[1], "einsum_attn.onnx");
    }
    {
        int64_t one[] = {1}, limit[] = {200};
        float iou = 0.3f, smin = 0.05f;
        ob_model *b = ob_new(11);
        ob_input(b, "boxes", OB_F32, (int64_t[]){1, 4420, 4}, 3);
        ob_input(b, "scores", OB_F32, (int64_t[]){1, 1, 4420}, 3);
        ob_initializer(b, ob_tensor_raw(b, "limit", OB_I64, one, 1, limit, sizeof limit));
        ob_initializer(b, ob_const_f32(b, "iou", one, 1, &iou, 1));
        ob_initializer(b, ob_const_f32(b, "smin", one, 1, &smin, 1));
        ob_node(b, "NonMaxSuppression", "nms", "boxes,scores,limit,iou,smin", "selected");
        ob_output(b, "selected", OB_I64, NULL, 0);
        bad |= save(b, argv[1], "nms.onnx");
    }
    return bad;
}
