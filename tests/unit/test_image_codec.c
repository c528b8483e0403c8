/* Tests of JPEG/PNG decoding (WebP: test_image_webp.c), encoding, EXIF orientation and file I/O
 * (src/image/codec*.c, exif.c): real photos from ../shared where present, exact PNG round trips,
 * JPEG PSNR, all eight orientations on a synthetic pattern, every truncation of small files,
 * oversized headers, garbage input, and saving that never leaves partial files. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <unistd.h>

#include "facefuse/image.h"
#include "image/codec_internal.h"
#include "image_test.h"
#include "test.h"

/* ---- helpers ------------------------------------------------------------------------- */

/* Fills an image of any packed format with fixed-seed noise. */
static void fill_random(ffu_image *img, uint64_t seed)
{
    int bpp = ffu_pixfmt_bpp(img->fmt);
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width * bpp; x++)
            img->data[0][(size_t)y * img->stride[0] + x] = (uint8_t)(test_rand_u64(&seed) >> 56);
}

/* A smooth colour image: gradients plus a slow sinusoid (JPEG's friendly case). */
static void fill_smooth(ffu_image *img)
{
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            uint8_t *p = img->data[0] + (size_t)y * img->stride[0] + (size_t)x * 3;
            p[0] = (uint8_t)(40 + 160 * x / img->width);
            p[1] = (uint8_t)(60 + 140 * y / img->height);
            p[2] = (uint8_t)(128 + 60 * sin((x + y) * 0.08));
        }
}

/* Four flat quadrants (red, green, blue, white) in a w x h RGB24 image: asymmetric under
 * every flip and rotation, and flat enough that JPEG keeps quadrant centres exact-ish. */
static const uint8_t quad_colors[4][3] = {
    {220, 30, 30}, {30, 200, 40}, {30, 40, 210}, {240, 240, 240}};
static void fill_quadrants(ffu_image *img)
{
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            int q = (x >= img->width / 2) + 2 * (y >= img->height / 2);
            memcpy(img->data[0] + (size_t)y * img->stride[0] + (size_t)x * 3, quad_colors[q], 3);
        }
}

/* A JPEG with an EXIF APP1 (orientation o, little- or big-endian TIFF) after SOI. */
static uint8_t *add_exif(const uint8_t *jpg, size_t n, int o, int little, size_t *out_n)
{
    uint8_t tiff[26];
    size_t t = 0;
#define PUT16(v)                                                                                   \
    (little ? (tiff[t] = (uint8_t)(v), tiff[t + 1] = (uint8_t)((v) >> 8))                          \
            : (tiff[t] = (uint8_t)((v) >> 8), tiff[t + 1] = (uint8_t)(v)),                         \
     t += 2)
#define PUT32(v)                                                                                   \
    (little ? (PUT16((v)&0xFFFF), PUT16((uint32_t)(v) >> 16))                                      \
            : (PUT16((uint32_t)(v) >> 16), PUT16((v)&0xFFFF)))
    tiff[t++] = little ? 'I' : 'M';
    tiff[t++] = little ? 'I' : 'M';
    PUT16(42);
    PUT32(8);      /* IFD0 right after the header */
    PUT16(1);      /* one entry */
    PUT16(0x0112); /* Orientation */
    PUT16(3);      /* SHORT */
    PUT32(1);      /* count */
    PUT16(o);      /* value, left-justified in the 4-byte field */
    PUT16(0);
    PUT32(0); /* no next IFD */
#undef PUT16
#undef PUT32
    size_t seg = 2 + 6 + t;
    uint8_t *out = malloc(n + 2 + seg);
    memcpy(out, jpg, 2);
    uint8_t *p = out + 2;
    *p++ = 0xFF, *p++ = 0xE1, *p++ = (uint8_t)(seg >> 8), *p++ = (uint8_t)seg;
    memcpy(p, "Exif\0\0", 6), p += 6;
    memcpy(p, tiff, t), p += t;
    memcpy(p, jpg + 2, n - 2);
    *out_n = n + 2 + seg;
    return out;
}

/* The display transform each EXIF orientation asks for, as a map from a stored pixel
 * (x, y) of a w x h image to where it is shown. Written from the EXIF definitions
 * (2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise, 7 transverse,
 * 8 rotate 90 counter-clockwise), independently of exif.c's inverse table. */
static void shown_at(int o, int w, int h, int x, int y, int *sx, int *sy)
{
    switch (o) {
    case 2:
        *sx = w - 1 - x, *sy = y;
        break;
    case 3:
        *sx = w - 1 - x, *sy = h - 1 - y;
        break;
    case 4:
        *sx = x, *sy = h - 1 - y;
        break;
    case 5:
        *sx = y, *sy = x;
        break;
    case 6:
        *sx = h - 1 - y, *sy = x;
        break;
    case 7:
        *sx = h - 1 - y, *sy = w - 1 - x;
        break;
    case 8:
        *sx = y, *sy = w - 1 - x;
        break;
    default:
        *sx = x, *sy = y;
        break;
    }
}

static uint32_t crc32_png(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return ~c;
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
    p[3] = (uint8_t)v;
}

/* Signature + IHDR (valid CRC) + empty IDAT + IEND for a w x h RGB image. */
static size_t png_header_only(uint8_t *buf, uint32_t w, uint32_t h)
{
    static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    memcpy(buf, sig, 8);
    uint8_t *c = buf + 8;
    put_be32(c, 13);
    memcpy(c + 4, "IHDR", 4);
    put_be32(c + 8, w);
    put_be32(c + 12, h);
    c[16] = 8, c[17] = 2, c[18] = 0, c[19] = 0, c[20] = 0;
    put_be32(c + 21, crc32_png(c + 4, 17));
    c += 25;
    put_be32(c, 0);
    memcpy(c + 4, "IEND", 4);
    put_be32(c + 8, crc32_png(c + 4, 4));
    return 8 + 25 + 12;
}

static char tmpdir_buf[64];
static const char *make_tmpdir(void)
{
    snprintf(tmpdir_buf, sizeof tmpdir_buf, "/tmp/ffu_codec_test_XXXXXX");
    return mkdtemp(tmpdir_buf);
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static void remove_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[PATH_MAX];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            chmod(p, 0700);
            remove_tree(p);
        } else {
            unlink(p);
        }
    }
    closedir(d);
    rmdir(dir);
}

/* ---- real photos ----------------------------------------------------------------------- */

static int has_ext(const char *name, const char *ext)
{
    size_t n = strlen(name), e = strlen(ext);
    return n > e && strcasecmp(name + n - e, ext) == 0;
}

/* Decodes one file as RGB24, BGR24 and GRAY8 and checks they agree. Returns 0 on
 * success, else prints why. */
static int check_real_file(const char *path)
{
    ffu_image rgb, bgr, gray;
    if (ffu_image_load(path, FFU_PIX_RGB24, &rgb) != FFU_OK) {
        fprintf(stderr, "%s: %s\n", path, ffu_error_message());
        return -1;
    }
    int bad = 0;
    if (rgb.width < 16 || rgb.height < 16 || rgb.width > 8000 || rgb.height > 8000) bad = 1;
    if (!bad && ffu_image_load(path, FFU_PIX_BGR24, &bgr) != FFU_OK) bad = 2;
    if (!bad) {
        if (bgr.width != rgb.width || bgr.height != rgb.height) bad = 3;
        for (int y = 0; y < rgb.height && !bad; y++)
            for (int x = 0; x < rgb.width; x++) {
                const uint8_t *a = px(&rgb, x, y), *b = px(&bgr, x, y);
                if (a[0] != b[2] || a[1] != b[1] || a[2] != b[0]) {
                    bad = 4;
                    break;
                }
            }
        ffu_image_release(&bgr);
    }
    if (!bad && ffu_image_load(path, FFU_PIX_GRAY8, &gray) == FFU_OK) {
        if (gray.width != rgb.width || gray.height != rgb.height) bad = 5;
        ffu_image_release(&gray);
    } else if (!bad) {
        bad = 6;
    }
    /* probe reports the decoded size */
    size_t n;
    uint8_t *data = test_read_all(path, &n);
    const char *fmt = NULL;
    int pw = 0, ph = 0;
    if (!bad && (!data || ffu_image_probe(data, n, &fmt, &pw, &ph) != FFU_OK || pw != rgb.width ||
                 ph != rgb.height))
        bad = 7;
    free(data);
    if (bad) fprintf(stderr, "%s: check %d failed (%dx%d)\n", path, bad, rgb.width, rgb.height);
    ffu_image_release(&rgb);
    return bad ? -1 : 0;
}

static int walk_images(const char *dir, int *count)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    struct dirent *e;
    int fails = 0;
    char p[PATH_MAX];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            fails += walk_images(p, count);
        } else if (has_ext(p, ".jpg") || has_ext(p, ".jpeg") || has_ext(p, ".png")) {
            (*count)++;
            if (check_real_file(p) != 0) fails++;
        }
    }
    closedir(d);
    return fails;
}

static void test_real_photos(void)
{
    char buf[PATH_MAX];
    const char *dir = test_shared_path("data/face_recognition_examples", buf, sizeof buf);
    if (!dir) TEST_SKIP("../shared/data/face_recognition_examples absent");
    int count = 0;
    int fails = walk_images(dir, &count);
    CHECK_EQ_INT(fails, 0);
    CHECK(count >= 20); /* the set holds 32 files: a missing walk must not pass */
}

/* The minivision photos F1, F2, T1 are stored 640x480 with EXIF orientation 6 (the face
 * lies on its side); T2 is a 1617x2160 portrait without an orientation tag. */
static void test_real_exif_orientation(void)
{
    static const struct {
        const char *name;
        int orientation, stored_w, stored_h;
    } files[] = {
        {"image_F1.jpg", 6, 640, 480},
        {"image_F2.jpg", 6, 640, 480},
        {"image_T1.jpg", 6, 640, 480},
        {"image_T2.jpg", 1, 1617, 2160},
    };
    char buf[PATH_MAX], rel[128];
    if (!test_shared_path("data/antispoof_minivision/labels.csv", buf, sizeof buf))
        TEST_SKIP("../shared/data/antispoof_minivision absent");
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(rel, sizeof rel, "data/antispoof_minivision/%s", files[i].name);
        CHECK(test_shared_path(rel, buf, sizeof buf));
        size_t n;
        uint8_t *data = test_read_all(buf, &n);
        CHECK(data);
        CHECK_EQ_INT(codec_exif_jpeg_orientation(data, n), files[i].orientation);
        ffu_image raw, up;
        CHECK_EQ_INT(codec_jpeg_decode(data, n, FFU_PIX_RGB24, 0, &raw), FFU_OK);
        CHECK_EQ_INT(raw.width, files[i].stored_w);
        CHECK_EQ_INT(raw.height, files[i].stored_h);
        CHECK_EQ_INT(ffu_image_decode(data, n, FFU_PIX_RGB24, &up), FFU_OK);
        int ew, eh;
        shown_at(files[i].orientation, raw.width, raw.height, raw.width - 1, raw.height - 1, &ew,
                 &eh);
        int swapped = files[i].orientation >= 5;
        CHECK_EQ_INT(up.width, swapped ? raw.height : raw.width);
        CHECK_EQ_INT(up.height, swapped ? raw.width : raw.height);
        int mismatches = 0;
        for (int y = 0; y < raw.height; y++)
            for (int x = 0; x < raw.width; x++) {
                int sx, sy;
                shown_at(files[i].orientation, raw.width, raw.height, x, y, &sx, &sy);
                if (memcmp(px(&raw, x, y), px(&up, sx, sy), 3) != 0) mismatches++;
            }
        CHECK_EQ_INT(mismatches, 0);
        int pw, ph;
        CHECK_EQ_INT(ffu_image_probe(data, n, NULL, &pw, &ph), FFU_OK);
        CHECK_EQ_INT(pw, up.width);
        CHECK_EQ_INT(ph, up.height);
        ffu_image_release(&raw);
        ffu_image_release(&up);
        free(data);
    }
}

/* ---- round trips ----------------------------------------------------------------------- */

static void test_png_roundtrip_exact(void)
{
    static const ffu_pixfmt fmts[] = {FFU_PIX_GRAY8, FFU_PIX_RGB24, FFU_PIX_BGR24, FFU_PIX_RGBA32};
    for (size_t f = 0; f < 4; f++) {
        /* Odd size, and a view with a stride wider than the row, to catch stride bugs. */
        ffu_image big, img, back;
        CHECK_EQ_INT(ffu_image_create(&big, fmts[f], 41, 29), FFU_OK);
        fill_random(&big, 1234 + f);
        CHECK_EQ_INT(ffu_image_view(&img, &big, 3, 2, 37, 23), FFU_OK);
        uint8_t *png;
        size_t n;
        CHECK_EQ_INT(ffu_image_encode_png(&img, NULL, &png, &n), FFU_OK);
        CHECK(n > 8);
        CHECK_EQ_INT(ffu_image_decode(png, n, fmts[f], &back), FFU_OK);
        CHECK(same_pixels(&img, &back));
        ffu_image_release(&back);

        /* Cross-format decodes of the same file. */
        if (fmts[f] == FFU_PIX_RGB24 || fmts[f] == FFU_PIX_RGBA32) {
            ffu_image bgr, rgba;
            CHECK_EQ_INT(ffu_image_decode(png, n, FFU_PIX_BGR24, &bgr), FFU_OK);
            CHECK_EQ_INT(ffu_image_decode(png, n, FFU_PIX_RGBA32, &rgba), FFU_OK);
            for (int y = 0; y < img.height; y++)
                for (int x = 0; x < img.width; x++) {
                    const uint8_t *s = px(&img, x, y), *b = px(&bgr, x, y), *a = px(&rgba, x, y);
                    CHECK(s[0] == b[2] && s[1] == b[1] && s[2] == b[0]);
                    CHECK(a[0] == s[0] && a[1] == s[1] && a[2] == s[2]);
                    CHECK_EQ_INT(a[3], fmts[f] == FFU_PIX_RGBA32 ? s[3] : 255);
                }
            ffu_image_release(&bgr);
            ffu_image_release(&rgba);
        }
        if (fmts[f] == FFU_PIX_GRAY8) {
            ffu_image rgb;
            CHECK_EQ_INT(ffu_image_decode(png, n, FFU_PIX_RGB24, &rgb), FFU_OK);
            for (int y = 0; y < img.height; y++)
                for (int x = 0; x < img.width; x++) {
                    const uint8_t *c = px(&rgb, x, y);
                    CHECK(c[0] == px(&img, x, y)[0] && c[1] == c[0] && c[2] == c[0]);
                }
            ffu_image_release(&rgb);
        }
        free(png);
        ffu_image_release(&big);
    }
}

static void test_png_text_chunks(void)
{
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 8, 8), FFU_OK);
    const char *kv[] = {"Software", "facefuse test", "Comment", "caf\xc3\xa9 swap", NULL};
    uint8_t *png;
    size_t n;
    CHECK_EQ_INT(ffu_image_encode_png(&img, kv, &png, &n), FFU_OK);
    static const char want_text[] = "tEXtSoftware\0facefuse test";
    static const char want_itxt[] = "iTXtComment\0\0\0\0\0caf\xc3\xa9 swap";
    CHECK(memmem(png, n, want_text, sizeof want_text - 1) != NULL);
    CHECK(memmem(png, n, want_itxt, sizeof want_itxt - 1) != NULL);
    ffu_image back;
    CHECK_EQ_INT(ffu_image_decode(png, n, FFU_PIX_RGB24, &back), FFU_OK); /* text is skipped */
    CHECK(same_pixels(&img, &back));
    ffu_image_release(&back);
    free(png);
    const char *bad[] = {"", "x", NULL};
    CHECK_EQ_INT(ffu_image_encode_png(&img, bad, &png, &n), FFU_ERR_INVALID);
    CHECK(png == NULL && n == 0);
    const char *bad2[] = {"trailing ", "x", NULL};
    CHECK_EQ_INT(ffu_image_encode_png(&img, bad2, &png, &n), FFU_ERR_INVALID);
    ffu_image_release(&img);
}

static void test_jpeg_roundtrip_psnr(void)
{
    ffu_image img, back, bgr_img, gray;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 97, 71), FFU_OK);
    fill_smooth(&img);
    uint8_t *jpg;
    size_t n;
    CHECK_EQ_INT(ffu_image_encode_jpeg(&img, 95, &jpg, &n), FFU_OK);
    CHECK_EQ_INT(ffu_image_decode(jpg, n, FFU_PIX_RGB24, &back), FFU_OK);
    CHECK_EQ_INT(back.width, 97);
    CHECK_EQ_INT(back.height, 71);
    double p = psnr(&img, &back);
    printf("  JPEG q95 PSNR %.2f dB (%zu bytes)\n", p, n);
    CHECK(p > 35.0);
    ffu_image_release(&back);

    /* Low quality is smaller and worse, but still the same picture. */
    uint8_t *low;
    size_t nlow;
    CHECK_EQ_INT(ffu_image_encode_jpeg(&img, 20, &low, &nlow), FFU_OK);
    CHECK(nlow < n);
    CHECK_EQ_INT(ffu_image_decode(low, nlow, FFU_PIX_RGB24, &back), FFU_OK);
    double plow = psnr(&img, &back);
    CHECK(plow < p && plow > 25.0);
    ffu_image_release(&back);
    free(low);

    /* A BGR24 source encodes the same picture. */
    CHECK_EQ_INT(ffu_image_create(&bgr_img, FFU_PIX_BGR24, 97, 71), FFU_OK);
    for (int y = 0; y < 71; y++)
        for (int x = 0; x < 97; x++) {
            const uint8_t *s = px(&img, x, y);
            uint8_t *d = (uint8_t *)px(&bgr_img, x, y);
            d[0] = s[2], d[1] = s[1], d[2] = s[0];
        }
    uint8_t *jpg2;
    size_t n2;
    CHECK_EQ_INT(ffu_image_encode_jpeg(&bgr_img, 95, &jpg2, &n2), FFU_OK);
    CHECK_EQ_INT(ffu_image_decode(jpg2, n2, FFU_PIX_RGB24, &back), FFU_OK);
    CHECK(psnr(&img, &back) > 35.0);
    ffu_image_release(&back);
    free(jpg2);

    /* Gray: decoding a colour JPEG to GRAY8 gives its luma; a GRAY8 image round-trips. */
    CHECK_EQ_INT(ffu_image_decode(jpg, n, FFU_PIX_GRAY8, &gray), FFU_OK);
    const uint8_t *c = px(&img, 50, 30);
    double luma = 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
    CHECK_NEAR(px(&gray, 50, 30)[0], luma, 4.0);
    CHECK_EQ_INT(ffu_image_encode_jpeg(&gray, 95, &jpg2, &n2), FFU_OK);
    CHECK_EQ_INT(ffu_image_decode(jpg2, n2, FFU_PIX_GRAY8, &back), FFU_OK);
    CHECK(psnr(&gray, &back) > 35.0);
    ffu_image_release(&back);
    free(jpg2);

    CHECK_EQ_INT(ffu_image_encode_jpeg(&img, 101, &jpg2, &n2), FFU_ERR_INVALID);
    CHECK(jpg2 == NULL && n2 == 0);
    free(jpg);
    ffu_image_release(&gray);
    ffu_image_release(&bgr_img);
    ffu_image_release(&img);
}

/* ---- EXIF orientation ------------------------------------------------------------------ */

static void test_exif_orientations(void)
{
    const int w = 40, h = 24; /* not square, not a multiple of 16 */
    ffu_image img, raw;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, w, h), FFU_OK);
    fill_quadrants(&img);
    uint8_t *jpg;
    size_t n;
    CHECK_EQ_INT(ffu_image_encode_jpeg(&img, 95, &jpg, &n), FFU_OK);
    CHECK_EQ_INT(ffu_image_decode(jpg, n, FFU_PIX_RGB24, &raw), FFU_OK);
    for (int o = 1; o <= 8; o++) {
        for (int little = 0; little <= 1; little++) {
            size_t en;
            uint8_t *ex = add_exif(jpg, n, o, little, &en);
            CHECK_EQ_INT(codec_exif_jpeg_orientation(ex, en), o);
            ffu_image up, gray;
            CHECK_EQ_INT(ffu_image_decode(ex, en, FFU_PIX_RGB24, &up), FFU_OK);
            CHECK_EQ_INT(up.width, o >= 5 ? h : w);
            CHECK_EQ_INT(up.height, o >= 5 ? w : h);
            /* Every stored pixel is where the orientation says it is shown. */
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    int sx, sy;
                    shown_at(o, w, h, x, y, &sx, &sy);
                    CHECK(memcmp(px(&raw, x, y), px(&up, sx, sy), 3) == 0);
                }
            /* And the quadrant colours sit where expected (guards the raw decode too). */
            for (int q = 0; q < 4; q++) {
                int x = (q & 1) ? 3 * w / 4 : w / 4, y = (q & 2) ? 3 * h / 4 : h / 4, sx, sy;
                shown_at(o, w, h, x, y, &sx, &sy);
                for (int c = 0; c < 3; c++)
                    CHECK_NEAR(px(&up, sx, sy)[c], quad_colors[q][c], 6);
            }
            /* GRAY8 and probe follow the same orientation. */
            CHECK_EQ_INT(ffu_image_decode(ex, en, FFU_PIX_GRAY8, &gray), FFU_OK);
            CHECK_EQ_INT(gray.width, up.width);
            int pw, ph;
            CHECK_EQ_INT(ffu_image_probe(ex, en, NULL, &pw, &ph), FFU_OK);
            CHECK(pw == up.width && ph == up.height);
            ffu_image_release(&gray);
            ffu_image_release(&up);
            free(ex);
        }
    }
    /* Invalid orientations (0, 9) and a broken IFD offset are ignored, not fatal. */
    for (int o = 0; o <= 9; o += 9) {
        size_t en;
        uint8_t *ex = add_exif(jpg, n, o, 1, &en);
        ffu_image up;
        CHECK_EQ_INT(ffu_image_decode(ex, en, FFU_PIX_RGB24, &up), FFU_OK);
        CHECK(same_pixels(&up, &raw));
        ffu_image_release(&up);
        free(ex);
    }
    size_t en;
    uint8_t *ex = add_exif(jpg, n, 6, 1, &en);
    ex[2 + 4 + 6 + 4] = 0xF0; /* IFD0 offset -> far beyond the segment */
    CHECK_EQ_INT(codec_exif_jpeg_orientation(ex, en), 1);
    free(ex);
    free(jpg);
    ffu_image_release(&raw);
    ffu_image_release(&img);
}

static void test_exif_parser_bounds(void)
{
    /* A TIFF whose entry count claims more entries than the bytes hold, and every cut
     * of a valid one: no read past the end (ASan), sensible answers. */
    static const uint8_t tiff[] = {'I',  'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12,
                                   0x01, 3,   0,  1, 0, 0, 0, 8, 0, 0, 0};
    CHECK_EQ_INT(codec_exif_orientation_tiff(tiff, sizeof tiff), 8);
    for (size_t cut = 0; cut < sizeof tiff; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, tiff, cut);
        int o = codec_exif_orientation_tiff(copy, cut);
        CHECK(o == 0 || (o == 8 && cut >= 20));
        free(copy);
    }
    uint8_t many[sizeof tiff];
    memcpy(many, tiff, sizeof tiff);
    many[8] = 0xFF, many[9] = 0xFF; /* 65535 entries */
    CHECK_EQ_INT(codec_exif_orientation_tiff(many, sizeof many), 8);
    CHECK_EQ_INT(codec_exif_orientation_app1((const uint8_t *)"Exif\0\0", 6), 0);
    CHECK_EQ_INT(codec_exif_orientation_app1((const uint8_t *)"http://ns.adobe.com/", 20), 0);
}

/* PNG eXIf (a bare TIFF structure in its own chunk, after IHDR) is honoured too. */
static void test_png_exif(void)
{
    const int w = 20, h = 12;
    ffu_image img, up;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, w, h), FFU_OK);
    fill_random(&img, 77);
    uint8_t *png;
    size_t n;
    CHECK_EQ_INT(ffu_image_encode_png(&img, NULL, &png, &n), FFU_OK);
    for (int o = 1; o <= 8; o++) {
        static const uint8_t tiff_head[] = {'M', 'M',  0,    42, 0, 0, 0, 8, 0,
                                            1,   0x01, 0x12, 0,  3, 0, 0, 0, 1};
        uint8_t chunk[12 + 26];
        put_be32(chunk, 26);
        memcpy(chunk + 4, "eXIf", 4);
        memcpy(chunk + 8, tiff_head, sizeof tiff_head);
        uint8_t *v = chunk + 8 + sizeof tiff_head;
        v[0] = 0, v[1] = (uint8_t)o, v[2] = v[3] = 0, v[4] = v[5] = v[6] = v[7] = 0;
        put_be32(chunk + 8 + 26, crc32_png(chunk + 4, 4 + 26));
        size_t en = n + sizeof chunk, ihdr_end = 8 + 25;
        uint8_t *ex = malloc(en);
        memcpy(ex, png, ihdr_end);
        memcpy(ex + ihdr_end, chunk, sizeof chunk);
        memcpy(ex + ihdr_end + sizeof chunk, png + ihdr_end, n - ihdr_end);
        CHECK_EQ_INT(ffu_image_decode(ex, en, FFU_PIX_RGB24, &up), FFU_OK);
        CHECK_EQ_INT(up.width, o >= 5 ? h : w);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int sx, sy;
                shown_at(o, w, h, x, y, &sx, &sy);
                CHECK(memcmp(px(&img, x, y), px(&up, sx, sy), 3) == 0);
            }
        int pw, ph;
        CHECK_EQ_INT(ffu_image_probe(ex, en, NULL, &pw, &ph), FFU_OK);
        CHECK(pw == up.width && ph == up.height);
        ffu_image_release(&up);
        free(ex);
    }
    free(png);
    ffu_image_release(&img);
}

/* ---- damaged and hostile input -------------------------------------------------------- */

static void test_truncated_files(void)
{
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 24, 17), FFU_OK);
    fill_smooth(&img);
    uint8_t *jpg, *png;
    size_t nj, np;
    CHECK_EQ_INT(ffu_image_encode_jpeg(&img, 80, &jpg, &nj), FFU_OK);
    CHECK_EQ_INT(ffu_image_encode_png(&img, NULL, &png, &np), FFU_OK);
    CHECK_EQ_INT(check_all_cuts(jpg, nj, "jpeg"), 0);
    CHECK_EQ_INT(check_all_cuts(png, np, "png"), 0);
    /* The message says what happened. */
    ffu_image out;
    CHECK_EQ_INT(ffu_image_decode(jpg, nj / 2, FFU_PIX_RGB24, &out), FFU_ERR_FORMAT);
    CHECK(strstr(ffu_error_message(), "truncated JPEG") != NULL);
    CHECK_EQ_INT(ffu_image_decode(png, np / 2, FFU_PIX_RGB24, &out), FFU_ERR_FORMAT);
    CHECK(strstr(ffu_error_message(), "truncated PNG") != NULL);
    free(jpg);
    free(png);
    ffu_image_release(&img);

    /* The committed seeds: progressive, gray, CMYK, palette, interlaced, 16-bit, ... */
    static const char *seeds[] = {
        "jpeg/progressive444.jpg", "jpeg/gray.jpg",        "jpeg/cmyk_red.jpg",
        "jpeg/exif6.jpg",          "png/palette_trns.png", "png/interlaced.png",
        "png/rgb16.png",           "png/gray_alpha.png",   "png/gray1.png"};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        CHECK_EQ_INT(check_fixture_cuts(seeds[i]), 0);
}

static void test_corrupt_png_crc(void)
{
    ffu_image img, out;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 16, 16), FFU_OK);
    uint8_t *png;
    size_t n;
    const char *kv[] = {"Comment", "hello", NULL};
    CHECK_EQ_INT(ffu_image_encode_png(&img, kv, &png, &n), FFU_OK);
    /* Flip one byte inside each chunk's data in turn (IHDR, tEXt, IDAT): CRC mismatch. */
    size_t pos = 8;
    int chunks = 0;
    while (pos + 12 <= n) {
        uint32_t len =
            (uint32_t)png[pos] << 24 | png[pos + 1] << 16 | png[pos + 2] << 8 | png[pos + 3];
        if (len > 0) {
            png[pos + 8] ^= 0x01;
            ffu_status st = ffu_image_decode(png, n, FFU_PIX_RGB24, &out);
            png[pos + 8] ^= 0x01;
            CHECK_EQ_INT(st, FFU_ERR_FORMAT);
            CHECK(is_zeroed(&out));
            chunks++;
        }
        pos += 12 + len;
    }
    CHECK(chunks >= 3);
    CHECK_EQ_INT(ffu_image_decode(png, n, FFU_PIX_RGB24, &out), FFU_OK);
    ffu_image_release(&out);
    free(png);
    ffu_image_release(&img);
}

static void test_oversized_headers(void)
{
    uint8_t buf[64];
    ffu_image out;
    size_t n = png_header_only(buf, 100000, 100000);
    CHECK_EQ_INT(ffu_image_decode(buf, n, FFU_PIX_RGB24, &out), FFU_ERR_TOO_LARGE);
    CHECK(is_zeroed(&out));
    CHECK(strstr(ffu_error_message(), "image 100000x100000 exceeds the 32768 px cap") != NULL);
    n = png_header_only(buf, 30000, 30000); /* each side fits, the pixel count does not */
    CHECK_EQ_INT(ffu_image_decode(buf, n, FFU_PIX_RGB24, &out), FFU_ERR_TOO_LARGE);
    CHECK(strstr(ffu_error_message(), "Mpx cap") != NULL);
    int w = -1, h = -1;
    const char *fmt = "x";
    CHECK_EQ_INT(ffu_image_probe(buf, n, &fmt, &w, &h), FFU_ERR_TOO_LARGE);
    CHECK(w == 0 && h == 0 && fmt == NULL);

    /* JPEG: patch the SOF of a small file to 65000 x 65000. */
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 16, 16), FFU_OK);
    uint8_t *jpg;
    size_t nj;
    CHECK_EQ_INT(ffu_image_encode_jpeg(&img, 90, &jpg, &nj), FFU_OK);
    size_t sof = 0;
    for (size_t i = 2; i + 9 < nj; i++)
        if (jpg[i] == 0xFF && (jpg[i + 1] == 0xC0 || jpg[i + 1] == 0xC1)) {
            sof = i;
            break;
        }
    CHECK(sof > 0);
    jpg[sof + 5] = 0xFD, jpg[sof + 6] = 0xE8; /* height 65000 */
    jpg[sof + 7] = 0xFD, jpg[sof + 8] = 0xE8; /* width 65000 */
    CHECK_EQ_INT(ffu_image_decode(jpg, nj, FFU_PIX_RGB24, &out), FFU_ERR_TOO_LARGE);
    CHECK(strstr(ffu_error_message(), "image 65000x65000 exceeds the 32768 px cap") != NULL);
    CHECK(is_zeroed(&out));

    /* Through a file: the message names the path. */
    const char *dir = make_tmpdir();
    CHECK(dir);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/x.png", dir);
    n = png_header_only(buf, 40000, 40000);
    CHECK_EQ_INT(test_write_file(path, buf, n), 0);
    CHECK_EQ_INT(ffu_image_load(path, FFU_PIX_RGB24, &out), FFU_ERR_TOO_LARGE);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof want, "%s: image 40000x40000 exceeds the 32768 px cap", path);
    CHECK_STR(ffu_error_message(), want);
    remove_tree(dir);
    free(jpg);
    ffu_image_release(&img);
}

static void test_garbage_input(void)
{
    ffu_image out;
    CHECK_EQ_INT(ffu_image_decode("", 0, FFU_PIX_RGB24, &out), FFU_ERR_FORMAT);
    CHECK_EQ_INT(ffu_image_decode(NULL, 0, FFU_PIX_RGB24, &out), FFU_ERR_FORMAT);
    uint64_t seed = 99;
    static const uint8_t jpeg_sig[3] = {0xFF, 0xD8, 0xFF};
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    for (int round = 0; round < 400; round++) {
        size_t n = 1 + (size_t)(test_rand_u64(&seed) % 2000);
        uint8_t *buf = malloc(n);
        for (size_t i = 0; i < n; i++)
            buf[i] = (uint8_t)(test_rand_u64(&seed) >> 56);
        /* Plain noise, noise after a JPEG SOI, the PNG signature, a WebP RIFF header. */
        if (round % 4 == 1 && n >= 3) memcpy(buf, jpeg_sig, 3);
        if (round % 4 == 2 && n >= 8) memcpy(buf, png_sig, 8);
        if (round % 4 == 3 && n >= 12) memcpy(buf, "RIFF", 4), memcpy(buf + 8, "WEBP", 4);
        memset(&out, 0x5A, sizeof out);
        ffu_status st = ffu_image_decode(buf, n, FFU_PIX_RGBA32, &out);
        free(buf);
        CHECK_EQ_INT(st, FFU_ERR_FORMAT);
        CHECK(is_zeroed(&out));
    }
    CHECK_EQ_INT(ffu_image_decode("GIF89a\1\0\1\0", 10, FFU_PIX_RGB24, &out), FFU_ERR_UNSUPPORTED);
    CHECK(strstr(ffu_error_message(), "GIF") != NULL);
    CHECK_EQ_INT(ffu_image_decode("hello world", 11, FFU_PIX_RGB24, &out), FFU_ERR_FORMAT);
    CHECK_STR(ffu_error_message(), "not a JPEG, PNG or WebP file");
    CHECK_EQ_INT(ffu_image_decode("hello world", 11, FFU_PIX_NV12, &out), FFU_ERR_INVALID);
}

/* ---- the seed files: every PNG variant decodes to the same picture --------------------- */

static void test_png_variants(void)
{
    ffu_image ref, img, gray_ref;
    CHECK_EQ_INT(load_fixture("png/rgb8.png", FFU_PIX_RGB24, &ref), FFU_OK);
    CHECK_EQ_INT(ref.width, 16);
    /* the pattern: green block at the top left, white bar on the right */
    CHECK(px(&ref, 3, 3)[1] > 200 && px(&ref, 3, 3)[0] < 50);
    CHECK(px(&ref, 12, 8)[0] == 255 && px(&ref, 12, 8)[2] == 255);
    static const char *same_rgb[] = {"png/rgb16.png", "png/palette.png", "png/interlaced.png"};
    for (size_t i = 0; i < 3; i++) {
        CHECK_EQ_INT(load_fixture(same_rgb[i], FFU_PIX_RGB24, &img), FFU_OK);
        if (!same_pixels(&img, &ref)) fprintf(stderr, "%s differs from rgb8.png\n", same_rgb[i]);
        CHECK(same_pixels(&img, &ref));
        ffu_image_release(&img);
    }
    /* Gray + alpha as GRAY8 is the gray picture; as RGBA it keeps the alpha ramp. */
    CHECK_EQ_INT(load_fixture("png/gray8.png", FFU_PIX_GRAY8, &gray_ref), FFU_OK);
    CHECK_EQ_INT(load_fixture("png/gray_alpha.png", FFU_PIX_GRAY8, &img), FFU_OK);
    CHECK(same_pixels(&img, &gray_ref));
    ffu_image_release(&img);
    CHECK_EQ_INT(load_fixture("png/gray_alpha.png", FFU_PIX_RGBA32, &img), FFU_OK);
    CHECK(px(&img, 0, 5)[3] != px(&img, 15, 5)[3]);
    for (int x = 0; x < 16; x++) {
        const uint8_t *c = px(&img, x, 5);
        CHECK(c[0] == px(&gray_ref, x, 5)[0] && c[1] == c[0] && c[2] == c[0]);
    }
    ffu_image_release(&img);
    /* palette + tRNS: the white bar is transparent, the rest opaque and unchanged. */
    CHECK_EQ_INT(load_fixture("png/palette_trns.png", FFU_PIX_RGBA32, &img), FFU_OK);
    int transparent = 0;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++) {
            const uint8_t *c = px(&img, x, y), *r = px(&ref, x, y);
            int white = r[0] == 255 && r[1] == 255 && r[2] == 255;
            CHECK_EQ_INT(c[3], white ? 0 : 255);
            if (!white) CHECK(memcmp(c, r, 3) == 0);
            transparent += white;
        }
    CHECK(transparent >= 20);
    ffu_image_release(&img);
    /* 1-bit gray expands to 0 / 255. */
    CHECK_EQ_INT(load_fixture("png/gray1.png", FFU_PIX_GRAY8, &img), FFU_OK);
    int zeros = 0, full = 0;
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++) {
            uint8_t v = px(&img, x, y)[0];
            CHECK(v == 0 || v == 255);
            zeros += v == 0, full += v == 255;
        }
    CHECK(zeros > 0 && full > 0);
    ffu_image_release(&img);
    ffu_image_release(&gray_ref);
    ffu_image_release(&ref);
}

static void test_jpeg_variants(void)
{
    ffu_image ref, img;
    CHECK_EQ_INT(load_fixture("png/rgb8.png", FFU_PIX_RGB24, &ref), FFU_OK);
    /* ImageMagick's own decodes of these files score 18.1 dB and 33.7 dB: chroma
     * subsampling of a 16x16 picture with saturated edges costs that much. */
    static const struct {
        const char *name;
        double min_psnr;
    } same[] = {{"jpeg/baseline420.jpg", 17.0}, {"jpeg/progressive444.jpg", 32.0}};
    for (size_t i = 0; i < 2; i++) {
        CHECK_EQ_INT(load_fixture(same[i].name, FFU_PIX_RGB24, &img), FFU_OK);
        CHECK(img.width == 16 && img.height == 16);
        double p = psnr(&img, &ref);
        if (p < same[i].min_psnr) fprintf(stderr, "%s: PSNR %.1f vs rgb8.png\n", same[i].name, p);
        CHECK(p > same[i].min_psnr);
        ffu_image_release(&img);
    }
    CHECK_EQ_INT(load_fixture("jpeg/gray.jpg", FFU_PIX_RGB24, &img), FFU_OK);
    for (int x = 0; x < 16; x++)
        CHECK(px(&img, x, 7)[0] == px(&img, x, 7)[1]);
    ffu_image_release(&img);
    /* CMYK (Adobe, inverted) of pure red decodes to red. */
    CHECK_EQ_INT(load_fixture("jpeg/cmyk_red.jpg", FFU_PIX_RGB24, &img), FFU_OK);
    CHECK(px(&img, 8, 8)[0] > 235 && px(&img, 8, 8)[1] < 20 && px(&img, 8, 8)[2] < 20);
    ffu_image_release(&img);
    /* exif6.jpg is baseline420.jpg marked "turn 90 degrees clockwise". */
    ffu_image base;
    CHECK_EQ_INT(load_fixture("jpeg/baseline420.jpg", FFU_PIX_RGB24, &base), FFU_OK);
    CHECK_EQ_INT(load_fixture("jpeg/exif6.jpg", FFU_PIX_RGB24, &img), FFU_OK);
    for (int y = 0; y < 16; y++)
        for (int x = 0; x < 16; x++)
            CHECK(memcmp(px(&base, x, y), px(&img, 15 - y, x), 3) == 0);
    ffu_image_release(&img);
    ffu_image_release(&base);
    ffu_image_release(&ref);
}

/* ---- files ----------------------------------------------------------------------------- */

static void test_load_errors(void)
{
    ffu_image out;
    CHECK_EQ_INT(ffu_image_load("/nonexistent/dir/photo.jpg", FFU_PIX_RGB24, &out),
                 FFU_ERR_NOT_FOUND);
    CHECK(strstr(ffu_error_message(), "/nonexistent/dir/photo.jpg") != NULL);
    CHECK(is_zeroed(&out));
    const char *dir = make_tmpdir();
    CHECK(dir);
    CHECK_EQ_INT(ffu_image_load(dir, FFU_PIX_RGB24, &out), FFU_ERR_INVALID);
    char path[PATH_MAX], want[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/photo.jpg", dir);
    CHECK_EQ_INT(test_write_file(path, "this is text, not a photo", 25), 0);
    CHECK_EQ_INT(ffu_image_load(path, FFU_PIX_RGB24, &out), FFU_ERR_FORMAT);
    snprintf(want, sizeof want, "%s: not a JPEG, PNG or WebP file", path);
    CHECK_STR(ffu_error_message(), want);
    CHECK_EQ_INT(test_write_file(path, "", 0), 0);
    CHECK_EQ_INT(ffu_image_load(path, FFU_PIX_RGB24, &out), FFU_ERR_FORMAT);
    /* truncated JPEG through a file */
    ffu_image img;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 32, 32), FFU_OK);
    uint8_t *jpg;
    size_t n;
    CHECK_EQ_INT(ffu_image_encode_jpeg(&img, 90, &jpg, &n), FFU_OK);
    snprintf(path, sizeof path, "%s/x.jpg", dir);
    CHECK_EQ_INT(test_write_file(path, jpg, n - 10), 0);
    CHECK_EQ_INT(ffu_image_load(path, FFU_PIX_RGB24, &out), FFU_ERR_FORMAT);
    snprintf(want, sizeof want, "%s: truncated JPEG", path);
    CHECK_STR(ffu_error_message(), want);
    free(jpg);
    ffu_image_release(&img);
    remove_tree(dir);
}

static void test_save_and_reload(void)
{
    const char *dir = make_tmpdir();
    CHECK(dir);
    ffu_image img, back;
    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGBA32, 33, 20), FFU_OK);
    fill_random(&img, 7);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/out.PNG", dir);
    CHECK_EQ_INT(ffu_image_save(path, &img, 0), FFU_OK);
    CHECK_EQ_INT(ffu_image_load(path, FFU_PIX_RGBA32, &back), FFU_OK);
    CHECK(same_pixels(&img, &back));
    ffu_image_release(&back);
    /* Overwrite in place (rename over an existing file). */
    fill_random(&img, 8);
    CHECK_EQ_INT(ffu_image_save(path, &img, 0), FFU_OK);
    CHECK_EQ_INT(ffu_image_load(path, FFU_PIX_RGBA32, &back), FFU_OK);
    CHECK(same_pixels(&img, &back));
    ffu_image_release(&back);
    ffu_image_release(&img);

    CHECK_EQ_INT(ffu_image_create(&img, FFU_PIX_RGB24, 64, 48), FFU_OK);
    fill_smooth(&img);
    static const char *names[] = {"a.jpg", "b.jpeg", "c.JPG"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        CHECK_EQ_INT(ffu_image_save(path, &img, 95), FFU_OK);
        CHECK_EQ_INT(ffu_image_load(path, FFU_PIX_RGB24, &back), FFU_OK);
        CHECK(psnr(&img, &back) > 35.0);
        ffu_image_release(&back);
    }
    /* Text: a PNG tEXt chunk, a JPEG COM segment. */
    const char *kv[] = {"Software", "facefuse", NULL};
    snprintf(path, sizeof path, "%s/t.png", dir);
    CHECK_EQ_INT(ffu_image_save_with_text(path, &img, 0, kv), FFU_OK);
    size_t n;
    uint8_t *data = test_read_all(path, &n);
    CHECK(data && memmem(data, n, "tEXtSoftware\0facefuse", 21));
    free(data);
    snprintf(path, sizeof path, "%s/t.jpg", dir);
    CHECK_EQ_INT(ffu_image_save_with_text(path, &img, 90, kv), FFU_OK);
    data = test_read_all(path, &n);
    CHECK(data && memmem(data, n, "\xFF\xFE\x00\x14Software: facefuse", 22));
    free(data);
    int files = count_entries(dir);
    CHECK_EQ_INT(files, 6);

    /* Failures leave nothing behind. */
    snprintf(path, sizeof path, "%s/x.bmp", dir);
    CHECK_EQ_INT(ffu_image_save(path, &img, 0), FFU_ERR_UNSUPPORTED);
    snprintf(path, sizeof path, "%s/noext", dir);
    CHECK_EQ_INT(ffu_image_save(path, &img, 0), FFU_ERR_UNSUPPORTED);
    snprintf(path, sizeof path, "%s/missing/x.png", dir);
    CHECK_EQ_INT(ffu_image_save(path, &img, 0), FFU_ERR_IO);
    CHECK(strstr(ffu_error_message(), path) != NULL);
    /* the target is a directory: the temp file is written, the rename fails */
    snprintf(path, sizeof path, "%s/sub.png", dir);
    CHECK_EQ_INT(mkdir(path, 0700), 0);
    CHECK_EQ_INT(ffu_image_save(path, &img, 0), FFU_ERR_IO);
    CHECK_EQ_INT(count_entries(dir), files + 1);
    CHECK_EQ_INT(count_entries(path), 0);
    /* an unwritable directory (meaningless as root, who may write anywhere) */
    if (geteuid() != 0) {
        char ro[PATH_MAX / 2];
        snprintf(ro, sizeof ro, "%s/ro", dir);
        CHECK_EQ_INT(mkdir(ro, 0500), 0);
        snprintf(path, sizeof path, "%s/x.png", ro);
        CHECK_EQ_INT(ffu_image_save(path, &img, 0), FFU_ERR_IO);
        CHECK_EQ_INT(count_entries(ro), 0);
    }
    /* bad images */
    ffu_image empty = {0};
    snprintf(path, sizeof path, "%s/e.png", dir);
    CHECK_EQ_INT(ffu_image_save(path, &empty, 0), FFU_ERR_INVALID);
    ffu_image nv12;
    CHECK_EQ_INT(ffu_image_create(&nv12, FFU_PIX_NV12, 16, 16), FFU_OK);
    CHECK_EQ_INT(ffu_image_save(path, &nv12, 0), FFU_ERR_UNSUPPORTED);
    ffu_image_release(&nv12);
    CHECK_EQ_INT(count_entries(dir), files + 1 + (geteuid() != 0));
    ffu_image_release(&img);
    remove_tree(dir);
}

TEST_MAIN(test_png_roundtrip_exact, test_png_text_chunks, test_jpeg_roundtrip_psnr,
          test_exif_orientations, test_exif_parser_bounds, test_png_exif, test_truncated_files,
          test_corrupt_png_crc, test_oversized_headers, test_garbage_input, test_png_variants,
          test_jpeg_variants, test_load_errors, test_save_and_reload, test_real_photos,
          test_real_exif_orientation)
