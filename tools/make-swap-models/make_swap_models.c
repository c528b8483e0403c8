/* Writes the synthetic swap-module models of swap_models.h into a folder: ONNX files
 * with the signatures of inswapper_128, hyperswap_1a_256, simswap_256, GFPGAN 1.4,
 * CodeFormer, the xseg occluder and an ArcFace embedder, whose outputs are simple
 * functions a test can predict (see swap_models.h). For trying `facefuse swap` with
 * --swapper/--enhancer/--occluder without the real weights; the unit tests build the
 * same models themselves. Usage: make_swap_models DIR */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "swap_models.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "make_swap_models: cannot create %s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < sizeof sm_models / sizeof sm_models[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], sm_models[i].file);
        if (sm_write(sm_models[i].fn(), path) != 0) {
            fprintf(stderr, "make_swap_models: cannot write %s\n", path);
            return 1;
        }
        printf("%s\n", path);
    }
    return 0;
}
