/* libFuzzer target for the WebP path of ffu_image_decode (libwebp's header parse and
 * decode into our rows, animation refusal, our RIFF walk for the EXIF orientation).
 * Seeds: tests/fixtures/corpus/webp. The body is shared with fuzz_jpeg.c. */
#include "fuzz_image_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_image_decode_one(data, size);
}
