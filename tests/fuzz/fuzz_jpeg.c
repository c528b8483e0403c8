/* libFuzzer target for the JPEG path of ffu_image_decode (libjpeg-turbo behind our
 * setjmp error handling, the EXIF orientation parser and the reorientation). Seeds:
 * tests/fixtures/corpus/jpeg. Shares its body with fuzz_png.c: both go through the
 * public decoder, which sniffs the format. */
#include "fuzz_image_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_image_decode_one(data, size);
}
