/* Fuzz target for the dlib shape_predictor reader (src/face/ert.c). The input is the
 * file's bytes. A load must either fail with *out == NULL or give a model that
 * predicts on a small image without crashing, for a box inside the image and for one
 * hanging over its edge. Seeds: tests/fixtures/corpus/ert/ (tiny models written by
 * tests/fuzz/make_ert_corpus.c, plus damaged copies). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "face/ert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ert_model *m = (ert_model *)1;
    ffu_status st = ert_model_load_mem(data, size, &m);
    if (st < 0) {
        if (m) abort(); /* out-param must be NULL on error */
        return 0;
    }
    if (!m || ert_model_num_parts(m) < 1) abort();
    static uint8_t pix[32 * 24];
    for (int i = 0; i < 32 * 24; i++)
        pix[i] = (uint8_t)(i * 37);
    ffu_image img;
    if (ffu_image_wrap(&img, FFU_PIX_GRAY8, 32, 24, pix, 32) == FFU_OK) {
        float *pts = malloc(sizeof(float) * 2 * (size_t)ert_model_num_parts(m));
        const float boxes[2][4] = {{4, 3, 20, 18}, {-10, 15, 30, 30}};
        for (int b = 0; b < 2 && pts; b++)
            if (ert_predict(m, &img, boxes[b], pts) < 0) abort();
        free(pts);
    }
    ert_model_free(m);
    return 0;
}
