/* Tests of the analyze pipeline (src/pipeline) on real clips from ../shared/data/videos
 * with a watchlist enrolled from ../shared/data/face_recognition_examples: the right
 * identities are confirmed and no wrong one; a single person gives one track, no
 * identity switch, and unknown_face when not on the watchlist; events JSONL lines parse
 * and carry type/stream/time/track_id; annotated video, heatmaps and snapshots are
 * written and decode; damaged inputs fail cleanly while other streams keep going; two
 * streams together give what each gives alone; stop finishes cleanly. Skips without the
 * shared data or the default models. */
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <unistd.h>

#include "facefuse/face.h"
#include "facefuse/pipeline.h"
#include "facefuse/video.h"
#include "test.h"

#define HAMILTON "data/videos/face_recognition_short_hamilton_clip.mp4"
#define SINGLE "data/videos/liveportrait_driving_d11.mp4"
#define AOC "data/videos/sadtalker_WDA_AlexandriaOcasioCortez_000.mp4"
#define PHOTOS "data/face_recognition_examples"

static char gallery_file[256]; /* the watchlist, enrolled once by the first test */
static int models_missing;

/* ---- helpers ----------------------------------------------------------------------- */

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* A watchlist directory: one sub-directory per person of identities.csv, holding links
 * to that person's single-face photos. Returns 0 on success. */
static int make_watchlist_dir(const char *photos, const char *dir)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/identities.csv", photos);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fclose(f);
        return -1;
    }
    char line[1024];
    int row = 0, linked = 0;
    while (fgets(line, sizeof line, f)) {
        if (row++ == 0)
            continue; /* header: path,identities,n_faces_expected,notes */
        char *save = NULL;
        char *rel = strtok_r(line, ",", &save);
        char *who = strtok_r(NULL, ",", &save);
        char *nf = strtok_r(NULL, ",\n", &save);
        if (!rel || !who || !nf || strchr(who, ';') || strcmp(nf, "1") != 0)
            continue;
        char pdir[1024], src[1024], dst[1200];
        snprintf(pdir, sizeof pdir, "%s/%s", dir, who);
        mkdir(pdir, 0777);
        snprintf(src, sizeof src, "%s/%s", photos, rel);
        const char *base = strrchr(rel, '/');
        snprintf(dst, sizeof dst, "%s/%d_%s", pdir, row, base ? base + 1 : rel);
        if (symlink(src, dst) == 0)
            linked++;
    }
    fclose(f);
    return linked > 0 ? 0 : -1;
}

typedef struct ev {
    int type, stream, track_id, identity;
    double time;
    char name[128];
    int has_snapshot;
} ev;

typedef struct collector {
    pthread_mutex_t mu;
    ev *v;
    int n, cap;
    ffu_pipeline *stop_after_first; /* stop this pipeline at the first face_appeared */
} collector;

static void collect(void *user, int stream, const char *stream_name, const ffu_track_event *e)
{
    collector *c = user;
    (void)stream_name;
    pthread_mutex_lock(&c->mu);
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        ev *nv = realloc(c->v, (size_t)cap * sizeof *nv);
        if (!nv) {
            pthread_mutex_unlock(&c->mu);
            return;
        }
        c->v = nv;
        c->cap = cap;
    }
    ev *o = &c->v[c->n++];
    memset(o, 0, sizeof *o);
    o->type = e->type;
    o->stream = stream;
    o->track_id = e->track_id;
    o->identity = e->identity;
    o->time = e->time;
    snprintf(o->name, sizeof o->name, "%s", e->name ? e->name : "");
    o->has_snapshot = e->snapshot && file_exists(e->snapshot);
    if (e->type == FFU_EVENT_FACE_APPEARED && c->stop_after_first)
        ffu_pipeline_stop(c->stop_after_first);
    pthread_mutex_unlock(&c->mu);
}

static int count_events(const collector *c, int stream, int type)
{
    int n = 0;
    for (int i = 0; i < c->n; i++)
        n += c->v[i].stream == stream && c->v[i].type == type;
    return n;
}

/* Default options with the shared watchlist and the collector. */
static void base_opts(ffu_pipeline_opts *o, collector *c)
{
    ffu_pipeline_opts_default(o);
    o->watchlist = gallery_file[0] ? gallery_file : NULL;
    o->on_event = collect;
    o->user = c;
    o->workers = 2;
}

/* Creates the pipeline; sets models_missing (and returns NULL) when the default models
 * are not installed. */
static ffu_pipeline *create(const ffu_pipeline_opts *o)
{
    ffu_pipeline *p = NULL;
    ffu_status st = ffu_pipeline_create(o, &p);
    if (st == FFU_ERR_NOT_FOUND && strstr(ffu_error_message(), "model"))
        models_missing = 1;
    else if (st)
        fprintf(stderr, "ffu_pipeline_create: %s\n", ffu_error_message());
    return p;
}

/* Identities confirmed on one stream, as a sorted, comma-joined string of names. */
static void confirmed_names(const collector *c, int stream, char *out, size_t len)
{
    const char *names[64];
    int n = 0;
    for (int i = 0; i < c->n && n < 64; i++) {
        if (c->v[i].stream != stream || c->v[i].type != FFU_EVENT_IDENTITY_CONFIRMED)
            continue;
        int dup = 0;
        for (int k = 0; k < n && !dup; k++)
            dup = !strcmp(names[k], c->v[i].name);
        if (!dup)
            names[n++] = c->v[i].name;
    }
    for (int i = 1; i < n; i++) /* insertion sort: a handful of names */
        for (int k = i; k > 0 && strcmp(names[k - 1], names[k]) > 0; k--) {
            const char *t = names[k];
            names[k] = names[k - 1];
            names[k - 1] = t;
        }
    out[0] = 0;
    for (int i = 0; i < n; i++)
        snprintf(out + strlen(out), len - strlen(out), "%s%s", i ? "," : "", names[i]);
}

/* Frames and duration of a video file; -1 frames when it does not open. */
static int64_t count_frames(const char *path, double *duration, double *last_pts)
{
    ffu_video_reader *r = NULL;
    if (ffu_video_reader_open(&r, path, NULL))
        return -1;
    *duration = ffu_video_reader_info(r)->duration;
    ffu_image img = {0};
    int64_t n = 0;
    double pts = 0;
    *last_pts = 0;
    while (ffu_video_reader_read(r, &img, &pts) == FFU_OK) {
        n++;
        *last_pts = pts;
    }
    ffu_image_release(&img);
    ffu_video_reader_close(r);
    return n;
}

/* Every line of an events file is one JSON object with type, stream, time, track_id. */
static int check_jsonl(const char *path, int *lines)
{
    size_t size = 0;
    uint8_t *buf = test_read_all(path, &size);
    *lines = 0;
    if (!buf)
        return -1;
    int bad = 0;
    char *s = (char *)buf, *end = s + size;
    while (s < end) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl) {
            bad++; /* every line ends with a newline */
            break;
        }
        ffu_json *j = NULL;
        if (ffu_json_parse(s, (size_t)(nl - s), &j) != FFU_OK ||
            ffu_json_typeof(j) != FFU_JSON_OBJECT ||
            !ffu_json_string(ffu_json_get(j, "type")) ||
            !ffu_json_string(ffu_json_get(j, "stream")) ||
            ffu_json_typeof(ffu_json_get(j, "time")) != FFU_JSON_NUMBER ||
            !ffu_json_is_integer(ffu_json_get(j, "track_id")))
            bad++;
        ffu_json_free(j);
        (*lines)++;
        s = nl + 1;
    }
    free(buf);
    return bad;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_api_errors(void)
{
    ffu_pipeline *p = NULL;
    ffu_pipeline_destroy(NULL);
    ffu_pipeline_stop(NULL);
    CHECK_EQ_INT(ffu_pipeline_create(NULL, NULL), FFU_ERR_INVALID);
    ffu_pipeline_opts o;
    ffu_pipeline_opts_default(&o);
    CHECK_NEAR(o.sample_fps, 5, 0);
    o.max_wait_ms = -1;
    CHECK_EQ_INT(ffu_pipeline_create(&o, &p), FFU_ERR_INVALID);
    CHECK(p == NULL);
    ffu_pipeline_opts_default(&o);
    o.zones = "/nonexistent/zones.json";
    CHECK_EQ_INT(ffu_pipeline_create(&o, &p), FFU_ERR_NOT_FOUND);
    CHECK(strstr(ffu_error_message(), "zones") != NULL);
    const char *dir = test_tmpdir_auto();
    CHECK(dir != NULL);
    char path[256];
    snprintf(path, sizeof path, "%s/bad_zones.json", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("{\"zones\": [{\"name\": \"door\", \"polygon\": [[0, 0], [10, 0]]}]}", f);
    fclose(f);
    o.zones = path;
    ffu_status st = ffu_pipeline_create(&o, &p);
    CHECK(st == FFU_ERR_FORMAT || st == FFU_ERR_NOT_FOUND); /* NOT_FOUND: no models */
    if (st == FFU_ERR_FORMAT)
        CHECK(strstr(ffu_error_message(), "zones") != NULL);
    ffu_pipeline_opts_default(&o);
    o.watchlist = "/nonexistent/watchlist.ffgl";
    o.workers = 1;
    CHECK(ffu_pipeline_create(&o, &p) < 0);
    CHECK(p == NULL);
    CHECK(strstr(ffu_error_message(), "/nonexistent/") || strstr(ffu_error_message(), "model"));
}

static char ham_names[512];
static int64_t ham_tracks, single_tracks, single_unknown;

static void test_hamilton(void)
{
    char vid[512], photos[512];
    if (!test_shared_path(HAMILTON, vid, sizeof vid) || !test_shared_path(PHOTOS, photos, sizeof photos))
        TEST_SKIP("no ../shared/data");
    const char *dir = test_tmpdir_auto();
    CHECK(dir != NULL);
    /* enrol the watchlist directory once, and keep it as a gallery file for the others */
    char wl[256];
    snprintf(wl, sizeof wl, "%s/watchlist", dir);
    CHECK(make_watchlist_dir(photos, wl) == 0);
    collector c = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL};
    ffu_pipeline_opts o;
    base_opts(&o, &c);
    o.watchlist = wl;
    char events[256], snaps[256], heat[256], out[256];
    snprintf(events, sizeof events, "%s/hamilton.jsonl", dir);
    snprintf(snaps, sizeof snaps, "%s/snapshots", dir);
    snprintf(heat, sizeof heat, "%s/heatmaps", dir);
    snprintf(out, sizeof out, "%s/{name}_annotated.mp4", dir);
    o.events_path = events;
    o.snapshot_dir = snaps;
    o.heatmap_dir = heat;
    ffu_pipeline *p = create(&o);
    if (!p && models_missing)
        TEST_SKIP("default face models not installed (scripts/setup)");
    CHECK(p != NULL);
    const ffu_gallery *g = ffu_pipeline_gallery(p);
    CHECK(g != NULL);
    CHECK(ffu_gallery_find(g, "Lin-Manuel Miranda") >= 0);
    CHECK(ffu_gallery_find(g, "Barack Obama") >= 0);
    snprintf(gallery_file, sizeof gallery_file, "%s/watchlist.ffgl", dir);
    CHECK_EQ_INT(ffu_gallery_save(g, gallery_file), FFU_OK);

    ffu_pipeline_stream_opts so = {.url = vid, .name = "hamilton", .annotate = out};
    int idx = -1;
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &so, &idx), FFU_OK);
    CHECK_EQ_INT(idx, 0);
    CHECK_EQ_INT(ffu_pipeline_run(p), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_run(p), FFU_ERR_INVALID); /* once */
    ffu_pipeline_stream_stats s;
    CHECK_EQ_INT(ffu_pipeline_stream_stats_get(p, 0, &s), FFU_OK);
    CHECK(s.finished);
    CHECK_EQ_INT(s.status, FFU_OK);
    CHECK(s.frames > 10);
    CHECK(s.embeddings > 0);
    /* the smallest face looked for: what the default detector says of the clip's frames */
    ffu_video_reader *vr = NULL;
    ffu_detector *det = NULL;
    ffu_detector_opts dopts;
    ffu_detector_opts_default(&dopts);
    ffu_pixfmt fmt;
    int vw = 0, vh = 0;
    float side = 0;
    CHECK_EQ_INT(ffu_video_reader_open(&vr, vid, NULL), FFU_OK);
    ffu_video_reader_output(vr, &fmt, &vw, &vh);
    ffu_video_reader_close(vr);
    CHECK_EQ_INT(ffu_detector_create(&dopts, &det), FFU_OK);
    CHECK_EQ_INT(ffu_detector_smallest_face(det, vw, vh, &side), FFU_OK);
    ffu_detector_destroy(det);
    CHECK(side > 0 && s.min_face == side);
    printf("  hamilton: %lld frames, %lld faces, %lld embeddings, %lld tracks; ms detect %.0f "
           "track %.1f embed %.0f\n",
           (long long)s.frames, (long long)s.faces, (long long)s.embeddings, (long long)s.tracks,
           s.detect_ms, s.track_ms, s.embed_ms);

    /* identities: the clip shows Lin-Manuel Miranda singing (wide shot, then close-ups),
     * Alex Lacamoire at the piano (a face of ~25 px) and the audience with Barack Obama
     * (in profile). Lin-Manuel Miranda must be confirmed, nobody else on the watchlist
     * may be. */
    confirmed_names(&c, 0, ham_names, sizeof ham_names);
    printf("  confirmed: %s\n", ham_names);
    CHECK(strstr(ham_names, "Lin-Manuel Miranda") != NULL);
    for (int i = 0; i < c.n; i++)
        if (c.v[i].type == FFU_EVENT_IDENTITY_CONFIRMED) {
            CHECK(!strcmp(c.v[i].name, "Lin-Manuel Miranda") ||
                  !strcmp(c.v[i].name, "Alex Lacamoire") || !strcmp(c.v[i].name, "Barack Obama"));
            CHECK(c.v[i].has_snapshot);
        }
    ham_tracks = s.tracks;
    CHECK_EQ_INT(count_events(&c, 0, FFU_EVENT_FACE_APPEARED), s.tracks);
    /* every confirmed track ends (flush at the end of the file) */
    CHECK_EQ_INT(count_events(&c, 0, FFU_EVENT_TRACK_ENDED), s.tracks);
    int ids[8];
    CHECK(ffu_pipeline_stream_identities(p, 0, ids, 8) >= 1);

    /* the events file: one parseable object per event */
    int lines = 0;
    CHECK_EQ_INT(check_jsonl(events, &lines), 0);
    CHECK_EQ_INT(lines, c.n);

    /* annotated video: every analysed frame, as long as the input's video (the
     * container's duration may be the audio's) */
    char ann[256];
    snprintf(ann, sizeof ann, "%s/hamilton_annotated.mp4", dir);
    double dur = 0, last = 0, in_dur = 0, in_last = 0;
    int64_t frames = count_frames(ann, &dur, &last);
    CHECK_EQ_INT(frames, s.frames);
    CHECK(count_frames(vid, &in_dur, &in_last) > 0);
    printf("  annotated: %lld frames, %.3f s (input video %.3f s)\n", (long long)frames, dur,
           in_last);
    CHECK_NEAR(last, s.last_pts, 0.05);
    CHECK_NEAR(dur, in_last, 1.0 / 5 + 0.1);

    /* heatmaps at frame size */
    char hp[600];
    ffu_image img = {0};
    snprintf(hp, sizeof hp, "%s/hamilton.png", heat);
    CHECK_EQ_INT(ffu_image_load(hp, FFU_PIX_RGB24, &img), FFU_OK);
    CHECK_EQ_INT(img.width, s.health.width > 0 ? s.health.width : img.width);
    ffu_image_release(&img);
    snprintf(hp, sizeof hp, "%s/hamilton_overlay.png", heat);
    CHECK(file_exists(hp));

    ffu_pipeline_stats ps;
    ffu_pipeline_stats_get(p, &ps);
    CHECK_EQ_INT(ps.frames, s.frames);
    CHECK(ps.embed_runs > 0 && ps.embed_items >= ps.embed_runs);
    ffu_pipeline_destroy(p);
    free(c.v);
}

/* One person, not on the watchlist: one track, unknown_face, no identity; a zone over
 * the whole frame raises a dwell alarm. */
static void run_single(const char *rel, const char *name)
{
    char vid[512];
    if (!test_shared_path(rel, vid, sizeof vid) || !gallery_file[0])
        TEST_SKIP("no ../shared/data or no watchlist");
    const char *dir = test_tmpdir_auto();
    char zones[256];
    snprintf(zones, sizeof zones, "%s/zones.json", dir);
    FILE *f = fopen(zones, "w");
    CHECK(f != NULL);
    fputs("{\"zones\": [{\"name\": \"all\", \"polygon\": [[0,0],[5000,0],[5000,5000],[0,5000]],"
          " \"dwell\": 1.5}]}",
          f);
    fclose(f);
    collector c = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL};
    ffu_pipeline_opts o;
    base_opts(&o, &c);
    o.zones = zones;
    ffu_pipeline *p = create(&o);
    CHECK(p != NULL);
    ffu_pipeline_stream_opts so = {.url = vid, .name = name};
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &so, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_run(p), FFU_OK);
    ffu_pipeline_stream_stats s;
    CHECK_EQ_INT(ffu_pipeline_stream_stats_get(p, 0, &s), FFU_OK);
    printf("  %s: %lld frames, %lld faces, %lld tracks, %lld unknown, %lld identities\n", name,
           (long long)s.frames, (long long)s.faces, (long long)s.tracks, (long long)s.unknown,
           (long long)s.identities);
    CHECK(s.frames > 10);
    CHECK_EQ_INT(s.tracks, 1);
    CHECK_EQ_INT(count_events(&c, 0, FFU_EVENT_FACE_APPEARED), 1);
    CHECK_EQ_INT(count_events(&c, 0, FFU_EVENT_IDENTITY_CONFIRMED), 0);
    CHECK_EQ_INT(count_events(&c, 0, FFU_EVENT_UNKNOWN_FACE), 1);
    CHECK_EQ_INT(count_events(&c, 0, FFU_EVENT_TRACK_ENDED), 1);
    CHECK(count_events(&c, 0, FFU_EVENT_DWELL_ALARM) >= 1);
    int tid = -1;
    for (int i = 0; i < c.n; i++) {
        if (tid < 0)
            tid = c.v[i].track_id;
        CHECK_EQ_INT(c.v[i].track_id, tid); /* one track id throughout */
    }
    single_tracks = s.tracks;
    single_unknown = s.unknown;
    ffu_pipeline_destroy(p);
    free(c.v);
}

static void test_single_person(void) { run_single(SINGLE, "single"); }
static void test_talking_head(void) { run_single(AOC, "aoc"); }

/* Writes the first `frames` frames of src into an MKV at path (streamable: a cut copy
 * still decodes up to the cut). Returns the frames written. */
static int write_mkv(const char *src, const char *path, int frames)
{
    ffu_video_reader *r = NULL;
    if (ffu_video_reader_open(&r, src, NULL))
        return -1;
    const ffu_video_info *in = ffu_video_reader_info(r);
    ffu_video_writer_opts wo = {.width = in->width & ~1, .height = in->height & ~1,
                                .fps_num = in->fps_num, .fps_den = in->fps_den,
                                .preset = "ultrafast", .threads = 1};
    ffu_video_writer *w = NULL;
    int n = 0;
    if (ffu_video_writer_open(&w, path, &wo) == FFU_OK) {
        ffu_image img = {0}, view;
        double pts;
        while (n < frames && ffu_video_reader_read(r, &img, &pts) == FFU_OK &&
               ffu_image_view(&view, &img, 0, 0, wo.width, wo.height) == FFU_OK &&
               ffu_video_writer_write(w, &view, pts) == FFU_OK)
            n++;
        ffu_image_release(&img);
        if (ffu_video_writer_close(w) != FFU_OK)
            n = -1;
    }
    ffu_video_reader_close(r);
    return n;
}

/* A file cut in the middle (an MP4 without its index, an MKV mid-cluster), a garbage
 * file and a missing one beside a good clip: the bad ones fail with a reason (the cut
 * MKV after analysing what could be decoded), the good one is analysed completely. */
static void test_damaged_inputs(void)
{
    char vid[512], good[512];
    if (!test_shared_path(HAMILTON, vid, sizeof vid) || !test_shared_path(SINGLE, good, sizeof good) ||
        !gallery_file[0])
        TEST_SKIP("no ../shared/data or no watchlist");
    const char *dir = test_tmpdir_auto();
    size_t size = 0;
    uint8_t *data = test_read_all(vid, &size);
    CHECK(data != NULL && size > 1000);
    char trunc[256], junk[256];
    snprintf(trunc, sizeof trunc, "%s/truncated.mp4", dir);
    snprintf(junk, sizeof junk, "%s/garbage.mp4", dir);
    FILE *f = fopen(trunc, "wb");
    CHECK(f != NULL);
    fwrite(data, 1, size / 2, f);
    fclose(f);
    uint64_t seed = 7;
    for (size_t i = 0; i < size; i++)
        data[i] = (uint8_t)test_rand_u64(&seed);
    f = fopen(junk, "wb");
    CHECK(f != NULL);
    fwrite(data, 1, 100000, f);
    fclose(f);
    free(data);

    collector c = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL};
    ffu_pipeline_opts o;
    base_opts(&o, &c);
    ffu_pipeline *p = create(&o);
    CHECK(p != NULL);
    char missing[256];
    snprintf(missing, sizeof missing, "%s/missing.mp4", dir);
    char mkv[256], cut[256];
    snprintf(mkv, sizeof mkv, "%s/whole.mkv", dir);
    snprintf(cut, sizeof cut, "%s/cut.mkv", dir);
    CHECK_EQ_INT(write_mkv(vid, mkv, 90), 90);
    data = test_read_all(mkv, &size);
    CHECK(data != NULL);
    f = fopen(cut, "wb");
    CHECK(f != NULL);
    fwrite(data, 1, size * 6 / 10, f);
    fclose(f);
    free(data);
    ffu_pipeline_stream_opts s0 = {.url = trunc}, s1 = {.url = junk}, s2 = {.url = good},
                             s3 = {.url = missing}, s4 = {.url = cut};
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &s0, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &s1, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &s2, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &s3, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &s4, NULL), FFU_OK);
    ffu_status st = ffu_pipeline_run(p);
    CHECK(st < 0);
    printf("  run: %s\n", ffu_error_message());
    CHECK(strstr(ffu_error_message(), "stream ") != NULL);
    ffu_pipeline_stream_stats s;
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(ffu_pipeline_stream_stats_get(p, i, &s), FFU_OK);
        printf("  %s: status %d (%s), %lld frames\n", s.name, s.status, s.error,
               (long long)s.frames);
        CHECK(s.finished);
        if (i == 4) {
            /* a stream cut mid-cluster looks like an early end to the demuxer (no index
             * to check against): either way the frames before the cut are analysed */
            CHECK(s.status == FFU_OK || s.status == FFU_ERR_FORMAT);
            CHECK(s.frames >= 3 && s.frames < 18);
        } else if (i == 2) {
            CHECK_EQ_INT(s.status, FFU_OK);
            CHECK_EQ_INT(s.tracks, single_tracks);
            CHECK_EQ_INT(s.unknown, single_unknown);
        } else {
            CHECK(s.status < 0);
            CHECK(s.error[0] != 0);
        }
    }
    CHECK_EQ_INT(ffu_pipeline_stream_stats_get(p, 3, &s), FFU_OK);
    CHECK_EQ_INT(s.status, FFU_ERR_NOT_FOUND);

    ffu_pipeline_destroy(p);
    free(c.v);
}

/* Hamilton and a single-person clip at once: each stream's identities and tracks are
 * what it gives alone, and the embedder ran faces of both streams in one batch. */
static void test_two_streams(void)
{
    char vid[512], single[512];
    if (!test_shared_path(HAMILTON, vid, sizeof vid) ||
        !test_shared_path(SINGLE, single, sizeof single) || !ham_names[0] || !single_tracks)
        TEST_SKIP("no ../shared/data or the single-stream runs did not run");
    collector c = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL};
    ffu_pipeline_opts o;
    base_opts(&o, &c);
    ffu_pipeline *p = create(&o);
    CHECK(p != NULL);
    ffu_pipeline_stream_opts a = {.url = vid, .name = "hamilton"}, b = {.url = single};
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &a, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &b, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_run(p), FFU_OK);
    char names[512];
    confirmed_names(&c, 0, names, sizeof names);
    CHECK_STR(names, ham_names);
    confirmed_names(&c, 1, names, sizeof names);
    CHECK_STR(names, "");
    ffu_pipeline_stream_stats s;
    CHECK_EQ_INT(ffu_pipeline_stream_stats_get(p, 0, &s), FFU_OK);
    CHECK_EQ_INT(s.tracks, ham_tracks);
    CHECK_EQ_INT(ffu_pipeline_stream_stats_get(p, 1, &s), FFU_OK);
    CHECK_STR(s.name, "liveportrait_driving_d11");
    CHECK_EQ_INT(s.tracks, single_tracks);
    CHECK_EQ_INT(s.unknown, single_unknown);
    ffu_pipeline_stats ps;
    ffu_pipeline_stats_get(p, &ps);
    printf("  detect runs %lld for %lld frames (%lld cross-stream), embed runs %lld for %lld "
           "faces (%lld cross-stream), %.2f s\n",
           (long long)ps.detect_runs, (long long)ps.detect_items,
           (long long)ps.cross_stream_detect_runs, (long long)ps.embed_runs,
           (long long)ps.embed_items, (long long)ps.cross_stream_embed_runs, ps.wall_s);
    CHECK(ps.cross_stream_embed_runs + ps.cross_stream_detect_runs > 0);
    ffu_pipeline_destroy(p);
    free(c.v);
}

/* Stop from an event callback (as a signal handler would): run returns soon, trackers
 * are flushed and the annotated video is finished and decodes. */
static void test_stop(void)
{
    char vid[512];
    if (!test_shared_path(AOC, vid, sizeof vid) || !gallery_file[0])
        TEST_SKIP("no ../shared/data or no watchlist");
    const char *dir = test_tmpdir_auto();
    collector c = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0, NULL};
    ffu_pipeline_opts o;
    base_opts(&o, &c);
    char events[256], out[256];
    snprintf(events, sizeof events, "%s/stop.jsonl", dir);
    snprintf(out, sizeof out, "%s/stop.mkv", dir);
    o.events_path = events;
    ffu_pipeline *p = create(&o);
    CHECK(p != NULL);
    c.stop_after_first = p;
    ffu_pipeline_stream_opts so = {.url = vid, .annotate = out};
    CHECK_EQ_INT(ffu_pipeline_add_stream(p, &so, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_pipeline_run(p), FFU_OK);
    ffu_pipeline_stream_stats s;
    CHECK_EQ_INT(ffu_pipeline_stream_stats_get(p, 0, &s), FFU_OK);
    printf("  stopped after %lld frames\n", (long long)s.frames);
    CHECK(s.finished);
    CHECK(s.frames >= 2 && s.frames < 30); /* the clip has far more at 5 fps */
    CHECK_EQ_INT(count_events(&c, 0, FFU_EVENT_TRACK_ENDED), 1);
    double dur, last;
    CHECK_EQ_INT(count_frames(out, &dur, &last), s.frames);
    int lines = 0;
    CHECK_EQ_INT(check_jsonl(events, &lines), 0);
    CHECK_EQ_INT(lines, c.n);
    ffu_pipeline_destroy(p);
    free(c.v);
}

TEST_MAIN(test_api_errors, test_hamilton, test_single_person, test_talking_head,
          test_damaged_inputs, test_two_streams, test_stop)
