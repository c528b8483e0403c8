/* Tests of WebP decoding and encoding (src/image/codec_webp.c). The committed seeds in
 * tests/fixtures/corpus/webp were written by ImageMagick (tests/fuzz/make_image_corpus.sh)
 * from the pattern the PNG seeds hold, so the lossless ones must decode to exactly the
 * PNG's pixels; real photos go through our encoder and back; the EXIF orientation in all
 * eight values and three spellings; animation refused; every truncation an error; the
 * XMP text of saved files, escaped; the encoder's limits. */
#include <limits.h>
#include <unistd.h>

#include "facefuse/image.h"
#include "image/codec_internal.h"
#include "image_test.h"
#include "test.h"

static void put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16),
    p[3] = (uint8_t)(v >> 24);
}

/* The payload of the first chunk named tag in a RIFF WebP, NULL when there is none. */
static const uint8_t *find_chunk(const uint8_t *d, size_t n, const char *tag, size_t *len)
{
    for (size_t p = 12; p + 8 <= n;) {
        size_t l = (size_t)d[p + 4] | (size_t)d[p + 5] << 8 | (size_t)d[p + 6] << 16 |
                   (size_t)d[p + 7] << 24;
        if (l > n - p - 8) return NULL;
        if (memcmp(d + p, tag, 4) == 0) {
            *len = l;
            return d + p + 8;
        }
        p += 8 + l + (l & 1);
    }
    return NULL;
}

/* ---- the committed seeds against the PNG of the same pattern --------------------------- */

static void test_seeds_match_png(void)
{
    ffu_image ref, img, conv;
    CHECK_EQ_INT(load_fixture("png/rgb8.png", FFU_PIX_RGB24, &ref), FFU_OK);
    /* Lossless: the same bytes in every wanted format. */
    CHECK_EQ_INT(load_fixture("webp/lossless.webp", FFU_PIX_RGB24, &img), FFU_OK);
    CHECK(same_pixels(&img, &ref));
    ffu_image_release(&img);
    static const ffu_pixfmt others[] = {FFU_PIX_BGR24, FFU_PIX_GRAY8, FFU_PIX_RGBA32};
    for (int i = 0; i < 3; i++) {
        CHECK_EQ_INT(load_fixture("webp/lossless.webp", others[i], &img), FFU_OK);
        CHECK_EQ_INT(ffu_image_create(&conv, others[i], ref.width, ref.height), FFU_OK);
        CHECK_EQ_INT(ffu_image_convert(&ref, &conv), FFU_OK); /* RGBA: opaque */
        CHECK(same_pixels(&img, &conv));
        ffu_image_release(&conv);
        ffu_image_release(&img);
    }
    /* Lossy: near the pattern. Its one-pixel details lose much to WebP's 4:2:0 chroma at
     * this size: 18.0 dB, and ImageMagick decodes the same bytes. A wrong channel order
     * or row stride gives under 10. */
    CHECK_EQ_INT(load_fixture("webp/lossy.webp", FFU_PIX_RGB24, &img), FFU_OK);
    double db = psnr(&img, &ref);
    if (db < 15) fprintf(stderr, "lossy.webp: PSNR %.1f dB\n", db);
    CHECK(db >= 15);
    ffu_image_release(&img);
    /* Lossless with alpha: the white bar transparent, every other pixel unchanged. */
    CHECK_EQ_INT(load_fixture("webp/alpha_lossless.webp", FFU_PIX_RGBA32, &img), FFU_OK);
    int transparent = 0;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++) {
            const uint8_t *c = px(&img, x, y), *r = px(&ref, x, y);
            const int white = r[0] == 255 && r[1] == 255 && r[2] == 255;
            CHECK_EQ_INT(c[3], white ? 0 : 255);
            if (!white) CHECK(memcmp(c, r, 3) == 0);
            transparent += white;
        }
    CHECK(transparent >= 20);
    ffu_image_release(&img);
    /* Lossy with alpha: the ramp of png/gray_alpha.png (WebP keeps alpha lossless). */
    ffu_image ramp;
    CHECK_EQ_INT(load_fixture("png/gray_alpha.png", FFU_PIX_RGBA32, &ramp), FFU_OK);
    CHECK_EQ_INT(load_fixture("webp/alpha_lossy.webp", FFU_PIX_RGBA32, &img), FFU_OK);
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            CHECK_EQ_INT(px(&img, x, y)[3], px(&ramp, x, y)[3]);
    CHECK(px(&img, 0, 5)[3] != px(&img, 15, 5)[3]);
    ffu_image_release(&img);
    /* As RGB24 the alpha is dropped, not blended: the colours stay near the pattern. */
    CHECK_EQ_INT(load_fixture("webp/alpha_lossy.webp", FFU_PIX_RGB24, &img), FFU_OK);
    CHECK(psnr(&img, &ref) >= 15);
    ffu_image_release(&img);
    ffu_image_release(&ramp);
    ffu_image_release(&ref);
}

/* exif6.webp is lossless.webp with orientation 6 (turn 90 degrees clockwise). */
static void test_seed_orientation(void)
{
    ffu_image stored, up;
    CHECK_EQ_INT(load_fixture("webp/lossless.webp", FFU_PIX_RGB24, &stored), FFU_OK);
    CHECK_EQ_INT(load_fixture("webp/exif6.webp", FFU_PIX_RGB24, &up), FFU_OK);
    /* Turned clockwise, stored pixel (x, y) is shown at (h - 1 - y, x). */
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            CHECK(memcmp(px(&stored, x, y), px(&up, 15 - y, x), 3) == 0);
    /* The green block, top left when stored, is top right when shown. */
    CHECK(px(&up, 12, 3)[1] > 200 && px(&up, 12, 3)[0] < 50);
    ffu_image_release(&up);
    ffu_image_release(&stored);
}

static void test_animation_refused(void)
{
    char p[PATH_MAX];
    size_t n;
    uint8_t *data = test_read_all(fixture("webp/animated.webp", p, sizeof p), &n);
    CHECK(data);
    ffu_image img;
    memset(&img, 0x5A, sizeof img);
    CHECK_EQ_INT(ffu_image_decode(data, n, FFU_PIX_RGB24, &img), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(ffu_error_message(), "animated WebP") != NULL);
    CHECK(is_zeroed(&img));
    CHECK_EQ_INT(ffu_image_probe(data, n, NULL, NULL, NULL), FFU_ERR_UNSUPPORTED);
    free(data);
}

/* ---- real photos through our encoder ---------------------------------------------------- */

static void test_real_photos(void)
{
    static const char *photos[] = {"obama.jpg", "biden.jpg", "two_people.jpg",
                                   "lin-manuel-miranda.png"};
    int done = 0;
    for (size_t i = 0; i < sizeof photos / sizeof photos[0]; i++) {
        char rel[256], p[PATH_MAX];
        snprintf(rel, sizeof rel, "data/face_recognition_examples/examples/%s", photos[i]);
        if (!test_shared_path(rel, p, sizeof p)) continue;
        ffu_image src, back, conv;
        CHECK_EQ_INT(ffu_image_load(p, FFU_PIX_RGB24, &src), FFU_OK);
        uint8_t *webp;
        size_t n;
        CHECK_EQ_INT(ffu_image_encode_webp(&src, 0, &webp, &n), FFU_OK);
        const char *fmt = NULL;
        int w = 0, h = 0;
        CHECK_EQ_INT(ffu_image_probe(webp, n, &fmt, &w, &h), FFU_OK);
        CHECK_STR(fmt, "webp");
        CHECK(w == src.width && h == src.height);
        CHECK_EQ_INT(ffu_image_decode(webp, n, FFU_PIX_RGB24, &back), FFU_OK);
        double db = psnr(&back, &src);
        printf("  %s: %dx%d, %zu bytes as WebP at the default quality, PSNR %.1f dB\n", photos[i],
               w, h, n, db);
        CHECK(db >= 35);
        /* The other formats are the RGB decode, converted. */
        static const ffu_pixfmt others[] = {FFU_PIX_BGR24, FFU_PIX_GRAY8, FFU_PIX_RGBA32};
        for (int k = 0; k < 3; k++) {
            ffu_image img;
            CHECK_EQ_INT(ffu_image_decode(webp, n, others[k], &img), FFU_OK);
            CHECK_EQ_INT(ffu_image_create(&conv, others[k], w, h), FFU_OK);
            CHECK_EQ_INT(ffu_image_convert(&back, &conv), FFU_OK);
            CHECK(same_pixels(&img, &conv));
            ffu_image_release(&conv);
            ffu_image_release(&img);
        }
        ffu_image_release(&back);
        free(webp);
        ffu_image_release(&src);
        done++;
    }
    if (!done) TEST_SKIP("../shared/data/face_recognition_examples absent");
}

/* Alpha survives our encoder exactly (libwebp codes it losslessly); gray goes in as RGB. */
static void test_encode_alpha_and_gray(void)
{
    ffu_image rgba, gray, back;
    CHECK_EQ_INT(ffu_image_create(&rgba, FFU_PIX_RGBA32, 37, 23), FFU_OK);
    CHECK_EQ_INT(ffu_image_create(&gray, FFU_PIX_GRAY8, 37, 23), FFU_OK);
    for (int y = 0; y < 23; y++)
        for (int x = 0; x < 37; x++) {
            uint8_t *c = rgba.data[0] + (size_t)y * rgba.stride[0] + (size_t)x * 4;
            c[0] = (uint8_t)(7 * x), c[1] = (uint8_t)(11 * y), c[2] = 90;
            c[3] = (uint8_t)((x * 255) / 36);
            gray.data[0][(size_t)y * gray.stride[0] + x] = (uint8_t)(60 + 3 * x + 2 * y);
        }
    uint8_t *webp;
    size_t n;
    CHECK_EQ_INT(ffu_image_encode_webp(&rgba, 90, &webp, &n), FFU_OK);
    CHECK_EQ_INT(ffu_image_decode(webp, n, FFU_PIX_RGBA32, &back), FFU_OK);
    for (int y = 0; y < 23; y++)
        for (int x = 0; x < 37; x++)
            CHECK_EQ_INT(px(&back, x, y)[3], px(&rgba, x, y)[3]);
    ffu_image_release(&back);
    free(webp);
    CHECK_EQ_INT(ffu_image_encode_webp(&gray, 95, &webp, &n), FFU_OK);
    CHECK_EQ_INT(ffu_image_decode(webp, n, FFU_PIX_GRAY8, &back), FFU_OK);
    CHECK(psnr(&back, &gray) >= 35);
    ffu_image_release(&back);
    free(webp);
    ffu_image_release(&gray);
    ffu_image_release(&rgba);
}

/* ---- orientation ------------------------------------------------------------------------ */

/* An extended WebP: VP8X (EXIF flag, the canvas size), the image chunk of `simple` (a
 * simple-format file), then an EXIF chunk holding `exif`. Caller frees. */
static uint8_t *with_exif(const uint8_t *simple, size_t n, int w, int h, const uint8_t *exif,
                          size_t exif_len, size_t *out_n)
{
    const size_t image_chunk = n - 12, exif_chunk = 8 + exif_len + (exif_len & 1);
    const size_t total = 12 + 18 + image_chunk + exif_chunk;
    uint8_t *o = calloc(1, total), *p = o;
    memcpy(p, "RIFF", 4), put_le32(p + 4, (uint32_t)(total - 8)), memcpy(p + 8, "WEBP", 4);
    p += 12;
    memcpy(p, "VP8X", 4), put_le32(p + 4, 10), p[8] = 0x08;
    p[12] = (uint8_t)(w - 1), p[13] = (uint8_t)((w - 1) >> 8), p[14] = 0;
    p[15] = (uint8_t)(h - 1), p[16] = (uint8_t)((h - 1) >> 8), p[17] = 0;
    p += 18;
    memcpy(p, simple + 12, image_chunk);
    p += image_chunk;
    memcpy(p, "EXIF", 4), put_le32(p + 4, (uint32_t)exif_len);
    memcpy(p + 8, exif, exif_len);
    *out_n = total;
    return o;
}

/* A TIFF structure with one IFD0 entry, Orientation = o, in either byte order, with or
 * without JPEG's "Exif\0\0" in front. Returns its length. */
static size_t make_exif(uint8_t *t, int o, int little, int prefixed)
{
    size_t k = 0;
    if (prefixed) memcpy(t, "Exif\0\0", 6), k = 6;
    static const uint8_t be[] = {'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1};
    static const uint8_t le[] = {'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0};
    memcpy(t + k, little ? le : be, sizeof be);
    k += sizeof be;
    t[k++] = little ? (uint8_t)o : 0, t[k++] = little ? 0 : (uint8_t)o;
    memset(t + k, 0, 6); /* the rest of the value field, no next IFD */
    return k + 6;
}

static void test_all_orientations(void)
{
    const int w = 21, h = 13;
    ffu_image img, stored;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, w, h), FFU_OK);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *c = img.data[0] + (size_t)y * img.stride[0] + (size_t)x * 3;
            c[0] = (uint8_t)(12 * x), c[1] = (uint8_t)(19 * y), c[2] = (uint8_t)(x < 5 ? 255 : 0);
        }
    uint8_t *webp;
    size_t n;
    CHECK_EQ_INT(ffu_image_encode_webp(&img, 90, &webp, &n), FFU_OK);
    CHECK_EQ_INT(ffu_image_decode(webp, n, FFU_PIX_RGB24, &stored), FFU_OK);
    for (int o = 1; o <= 8; o++)
        for (int variant = 0; variant < 3; variant++) {
            uint8_t exif[64];
            size_t exif_len = make_exif(exif, o, variant == 1, variant == 2);
            size_t en;
            uint8_t *ex = with_exif(webp, n, w, h, exif, exif_len, &en);
            ffu_image up, want;
            CHECK_EQ_INT(ffu_image_decode(ex, en, FFU_PIX_RGB24, &up), FFU_OK);
            CHECK_EQ_INT(codec_orient_apply(&stored, o, &want), FFU_OK);
            if (!same_pixels(&up, &want))
                fprintf(stderr, "orientation %d, variant %d\n", o, variant);
            CHECK(same_pixels(&up, &want));
            int pw, ph;
            CHECK_EQ_INT(ffu_image_probe(ex, en, NULL, &pw, &ph), FFU_OK);
            CHECK(pw == (o >= 5 ? h : w) && ph == (o >= 5 ? w : h));
            ffu_image_release(&want);
            ffu_image_release(&up);
            free(ex);
        }
    /* A value outside 1..8 and a broken TIFF are ignored: the pixels as stored. */
    static const uint8_t junk[] = {'I', 'I', 42, 0, 0xFF, 0xFF, 0xFF, 0x7F};
    uint8_t bad[64];
    const uint8_t *payloads[] = {bad, junk};
    const size_t lens[] = {make_exif(bad, 9, 1, 0), sizeof junk};
    for (int i = 0; i < 2; i++) {
        size_t en;
        uint8_t *ex = with_exif(webp, n, w, h, payloads[i], lens[i], &en);
        ffu_image up;
        CHECK_EQ_INT(ffu_image_decode(ex, en, FFU_PIX_RGB24, &up), FFU_OK);
        CHECK(same_pixels(&up, &stored));
        ffu_image_release(&up);
        free(ex);
    }
    free(webp);
    ffu_image_release(&stored);
    ffu_image_release(&img);
}

/* ---- damage ----------------------------------------------------------------------------- */

static void test_truncated_files(void)
{
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGBA32, 24, 17), FFU_OK);
    for (int y = 0; y < 17; y++)
        for (int x = 0; x < 24; x++) {
            uint8_t *c = img.data[0] + (size_t)y * img.stride[0] + (size_t)x * 4;
            c[0] = (uint8_t)(10 * x), c[1] = (uint8_t)(15 * y), c[2] = 77, c[3] = (uint8_t)(9 * x);
        }
    uint8_t *webp;
    size_t n;
    CHECK_EQ_INT(ffu_image_encode_webp(&img, 80, &webp, &n), FFU_OK);
    CHECK_EQ_INT(check_all_cuts(webp, n, "our lossy+alpha"), 0);
    ffu_image out;
    CHECK_EQ_INT(ffu_image_decode(webp, n / 2, FFU_PIX_RGB24, &out), FFU_ERR_FORMAT);
    CHECK(strstr(ffu_error_message(), "WebP") != NULL);
    free(webp);
    ffu_image_release(&img);
    static const char *seeds[] = {"webp/lossless.webp", "webp/lossy.webp",
                                  "webp/alpha_lossless.webp", "webp/alpha_lossy.webp",
                                  "webp/exif6.webp"};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        CHECK_EQ_INT(check_fixture_cuts(seeds[i]), 0);
}

/* ---- saving: XMP text, limits, names ---------------------------------------------------- */

static void test_save_with_text(void)
{
    const char *dir = test_tmpdir_auto();
    CHECK(dir);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/out.WEBP", dir);
    ffu_image img, back;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_BGR24, 30, 20), FFU_OK);
    memset(img.data[0], 0x80, (size_t)img.stride[0] * 20);
    const char *kv[] = {"Comment", "synthetic <a & b> \xc3\xa9t\xc3\xa9", "Software", "facefuse",
                        NULL};
    CHECK_EQ_INT(ffu_image_save_with_text(path, &img, 0, kv), FFU_OK);
    size_t n, xl;
    uint8_t *file = test_read_all(path, &n);
    CHECK(file);
    CHECK_EQ_INT(ffu_image_decode(file, n, FFU_PIX_BGR24, &back), FFU_OK);
    CHECK(psnr(&back, &img) >= 40);
    ffu_image_release(&back);
    CHECK(file[20] & 0x04); /* VP8X announces XMP */
    const uint8_t *x = find_chunk(file, n, "XMP ", &xl);
    CHECK(x);
    char *xmp = strndup((const char *)x, xl);
    CHECK(strstr(xmp, ">synthetic &lt;a &amp; b&gt; \xc3\xa9t\xc3\xa9</rdf:li>") != NULL);
    CHECK(strstr(xmp, "<exif:UserComment>") != NULL);
    CHECK(strstr(xmp, "<xmp:CreatorTool>facefuse</xmp:CreatorTool>") != NULL);
    free(xmp);
    free(file);
    /* A key XMP has no place for, or a control character: an error and no file. */
    snprintf(path, sizeof path, "%s/bad.webp", dir);
    const char *unknown[] = {"Warning", "x", NULL}, *control[] = {"Comment", "a\x01", NULL},
               *latin1[] = {"Comment", "caf\xe9", NULL};
    CHECK_EQ_INT(ffu_image_save_with_text(path, &img, 0, unknown), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(ffu_error_message(), "Warning") != NULL);
    CHECK_EQ_INT(ffu_image_save_with_text(path, &img, 0, control), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_image_save_with_text(path, &img, 0, latin1), FFU_ERR_INVALID);
    CHECK(access(path, F_OK) != 0);
    /* Without text: a simple-format file, no XMP. */
    CHECK_EQ_INT(ffu_image_save(path, &img, 75), FFU_OK);
    file = test_read_all(path, &n);
    CHECK(file && !find_chunk(file, n, "XMP ", &xl));
    free(file);
    CHECK_EQ_INT(ffu_image_save(path, &img, 101), FFU_ERR_INVALID);
    ffu_image_release(&img);
}

static void test_encoder_limits_and_names(void)
{
    ffu_image wide;
    CHECK_EQ_INT(ffu_image_create(&wide, FFU_PIX_GRAY8, 16384, 1), FFU_OK);
    memset(wide.data[0], 0, (size_t)wide.stride[0]);
    uint8_t *out = (uint8_t *)&wide;
    size_t n = 1;
    CHECK_EQ_INT(ffu_image_encode_webp(&wide, 0, &out, &n), FFU_ERR_UNSUPPORTED);
    CHECK(out == NULL && n == 0);
    CHECK(strstr(ffu_error_message(), "16383") != NULL);
    ffu_image_release(&wide);
    CHECK_EQ_INT(ffu_image_name_known("a.webp"), 1);
    CHECK_EQ_INT(ffu_image_name_known("dir/B.WebP"), 1);
    CHECK_EQ_INT(ffu_image_name_known("c.JPEG"), 1);
    CHECK_EQ_INT(ffu_image_name_known("d.png"), 1);
    CHECK_EQ_INT(ffu_image_name_known("e.gif"), 0);
    CHECK_EQ_INT(ffu_image_name_known("x.webp/f"), 0);
    CHECK_EQ_INT(ffu_image_name_known("webp"), 0);
    CHECK_EQ_INT(ffu_image_name_known(NULL), 0);
    /* The signature look: 12 bytes of a RIFF WebP header, nothing else needed. */
    CHECK_STR(ffu_image_format_of("RIFF\x10\0\0\0WEBPVP8 ", 16), "webp");
    CHECK_STR(ffu_image_format_of("\xff\xd8\xff", 3), "jpeg");
    CHECK(ffu_image_format_of("RIFF\x10\0\0\0AVI ", 12) == NULL);
    CHECK(ffu_image_format_of("RIFF\x10\0\0\0WEB", 11) == NULL);
    CHECK(ffu_image_format_of(NULL, 0) == NULL);
}

TEST_MAIN(test_seeds_match_png, test_seed_orientation, test_animation_refused, test_real_photos,
          test_encode_alpha_and_gray, test_all_orientations, test_truncated_files,
          test_save_with_text, test_encoder_limits_and_names)
