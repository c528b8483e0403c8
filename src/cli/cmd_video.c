/* `facefuse video info|from-images`: the video module from the command line.
 *   info FILE...          what a video holds: size, frame rate, duration, frames, codec,
 *                         audio, and its container tags (where the swap provenance
 *                         "comment" shows up)
 *   convert IN -o OUT     re-encode to H.264 at another size (--size) and frame rate
 *                         (--fps: frames are repeated or dropped by time), audio copied:
 *                         how the benchmarks make 1080p30 / 720p inputs from the
 *                         shared clips
 *   from-images IMG|DIR... -o OUT.mp4
 *                         a clip that slowly zooms and pans over each photo in turn:
 *                         a moving-camera test input made from stills, which is how the
 *                         README's analyze demo gets a video on a fresh machine (the
 *                         photos come from Debian packages) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "facefuse/image.h"
#include "facefuse/video.h"

typedef struct {
    cli_common common;
    char *output;
    char *size;
    double seconds;
    double fps;
    double zoom;
    double max_seconds;
    int crf;
    int hwaccel, hw_device;
} video_opts;

static const ffu_option video_options[] = {
    CLI_COMMON_OPTIONS,
    {"output", 'o', FFU_OPT_STRING, offsetof(video_opts, output),
     "from-images: the video to write (.mp4, .mkv, .mov)", NULL, 0, 0, NULL, "OUT"},
    {"size", 's', FFU_OPT_STRING, offsetof(video_opts, size),
     "frame size WxH, even numbers (from-images: 640x480 by default; convert: the "
     "input's)", NULL, 0, 0, NULL, "WxH"},
    {"seconds", 0, FFU_OPT_FLOAT, offsetof(video_opts, seconds),
     "from-images: seconds per photo", "4", 0.1, 3600, NULL, "S"},
    {"fps", 0, FFU_OPT_FLOAT, offsetof(video_opts, fps),
     "frame rate of the output (convert: 0 = the input's)", "0", 0, 240, NULL, "FPS"},
    {"max-seconds", 0, FFU_OPT_FLOAT, offsetof(video_opts, max_seconds),
     "convert: stop after this much of the input (0 = all)", "0", 0, 1e9, NULL, "S"},
    {"zoom", 0, FFU_OPT_FLOAT, offsetof(video_opts, zoom),
     "from-images: how much each photo zooms in over its time (0.2 = 20%)", "0.2", 0, 4,
     NULL, "Z"},
    {"crf", 0, FFU_OPT_INT, offsetof(video_opts, crf), "from-images: x264 quality",
     "20", 1, 51, NULL, "N"},
    CLI_HWACCEL_OPTIONS(video_opts),
    {0},
};

static void info_json(ffu_jw *w, const char *path, ffu_video_reader *r)
{
    const ffu_video_info *in = ffu_video_reader_info(r);
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "path"), ffu_jw_string(w, path);
    ffu_jw_key(w, "width"), ffu_jw_int(w, in->width);
    ffu_jw_key(w, "height"), ffu_jw_int(w, in->height);
    ffu_jw_key(w, "fps"), ffu_jw_number(w, round(in->fps * 1000) / 1000);
    ffu_jw_key(w, "fps_rational");
    ffu_jw_begin_array(w);
    ffu_jw_int(w, in->fps_num), ffu_jw_int(w, in->fps_den);
    ffu_jw_end_array(w);
    ffu_jw_key(w, "duration"), ffu_jw_number(w, round(in->duration * 1000) / 1000);
    ffu_jw_key(w, "frames"), ffu_jw_int(w, in->frame_count);
    ffu_jw_key(w, "frames_exact"), ffu_jw_bool(w, in->frame_count_exact);
    ffu_jw_key(w, "codec"), ffu_jw_string(w, in->codec);
    ffu_jw_key(w, "decoder"), ffu_jw_string(w, in->decoder);
    ffu_jw_key(w, "container"), ffu_jw_string(w, in->container);
    ffu_jw_key(w, "audio_streams"), ffu_jw_int(w, in->audio_streams);
    if (in->has_audio)
        ffu_jw_key(w, "audio_codec"), ffu_jw_string(w, in->audio_codec);
    ffu_jw_key(w, "metadata");
    ffu_jw_begin_object(w);
    const char *k, *v;
    for (int i = 0; (k = ffu_video_reader_metadata_at(r, i, &v)); i++)
        ffu_jw_key(w, k), ffu_jw_string(w, v);
    ffu_jw_end_object(w);
    ffu_jw_end_object(w);
}

static void info_text(const char *path, ffu_video_reader *r)
{
    const ffu_video_info *in = ffu_video_reader_info(r);
    printf("%s: %dx%d %s, %.3f fps (%d/%d), %.3f s, %lld frames%s, %s", path, in->width,
           in->height, in->codec, in->fps, in->fps_num, in->fps_den, in->duration,
           (long long)in->frame_count, in->frame_count_exact ? "" : " (estimated)",
           in->container);
    if (in->has_audio)
        printf(", audio %s", in->audio_codec);
    printf("\n  decoder: %s\n", in->decoder);
    const char *k, *v;
    for (int i = 0; (k = ffu_video_reader_metadata_at(r, i, &v)); i++)
        printf("  %s: %s\n", k, v);
}

/* --json for a written video: {"output", "frames", "width", "height"}. */
static int written_json(const cli_command *cmd, const video_opts *o, int64_t frames, int w, int h)
{
    ffu_jw *jw = NULL;
    if (ffu_jw_create(&jw, 0) < 0) return cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
    ffu_jw_begin_object(jw);
    ffu_jw_key(jw, "output"), ffu_jw_string(jw, o->output);
    ffu_jw_key(jw, "frames"), ffu_jw_int(jw, frames);
    ffu_jw_key(jw, "width"), ffu_jw_int(jw, w);
    ffu_jw_key(jw, "height"), ffu_jw_int(jw, h);
    ffu_jw_end_object(jw);
    int rc = cli_print_json(jw);
    ffu_jw_destroy(jw);
    return rc;
}

static int run_info(const cli_command *cmd, video_opts *o, int n, char **paths)
{
    if (n < 1)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE, "info: give a video file");
    ffu_jw *w = NULL;
    if (o->common.json) {
        if (ffu_jw_create(&w, 1) < 0)
            return cli_fail(cmd, &o->common, FFU_ERR_NOMEM);
        ffu_jw_begin_array(w);
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        ffu_video_reader *r;
        ffu_video_reader_opts ro = {.hwaccel = (ffu_video_hwaccel)o->hwaccel,
                                    .hw_device = o->hw_device};
        ffu_status st = ffu_video_reader_open(&r, paths[i], &ro);
        if (st) {
            fprintf(stderr, "facefuse video: %s\n", ffu_error_message());
            rc = cli_exit_code(st);
            continue;
        }
        if (w)
            info_json(w, paths[i], r);
        else
            info_text(paths[i], r);
        ffu_video_reader_close(r);
    }
    if (w) {
        ffu_jw_end_array(w);
        int prc = cli_print_json(w);
        ffu_jw_destroy(w);
        if (!rc)
            rc = prc;
    }
    return rc;
}

/* Frame k of n of one photo: the photo fitted inside the frame (no crop at k = 0), then
 * zoomed in by up to `zoom` around a centre that drifts a little to the right and up,
 * like a slow camera move. Returns the dst -> src map for ffu_image_warp_affine. */
static void ken_burns(const ffu_image *src, int fw, int fh, double t, double zoom, double m[6])
{
    double fit = fmin((double)fw / src->width, (double)fh / src->height);
    double s = fit * (1.0 + zoom * t);
    double cx = src->width * (0.5 + 0.06 * zoom * t), cy = src->height * (0.5 - 0.04 * zoom * t);
    /* dst (x, y) samples src (cx + (x - fw/2) / s, cy + (y - fh/2) / s), centres at
     * integer coordinates on both sides. */
    m[0] = 1.0 / s, m[1] = 0, m[2] = cx - 0.5 - (fw * 0.5 - 0.5) / s;
    m[3] = 0, m[4] = 1.0 / s, m[5] = cy - 0.5 - (fh * 0.5 - 0.5) / s;
}

/* --size into *fw, *fh (left alone when the option is absent). */
static int parse_size(const cli_command *cmd, video_opts *o, int *fw, int *fh)
{
    char tail;
    if (!o->size)
        return 0;
    if (sscanf(o->size, "%dx%d%c", fw, fh, &tail) != 2 || *fw < 16 || *fh < 16 || *fw > 7680 ||
        *fh > 4320 || *fw % 2 || *fh % 2)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                            "--size '%s': want WxH, even, 16..7680 x 16..4320", o->size);
    return 0;
}

/* A rational frame rate: integer rates exactly, others to 1/1000. */
static void fps_rational(double fps, int *num, int *den)
{
    *num = (int)lround(fps * 1000), *den = 1000;
    if (fabs(fps - round(fps)) < 1e-9)
        *num = (int)lround(fps), *den = 1;
}

static int run_convert(const cli_command *cmd, video_opts *o, int n, char **paths)
{
    if (n != 1)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE, "convert: give one input video");
    if (!o->output)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE, "convert: give -o OUT.mp4");
    if (ffu_same_file(paths[0], o->output))
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE,
                            "convert: --output %s is the input: it would be replaced by its "
                            "re-encoding",
                            o->output);
    ffu_video_reader *r = NULL;
    ffu_status st = ffu_video_reader_open(&r, paths[0], NULL);
    if (st)
        return cli_fail(cmd, &o->common, st);
    const ffu_video_info *in = ffu_video_reader_info(r);
    int fw = in->width & ~1, fh = in->height & ~1, rc = parse_size(cmd, o, &fw, &fh);
    if (rc) {
        ffu_video_reader_close(r);
        return rc;
    }
    ffu_video_reader_close(r);
    ffu_video_reader_opts ro = {.pixfmt = FFU_PIX_RGB24, .width = fw, .height = fh};
    if ((st = ffu_video_reader_open(&r, paths[0], &ro)))
        return cli_fail(cmd, &o->common, st);
    in = ffu_video_reader_info(r);
    ffu_video_writer_opts wo = {.width = fw, .height = fh, .crf = o->crf, .preset = "veryfast",
                                .audio_from = in->has_audio ? paths[0] : NULL,
                                .fps_num = in->fps_num, .fps_den = in->fps_den};
    if (o->fps > 0 || wo.fps_num <= 0)
        fps_rational(o->fps > 0 ? o->fps : 25, &wo.fps_num, &wo.fps_den);
    double step = (double)wo.fps_den / wo.fps_num;
    ffu_video_writer *w = NULL;
    ffu_image cur = {0}, prev = {0};
    int64_t written = 0;
    cli_progress_bar bar;
    double end = in->duration > 0 ? in->duration : 0;
    if (o->max_seconds > 0 && (end <= 0 || o->max_seconds < end))
        end = o->max_seconds;
    cli_progress_start(&bar, "convert", end > 0 ? (size_t)ceil(end / step) : 0, &o->common);
    st = ffu_video_writer_open(&w, o->output, &wo);
    /* Output slot k (time k * step) shows the latest input frame at or before it: a
     * higher output rate repeats frames, a lower one drops them. A frame is written
     * once the next input frame shows where its time ends. */
    double pts, prev_pts = 0, in_dur = in->fps > 0 ? 1.0 / in->fps : step;
    int have_prev = 0;
    for (;;) {
        if (st)
            break;
        ffu_status rs = ffu_video_reader_read(r, &cur, &pts);
        int last = rs != FFU_OK || (o->max_seconds > 0 && pts >= o->max_seconds);
        if (rs != FFU_OK && rs != FFU_EOF) {
            st = rs;
            break;
        }
        double until = last ? prev_pts + in_dur : pts;
        if (o->max_seconds > 0 && until > o->max_seconds)
            until = o->max_seconds;
        while (have_prev && !st && written * step < until - 1e-9) {
            st = ffu_video_writer_write(w, &prev, written * step);
            written++;
            if (bar.total)
                cli_progress(&bar, (size_t)written < bar.total ? (size_t)written : bar.total - 1);
        }
        if (last)
            break;
        ffu_image t = prev;
        prev = cur, cur = t, prev_pts = pts, have_prev = 1;
    }
    if (bar.total)
        cli_progress(&bar, bar.total);
    ffu_image_release(&cur);
    ffu_image_release(&prev);
    ffu_video_reader_close(r);
    if (st) {
        ffu_video_writer_abort(w);
        return cli_fail(cmd, &o->common, st);
    }
    if ((st = ffu_video_writer_close(w)))
        return cli_fail(cmd, &o->common, st);
    if (o->common.json) return written_json(cmd, o, written, fw, fh);
    if (!o->common.quiet)
        fprintf(stderr, "facefuse video: wrote %s (%lld frames, %dx%d)\n", o->output,
                (long long)written, fw, fh);
    return 0;
}

static int run_from_images(const cli_command *cmd, video_opts *o, int n, char **paths)
{
    int fw = 640, fh = 480;
    if (n < 1)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE, "from-images: give photos");
    if (!o->output)
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_USAGE, "from-images: give -o OUT.mp4");
    int rc = parse_size(cmd, o, &fw, &fh);
    if (rc)
        return rc;
    if (o->fps <= 0)
        o->fps = 25;
    ffu_video_writer_opts wo = {.width = fw, .height = fh, .crf = o->crf, .preset = "veryfast"};
    fps_rational(o->fps, &wo.fps_num, &wo.fps_den);
    ffu_image src = {0}, frame = {0};
    ffu_video_writer *w = NULL;
    ffu_status st = ffu_image_create(&frame, FFU_PIX_RGB24, fw, fh);
    if (!st)
        st = ffu_video_writer_open(&w, o->output, &wo);
    if (!st)
        st = ffu_video_writer_set_metadata(w, "comment", "made by facefuse video from-images");
    int per = (int)lround(o->seconds * o->fps);
    if (per < 1)
        per = 1;
    int64_t index = 0;
    for (int i = 0; !st && i < n; i++) {
        if ((st = ffu_image_load(paths[i], FFU_PIX_RGB24, &src)))
            break;
        for (int k = 0; !st && k < per; k++, index++) {
            double m[6];
            ken_burns(&src, fw, fh, per > 1 ? (double)k / (per - 1) : 0, o->zoom, m);
            st = ffu_image_warp_affine(&src, &frame, m, FFU_INTERP_BILINEAR, FFU_BORDER_CONSTANT,
                                       NULL);
            if (!st)
                st = ffu_video_writer_write(w, &frame, (double)index * wo.fps_den / wo.fps_num);
        }
        ffu_image_release(&src);
    }
    if (st) {
        ffu_video_writer_abort(w);
        rc = cli_fail(cmd, &o->common, st);
    } else if ((st = ffu_video_writer_close(w))) {
        rc = cli_fail(cmd, &o->common, st);
    } else if (o->common.json) {
        rc = written_json(cmd, o, index, fw, fh);
    } else if (!o->common.quiet) {
        fprintf(stderr, "facefuse video: wrote %s (%lld frames, %dx%d, %.3g fps)\n", o->output,
                (long long)index, fw, fh, o->fps);
    }
    ffu_image_release(&frame);
    return rc;
}

static int run_video(const cli_command *cmd, int argc, char **argv)
{
    video_opts o;
    int npos, done;
    int rc = cli_parse(cmd, video_options, &o, argc, argv, &npos, &done);
    if (!rc && !done) {
        const char *sub = npos > 0 ? argv[0] : "";
        if (!strcmp(sub, "info"))
            rc = run_info(cmd, &o, npos - 1, argv + 1);
        else if (!strcmp(sub, "convert"))
            rc = run_convert(cmd, &o, npos - 1, argv + 1);
        else if (!strcmp(sub, "from-images")) {
            /* a folder stands for its images, in name order */
            char **paths = NULL;
            int n = 0;
            ffu_status st = cli_expand_images(npos - 1, argv + 1, &paths, &n);
            rc = st ? cli_fail(cmd, &o.common, st) : run_from_images(cmd, &o, n, paths);
            ffu_dir_list_free(paths, n);
        } else
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                              "%s%s%s (info, convert or from-images)", *sub ? "unknown subcommand '" : "",
                              sub, *sub ? "'" : "give a subcommand");
    }
    ffu_options_free(video_options, &o);
    return rc;
}

const cli_command cli_cmd_video = {
    "video",
    "video files: info (size, fps, tags), convert (resize, re-encode), from-images",
    "facefuse video info FILE... [--json]\n"
    "       facefuse video convert IN -o OUT.mp4 [--size WxH] [--fps F] [--max-seconds S]\n"
    "       facefuse video from-images IMG|DIR... -o OUT.mp4 [--size WxH] [--seconds S] [--fps F]",
    "info prints what a video holds, including its container tags (a facefuse swap output\n"
    "carries its provenance in `comment`). convert re-encodes to H.264 at another size or\n"
    "frame rate with the audio copied. from-images writes an H.264 clip that slowly\n"
    "zooms over each photo in turn: a moving-camera input made from stills.",
    run_video,
};
