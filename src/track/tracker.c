/* The per-stream tracker: Kalman prediction, ByteTrack-style two-stage association,
 * track birth/death, update-time re-identification, best-face bookkeeping and the
 * embedding schedule. Identity voting lives in identity.c, zones in zone.c. The
 * stages follow ByteTrack's update (docs/TRACK.md lists the differences). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "face/face_internal.h"
#include "track_internal.h"

static const char *tracker_item_name(const void *obj) { return ((const ffu_tracker *)obj)->name; }
static const ffu_class tracker_class = {"tracker", tracker_item_name};

void ffu_tracker_opts_default(ffu_tracker_opts *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->high_thresh = 0.5f;
    o->low_thresh = 0.1f;
    o->new_track_thresh = 0.6f;
    o->match_iou = 0.2f;
    o->low_match_iou = 0.5f;
    o->tentative_match_iou = 0.3f;
    o->fuse_score = 1;
    o->min_hits = 2;
    o->max_age = 30;
    o->max_lost_s = 0;
    o->kf_std_pos = 1.0f / 20.0f;
    o->kf_std_vel = 1.0f / 160.0f;
    o->kf_ref_dt = 1.0 / 30.0;
    o->reid_threshold = 0.5f;
    o->reid_max_gap_s = 3.0;
    o->reid_gate = 2.0f;
    o->reid_gate_per_s = 1.0f;
    o->feature_momentum = 0.9f;
    o->quality_ref_px = 80.0f;
    o->embed_margin = 0.1f;
    o->embed_interval_s = 2.0;
    o->vote_window = 5;
    o->vote_hits = 3;
    o->id_threshold = 0.0f;
    o->margin_full = 0.1f;
    o->min_vote_weight = 0.2f;
    o->liveness_gate = 0.0f;
    o->dwell_s = 0;
    o->zone_gap_s = 1.0;
    o->zone_point = FFU_TRACK_POINT_CENTER;
}

static int in01(float v) { return v >= 0.0f && v <= 1.0f; }

static ffu_status check_opts(const ffu_tracker_opts *o)
{
#define BAD(...) return ffu_error_set(FFU_ERR_INVALID, "tracker: " __VA_ARGS__)
    if (!in01(o->high_thresh) || !in01(o->low_thresh) || o->low_thresh > o->high_thresh)
        BAD("need 0 <= low_thresh (%g) <= high_thresh (%g) <= 1", o->low_thresh, o->high_thresh);
    if (!in01(o->new_track_thresh)) BAD("new_track_thresh %g not in [0, 1]", o->new_track_thresh);
    if (!in01(o->match_iou) || !in01(o->low_match_iou) || !in01(o->tentative_match_iou))
        BAD("IoU thresholds must lie in [0, 1]");
    if (o->min_hits < 1 || o->min_hits > 1000) BAD("min_hits %d not in [1, 1000]", o->min_hits);
    if (o->max_age < 0) BAD("max_age %d < 0", o->max_age);
    if (!(o->max_lost_s >= 0)) BAD("max_lost_s must be >= 0");
    if (!(o->kf_std_pos > 0) || !(o->kf_std_vel > 0) || !(o->kf_ref_dt > 0) ||
        !isfinite(o->kf_std_pos) || !isfinite(o->kf_std_vel) || !isfinite(o->kf_ref_dt))
        BAD("Kalman weights and kf_ref_dt must be positive");
    if (!(o->reid_threshold <= 1.0f) || !(o->reid_max_gap_s >= 0) || !(o->reid_gate >= 0) ||
        !(o->reid_gate_per_s >= 0))
        BAD("re-id options out of range");
    if (!in01(o->feature_momentum)) BAD("feature_momentum %g not in [0, 1]", o->feature_momentum);
    if (!(o->quality_ref_px > 0)) BAD("quality_ref_px must be > 0");
    if (!(o->embed_margin >= 0) || !(o->embed_interval_s >= 0)) BAD("embed schedule out of range");
    if (o->vote_window < 1 || o->vote_window > FFU_TRACK_MAX_WINDOW)
        BAD("vote_window %d not in [1, %d]", o->vote_window, FFU_TRACK_MAX_WINDOW);
    if (o->vote_hits < 1 || o->vote_hits > o->vote_window)
        BAD("vote_hits %d not in [1, vote_window %d]", o->vote_hits, o->vote_window);
    if (!(o->id_threshold <= 1.0f) || !(o->margin_full > 0) || !(o->min_vote_weight >= 0) ||
        !(o->liveness_gate >= 0 && o->liveness_gate <= 1))
        BAD("identity options out of range");
    if (!(o->dwell_s >= 0) || !(o->zone_gap_s >= 0)) BAD("dwell options must be >= 0");
    if (o->zone_point != FFU_TRACK_POINT_CENTER && o->zone_point != FFU_TRACK_POINT_FOOT)
        BAD("zone_point %d unknown", (int)o->zone_point);
#undef BAD
    return FFU_OK;
}

ffu_status ffu_tracker_create(const ffu_tracker_opts *o, ffu_tracker **out)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "tracker: out is NULL");
    *out = NULL;
    ffu_tracker_opts def;
    if (!o) {
        ffu_tracker_opts_default(&def);
        o = &def;
    }
    ffu_status st = check_opts(o);
    if (st < 0) return st;
    ffu_tracker *t = calloc(1, sizeof *t);
    if (!t) return ffu_error_set(FFU_ERR_NOMEM, "tracker: out of memory");
    t->cls = &tracker_class;
    t->o = *o;
    t->name = strdup(o->name ? o->name : "stream");
    if (!t->name) {
        free(t);
        return ffu_error_set(FFU_ERR_NOMEM, "tracker: out of memory");
    }
    t->o.name = t->name;
    t->next_id = 1;
    *out = t;
    return FFU_OK;
}

static void track_free(track *tr)
{
    if (!tr) return;
    free(tr->feat);
    free(tr);
}

void ffu_tracker_destroy(ffu_tracker *t)
{
    if (!t) return;
    for (int i = 0; i < t->ntracks; i++)
        track_free(t->tracks[i]);
    for (int i = 0; i < t->nspare; i++)
        track_free(t->spare[i]);
    free(t->tracks);
    free(t->spare);
    track_zones_free(t);
    free(t->events);
    free(t->cost);
    free(t->row_match);
    free(t->col_match);
    free(t->det_class);
    free(t->hi);
    free(t->lo);
    free(t->det_tr);
    free(t->pool);
    free(t->hu_u);
    free(t->hu_v);
    free(t->hu_minv);
    free(t->hu_p);
    free(t->hu_way);
    free(t->hu_used);
    free(t->name);
    free(t);
}

/* ---- Kalman filter ------------------------------------------------------------------- */

/* Noise weights are ByteTrack's, per step of kf_ref_dt; a step of dt is dt/ref_dt
 * reference steps, so variances scale by that ratio and velocities are per second. */
static void track_kf_init(ffu_tracker *t, kf_state *kf, const float box[4])
{
    double h = box[3], wp = t->o.kf_std_pos, wv = t->o.kf_std_vel, ref = t->o.kf_ref_dt;
    double z[4] = {box[0] + box[2] * 0.5, box[1] + box[3] * 0.5, box[2] / box[3], box[3]};
    for (int i = 0; i < 4; i++) {
        double sp = i == 2 ? 1e-2 : 2 * wp * h;
        double sv = i == 2 ? 1e-5 / ref : 10 * wv * h / ref;
        kf->d[i] = (kf_dim){z[i], 0, sp * sp, 0, sv * sv};
    }
}

static void kf_predict(const ffu_tracker *t, kf_state *kf, double dt, int hold_height)
{
    if (hold_height) kf->d[3].v = 0; /* ByteTrack: lost tracks do not keep growing */
    if (!(dt > 0)) return;
    double h = fmax(kf->d[3].x, 1.0), wp = t->o.kf_std_pos, wv = t->o.kf_std_vel;
    double ref = t->o.kf_ref_dt, steps = dt / ref;
    for (int i = 0; i < 4; i++) {
        kf_dim *d = &kf->d[i];
        double sp = i == 2 ? 1e-2 : wp * h, sv = i == 2 ? 1e-5 / ref : wv * h / ref;
        d->x += d->v * dt;
        d->p00 += 2 * dt * d->p01 + dt * dt * d->p11 + steps * sp * sp;
        d->p01 += dt * d->p11;
        d->p11 += steps * sv * sv;
    }
    if (kf->d[3].x < 1) kf->d[3].x = 1;
    if (kf->d[2].x < 1e-3) kf->d[2].x = 1e-3;
}

static void kf_update(const ffu_tracker *t, kf_state *kf, const float box[4])
{
    double h = fmax(kf->d[3].x, 1.0), wp = t->o.kf_std_pos;
    double z[4] = {box[0] + box[2] * 0.5, box[1] + box[3] * 0.5, box[2] / box[3], box[3]};
    for (int i = 0; i < 4; i++) {
        kf_dim *d = &kf->d[i];
        double r = i == 2 ? 1e-1 : wp * h;
        double s = d->p00 + r * r, k0 = d->p00 / s, k1 = d->p01 / s, y = z[i] - d->x;
        d->x += k0 * y;
        d->v += k1 * y;
        double p00 = d->p00, p01 = d->p01;
        d->p00 = (1 - k0) * p00;
        d->p01 = (1 - k0) * p01;
        d->p11 -= k1 * p01;
    }
}

void track_box(const track *tr, float box[4])
{
    double h = tr->kf.d[3].x, w = tr->kf.d[2].x * h;
    box[0] = (float)(tr->kf.d[0].x - w * 0.5);
    box[1] = (float)(tr->kf.d[1].x - h * 0.5);
    box[2] = (float)w;
    box[3] = (float)h;
}

void track_ref_point(const ffu_tracker *t, const float box[4], float xy[2])
{
    xy[0] = box[0] + box[2] * 0.5f;
    xy[1] = t->o.zone_point == FFU_TRACK_POINT_FOOT ? box[1] + box[3] : box[1] + box[3] * 0.5f;
}

/* ---- lookup and info ------------------------------------------------------------------- */

track *track_find(const ffu_tracker *t, int id)
{
    for (int i = 0; i < t->ntracks; i++)
        if (t->tracks[i]->id == id && t->tracks[i]->state != FFU_TRACK_ENDED) return t->tracks[i];
    return NULL;
}

static void track_info_fill(const track *tr, ffu_track_info *o)
{
    memset(o, 0, sizeof *o);
    o->id = tr->id;
    o->state = tr->state;
    track_box(tr, o->box);
    o->velocity[0] = (float)tr->kf.d[0].v;
    o->velocity[1] = (float)tr->kf.d[1].v;
    o->age = tr->age;
    o->hits = tr->hits;
    o->misses = tr->misses;
    o->first_seen = tr->first_seen;
    o->last_seen = tr->last_seen;
    o->score = tr->score;
    o->best_quality = tr->best_quality;
    o->identity = tr->identity;
    o->identity_similarity = tr->identity_similarity;
    o->unknown = tr->unknown;
    o->embeddings = tr->embeddings;
    o->rejected_votes = tr->rejected_votes;
    o->path_length = tr->path_length;
    o->dwell = tr->last_seen - tr->first_seen;
}

int ffu_tracker_tracks(const ffu_tracker *t, ffu_track_info *out, int cap)
{
    if (!t) return 0;
    int n = 0;
    for (int i = 0; i < t->ntracks; i++) {
        if (t->tracks[i]->state == FFU_TRACK_ENDED) continue;
        if (out && n < cap) track_info_fill(t->tracks[i], &out[n]);
        n++;
    }
    return n;
}

ffu_status ffu_tracker_track(const ffu_tracker *t, int track_id, ffu_track_info *out)
{
    if (out) memset(out, 0, sizeof *out);
    if (!t || !out) return ffu_error_set(FFU_ERR_INVALID, "tracker: NULL argument");
    const track *tr = track_find(t, track_id);
    if (!tr) return ffu_error_set(FFU_ERR_NOT_FOUND, "tracker %s: no track %d", t->name, track_id);
    track_info_fill(tr, out);
    return FFU_OK;
}

const ffu_face *ffu_tracker_best_face(const ffu_tracker *t, int track_id, double *time_seen)
{
    if (time_seen) *time_seen = 0;
    if (!t) return NULL;
    const track *tr = track_find(t, track_id);
    if (!tr || !(tr->best_quality >= 0)) return NULL;
    if (time_seen) *time_seen = tr->best_time;
    return &tr->best;
}

const ffu_track_event *ffu_tracker_events(const ffu_tracker *t, int *count)
{
    if (count) *count = t ? t->nevents : 0;
    return t && t->nevents ? t->events : NULL;
}

float ffu_track_face_quality(const ffu_face *f, float ref_px)
{
    if (!f) return 0;
    if (isfinite(f->quality.score)) return fminf(fmaxf(f->quality.score, 0.0f), 1.0f);
    float side = fminf(f->box[2], f->box[3]);
    float size = ref_px > 0 ? side / ref_px : 1.0f;
    size = fminf(fmaxf(size, 0.0f), 1.0f);
    float s = isfinite(f->score) ? fminf(fmaxf(f->score, 0.0f), 1.0f) : 0.0f;
    return s * size;
}

/* ---- track lifecycle --------------------------------------------------------------------- */

static track *track_new(ffu_tracker *t)
{
    if (t->ntracks == t->cap_tracks) {
        int cap = t->cap_tracks ? t->cap_tracks * 2 : 16;
        track **a = realloc(t->tracks, (size_t)cap * sizeof *a);
        if (!a) return NULL;
        t->tracks = a;
        t->cap_tracks = cap;
    }
    track *tr;
    if (t->nspare) {
        tr = t->spare[--t->nspare];
        float *feat = tr->feat;
        memset(tr, 0, sizeof *tr);
        tr->feat = feat;
    } else {
        tr = calloc(1, sizeof *tr);
        if (!tr) return NULL;
        tr->feat = calloc(FFU_FACE_MAX_EMBED, sizeof *tr->feat);
        if (!tr->feat) {
            free(tr);
            return NULL;
        }
    }
    tr->id = t->next_id++;
    tr->identity = FFU_TRACK_IDENTITY_NONE;
    tr->identity_similarity = NAN;
    tr->best_quality = -1;
    tr->best_embed_quality = -1;
    tr->last_embed_time = -INFINITY;
    ffu_face_init(&tr->best);
    t->tracks[t->ntracks++] = tr;
    return tr;
}

/* Removes tracks marked ENDED and keeps their memory for later births. */
static void compact(ffu_tracker *t)
{
    int k = 0;
    for (int i = 0; i < t->ntracks; i++) {
        track *tr = t->tracks[i];
        if (tr->state != FFU_TRACK_ENDED) {
            t->tracks[k++] = tr;
            continue;
        }
        if (t->nspare == t->cap_spare) {
            int cap = t->cap_spare ? t->cap_spare * 2 : 16;
            track **a = realloc(t->spare, (size_t)cap * sizeof *a);
            if (!a) {
                track_free(tr);
                continue;
            }
            t->spare = a;
            t->cap_spare = cap;
        }
        t->spare[t->nspare++] = tr;
    }
    t->ntracks = k;
}

static void update_best(ffu_tracker *t, track *tr, const ffu_face *f, float q, double time)
{
    tr->last_quality = q;
    if (q <= tr->best_quality) return;
    tr->best = *f;
    tr->best.landmarks = NULL; /* owned by the caller's list */
    tr->best.num_landmarks = 0;
    tr->best_quality = q;
    tr->best_time = time;
    (void)t;
}

static ffu_status confirm(ffu_tracker *t, track *tr, double time)
{
    tr->state = FFU_TRACK_CONFIRMED;
    ffu_track_event e;
    track_event_init(t, tr, FFU_EVENT_FACE_APPEARED, time, &e);
    FFU_LOG(t, FFU_LOG_DEBUG, "track %d appeared", tr->id);
    return track_emit(t, &e);
}

/* Applies a matched detection to a track. reinit: restart the filter at the detection
 * (re-identification after a gap, where the old velocity means nothing). */
static ffu_status apply_match(ffu_tracker *t, track *tr, const ffu_face *f, double time, int reinit)
{
    double prev_seen = tr->last_seen;
    if (reinit)
        track_kf_init(t, &tr->kf, f->box);
    else
        kf_update(t, &tr->kf, f->box);
    tr->matched = 1;
    tr->hits++;
    tr->consecutive++;
    tr->misses = 0;
    tr->last_seen = time;
    tr->score = f->score;
    float box[4], xy[2];
    track_box(tr, box);
    track_ref_point(t, box, xy);
    tr->path_length += hypotf(xy[0] - tr->last_xy[0], xy[1] - tr->last_xy[1]);
    tr->last_xy[0] = xy[0];
    tr->last_xy[1] = xy[1];
    update_best(t, tr, f, ffu_track_face_quality(f, t->o.quality_ref_px), time);
    if (f->embedding_dim > 0) track_feature_add(t, tr, f);
    track_zone_observe(t, tr, prev_seen, time);
    ffu_status st = FFU_OK;
    if (tr->state == FFU_TRACK_LOST) tr->state = FFU_TRACK_CONFIRMED;
    if (tr->state == FFU_TRACK_TENTATIVE && tr->consecutive >= t->o.min_hits)
        st = confirm(t, tr, time);
    return st;
}

static ffu_status birth(ffu_tracker *t, const ffu_face *f, double time, track **out)
{
    track *tr = track_new(t);
    if (!tr) return ffu_error_set(FFU_ERR_NOMEM, "tracker %s: out of memory", t->name);
    tr->state = FFU_TRACK_TENTATIVE;
    tr->born_now = 1;
    tr->first_seen = tr->last_seen = time;
    track_kf_init(t, &tr->kf, f->box);
    float box[4];
    track_box(tr, box);
    track_ref_point(t, box, tr->first_xy);
    tr->last_xy[0] = tr->first_xy[0];
    tr->last_xy[1] = tr->first_xy[1];
    tr->hits = 0;
    *out = tr;
    /* apply_match counts the hit, the best face, zones and, with min_hits 1, birth. */
    return apply_match(t, tr, f, time, 1);
}

static ffu_status end_track(ffu_tracker *t, track *tr, double time)
{
    ffu_status st = FFU_OK;
    if (tr->state == FFU_TRACK_CONFIRMED || tr->state == FFU_TRACK_LOST) {
        ffu_track_event e;
        track_event_init(t, tr, FFU_EVENT_TRACK_ENDED, time, &e);
        FFU_LOG(t, FFU_LOG_DEBUG, "track %d ended after %.2f s", tr->id,
                e.last_seen - e.first_seen);
        st = track_emit(t, &e);
    }
    tr->state = FFU_TRACK_ENDED;
    return st;
}

/* ---- update ------------------------------------------------------------------------------ */

static ffu_status scratch(ffu_tracker *t, int ndets, int ntracks)
{
    size_t need = (size_t)(ndets > 0 ? ndets : 1) * (size_t)(ntracks > 0 ? ntracks : 1);
    if (need > t->cap_cost) {
        double *c = realloc(t->cost, need * sizeof *c);
        if (!c) return ffu_error_set(FFU_ERR_NOMEM, "tracker: cost matrix %zu", need);
        t->cost = c;
        t->cap_cost = need;
    }
    int big = ndets > ntracks ? ndets : ntracks;
    if (big > t->cap_dets) {
        int cap = big < 16 ? 16 : big * 2;
#define GROW(p)                                                                                    \
    do {                                                                                           \
        void *q_ = realloc(p, (size_t)cap * sizeof *(p));                                          \
        if (!q_) return ffu_error_set(FFU_ERR_NOMEM, "tracker: scratch for %d", cap);              \
        p = q_;                                                                                    \
    } while (0)
        GROW(t->row_match);
        GROW(t->col_match);
        GROW(t->det_class);
        GROW(t->hi);
        GROW(t->lo);
        GROW(t->det_tr);
        GROW(t->pool);
#undef GROW
        t->cap_dets = cap;
    }
    return FFU_OK;
}

static int det_valid(const ffu_face *f)
{
    return isfinite(f->box[0]) && isfinite(f->box[1]) && isfinite(f->box[2]) &&
           isfinite(f->box[3]) && f->box[2] > 0 && f->box[3] > 0 && isfinite(f->score);
}

/* One association stage: tracks pool[0..np) against detections idx[0..nd) (indices
 * into dets whose det_tr is still NULL), cost 1 - IoU (* score when fused). */
static ffu_status associate(ffu_tracker *t, track **pool, int np, const int *idx, int nd,
                            const ffu_face *dets, float min_iou, int fused, double time)
{
    if (np == 0 || nd == 0) return FFU_OK;
    for (int p = 0; p < np; p++) {
        float pb[4];
        track_box(pool[p], pb);
        for (int k = 0; k < nd; k++) {
            const ffu_face *f = &dets[idx[k]];
            float s = fused ? fminf(fmaxf(f->score, 0.0f), 1.0f) : 1.0f;
            t->cost[(size_t)p * nd + k] = 1.0 - (double)face_box_iou(pb, f->box) * s;
        }
    }
    ffu_status st =
        track_assign(t, t->cost, np, nd, 1.0 - (double)min_iou + 1e-9, t->row_match, t->col_match);
    if (st < 0) return st;
    for (int p = 0; p < np; p++) {
        int k = t->row_match[p];
        if (k < 0) continue;
        t->det_tr[idx[k]] = pool[p];
        if ((st = apply_match(t, pool[p], &dets[idx[k]], time, 0)) < 0) return st;
    }
    return FFU_OK;
}

static int want_embed(const ffu_tracker *t, const track *tr, float q, double time)
{
    if (tr->identity < 0 && !tr->unknown) return 1; /* undecided: fill the vote window */
    if (tr->embeddings == 0) return 1;
    if (q > tr->best_embed_quality + t->o.embed_margin) return 1;
    return time - tr->last_embed_time >= t->o.embed_interval_s;
}

ffu_status ffu_tracker_update(ffu_tracker *t, double time, const ffu_face *dets, int n,
                              ffu_track_result *results)
{
    if (results && n > 0) {
        for (int i = 0; i < n; i++)
            results[i] = (ffu_track_result){-1, FFU_TRACK_ENDED, 0, 0};
    }
    if (!t) return ffu_error_set(FFU_ERR_INVALID, "tracker: NULL tracker");
    if (n < 0 || (n > 0 && !dets))
        return ffu_error_set(FFU_ERR_INVALID, "tracker %s: %d detections at %p", t->name, n,
                             (const void *)dets);
    if (!isfinite(time))
        return ffu_error_set(FFU_ERR_INVALID, "tracker %s: time is not finite", t->name);
    if (t->updates > 0 && time < t->time)
        return ffu_error_set(FFU_ERR_INVALID, "tracker %s: time %.6f before the previous %.6f",
                             t->name, time, t->time);
    t->nevents = 0;
    ffu_status st = scratch(t, n, t->ntracks);
    if (st < 0) return st;

    double dt = t->updates > 0 ? time - t->time : 0;
    for (int i = 0; i < t->ntracks; i++) {
        track *tr = t->tracks[i];
        tr->matched = 0;
        tr->born_now = 0;
        tr->age++;
        kf_predict(t, &tr->kf, dt, tr->state == FFU_TRACK_LOST);
    }
    int nhi = 0, nlo = 0;
    for (int i = 0; i < n; i++) {
        t->det_tr[i] = NULL;
        const ffu_face *f = &dets[i];
        if (!det_valid(f))
            t->det_class[i] = 0;
        else if (f->score >= t->o.high_thresh)
            t->det_class[i] = 2, t->hi[nhi++] = i;
        else if (f->score >= t->o.low_thresh)
            t->det_class[i] = 1, t->lo[nlo++] = i;
        else
            t->det_class[i] = 0;
    }

    /* Stage 1: high detections vs confirmed and lost tracks. */
    int np = 0;
    for (int i = 0; i < t->ntracks; i++)
        if (t->tracks[i]->state == FFU_TRACK_CONFIRMED || t->tracks[i]->state == FFU_TRACK_LOST)
            t->pool[np++] = t->tracks[i];
    if ((st = associate(t, t->pool, np, t->hi, nhi, dets, t->o.match_iou, t->o.fuse_score, time)) <
        0)
        return st;
    /* Stage 2: low detections vs confirmed tracks stage 1 left (ByteTrack's "byte"). */
    int np2 = 0;
    for (int p = 0; p < np; p++)
        if (!t->pool[p]->matched && t->pool[p]->state == FFU_TRACK_CONFIRMED)
            t->pool[np2++] = t->pool[p];
    if ((st = associate(t, t->pool, np2, t->lo, nlo, dets, t->o.low_match_iou, 0, time)) < 0)
        return st;
    /* Stage 3: remaining high detections vs tentative tracks. */
    int nrest = 0;
    for (int k = 0; k < nhi; k++)
        if (!t->det_tr[t->hi[k]]) t->hi[nrest++] = t->hi[k];
    nhi = nrest;
    np = 0;
    for (int i = 0; i < t->ntracks; i++)
        if (t->tracks[i]->state == FFU_TRACK_TENTATIVE) t->pool[np++] = t->tracks[i];
    if ((st = associate(t, t->pool, np, t->hi, nhi, dets, t->o.tentative_match_iou, t->o.fuse_score,
                        time)) < 0)
        return st;
    for (int p = 0; p < np; p++)
        if (!t->pool[p]->matched) t->pool[p]->state = FFU_TRACK_ENDED; /* no event: never born */
    /* Stage 4: re-identify lost tracks by embedding, best score first. */
    nrest = 0;
    for (int k = 0; k < nhi; k++)
        if (!t->det_tr[t->hi[k]]) t->hi[nrest++] = t->hi[k];
    nhi = nrest;
    for (int k = 0; k < nhi; k++) {
        const ffu_face *f = &dets[t->hi[k]];
        if (f->embedding_dim <= 0) continue;
        track *found = NULL;
        float sim = 0;
        if ((st = track_reid_candidates(t, time, f, -1, &found, &sim)) < 0) return st;
        if (!found) continue;
        FFU_LOG(t, FFU_LOG_DEBUG, "track %d re-identified (similarity %.3f)", found->id, sim);
        t->det_tr[t->hi[k]] = found;
        if ((st = apply_match(t, found, f, time, 1)) < 0) return st;
    }
    /* Stage 5: births. */
    for (int k = 0; k < nhi; k++) {
        int i = t->hi[k];
        if (t->det_tr[i] || dets[i].score < t->o.new_track_thresh) continue;
        track *tr = NULL;
        if ((st = birth(t, &dets[i], time, &tr)) < 0) return st;
        t->det_tr[i] = tr;
    }
    /* Stage 6: misses, deaths. */
    for (int i = 0; i < t->ntracks; i++) {
        track *tr = t->tracks[i];
        if (tr->matched || tr->state == FFU_TRACK_ENDED || tr->state == FFU_TRACK_TENTATIVE)
            continue;
        tr->misses++;
        tr->consecutive = 0;
        tr->state = FFU_TRACK_LOST;
        if (tr->misses > t->o.max_age ||
            (t->o.max_lost_s > 0 && time - tr->last_seen > t->o.max_lost_s))
            if ((st = end_track(t, tr, time)) < 0) return st;
    }
    if ((st = track_zones_update(t, time)) < 0) return st;

    if (results) {
        for (int i = 0; i < n; i++) {
            const track *tr = t->det_tr[i];
            if (!tr) continue;
            float q = ffu_track_face_quality(&dets[i], t->o.quality_ref_px);
            results[i].track_id = tr->id;
            results[i].state = tr->state;
            results[i].quality = q;
            results[i].want_embed = t->det_class[i] == 2 && want_embed(t, tr, q, time);
        }
    }
    compact(t);
    t->time = time;
    t->updates++;
    return FFU_OK;
}

ffu_status ffu_tracker_flush(ffu_tracker *t, double time)
{
    if (!t) return ffu_error_set(FFU_ERR_INVALID, "tracker: NULL tracker");
    if (!isfinite(time))
        return ffu_error_set(FFU_ERR_INVALID, "tracker %s: time is not finite", t->name);
    t->nevents = 0;
    ffu_status st = FFU_OK;
    for (int i = 0; i < t->ntracks; i++) {
        ffu_status s = end_track(t, t->tracks[i], time);
        if (s < 0 && st == FFU_OK) st = s;
    }
    compact(t);
    for (int z = 0; z < t->nzones; z++)
        t->zones[z].occ_start = -1, t->zones[z].occ_alarmed = 0;
    if (time > t->time || t->updates == 0) t->time = time;
    return st;
}
