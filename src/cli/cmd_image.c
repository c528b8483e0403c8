/* `facefuse image IN -o OUT`: one image through the library's kernels -- decode
 * (EXIF orientation applied), crop, resize, rotate/scale about the centre, gray, draw, and
 * encode by extension -- with per-stage timings. The demo's main step and a handy
 * tool on its own. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "facefuse/image.h"

static const char *const interp_names[] = {"nearest", "bilinear", "area", NULL};
static const char *const border_names[] = {"constant", "replicate", "reflect", NULL};

typedef struct {
    cli_common common;
    char *output;
    char *crop;
    char *resize;
    double rotate;
    double scale;
    int interp;
    int border;
    int gray;
    char *label;
    int grid;
    int quality;
} image_opts;

static const ffu_option image_options[] = {
    CLI_COMMON_OPTIONS,
    {"output", 'o', FFU_OPT_STRING, offsetof(image_opts, output),
     "output file; .jpg, .jpeg, .png or .webp (required)", NULL, 0, 0, NULL, "PATH"},
    {"crop", 0, FFU_OPT_STRING, offsetof(image_opts, crop),
     "keep only the rectangle X,Y,W,H (pixels; clipped to the image) first", NULL, 0, 0,
     NULL, "X,Y,W,H"},
    {"resize", 0, FFU_OPT_STRING, offsetof(image_opts, resize),
     "resize to WxH first; a 0 side keeps the aspect ratio (640x0)", NULL, 0, 0, NULL, "WxH"},
    {"rotate", 0, FFU_OPT_FLOAT, offsetof(image_opts, rotate),
     "rotate by DEG degrees (counter-clockwise) about the centre", "0", -3600, 3600, NULL,
     "DEG"},
    {"scale", 0, FFU_OPT_FLOAT, offsetof(image_opts, scale),
     "zoom by S about the centre (canvas size kept)", "1", 0.01, 100, NULL, "S"},
    {"interp", 0, FFU_OPT_ENUM, offsetof(image_opts, interp), "interpolation", "bilinear",
     0, 0, interp_names, NULL},
    {"border", 0, FFU_OPT_ENUM, offsetof(image_opts, border),
     "how rotate/scale fills outside the source", "constant", 0, 0, border_names, NULL},
    {"gray", 0, FFU_OPT_BOOL, offsetof(image_opts, gray), "convert to grayscale", NULL, 0, 0,
     NULL, NULL},
    {"label", 0, FFU_OPT_STRING, offsetof(image_opts, label),
     "draw TEXT in a label at the top-left", NULL, 0, 0, NULL, "TEXT"},
    {"grid", 0, FFU_OPT_INT, offsetof(image_opts, grid), "draw grid lines every N pixels",
     "0", 0, 100000, NULL, "N"},
    {"quality", 0, FFU_OPT_INT, offsetof(image_opts, quality), "JPEG and WebP quality", "92",
     1, 100, NULL, "Q"},
    {0},
};

static int parse_size(const char *s, int *w, int *h)
{
    char tail;
    return sscanf(s, "%dx%d%c", w, h, &tail) == 2 && *w >= 0 && *h >= 0 && (*w || *h) &&
           *w <= FFU_IMAGE_MAX_DIM && *h <= FFU_IMAGE_MAX_DIM;
}

static double ms_since(int64_t t0) { return (double)(ffu_clock_ns() - t0) / 1e6; }

/* Replaces *img by out (releasing the old pixels). */
static void replace(ffu_image *img, ffu_image *out)
{
    ffu_image_release(img);
    *img = *out;
    memset(out, 0, sizeof *out);
}

static int run(const cli_command *cmd, int argc, char **argv)
{
    image_opts o;
    int npos, done;
    ffu_image img = {0}, tmp = {0};
    ffu_jw *w = NULL;
    ffu_status st = FFU_OK;
    int rc = cli_parse(cmd, image_options, &o, argc, argv, &npos, &done);
    if (rc || done) goto out;
    if (npos != 1) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          npos ? "expected one input image, got %d" : "missing input image%.0d",
                          npos);
        goto out;
    }
    if (!o.output) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "missing -o OUTPUT");
        goto out;
    }
    int rw = 0, rh = 0;
    if (o.resize && !parse_size(o.resize, &rw, &rh)) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          "--resize: '%s' is not WxH (for example 640x480 or 640x0)", o.resize);
        goto out;
    }
    if ((rc = cli_check_output_file(cmd, &o.common, "--output", o.output))) goto out;
    const char *input = argv[0];
    double t_decode, t_resize = 0, t_warp = 0, t_gray = 0, t_draw = 0, t_encode;
    int64_t t0 = ffu_clock_ns();
    if ((st = ffu_image_load(input, FFU_PIX_RGB24, &img)) < 0) goto fail;
    t_decode = ms_since(t0);
    int in_w = img.width, in_h = img.height;

    if (o.crop) {
        int cx, cy, cw, ch;
        char tail;
        if (sscanf(o.crop, "%d,%d,%d,%d%c", &cx, &cy, &cw, &ch, &tail) != 4 || cw <= 0 ||
            ch <= 0) {
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                              "--crop: '%s' is not X,Y,W,H with W, H > 0", o.crop);
            goto out;
        }
        int x0 = cx < 0 ? 0 : cx, y0 = cy < 0 ? 0 : cy;
        int x1 = cx + cw > img.width ? img.width : cx + cw;
        int y1 = cy + ch > img.height ? img.height : cy + ch;
        if (x1 <= x0 || y1 <= y0) {
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                              "--crop: %s lies outside the %dx%d image", o.crop, img.width,
                              img.height);
            goto out;
        }
        ffu_image view;
        if ((st = ffu_image_view(&view, &img, x0, y0, x1 - x0, y1 - y0)) < 0 ||
            (st = ffu_image_clone(&tmp, &view)) < 0)
            goto fail;
        replace(&img, &tmp);
    }

    if (o.resize) {
        if (!rw) rw = (int)fmax(1, lround((double)img.width * rh / img.height));
        if (!rh) rh = (int)fmax(1, lround((double)img.height * rw / img.width));
        t0 = ffu_clock_ns();
        if ((st = ffu_image_create(&tmp, img.fmt, rw, rh)) < 0 ||
            (st = ffu_image_resize(&img, &tmp, (ffu_interp)o.interp)) < 0)
            goto fail;
        replace(&img, &tmp);
        t_resize = ms_since(t0);
    }
    if (o.rotate != 0 || o.scale != 1) {
        /* Forward map: about the centre c, dst = R(angle) * scale * (src - c) + c. */
        double a = o.rotate * M_PI / 180.0, cs = cos(a) * o.scale, sn = sin(a) * o.scale;
        double cx = (img.width - 1) * 0.5, cy = (img.height - 1) * 0.5;
        double fwd[6] = {cs, sn, cx - cs * cx - sn * cy, -sn, cs, cy + sn * cx - cs * cy};
        double inv[6];
        const uint8_t black[4] = {0, 0, 0, 255};
        t0 = ffu_clock_ns();
        if ((st = ffu_affine_invert(fwd, inv)) < 0 ||
            (st = ffu_image_create(&tmp, img.fmt, img.width, img.height)) < 0 ||
            (st = ffu_image_warp_affine(&img, &tmp, inv,
                                        o.interp == FFU_INTERP_AREA ? FFU_INTERP_BILINEAR
                                                                    : (ffu_interp)o.interp,
                                        (ffu_border)o.border, black)) < 0)
            goto fail;
        replace(&img, &tmp);
        t_warp = ms_since(t0);
    }
    if (o.gray) {
        t0 = ffu_clock_ns();
        if ((st = ffu_image_create(&tmp, FFU_PIX_GRAY8, img.width, img.height)) < 0 ||
            (st = ffu_image_convert(&img, &tmp)) < 0)
            goto fail;
        replace(&img, &tmp);
        t_gray = ms_since(t0);
    }
    t0 = ffu_clock_ns();
    if (o.grid > 0) {
        const ffu_color line = {0, 200, 255, 255};
        for (int x = o.grid; x < img.width; x += o.grid)
            ffu_draw_line(&img, x, 0, x, img.height - 1, 1, line);
        for (int y = o.grid; y < img.height; y += o.grid)
            ffu_draw_line(&img, 0, y, img.width - 1, y, 1, line);
    }
    if (o.label) {
        const ffu_color fg = {255, 255, 255, 255}, bg = {200, 40, 40, 255};
        int scale = img.width >= 1024 ? 3 : img.width >= 400 ? 2 : 1;
        ffu_draw_label(&img, 4, 4, o.label, scale, fg, bg);
    }
    t_draw = ms_since(t0);
    t0 = ffu_clock_ns();
    if ((st = ffu_image_save(o.output, &img, o.quality)) < 0) goto fail;
    t_encode = ms_since(t0);

    if (o.common.json) {
        if ((st = ffu_jw_create(&w, 0)) < 0) goto fail;
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "ok"), ffu_jw_bool(w, 1);
        ffu_jw_key(w, "input"), ffu_jw_string(w, input);
        ffu_jw_key(w, "input_size"), ffu_jw_begin_array(w);
        ffu_jw_int(w, in_w), ffu_jw_int(w, in_h), ffu_jw_end_array(w);
        ffu_jw_key(w, "output"), ffu_jw_string(w, o.output);
        ffu_jw_key(w, "output_size"), ffu_jw_begin_array(w);
        ffu_jw_int(w, img.width), ffu_jw_int(w, img.height), ffu_jw_end_array(w);
        ffu_jw_key(w, "format"), ffu_jw_string(w, ffu_pixfmt_name(img.fmt));
        ffu_jw_key(w, "ms");
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "decode"), ffu_jw_number(w, t_decode);
        ffu_jw_key(w, "resize"), ffu_jw_number(w, t_resize);
        ffu_jw_key(w, "warp"), ffu_jw_number(w, t_warp);
        ffu_jw_key(w, "gray"), ffu_jw_number(w, t_gray);
        ffu_jw_key(w, "draw"), ffu_jw_number(w, t_draw);
        ffu_jw_key(w, "encode"), ffu_jw_number(w, t_encode);
        ffu_jw_end_object(w);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
    } else if (!o.common.quiet) {
        printf("%s (%dx%d) -> %s (%dx%d %s): decode %.1f ms, process %.1f ms, encode %.1f ms\n",
               input, in_w, in_h, o.output, img.width, img.height, ffu_pixfmt_name(img.fmt),
               t_decode, t_resize + t_warp + t_gray + t_draw, t_encode);
    }
    goto out;
fail:
    rc = cli_fail(cmd, &o.common, st);
out:
    ffu_jw_destroy(w);
    ffu_image_release(&img);
    ffu_image_release(&tmp);
    ffu_options_free(image_options, &o);
    return rc;
}

const cli_command cli_cmd_image = {
    "image",
    "transform one image (resize, rotate, gray, draw) and save it",
    "facefuse image IN -o OUT [--crop X,Y,W,H] [--resize WxH] [--rotate DEG] [--scale S] [--gray] "
    "[--label TEXT] [--grid N] [options]",
    "Stages run in this order: decode (EXIF orientation applied), crop, resize, rotate/scale,\n"
    "gray, draw, encode. The output format follows the extension (.jpg, .jpeg, .png,\n"
    ".webp); the file is written to a temporary name and renamed, never left half-written.",
    run,
};
