/* Everything a track learns from embeddings: its smoothed feature, re-identification
 * of lost tracks (at update time and when a new track gets its first embedding), and
 * identity voting over a K-of-N window with hysteresis (docs/TRACK.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "track_internal.h"

static float track_cosine(const float *a, const float *b, int dim)
{
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < dim; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    if (!(aa > 0) || !(bb > 0)) return 0;
    return (float)(ab / sqrt(aa * bb));
}

static int embedding_ok(const ffu_face *f)
{
    if (f->embedding_dim <= 0 || f->embedding_dim > FFU_FACE_MAX_EMBED) return 0;
    double n = 0;
    for (int i = 0; i < f->embedding_dim; i++) {
        if (!isfinite(f->embedding[i])) return 0;
        n += (double)f->embedding[i] * f->embedding[i];
    }
    return n > 0;
}

/* Exponential moving average of unit embeddings (JDE / FairMOT keep features the same
 * way), renormalised so cosine similarities stay comparable. */
void track_feature_add(ffu_tracker *t, track *tr, const ffu_face *f)
{
    if (!embedding_ok(f)) return;
    int dim = f->embedding_dim;
    double n = 0;
    for (int i = 0; i < dim; i++)
        n += (double)f->embedding[i] * f->embedding[i];
    float inv = (float)(1.0 / sqrt(n));
    float m = tr->feat_dim == dim ? t->o.feature_momentum : 0.0f;
    double nn = 0;
    for (int i = 0; i < dim; i++) {
        tr->feat[i] = m * tr->feat[i] + (1 - m) * f->embedding[i] * inv;
        nn += (double)tr->feat[i] * tr->feat[i];
    }
    if (nn > 0) {
        float s = (float)(1.0 / sqrt(nn));
        for (int i = 0; i < dim; i++)
            tr->feat[i] *= s;
    }
    tr->feat_dim = dim;
    tr->embeddings++;
    tr->last_embed_time = tr->last_seen;
    float q = ffu_track_face_quality(f, t->o.quality_ref_px);
    if (q > tr->best_embed_quality) tr->best_embed_quality = q;
}

/* Position gate for re-identification: the detection's reference point must lie
 * within (reid_gate + reid_gate_per_s * gap) box heights of where the lost track was
 * last seen. The last observation, not the Kalman prediction: over seconds the
 * constant-velocity extrapolation is a guess, while people mostly stop or turn. */
static int track_reid_gate(const ffu_tracker *t, const track *lost, const float box[4], double time)
{
    double gap = time - lost->last_seen;
    if (gap < 0 || gap > t->o.reid_max_gap_s) return 0;
    float lb[4], xy[2];
    track_box(lost, lb);
    track_ref_point(t, box, xy);
    double h = fmax(lb[3], box[3]);
    double allowed = h * (t->o.reid_gate + t->o.reid_gate_per_s * gap);
    return hypot(xy[0] - lost->last_xy[0], xy[1] - lost->last_xy[1]) <= allowed;
}

/* The lost (or, this update, unmatched confirmed) track most similar to f's embedding
 * among those passing the gate and reid_threshold; greedy: a frame rarely holds more
 * than one or two unexplained faces, so an optimal assignment buys nothing. */
ffu_status track_reid_candidates(ffu_tracker *t, double time, const ffu_face *f, int exclude_id,
                                 track **found, float *sim)
{
    *found = NULL;
    *sim = 0;
    if (!embedding_ok(f)) return FFU_OK;
    float best = -2;
    for (int i = 0; i < t->ntracks; i++) {
        track *tr = t->tracks[i];
        if (tr->id == exclude_id || tr->matched || tr->feat_dim != f->embedding_dim) continue;
        if (tr->state != FFU_TRACK_LOST && tr->state != FFU_TRACK_CONFIRMED) continue;
        if (!track_reid_gate(t, tr, f->box, time)) continue;
        float s = track_cosine(tr->feat, f->embedding, f->embedding_dim);
        if (s >= t->o.reid_threshold && s > best) {
            best = s;
            *found = tr;
        }
    }
    if (*found) *sim = best;
    return FFU_OK;
}

ffu_status ffu_tracker_set_embedding(ffu_tracker *t, int track_id, const ffu_face *face,
                                     int *merged_id)
{
    if (merged_id) *merged_id = -1;
    if (!t || !face) return ffu_error_set(FFU_ERR_INVALID, "tracker: NULL argument");
    if (!embedding_ok(face))
        return ffu_error_set(FFU_ERR_INVALID, "tracker %s: face has no usable embedding (dim %d)",
                             t->name, face->embedding_dim);
    track *tr = track_find(t, track_id);
    if (!tr) return ffu_error_set(FFU_ERR_NOT_FOUND, "tracker %s: no track %d", t->name, track_id);
    track_feature_add(t, tr, face);
    float q = ffu_track_face_quality(face, t->o.quality_ref_px);
    if (q >= tr->best_quality) { /* the same face as the best one, now with its embedding */
        tr->best = *face;
        tr->best.landmarks = NULL;
        tr->best.num_landmarks = 0;
        tr->best_quality = q;
        tr->best_time = tr->last_seen;
    }
    if (merged_id) *merged_id = tr->id;
    if (tr->state != FFU_TRACK_TENTATIVE) return FFU_OK;

    /* A face that has just appeared may be someone we lost a moment ago. */
    track *lost = NULL;
    for (int i = 0; i < t->ntracks; i++) {
        track *c = t->tracks[i];
        if (c == tr || c->state != FFU_TRACK_LOST || c->feat_dim != face->embedding_dim) continue;
        if (c->last_seen >= tr->first_seen) continue; /* seen together: two people */
        float box[4];
        track_box(tr, box);
        if (!track_reid_gate(t, c, box, tr->last_seen)) continue;
        float s = track_cosine(c->feat, face->embedding, face->embedding_dim);
        if (s >= t->o.reid_threshold &&
            (!lost || s > track_cosine(lost->feat, face->embedding, face->embedding_dim)))
            lost = c;
    }
    if (!lost) return FFU_OK;
    FFU_LOG(t, FFU_LOG_DEBUG, "new track %d is lost track %d", tr->id, lost->id);
    double prev_seen = lost->last_seen;
    lost->kf = tr->kf;
    lost->hits += tr->hits;
    lost->consecutive = tr->consecutive;
    lost->misses = 0;
    lost->matched = tr->matched;
    lost->last_seen = tr->last_seen;
    lost->score = tr->score;
    lost->last_quality = tr->last_quality;
    lost->path_length +=
        hypotf(tr->last_xy[0] - lost->last_xy[0], tr->last_xy[1] - lost->last_xy[1]);
    lost->last_xy[0] = tr->last_xy[0];
    lost->last_xy[1] = tr->last_xy[1];
    if (tr->best_quality > lost->best_quality) {
        lost->best = tr->best;
        lost->best_quality = tr->best_quality;
        lost->best_time = tr->best_time;
    }
    track_feature_add(t, lost, face);
    track_zone_observe(t, lost, prev_seen, lost->last_seen);
    lost->state = FFU_TRACK_CONFIRMED;
    tr->state = FFU_TRACK_ENDED; /* never confirmed: no event; memory reused at the next update */
    if (merged_id) *merged_id = lost->id;
    return FFU_OK;
}

/* ---- voting --------------------------------------------------------------------------- */

typedef struct tally {
    int count;
    double sim_sum, weighted;
} tally;

static tally count_votes(const track *tr, int identity)
{
    tally r = {0, 0, 0};
    for (int i = 0; i < tr->nvotes; i++) {
        const vote_slot *s = &tr->votes[i];
        if (s->identity != identity) continue;
        r.count++;
        r.sim_sum += s->similarity;
        r.weighted += (double)s->weight * s->similarity;
    }
    return r;
}

/* K of N with hysteresis. Undecided: an identity with K hits in the window is
 * confirmed (ties by weighted similarity). Confirmed A: B replaces A only when B has K
 * hits and more hits than A in the same window, so a single flicker vote never
 * switches, and unknown or abstained votes never revoke A. Unknown: K unknown votes
 * while undecided report unknown_face once. */
static ffu_status decide(ffu_tracker *t, track *tr, double time)
{
    int K = t->o.vote_hits, cur = tr->identity;
    int best_id = -1;
    tally best = {0, 0, 0};
    for (int i = 0; i < tr->nvotes; i++) {
        int id = tr->votes[i].identity;
        if (id < 0 || id == cur || id == best_id) continue;
        tally c = count_votes(tr, id);
        if (c.count > best.count || (c.count == best.count && c.weighted > best.weighted)) {
            best = c;
            best_id = id;
        }
    }
    if (best_id >= 0 && best.count >= K && (cur < 0 || best.count > count_votes(tr, cur).count)) {
        ffu_track_event e;
        track_event_init(t, tr, FFU_EVENT_IDENTITY_CONFIRMED, time, &e);
        e.identity = best_id;
        e.previous_identity = cur;
        e.similarity = (float)(best.sim_sum / best.count);
        e.votes = best.count;
        tr->identity = best_id;
        tr->identity_similarity = e.similarity;
        tr->unknown = 0;
        FFU_LOG(t, FFU_LOG_DEBUG, "track %d is identity %d (was %d, %d votes, similarity %.3f)",
                tr->id, best_id, cur, best.count, e.similarity);
        return track_emit(t, &e);
    }
    if (cur >= 0) {
        tally c = count_votes(tr, cur);
        if (c.count) tr->identity_similarity = (float)(c.sim_sum / c.count);
    }
    if (cur < 0 && !tr->unknown) {
        tally u = count_votes(tr, -1);
        if (u.count >= K) {
            tr->unknown = 1;
            ffu_track_event e;
            track_event_init(t, tr, FFU_EVENT_UNKNOWN_FACE, time, &e);
            e.identity = -1;
            e.similarity = (float)(u.sim_sum / u.count);
            e.votes = u.count;
            return track_emit(t, &e);
        }
    }
    return FFU_OK;
}

ffu_status ffu_tracker_vote(ffu_tracker *t, int track_id, double time, const ffu_track_vote *v)
{
    if (!t || !v) return ffu_error_set(FFU_ERR_INVALID, "tracker: NULL argument");
    if (v->identity < -1 || (v->identity >= 0 && !isfinite(v->similarity)) || !isfinite(time))
        return ffu_error_set(FFU_ERR_INVALID, "tracker %s: bad vote (identity %d, similarity %g)",
                             t->name, v->identity, v->similarity);
    track *tr = track_find(t, track_id);
    if (!tr) return ffu_error_set(FFU_ERR_NOT_FOUND, "tracker %s: no track %d", t->name, track_id);
    if (t->o.liveness_gate > 0 && !(v->liveness >= t->o.liveness_gate)) {
        tr->rejected_votes++;
        return FFU_OK;
    }
    float q = isfinite(v->quality) ? fminf(fmaxf(v->quality, 0.0f), 1.0f) : tr->last_quality;
    int id = v->identity >= 0 && v->similarity >= t->o.id_threshold ? v->identity : -1;
    float m = 1.0f;
    if (id >= 0 && isfinite(v->second))
        m = fminf(fmaxf((v->similarity - v->second) / t->o.margin_full, 0.0f), 1.0f);
    float w = q * m;
    vote_slot s = {w >= t->o.min_vote_weight ? id : -2, isfinite(v->similarity) ? v->similarity : 0,
                   w};
    int N = t->o.vote_window;
    tr->votes[tr->vote_pos] = s;
    tr->vote_pos = (tr->vote_pos + 1) % N;
    if (tr->nvotes < N) tr->nvotes++;
    if (tr->state == FFU_TRACK_TENTATIVE) return FFU_OK; /* decided once the track is born */
    return decide(t, tr, time);
}
