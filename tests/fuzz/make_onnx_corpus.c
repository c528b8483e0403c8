/* Writes the seed corpus of the ONNX fuzzer: the tiny models of onnx_builder.h,
 * serialized by protobuf-c itself, into the folder given (normally
 * tests/fixtures/corpus/onnx). Built by cmake/onnx.cmake; run by hand when the seeds
 * change: `build/make_onnx_corpus tests/fixtures/corpus/onnx`. */
#include <stdio.h>

#include "onnx_builder.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < sizeof ob_seeds / sizeof ob_seeds[0]; i++) {
        ob_model *b = ob_seeds[i].fn();
        size_t size;
        uint8_t *data = ob_pack(b, &size);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], ob_seeds[i].file);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
            fprintf(stderr, "make_onnx_corpus: cannot write %s\n", path);
            return 1;
        }
        printf("%s: %zu bytes\n", path, size);
        free(data);
        ob_free(b);
    }
    return 0;
}
