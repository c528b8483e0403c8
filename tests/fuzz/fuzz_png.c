/* libFuzzer target for the PNG path of ffu_image_decode (libpng behind our setjmp error
 * handling, its transformations to 8-bit GRAY8/RGB24/BGR24/RGBA32, the eXIf chunk).
 * Seeds: tests/fixtures/corpus/png. The body is shared with fuzz_jpeg.c. */
#include "fuzz_image_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_image_decode_one(data, size);
}
