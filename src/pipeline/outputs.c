/* What the analyze pipeline writes: events (JSONL lines and the user's callback, with
 * the identity's name and a snapshot file filled in), best-face snapshots, the annotated
 * video (boxes, track ids, names, dwell times, zones; H.264 with the source's audio)
 * and the per-stream heatmaps. Everything here runs on the worker that owns the
 * stream's tracker at the time (or on the feeder at the end of a stream), so per-stream
 * state needs no lock; the events file is shared and has its own mutex. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_internal.h"

static const ffu_class outputs_class = {"pipeline", NULL};
static const ffu_class *const pl_log = &outputs_class;

ffu_status pl_error_context(ffu_status st, const char *label, const char *path)
{
    char msg[512]; /* a copy: the detail buffer is rewritten by ffu_error_set */
    snprintf(msg, sizeof msg, "%s", ffu_error_message());
    const char *m = msg;
    size_t pl = path ? strlen(path) : 0;
    if (pl && !strncmp(m, path, pl) && m[pl] == ':')
        for (m += pl + 1; *m == ' '; m++) {
        }
    if (path)
        return ffu_error_set(st, "%s %s: %s", label, path, m);
    return ffu_error_set(st, "%s: %s", label, m);
}

/* ---- snapshots --------------------------------------------------------------------- */

static pl_crop *find_crop(pl_stream *ps, int track_id)
{
    for (int i = 0; i < ps->ncrops; i++)
        if (ps->crops[i].track_id == track_id)
            return &ps->crops[i];
    return NULL;
}

static void drop_crop(pl_stream *ps, pl_crop *c)
{
    ffu_image_release(&c->img);
    *c = ps->crops[--ps->ncrops];
}

int pl_crop_wanted(pl_stream *ps, int track_id, float quality)
{
    if (!ps->p->snapshot_dir || track_id < 0)
        return 0;
    pl_crop *c = find_crop(ps, track_id);
    return !c || quality > c->quality;
}

void pl_crop_offer(pl_stream *ps, int track_id, const ffu_image *img, const ffu_face *face,
                   float quality)
{
    if (!ps->p->snapshot_dir || track_id < 0)
        return;
    pl_crop *c = find_crop(ps, track_id);
    if (c && !(quality > c->quality))
        return;
    if (!c) {
        if (ps->ncrops == ps->crops_cap) {
            int cap = ps->crops_cap ? ps->crops_cap * 2 : 8;
            pl_crop *nc = realloc(ps->crops, (size_t)cap * sizeof *nc);
            if (!nc)
                return; /* a missing snapshot is not worth failing a frame */
            ps->crops = nc;
            ps->crops_cap = cap;
        }
        c = &ps->crops[ps->ncrops++];
        memset(c, 0, sizeof *c);
        c->track_id = track_id;
        c->quality = -INFINITY;
    }
    /* the face with a margin of 30% of its size on every side, inside the image */
    float m = 0.3f;
    int x0 = (int)floorf(face->box[0] - m * face->box[2]);
    int y0 = (int)floorf(face->box[1] - m * face->box[3]);
    int x1 = (int)ceilf(face->box[0] + (1 + m) * face->box[2]);
    int y1 = (int)ceilf(face->box[1] + (1 + m) * face->box[3]);
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > img->width ? img->width : x1;
    y1 = y1 > img->height ? img->height : y1;
    if (x1 - x0 < 2 || y1 - y0 < 2)
        return;
    ffu_image view, copy = {0};
    if (ffu_image_view(&view, img, x0, y0, x1 - x0, y1 - y0) || ffu_image_clone(&copy, &view))
        return;
    ffu_image_release(&c->img);
    c->img = copy;
    c->quality = quality;
}

void pl_crop_merge(pl_stream *ps, int from, int into)
{
    pl_crop *f = find_crop(ps, from);
    if (!f)
        return;
    pl_crop *t = find_crop(ps, into);
    if (t && t->quality >= f->quality) {
        drop_crop(ps, f);
        return;
    }
    if (t)
        drop_crop(ps, t);
    f = find_crop(ps, from); /* drop_crop may have moved it */
    if (f)
        f->track_id = into;
}

void pl_crops_free(pl_stream *ps)
{
    for (int i = 0; i < ps->ncrops; i++)
        ffu_image_release(&ps->crops[i].img);
    free(ps->crops);
    ps->crops = NULL;
    ps->ncrops = ps->crops_cap = 0;
}

/* File-name-safe copy of s. */
static void safe_name(const char *s, char *out, size_t len)
{
    size_t k = 0;
    for (; s && *s && k + 1 < len; s++)
        out[k++] = ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                    (*s >= '0' && *s <= '9') || *s == '-' || *s == '.')
                       ? *s
                       : '_';
    out[k] = 0;
}

/* Writes the track's kept crop; path gets the file name ("" when there is none). */
static void save_snapshot(pl_stream *ps, const ffu_track_event *e, const char *who, char *path,
                          size_t len)
{
    path[0] = 0;
    pl_crop *c = find_crop(ps, e->track_id);
    if (!c || !c->img.data[0])
        return;
    char sn[128], wn[128];
    safe_name(ps->name, sn, sizeof sn);
    safe_name(who, wn, sizeof wn);
    snprintf(path, len, "%s/%s-t%d-%s-%.0fms.jpg", ps->p->snapshot_dir, sn, e->track_id, wn,
             e->time * 1000);
    if (ffu_image_save(path, &c->img, 90) != FFU_OK) {
        FFU_LOG(&pl_log, FFU_LOG_WARN, "%s: snapshot %s: %s", ps->name, path, ffu_error_message());
        path[0] = 0;
    }
}

/* ---- events ------------------------------------------------------------------------ */

static void add_identity(pl_stream *ps, int id)
{
    for (int i = 0; i < ps->nids; i++)
        if (ps->ids[i] == id)
            return;
    if (ps->nids == ps->ids_cap) {
        int cap = ps->ids_cap ? ps->ids_cap * 2 : 8;
        int *n = realloc(ps->ids, (size_t)cap * sizeof *n);
        if (!n)
            return;
        ps->ids = n;
        ps->ids_cap = cap;
    }
    ps->ids[ps->nids++] = id;
}

void pl_on_track_event(void *user, const ffu_track_event *e0)
{
    pl_stream *ps = user;
    ffu_pipeline *p = ps->p;
    ffu_track_event e = *e0;
    char snap[1200];
    snap[0] = 0;
    if ((e.type == FFU_EVENT_IDENTITY_CONFIRMED || e.type == FFU_EVENT_TRACK_ENDED) &&
        p->gallery && e.identity >= 0)
        e.name = ffu_gallery_name(p->gallery, e.identity);
    if (p->snapshot_dir &&
        (e.type == FFU_EVENT_IDENTITY_CONFIRMED || e.type == FFU_EVENT_UNKNOWN_FACE)) {
        save_snapshot(ps, &e, e.name ? e.name : "unknown", snap, sizeof snap);
        if (snap[0])
            e.snapshot = snap;
    }
    if (e.type == FFU_EVENT_TRACK_ENDED) {
        pl_crop *c = find_crop(ps, e.track_id);
        if (c)
            drop_crop(ps, c);
    }
    pthread_mutex_lock(&p->smu);
    ps->st.events++;
    p->stats.events++;
    if (e.type == FFU_EVENT_FACE_APPEARED)
        ps->st.tracks++;
    else if (e.type == FFU_EVENT_IDENTITY_CONFIRMED) {
        ps->st.identities++;
        add_identity(ps, e.identity);
    } else if (e.type == FFU_EVENT_UNKNOWN_FACE)
        ps->st.unknown++;
    pthread_mutex_unlock(&p->smu);
    if (p->events) {
        pthread_mutex_lock(&p->ev_mu);
        ffu_jw_reset(p->jw);
        size_t len = 0;
        const char *text = NULL;
        if (ffu_track_event_write_json(&e, ps->name, p->jw) == FFU_OK)
            text = ffu_jw_text(p->jw, &len);
        if (text) {
            fwrite(text, 1, len, p->events);
            fputc('\n', p->events);
        }
        pthread_mutex_unlock(&p->ev_mu);
    }
    if (p->o.on_event)
        p->o.on_event(p->o.user, ps->index, ps->name, &e);
}

void pl_events_flush(ffu_pipeline *p)
{
    if (!p->events)
        return;
    pthread_mutex_lock(&p->ev_mu);
    fflush(p->events);
    pthread_mutex_unlock(&p->ev_mu);
}

/* ---- annotated video and heatmaps -------------------------------------------------- */

ffu_status pl_outputs_begin(pl_stream *ps, const ffu_image *frame)
{
    ffu_pipeline *p = ps->p;
    ffu_status st;
    if (p->heatmap_dir) {
        if ((st = ffu_heatmap_create(frame->width, frame->height, 0, 0, &ps->hm)) ||
            (st = ffu_image_clone(&ps->first, frame)))
            return pl_error_context(st, "heatmap", NULL);
    }
    if (!ps->annotate)
        return FFU_OK;
    int w = frame->width & ~1, h = frame->height & ~1;
    if (w < 2 || h < 2)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "annotated video: frames of %dx%d are too small",
                             frame->width, frame->height);
    ffu_video_info info;
    ffu_stream_info(ps->s, &info);
    ffu_video_writer_opts wo;
    memset(&wo, 0, sizeof wo);
    wo.width = w;
    wo.height = h;
    /* The source's rate keeps every sampled frame's pts exact (the file is variable
     * frame rate: one frame per sample); unknown rates use the sampling rate. */
    if (info.fps_num > 0 && info.fps_den > 0) {
        wo.fps_num = info.fps_num;
        wo.fps_den = info.fps_den;
    } else {
        double f = p->o.sample_fps > 0 ? p->o.sample_fps : 25;
        wo.fps_num = (int)lround(f * 1000);
        wo.fps_den = 1000;
    }
    wo.preset = "veryfast";
    wo.threads = 1;
    wo.audio_from = pl_stream_is_file(ps) && info.has_audio ? ps->url : NULL;
    if ((st = ffu_video_writer_open(&ps->w, ps->annotate, &wo)))
        return pl_error_context(st, "annotated video", ps->annotate);
    ffu_video_writer_set_metadata(ps->w, "comment", "annotated by facefuse analyze");
    if ((st = ffu_image_create(&ps->canvas, FFU_PIX_RGB24, frame->width, frame->height)))
        return st;
    return FFU_OK;
}

static const ffu_color c_known = {40, 220, 60, 255}, c_unknown = {240, 140, 20, 255},
                       c_pending = {230, 230, 230, 255}, c_text = {0, 0, 0, 255},
                       c_zone = {250, 220, 0, 255};

/* Zone outlines from the zones document (validated at create). */
static void draw_zones(const ffu_json *zones, ffu_image *img, int thick)
{
    const ffu_json *arr = ffu_json_typeof(zones) == FFU_JSON_ARRAY ? zones : ffu_json_get(zones, "zones");
    for (size_t i = 0; i < ffu_json_len(arr); i++) {
        const ffu_json *z = ffu_json_at(arr, i);
        const ffu_json *poly = ffu_json_get(z, "polygon");
        int n = (int)ffu_json_len(poly);
        if (n < 3 || n > 256)
            continue;
        int xy[512];
        for (int k = 0; k < n; k++) {
            xy[2 * k] = (int)lround(ffu_json_number(ffu_json_at(ffu_json_at(poly, (size_t)k), 0), 0));
            xy[2 * k + 1] = (int)lround(ffu_json_number(ffu_json_at(ffu_json_at(poly, (size_t)k), 1), 0));
        }
        ffu_draw_polyline(img, xy, n, 1, thick, c_zone);
        const char *name = ffu_json_string(ffu_json_get(z, "name"));
        if (name)
            ffu_draw_text(img, xy[0] + 3, xy[1] + 3, name, thick, c_zone, NULL);
    }
}

ffu_status pl_annotate(pl_stream *ps, const ffu_image *frame, double pts)
{
    ffu_pipeline *p = ps->p;
    ffu_status st = ffu_image_copy(frame, &ps->canvas);
    if (st)
        return st;
    int scale = frame->height >= 900 ? 2 : 1;
    int thick = frame->height >= 900 ? 3 : 2;
    if (p->zones)
        draw_zones(p->zones, &ps->canvas, scale);
    int n = ffu_tracker_tracks(ps->t, NULL, 0);
    if (n > ps->tracks_cap) {
        ffu_track_info *nt = realloc(ps->tracks, (size_t)n * sizeof *nt);
        if (!nt)
            return ffu_error_set(FFU_ERR_NOMEM, "annotation (%d tracks)", n);
        ps->tracks = nt;
        ps->tracks_cap = n;
    }
    n = ffu_tracker_tracks(ps->t, ps->tracks, ps->tracks_cap);
    for (int i = 0; i < n && i < ps->tracks_cap; i++) {
        const ffu_track_info *t = &ps->tracks[i];
        /* tracks seen in this frame; tentative ones have no id worth showing yet */
        if (t->state != FFU_TRACK_CONFIRMED || t->misses > 0)
            continue;
        const char *who = NULL;
        ffu_color c = c_pending;
        if (t->identity >= 0 && p->gallery) {
            who = ffu_gallery_name(p->gallery, t->identity);
            c = c_known;
        } else if (t->unknown) {
            who = "unknown";
            c = c_unknown;
        }
        char label[200];
        snprintf(label, sizeof label, "#%d %s%s%.1fs", t->id, who ? who : "", who ? " " : "",
                 t->dwell);
        int x = (int)lroundf(t->box[0]), y = (int)lroundf(t->box[1]);
        ffu_draw_rect(&ps->canvas, x, y, (int)lroundf(t->box[2]), (int)lroundf(t->box[3]), thick, c);
        ffu_draw_label(&ps->canvas, x, y, label, scale, c_text, c);
    }
    char head[200];
    snprintf(head, sizeof head, "%s  %.2f s", ps->name, pts);
    ffu_color bg = {0, 0, 0, 255}, fg = {255, 255, 255, 255};
    ffu_draw_text(&ps->canvas, 4, 4, head, scale, fg, &bg);
    ffu_image view;
    int w = frame->width & ~1, h = frame->height & ~1;
    if ((st = ffu_image_view(&view, &ps->canvas, 0, 0, w, h)))
        return st;
    return ffu_video_writer_write(ps->w, &view, pts);
}

/* The heatmap at frame size, and blended over the first frame (more heat, more
 * colour; cold cells leave the frame visible). */
static ffu_status write_heatmaps(pl_stream *ps)
{
    ffu_pipeline *p = ps->p;
    ffu_image small = {0}, big = {0};
    ffu_status st = ffu_heatmap_render(ps->hm, &small);
    if (!st)
        st = ffu_image_create(&big, FFU_PIX_RGB24, ps->width, ps->height);
    if (!st)
        st = ffu_image_resize(&small, &big, FFU_INTERP_BILINEAR);
    char sn[128], path[1200];
    safe_name(ps->name, sn, sizeof sn);
    if (!st) {
        snprintf(path, sizeof path, "%s/%s.png", p->heatmap_dir, sn);
        st = ffu_image_save(path, &big, 0);
    }
    if (!st && ps->first.data[0]) {
        for (int y = 0; y < ps->height; y++) {
            uint8_t *o = ps->first.data[0] + (size_t)y * ps->first.stride[0];
            const uint8_t *hrow = big.data[0] + (size_t)y * big.stride[0];
            for (int x = 0; x < ps->width; x++) {
                const uint8_t *hp = hrow + 3 * x;
                int mx = hp[0] > hp[1] ? hp[0] : hp[1];
                mx = mx > hp[2] ? mx : hp[2];
                int a = mx * 170 / 255; /* at most 2/3 heat */
                for (int k = 0; k < 3; k++)
                    o[3 * x + k] = (uint8_t)((o[3 * x + k] * (255 - a) + hp[k] * a + 127) / 255);
            }
        }
        snprintf(path, sizeof path, "%s/%s_overlay.png", p->heatmap_dir, sn);
        st = ffu_image_save(path, &ps->first, 0);
    }
    if (st)
        st = pl_error_context(st, "heatmap", path);
    ffu_image_release(&small);
    ffu_image_release(&big);
    return st;
}

ffu_status pl_outputs_end(pl_stream *ps)
{
    ffu_status st = FFU_OK;
    if (ps->w) {
        ffu_video_writer *w = ps->w;
        ps->w = NULL;
        if (ps->writer_failed)
            ffu_video_writer_abort(w);
        else if ((st = ffu_video_writer_close(w)))
            st = pl_error_context(st, "annotated video", ps->annotate);
    }
    if (ps->hm && ps->width > 0) {
        ffu_status hs = write_heatmaps(ps);
        if (!st)
            st = hs;
    }
    return st;
}
