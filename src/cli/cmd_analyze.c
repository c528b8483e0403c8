/* `facefuse analyze`: the video-analytics job from the command line. Builds a pipeline
 * (src/pipeline) from the options, one stream per --input, shows a live status line on
 * a terminal, stops cleanly on SIGINT/SIGTERM (events flushed, videos finalised) and
 * prints a summary (text, or JSON with --json). docs/ANALYZE.md describes the job. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "facefuse/pipeline.h"


typedef struct {
    cli_common common;
    ffu_strlist inputs, names, annotate;
    double fps;
    char *watchlist, *zones, *events, *heatmap, *snapshots;
    char *detector, *landmarks, *embedder, *liveness_model;
    double liveness_gate, dwell;
    int workers, max_batch, max_wait_ms, min_face, realtime, loop, backend;
    int hwaccel, hw_device, device, fp16, bf16, host_frames;
} analyze_opts;

static const ffu_option analyze_options[] = {
    CLI_COMMON_OPTIONS,
    {"input", 'i', FFU_OPT_STRING_LIST, offsetof(analyze_opts, inputs),
     "a video file, rtsp://, http(s)://, udp:// URL or /dev/videoN; repeat for more streams",
     NULL, 0, 0, NULL, "URL"},
    {"name", 'n', FFU_OPT_STRING_LIST, offsetof(analyze_opts, names),
     "stream name, one per --input in order (default: from the file name)", NULL, 0, 0, NULL,
     "NAME"},
    {"fps", 0, FFU_OPT_FLOAT, offsetof(analyze_opts, fps),
     "frames analysed per second of each stream (-1 = every frame)", "5", -1, 1000, NULL, "F"},
    {"watchlist", 'w', FFU_OPT_STRING, offsetof(analyze_opts, watchlist),
     "people to recognise: a directory with one sub-directory of photos per person, or a "
     "gallery file (.ffgl)", NULL, 0, 0, NULL, "DIR|FILE"},
    {"zones", 0, FFU_OPT_STRING, offsetof(analyze_opts, zones),
     "zones JSON file: {\"zones\": [{\"name\", \"polygon\": [[x,y],...], \"dwell\", "
     "\"occupancy\"}]}", NULL, 0, 0, NULL, "FILE"},
    {"events", 'e', FFU_OPT_STRING, offsetof(analyze_opts, events),
     "write events as JSON lines to FILE", NULL, 0, 0, NULL, "FILE"},
    {"annotate", 'a', FFU_OPT_STRING_LIST, offsetof(analyze_opts, annotate),
     "annotated video: a file for one input; for several inputs a directory "
     "(DIR/NAME.mp4), a pattern with {name} (out-{name}.mkv), or one --annotate per input",
     NULL, 0, 0, NULL, "OUT"},
    {"heatmap", 0, FFU_OPT_STRING, offsetof(analyze_opts, heatmap),
     "write NAME.png and NAME_overlay.png heatmaps per stream into DIR", NULL, 0, 0, NULL,
     "DIR"},
    {"snapshots", 0, FFU_OPT_STRING, offsetof(analyze_opts, snapshots),
     "save a face crop (JPEG) per identity_confirmed / unknown_face event into DIR", NULL, 0,
     0, NULL, "DIR"},
    {"detector", 'd', FFU_OPT_STRING, offsetof(analyze_opts, detector),
     "detector: a zoo name or FAMILY:PATH (see `facefuse models list`)", NULL, 0, 0, NULL,
     "NAME[:PATH]"},
    {"landmarks", 0, FFU_OPT_STRING, offsetof(analyze_opts, landmarks),
     "refine keypoints before embedding with this landmarker (facemesh), or none", "none", 0,
     0, NULL, "NAME|none"},
    {"embedder", 0, FFU_OPT_STRING, offsetof(analyze_opts, embedder),
     "embedder: a zoo name or FAMILY:PATH", NULL, 0, 0, NULL, "NAME[:PATH]"},
    {"liveness-gate", 0, FFU_OPT_FLOAT, offsetof(analyze_opts, liveness_gate),
     "identity votes need a liveness score of at least X (0 = off)", "0", 0, 1, NULL, "X"},
    {"liveness-model", 0, FFU_OPT_STRING, offsetof(analyze_opts, liveness_model),
     "liveness model for --liveness-gate (default: antispoof + liveness, which do not "
     "tell printed photos from live faces on NUAA; dtn ranks them, minifasnet:PATH "
     "separates them; docs/EVAL.md)",
     NULL, 0, 0, NULL, "NAME[:PATH]"},
    {"dwell", 0, FFU_OPT_FLOAT, offsetof(analyze_opts, dwell),
     "dwell_alarm when a face is tracked this many seconds (0 = off)", "0", 0, 1e6, NULL,
     "S"},
    {"min-face", 0, FFU_OPT_INT, offsetof(analyze_opts, min_face),
     "smallest face to find in pixels (tiles; slower; 0 = whole frame)", "0", 0, 100000,
     NULL, "PX"},
    {"workers", 0, FFU_OPT_INT, offsetof(analyze_opts, workers),
     "worker threads shared by all streams (0 = one per CPU)", "0", 0, 256, NULL, "N"},
    {"max-batch", 0, FFU_OPT_INT, offsetof(analyze_opts, max_batch),
     "most faces per embedder run (0 = by backend: 8 on the CPU, 64 on the GPU; the "
     "detector takes at most 2 frames per run on the CPU, 8 on the GPU)", "0", 0, 64, NULL,
     "N"},
    {"max-wait", 0, FFU_OPT_INT, offsetof(analyze_opts, max_wait_ms),
     "milliseconds a partial batch waits for other streams", "4", 0, 10000, NULL, "MS"},
    {"realtime", 0, FFU_OPT_BOOL, offsetof(analyze_opts, realtime),
     "read files at their own speed, as a camera delivers frames", NULL, 0, 0, NULL, NULL},
    {"loop", 0, FFU_OPT_BOOL, offsetof(analyze_opts, loop),
     "start files again at their end (with --realtime: a simulated camera; stop with "
     "Ctrl-C)", NULL, 0, 0, NULL, NULL},
    {"backend", 'b', FFU_OPT_ENUM, offsetof(analyze_opts, backend),
     CLI_BACKEND_HELP, "cpu", 0, 0, cli_backend_names, NULL},
    CLI_HWACCEL_OPTIONS(analyze_opts),
    CLI_MODEL_OPTIONS(analyze_opts),
    {"host-frames", 0, FFU_OPT_BOOL, offsetof(analyze_opts, host_frames),
     "--backend cuda: bring every decoded frame to the host (to compare with the "
     "device-frame path)", NULL, 0, 0, NULL, NULL},
    {0},
};

/* The signal handler's only way to the pipeline; ffu_pipeline_stop only stores to an
 * atomic flag, so calling it from the handler is safe. */
static _Atomic(ffu_pipeline *) g_pipeline;
static volatile sig_atomic_t g_signalled;

static void on_signal(int sig)
{
    g_signalled = sig;
    ffu_pipeline *p = atomic_load(&g_pipeline);
    if (p)
        ffu_pipeline_stop(p);
    /* a second Ctrl-C kills at once */
    signal(sig, SIG_DFL);
}

typedef struct {
    int tty;
    int width; /* characters printed last time, to blank the rest */
} status_line;

static void print_status(void *user, ffu_pipeline *p)
{
    status_line *sl = user;
    if (!sl->tty)
        return;
    char line[1024];
    int len = 0;
    for (int i = 0; i < ffu_pipeline_stream_count(p) && len < (int)sizeof line - 100; i++) {
        ffu_pipeline_stream_stats s;
        if (ffu_pipeline_stream_stats_get(p, i, &s))
            continue;
        len += snprintf(line + len, sizeof line - (size_t)len,
                        "%s%.24s %4.1f fps %s drop %lld rc %lld tr %lld id %lld", i ? " | " : "",
                        s.name, s.processed_fps,
                        s.finished ? "done" : ffu_stream_state_name(s.health.state),
                        (long long)s.health.dropped, (long long)s.health.reconnects,
                        (long long)s.tracks, (long long)s.identities);
    }
    int pad = sl->width > len ? sl->width - len : 0;
    fprintf(stderr, "\r%s%*s", line, pad, "");
    fflush(stderr);
    sl->width = len;
}

static int is_url(const char *s) { return strstr(s, "://") != NULL || !strncmp(s, "/dev/video", 10); }

/* The annotated output of input i (NULL = none): a file, one per input, or a pattern
 * where the pipeline puts the stream's name for {name} (a directory becomes
 * DIR/{name}.mp4). -1 when a directory cannot be made. */
static int annotate_path(const analyze_opts *o, int i, char *buf, size_t len, const char **out)
{
    *out = NULL;
    int n = o->annotate.count, ni = o->inputs.count;
    if (n == 0)
        return 0;
    if (n > 1) {
        *out = o->annotate.items[i];
        return 0;
    }
    const char *a = o->annotate.items[0];
    struct stat st;
    size_t al = strlen(a);
    int dir = (stat(a, &st) == 0 && S_ISDIR(st.st_mode)) || (al && a[al - 1] == '/') ||
              (ni > 1 && !strstr(a, "{name}"));
    if (!dir) {
        *out = a;
        return 0;
    }
    if (ffu_dir_make(a) < 0) return -1;
    snprintf(buf, len, "%s%s{name}.mp4", a, al && a[al - 1] == '/' ? "" : "/");
    *out = buf;
    return 0;
}

/* annotate_path, its folder made or refused: a file (or a {name} pattern in a file name)
 * whose folder is missing is refused before the models load (the pipeline would find
 * out at the first frame and analyse the stream anyway, a live one for ever). Returns
 * the exit code. */
static int annotate_checked(const cli_command *cmd, const analyze_opts *o, int i, char *buf,
                            size_t len, const char **out)
{
    if (annotate_path(o, i, buf, len, out))
        return cli_fail_msg(cmd, &o->common, CLI_EXIT_FAILURE, "--annotate %s",
                            ffu_error_message());
    const char *a = *out, *slash = a ? strrchr(a, '/') : NULL;
    if (!a || (slash && memmem(a, (size_t)(slash - a), "{name}", 6))) return CLI_EXIT_OK;
    return cli_check_output_file(cmd, &o->common, "--annotate", a);
}

static void summary_json(ffu_pipeline *p, const analyze_opts *o, int interrupted, ffu_status st)
{
    ffu_jw *w;
    if (ffu_jw_create(&w, 1))
        return;
    const ffu_gallery *g = ffu_pipeline_gallery(p);
    ffu_pipeline_stats ps;
    ffu_pipeline_stats_get(p, &ps);
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "ok"), ffu_jw_bool(w, st == FFU_OK);
    ffu_jw_key(w, "interrupted"), ffu_jw_bool(w, interrupted);
    ffu_jw_key(w, "wall_s"), ffu_jw_number(w, ps.wall_s);
    ffu_jw_key(w, "events_file"), ffu_jw_string(w, o->events);
    ffu_jw_key(w, "streams"), ffu_jw_begin_array(w);
    for (int i = 0; i < ffu_pipeline_stream_count(p); i++) {
        ffu_pipeline_stream_stats s;
        ffu_pipeline_stream_stats_get(p, i, &s);
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "name"), ffu_jw_string(w, s.name);
        ffu_jw_key(w, "input"), ffu_jw_string(w, o->inputs.items[i]);
        ffu_jw_key(w, "status"), ffu_jw_string(w, s.status ? "failed" : "ok");
        if (s.status)
            ffu_jw_key(w, "error"), ffu_jw_string(w, s.error);
        ffu_jw_key(w, "frames"), ffu_jw_int(w, s.frames);
        ffu_jw_key(w, "duration_s"), ffu_jw_number(w, s.frames ? s.last_pts - s.first_pts : 0);
        ffu_jw_key(w, "faces"), ffu_jw_int(w, s.faces);
        ffu_jw_key(w, "embeddings"), ffu_jw_int(w, s.embeddings);
        ffu_jw_key(w, "tracks"), ffu_jw_int(w, s.tracks);
        ffu_jw_key(w, "min_face"), ffu_jw_number(w, roundf(s.min_face));
        ffu_jw_key(w, "unknown_faces"), ffu_jw_int(w, s.unknown);
        ffu_jw_key(w, "events"), ffu_jw_int(w, s.events);
        ffu_jw_key(w, "identities"), ffu_jw_begin_array(w);
        int ids[256];
        int n = ffu_pipeline_stream_identities(p, i, ids, 256);
        for (int k = 0; k < n && k < 256; k++)
            ffu_jw_string(w, g ? ffu_gallery_name(g, ids[k]) : NULL);
        ffu_jw_end_array(w);
        ffu_jw_key(w, "decoded"), ffu_jw_int(w, s.health.decoded);
        ffu_jw_key(w, "dropped"), ffu_jw_int(w, s.health.dropped);
        ffu_jw_key(w, "reconnects"), ffu_jw_int(w, s.health.reconnects);
        ffu_jw_key(w, "ms"), ffu_jw_begin_object(w);
        ffu_jw_key(w, "decode"), ffu_jw_number(w, round(s.health.thread_cpu_s * 1e6) / 1e3);
        ffu_jw_key(w, "detect"), ffu_jw_number(w, round(s.detect_ms * 1e3) / 1e3);
        ffu_jw_key(w, "track"), ffu_jw_number(w, round(s.track_ms * 1e3) / 1e3);
        ffu_jw_key(w, "landmarks"), ffu_jw_number(w, round(s.landmarks_ms * 1e3) / 1e3);
        ffu_jw_key(w, "embed"), ffu_jw_number(w, round(s.embed_ms * 1e3) / 1e3);
        ffu_jw_key(w, "search_vote"), ffu_jw_number(w, round(s.search_ms * 1e3) / 1e3);
        ffu_jw_key(w, "annotate"), ffu_jw_number(w, round(s.annotate_ms * 1e3) / 1e3);
        ffu_jw_end_object(w);
        ffu_jw_end_object(w);
    }
    ffu_jw_end_array(w);
    ffu_jw_key(w, "batching"), ffu_jw_begin_object(w);
    ffu_jw_key(w, "detector_batched"), ffu_jw_bool(w, ps.detect_batched);
    ffu_jw_key(w, "detect_runs"), ffu_jw_int(w, ps.detect_runs);
    ffu_jw_key(w, "detect_frames"), ffu_jw_int(w, ps.detect_items);
    ffu_jw_key(w, "cross_stream_detect_runs"), ffu_jw_int(w, ps.cross_stream_detect_runs);
    ffu_jw_key(w, "embed_runs"), ffu_jw_int(w, ps.embed_runs);
    ffu_jw_key(w, "embed_faces"), ffu_jw_int(w, ps.embed_items);
    ffu_jw_key(w, "cross_stream_embed_runs"), ffu_jw_int(w, ps.cross_stream_embed_runs);
    ffu_jw_end_object(w);
    ffu_jw_key(w, "gpu"), ffu_jw_begin_object(w);
    ffu_jw_key(w, "models_on_gpu"), ffu_jw_bool(w, ps.on_gpu);
    ffu_jw_key(w, "frames_from_device_memory"), ffu_jw_int(w, ps.gpu_frames);
    ffu_jw_key(w, "frame_downloads"), ffu_jw_int(w, ps.host_downloads);
    ffu_jw_key(w, "gpu_searches"), ffu_jw_int(w, ps.gpu_searches);
    ffu_jw_end_object(w);
    ffu_jw_end_object(w);
    cli_print_json(w);
    ffu_jw_destroy(w);
}

static void summary_text(ffu_pipeline *p)
{
    const ffu_gallery *g = ffu_pipeline_gallery(p);
    ffu_pipeline_stats ps;
    ffu_pipeline_stats_get(p, &ps);
    for (int i = 0; i < ffu_pipeline_stream_count(p); i++) {
        ffu_pipeline_stream_stats s;
        ffu_pipeline_stream_stats_get(p, i, &s);
        char note[160];
        printf("%s: %lld frames, %lld tracks, %lld unknown", s.name, (long long)s.frames,
               (long long)s.tracks, (long long)s.unknown);
        int ids[256];
        int n = ffu_pipeline_stream_identities(p, i, ids, 256);
        printf(", identities:");
        if (!n)
            printf(" none");
        for (int k = 0; k < n && k < 256; k++)
            printf("%s %s", k ? "," : "", g ? ffu_gallery_name(g, ids[k]) : "?");
        if (s.status)
            printf(" [failed: %s]", s.error);
        else if (s.frames && !s.tracks &&
                 cli_small_faces_note(s.min_face, s.health.width, s.health.height, 1, note,
                                      sizeof note))
            printf(" (%s)", note);
        printf("\n");
    }
    printf("%.1f s; detector runs %lld (%lld frames), embedder runs %lld (%lld faces, %lld with "
           "several streams)\n",
           ps.wall_s, (long long)ps.detect_runs, (long long)ps.detect_items,
           (long long)ps.embed_runs, (long long)ps.embed_items,
           (long long)ps.cross_stream_embed_runs);
    if (ps.on_gpu)
        printf("GPU: %lld frames analysed in device memory, %lld downloaded, %lld faces "
               "searched on the GPU\n", (long long)ps.gpu_frames, (long long)ps.host_downloads,
               (long long)ps.gpu_searches);
}

static int run_analyze(const cli_command *cmd, int argc, char **argv)
{
    analyze_opts o;
    int npos = 0, done = 0;
    int hwaccel_given = cli_arg_given(argc, argv, "hwaccel");
    int hw_device_given = cli_arg_given(argc, argv, "hw-device");
    int rc = cli_parse(cmd, analyze_options, &o, argc, argv, &npos, &done);
    if (rc || done) {
        ffu_options_free(analyze_options, &o);
        return rc;
    }
    ffu_pipeline *p = NULL;
    const char **ann = NULL; /* per input: its --annotate output, or NULL */
    status_line sl = {0, 0};
    /* positional arguments are inputs too */
    for (int i = 0; i < npos; i++)
        ffu_options_set(analyze_options, &o, "input", argv[i]);
    if (o.inputs.count == 0) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "no input (use --input FILE|URL)");
        goto out;
    }
    if (o.names.count > o.inputs.count) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "%d --name for %d --input",
                          o.names.count, o.inputs.count);
        goto out;
    }
    if (o.annotate.count > 1 && o.annotate.count != o.inputs.count) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE,
                          "%d --annotate for %d --input (give one per input, or one directory "
                          "or {name} pattern)", o.annotate.count, o.inputs.count);
        goto out;
    }
    for (int i = 0; i < o.inputs.count; i++) {
        struct stat st;
        if (!is_url(o.inputs.items[i]) && stat(o.inputs.items[i], &st) != 0) {
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_NOT_FOUND, "input %s: %s",
                              o.inputs.items[i], strerror(errno));
            goto out;
        }
    }
    if (o.watchlist) {
        struct stat st;
        if (stat(o.watchlist, &st) != 0) {
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_NOT_FOUND, "watchlist %s: %s", o.watchlist,
                              strerror(errno));
            goto out;
        }
    }
    /* output folders made or refused now, naming the option, before the models load (the
     * pipeline makes them too, for library callers) */
    const char *dirs[2] = {o.heatmap, o.snapshots}, *flags[2] = {"--heatmap", "--snapshots"};
    for (int i = 0; i < 2; i++)
        if (dirs[i] && ffu_dir_make(dirs[i]) < 0) {
            rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_FAILURE, "%s %s", flags[i],
                              ffu_error_message());
            goto out;
        }
    if (o.events && (rc = cli_check_data_output(cmd, &o.common, "--events", o.events))) goto out;
    /* every input's annotated output, resolved and checked once, before the models load */
    char ann_buf[4096];
    if (!(ann = calloc((size_t)o.inputs.count, sizeof *ann))) {
        rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
        goto out;
    }
    for (int i = 0; i < o.inputs.count; i++)
        if ((rc = annotate_checked(cmd, &o, i, ann_buf, sizeof ann_buf, &ann[i]))) goto out;
    ffu_pipeline_opts po;
    ffu_pipeline_opts_default(&po);
    po.sample_fps = o.fps;
    po.watchlist = o.watchlist;
    po.zones = o.zones;
    po.events_path = o.events;
    po.snapshot_dir = o.snapshots;
    po.heatmap_dir = o.heatmap;
    po.liveness_gate = (float)o.liveness_gate;
    po.detector = o.detector;
    po.landmarks = o.landmarks;
    po.embedder = o.embedder;
    po.liveness = o.liveness_model;
    po.backend = cli_backend_names[o.backend];
    po.workers = o.workers;
    po.max_batch = o.max_batch;
    po.device = o.device;
    po.fp16 = o.fp16;
    po.bf16 = o.bf16;
    po.host_frames = o.host_frames;
    /* On the GPU, decode on the GPU too unless told otherwise: frames then stay in device
     * memory from NVDEC to the networks (with CPU decoding as auto's fallback). */
    if (!strcmp(po.backend, "cuda")) {
        if (!hwaccel_given) o.hwaccel = FFU_VIDEO_HWACCEL_AUTO;
        if (!hw_device_given) o.hw_device = o.device;
    }
    po.max_wait_ms = o.max_wait_ms;
    po.realtime = o.realtime;
    po.min_face = o.min_face;
    po.dwell_s = o.dwell;
    sl.tty = isatty(2) && !o.common.quiet && !o.common.verbose;
    po.on_progress = print_status;
    po.progress_user = &sl;
    ffu_status st = ffu_pipeline_create(&po, &p);
    if (st) {
        rc = cli_fail(cmd, &o.common, st);
        goto out;
    }
    for (int i = 0; i < o.inputs.count; i++) {
        ffu_pipeline_stream_opts so = {0};
        so.url = o.inputs.items[i];
        so.name = i < o.names.count ? o.names.items[i] : NULL;
        so.loop = o.loop;
        so.hwaccel = o.hwaccel;
        so.hw_device = o.hw_device;
        so.annotate = ann[i];
        if ((st = ffu_pipeline_add_stream(p, &so, NULL))) {
            rc = cli_fail(cmd, &o.common, st);
            goto out;
        }
    }
    atomic_store(&g_pipeline, p);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    st = ffu_pipeline_run(p);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    atomic_store(&g_pipeline, NULL);
    if (sl.tty)
        fputc('\n', stderr);
    if (o.common.json)
        summary_json(p, &o, g_signalled != 0, st);
    else if (!o.common.quiet)
        summary_text(p);
    if (st) {
        fprintf(stderr, "facefuse %s: %s\n", cmd->name, ffu_error_message());
        rc = cli_exit_code(st);
    } else {
        rc = g_signalled ? CLI_EXIT_INTERRUPTED : CLI_EXIT_OK;
    }
out:
    ffu_pipeline_destroy(p);
    free(ann);
    ffu_options_free(analyze_options, &o);
    return rc;
}

const cli_command cli_cmd_analyze = {
    "analyze",
    "track and recognise faces in video files and live streams",
    "facefuse analyze --input A [--input rtsp://B ...] [--watchlist DIR|G.ffgl] [options]",
    "Decodes every input on its own thread, samples --fps frames per second, and runs face\n"
    "detection, tracking, embedding and watchlist matching on one worker pool shared by all\n"
    "streams (model runs are batched across streams). Writes events as JSON lines\n"
    "(face_appeared, identity_confirmed, unknown_face, dwell_alarm, track_ended), face\n"
    "snapshots, per-stream heatmaps and annotated videos. Files end at their end; live\n"
    "sources reconnect until Ctrl-C (events are flushed and videos finished on Ctrl-C or\n"
    "SIGTERM). A live status line is shown on a terminal. See docs/ANALYZE.md.",
    run_analyze,
};
