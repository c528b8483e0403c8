/* Track module: synthetic, deterministic scenes. Identity-preserving association
 * (crossing objects, missed detections, ByteTrack's low-score stage), birth and death,
 * re-identification by embedding, the embedding schedule and best face, K-of-N
 * identity voting with hysteresis, unknown faces and the liveness gate, zones and
 * dwell alarms, point-in-polygon edge cases, the heatmap, event JSON, the assignment
 * solver against brute force, and bad arguments. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/facefuse.h"
#include "test.h"
#include "track/track_internal.h"

#define DT 0.2 /* 5 fps, the pipeline's default sampling */
#define EDIM 8

/* Every event any tracker raised, through the callback. */
static ffu_track_event g_ev[8192];
static int g_nev;

static void on_event(void *user, const ffu_track_event *e)
{
    (void)user;
    if (g_nev < (int)(sizeof g_ev / sizeof g_ev[0])) g_ev[g_nev++] = *e;
}

static int count_events(ffu_track_event_type type)
{
    int n = 0;
    for (int i = 0; i < g_nev; i++)
        n += g_ev[i].type == type;
    return n;
}

static const ffu_track_event *find_event(ffu_track_event_type type, int nth)
{
    for (int i = 0; i < g_nev; i++)
        if (g_ev[i].type == type && nth-- == 0) return &g_ev[i];
    return NULL;
}

static ffu_tracker *make(ffu_tracker_opts *o)
{
    ffu_tracker_opts d;
    if (!o) {
        ffu_tracker_opts_default(&d);
        o = &d;
    }
    o->on_event = on_event;
    g_nev = 0;
    ffu_tracker *t = NULL;
    if (ffu_tracker_create(o, &t) < 0) return NULL;
    return t;
}

static void face_at(ffu_face *f, float cx, float cy, float side, float score)
{
    ffu_face_init(f);
    f->box[0] = cx - side / 2;
    f->box[1] = cy - side / 2;
    f->box[2] = side;
    f->box[3] = side;
    f->score = score;
}

/* A unit embedding near axis `who` (a person), perturbed by `noise`. */
static void embed(ffu_face *f, int who, float noise, uint64_t *rng)
{
    f->embedding_dim = EDIM;
    for (int i = 0; i < EDIM; i++)
        f->embedding[i] = noise * (test_rand_f(rng) - 0.5f);
    f->embedding[who % EDIM] += 1.0f;
}

/* ---- association ------------------------------------------------------------------- */

/* Two faces moving towards each other on nearly the same line cross (their boxes
 * overlap almost completely for a frame or two); optionally both are missed around
 * the crossing and one once more afterwards. The ids must not switch. */
static void crossing(int with_misses)
{
    ffu_tracker *t = make(NULL);
    CHECK(t);
    uint64_t rng = 42;
    int id_a = -1, id_b = -1;
    for (int k = 0; k < 30; k++) {
        double time = k * DT;
        float ax = 40 + 60 * (float)time, bx = 400 - 60 * (float)time; /* meet near k = 15 */
        ffu_face d[2];
        int which[2], n = 0;
        int drop_a = with_misses && (k == 14 || k == 15 || k == 18);
        int drop_b = with_misses && (k == 14 || k == 15);
        /* order alternates so nothing can lean on detection order */
        for (int s = 0; s < 2; s++) {
            int obj = (k + s) % 2;
            if (obj == 0 && !drop_a) {
                face_at(&d[n], ax + test_rand_f(&rng) - 0.5f, 100 + test_rand_f(&rng) - 0.5f, 40,
                        0.9f);
                which[n++] = 0;
            } else if (obj == 1 && !drop_b) {
                face_at(&d[n], bx + test_rand_f(&rng) - 0.5f, 106 + test_rand_f(&rng) - 0.5f, 40,
                        0.85f);
                which[n++] = 1;
            }
        }
        ffu_track_result r[2];
        CHECK_EQ_INT(ffu_tracker_update(t, time, d, n, r), FFU_OK);
        for (int i = 0; i < n; i++) {
            CHECK(r[i].track_id > 0);
            int *id = which[i] == 0 ? &id_a : &id_b;
            if (*id < 0) *id = r[i].track_id;
            if (r[i].track_id != *id)
                fprintf(stderr, "frame %d: object %d got id %d, had %d\n", k, which[i],
                        r[i].track_id, *id);
            CHECK_EQ_INT(r[i].track_id, *id);
        }
    }
    CHECK(id_a != id_b);
    CHECK_EQ_INT(count_events(FFU_EVENT_FACE_APPEARED), 2);
    CHECK_EQ_INT(ffu_tracker_tracks(t, NULL, 0), 2);
    ffu_track_info info;
    CHECK_EQ_INT(ffu_tracker_track(t, id_a, &info), FFU_OK);
    CHECK_NEAR(info.velocity[0], 60, 8); /* the filter learnt the motion, px/s */
    CHECK_NEAR(info.velocity[1], 0, 8);
    CHECK_EQ_INT(ffu_tracker_track(t, id_b, &info), FFU_OK);
    CHECK_NEAR(info.velocity[0], -60, 8);
    ffu_tracker_destroy(t);
}

static void test_crossing_keeps_ids(void) { crossing(0); }
static void test_crossing_with_misses_keeps_ids(void) { crossing(1); }

/* The byte stage: a face whose score drops under high_thresh (occlusion, blur) keeps
 * its track through low-score matches; without the stage it would be lost. */
static void test_low_score_second_stage(void)
{
    for (int with_stage = 1; with_stage >= 0; with_stage--) {
        ffu_tracker_opts o;
        ffu_tracker_opts_default(&o);
        if (!with_stage) o.low_thresh = o.high_thresh; /* nothing is "low" */
        ffu_tracker *t = make(&o);
        CHECK(t);
        int id = -1;
        for (int k = 0; k < 15; k++) {
            ffu_face f;
            float score = k >= 5 && k < 10 ? 0.3f : 0.9f;
            face_at(&f, 100 + 5 * k, 200, 50, score);
            ffu_track_result r;
            CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, &r), FFU_OK);
            if (k == 0) id = r.track_id;
            if (k >= 5 && k < 10) {
                if (with_stage) {
                    CHECK_EQ_INT(r.track_id, id);
                    CHECK_EQ_INT(r.state, FFU_TRACK_CONFIRMED);
                    CHECK_EQ_INT(r.want_embed, 0); /* low-score faces are not embedded */
                } else {
                    CHECK_EQ_INT(r.track_id, -1);
                    ffu_track_info info;
                    CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
                    CHECK_EQ_INT(info.state, FFU_TRACK_LOST);
                }
            } else {
                CHECK_EQ_INT(r.track_id, id); /* lost tracks join stage 1 again */
            }
        }
        ffu_track_info info;
        CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
        CHECK_EQ_INT(info.hits, with_stage ? 15 : 10);
        ffu_tracker_destroy(t);
    }
}

static void test_death_after_max_age(void)
{
    ffu_tracker_opts o;
    ffu_tracker_opts_default(&o);
    o.max_age = 3;
    ffu_tracker *t = make(&o);
    CHECK(t);
    ffu_face f;
    face_at(&f, 300, 300, 60, 0.9f);
    ffu_track_result r;
    int k = 0, id;
    for (; k < 5; k++)
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, &r), FFU_OK);
    id = r.track_id;
    for (int miss = 1; miss <= 3; miss++, k++) {
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, NULL, 0, NULL), FFU_OK);
        ffu_track_info info;
        CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
        CHECK_EQ_INT(info.state, FFU_TRACK_LOST);
        CHECK_EQ_INT(info.misses, miss);
        CHECK_EQ_INT(count_events(FFU_EVENT_TRACK_ENDED), 0);
    }
    CHECK_EQ_INT(ffu_tracker_update(t, k * DT, NULL, 0, NULL), FFU_OK);
    k++;
    CHECK_EQ_INT(count_events(FFU_EVENT_TRACK_ENDED), 1);
    int nev = 0;
    const ffu_track_event *ev = ffu_tracker_events(t, &nev);
    CHECK_EQ_INT(nev, 1);
    CHECK_EQ_INT(ev[0].type, FFU_EVENT_TRACK_ENDED);
    CHECK_EQ_INT(ev[0].track_id, id);
    CHECK_NEAR(ev[0].last_seen - ev[0].first_seen, 4 * DT, 1e-9);
    CHECK_EQ_INT(ev[0].hits, 5);
    CHECK_EQ_INT(ffu_tracker_tracks(t, NULL, 0), 0);
    ffu_track_info info;
    CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_ERR_NOT_FOUND);
    /* the face coming back now is someone new */
    CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, &r), FFU_OK);
    CHECK(r.track_id > id);
    /* time-based death too */
    ffu_tracker_destroy(t);
    o.max_age = 1000;
    o.max_lost_s = 0.5;
    t = make(&o);
    CHECK(t);
    for (k = 0; k < 3; k++)
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, &r), FFU_OK);
    CHECK_EQ_INT(ffu_tracker_update(t, 0.8, NULL, 0, NULL), FFU_OK); /* 0.4 s lost */
    CHECK_EQ_INT(count_events(FFU_EVENT_TRACK_ENDED), 0);
    CHECK_EQ_INT(ffu_tracker_update(t, 1.0, NULL, 0, NULL), FFU_OK); /* 0.6 s lost */
    CHECK_EQ_INT(count_events(FFU_EVENT_TRACK_ENDED), 1);
    ffu_tracker_destroy(t);
}

static void test_birth_needs_min_hits(void)
{
    ffu_tracker_opts o;
    ffu_tracker_opts_default(&o);
    o.min_hits = 3;
    ffu_tracker *t = make(&o);
    CHECK(t);
    ffu_face f[2];
    ffu_track_result r[2];
    face_at(&f[0], 100, 100, 50, 0.9f);
    face_at(&f[1], 400, 100, 50, 0.9f); /* a one-frame false positive */
    CHECK_EQ_INT(ffu_tracker_update(t, 0, f, 2, r), FFU_OK);
    CHECK_EQ_INT(r[0].state, FFU_TRACK_TENTATIVE);
    CHECK_EQ_INT(r[1].state, FFU_TRACK_TENTATIVE);
    int id = r[0].track_id, ghost = r[1].track_id;
    CHECK(id > 0 && ghost > 0 && id != ghost);
    CHECK_EQ_INT(ffu_tracker_update(t, DT, f, 1, r), FFU_OK);
    CHECK_EQ_INT(r[0].state, FFU_TRACK_TENTATIVE);
    CHECK_EQ_INT(count_events(FFU_EVENT_FACE_APPEARED), 0);
    ffu_track_info info;
    CHECK_EQ_INT(ffu_tracker_track(t, ghost, &info), FFU_ERR_NOT_FOUND); /* dropped, silently */
    CHECK_EQ_INT(ffu_tracker_update(t, 2 * DT, f, 1, r), FFU_OK);
    CHECK_EQ_INT(r[0].track_id, id);
    CHECK_EQ_INT(r[0].state, FFU_TRACK_CONFIRMED);
    CHECK_EQ_INT(count_events(FFU_EVENT_FACE_APPEARED), 1);
    CHECK_EQ_INT(find_event(FFU_EVENT_FACE_APPEARED, 0)->track_id, id);
    CHECK_EQ_INT(count_events(FFU_EVENT_TRACK_ENDED), 0); /* the ghost never was a face */
    /* a high detection under new_track_thresh (0.6) starts nothing */
    face_at(&f[1], 400, 300, 50, 0.55f);
    CHECK_EQ_INT(ffu_tracker_update(t, 3 * DT, f, 2, r), FFU_OK);
    CHECK_EQ_INT(r[1].track_id, -1);
    /* min_hits 1: born at once */
    ffu_tracker_destroy(t);
    o.min_hits = 1;
    t = make(&o);
    CHECK(t);
    CHECK_EQ_INT(ffu_tracker_update(t, 0, f, 1, r), FFU_OK);
    CHECK_EQ_INT(r[0].state, FFU_TRACK_CONFIRMED);
    CHECK_EQ_INT(count_events(FFU_EVENT_FACE_APPEARED), 1);
    ffu_tracker_destroy(t);
}

/* ---- re-identification --------------------------------------------------------------- */

/* A face tracked, gone for 0.8 s, back 70 px away (no IoU with where it was). */
static void reid_scene(int back_embed_who, int back_has_embedding, float back_x, int *first_id,
                       int *back_id)
{
    ffu_tracker *t = make(NULL);
    uint64_t rng = 7;
    ffu_face f;
    ffu_track_result r;
    *first_id = *back_id = -2;
    if (!t) return;
    int k = 0;
    for (; k < 5; k++) {
        face_at(&f, 100, 200, 40, 0.9f);
        embed(&f, 0, 0.1f, &rng);
        if (ffu_tracker_update(t, k * DT, &f, 1, &r) < 0) goto out;
    }
    *first_id = r.track_id;
    for (; k < 9; k++)
        if (ffu_tracker_update(t, k * DT, NULL, 0, NULL) < 0) goto out;
    face_at(&f, back_x, 200, 40, 0.9f);
    if (back_has_embedding) embed(&f, back_embed_who, 0.1f, &rng);
    if (ffu_tracker_update(t, k * DT, &f, 1, &r) < 0) goto out;
    *back_id = r.track_id;
out:
    ffu_tracker_destroy(t);
}

static void test_reid_after_gap(void)
{
    int a, b;
    reid_scene(0, 1, 170, &a, &b);
    CHECK(a > 0);
    CHECK_EQ_INT(b, a); /* same person, embedding matched */
    CHECK_EQ_INT(count_events(FFU_EVENT_FACE_APPEARED), 1);
    reid_scene(3, 1, 170, &a, &b);
    CHECK(a > 0 && b > 0 && b != a); /* another person at the same place */
    reid_scene(0, 0, 170, &a, &b);
    CHECK(a > 0 && b > 0 && b != a); /* no embedding, no IoU: new track */
    reid_scene(0, 1, 600, &a, &b);
    CHECK(a > 0 && b > 0 && b != a); /* the same face too far away: position gate */
}

/* The pipeline's order: the face comes back without an embedding (a new tentative
 * track), update asks for an embedding, and set_embedding finds the lost track. */
static void test_reid_by_set_embedding(void)
{
    ffu_tracker *t = make(NULL);
    CHECK(t);
    uint64_t rng = 9;
    ffu_face f;
    ffu_track_result r;
    int k = 0;
    for (; k < 5; k++) {
        face_at(&f, 100, 200, 40, 0.9f);
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, &r), FFU_OK);
        CHECK(r.want_embed); /* undecided tracks want every frame */
        embed(&f, 2, 0.1f, &rng);
        int merged = 0;
        CHECK_EQ_INT(ffu_tracker_set_embedding(t, r.track_id, &f, &merged), FFU_OK);
        CHECK_EQ_INT(merged, r.track_id);
    }
    int id = r.track_id;
    for (; k < 8; k++)
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, NULL, 0, NULL), FFU_OK);
    face_at(&f, 160, 210, 40, 0.9f);
    CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, &r), FFU_OK);
    CHECK(r.track_id != id);
    CHECK_EQ_INT(r.state, FFU_TRACK_TENTATIVE);
    CHECK(r.want_embed);
    embed(&f, 2, 0.1f, &rng);
    int merged = 0;
    CHECK_EQ_INT(ffu_tracker_set_embedding(t, r.track_id, &f, &merged), FFU_OK);
    CHECK_EQ_INT(merged, id);
    ffu_track_info info;
    CHECK_EQ_INT(ffu_tracker_track(t, r.track_id, &info), FFU_ERR_NOT_FOUND);
    CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
    CHECK_EQ_INT(info.state, FFU_TRACK_CONFIRMED);
    CHECK_EQ_INT(info.hits, 6);
    k++;
    face_at(&f, 162, 210, 40, 0.9f);
    CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, &r), FFU_OK);
    CHECK_EQ_INT(r.track_id, id); /* and it continues by IoU */
    CHECK_EQ_INT(count_events(FFU_EVENT_FACE_APPEARED), 1);
    CHECK_EQ_INT(ffu_tracker_tracks(t, NULL, 0), 1);
    ffu_tracker_destroy(t);
}

/* ---- best face and embedding schedule ----------------------------------------------- */

static void test_best_face_and_schedule(void)
{
    ffu_tracker *t = make(NULL);
    CHECK(t);
    ffu_face f;
    ffu_track_result r;
    uint64_t rng = 3;
    const float qual[] = {0.5f, 0.6f, 0.55f, 0.58f, 0.62f, 0.75f, 0.7f};
    int id = -1;
    double k = 0;
    for (int i = 0; i < 7; i++, k++) {
        face_at(&f, 200 + i, 200, 60, 0.9f);
        f.quality.score = qual[i];
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, &r), FFU_OK);
        CHECK_NEAR(r.quality, qual[i], 1e-6);
        id = r.track_id;
        if (i < 3) CHECK_EQ_INT(r.want_embed, 1);  /* undecided: every frame */
        if (i == 3) CHECK_EQ_INT(r.want_embed, 0); /* decided, 0.58 < 0.6 + 0.1 */
        if (i == 4) CHECK_EQ_INT(r.want_embed, 0); /* 0.62 < 0.7 */
        if (i == 5) CHECK_EQ_INT(r.want_embed, 1); /* 0.75 > 0.7: worth it */
        if (i == 6) CHECK_EQ_INT(r.want_embed, 0);
        if (r.want_embed) {
            embed(&f, 1, 0.05f, &rng);
            CHECK_EQ_INT(ffu_tracker_set_embedding(t, id, &f, NULL), FFU_OK);
            ffu_track_vote v = {1, 0.8f, NAN, NAN, NAN};
            CHECK_EQ_INT(ffu_tracker_vote(t, id, k * DT, &v), FFU_OK);
        }
    }
    ffu_track_info info;
    CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
    CHECK_EQ_INT(info.identity, 1);
    CHECK_EQ_INT(info.embeddings, 4);
    double when = -1;
    const ffu_face *best = ffu_tracker_best_face(t, id, &when);
    CHECK(best);
    CHECK_NEAR(best->quality.score, 0.75, 1e-6);
    CHECK_NEAR(best->box[0], 205 - 30, 1e-4);
    CHECK_NEAR(when, 5 * DT, 1e-9);
    CHECK_EQ_INT(best->embedding_dim, EDIM); /* the embedding of that face came along */
    CHECK(best->landmarks == NULL);
    /* nothing better for embed_interval_s (2 s): asked again once it has passed */
    int asked_at = -1;
    for (int i = 0; i < 15 && asked_at < 0; i++, k++) {
        face_at(&f, 206, 200, 60, 0.9f);
        f.quality.score = 0.7f;
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, &r), FFU_OK);
        if (r.want_embed) asked_at = (int)k;
    }
    CHECK_EQ_INT(asked_at, 15); /* last embedding at frame 5, 2 s = 10 frames later */
    /* fallback quality without quality.score: score x size */
    face_at(&f, 0, 0, 40, 0.9f);
    CHECK_NEAR(ffu_track_face_quality(&f, 80), 0.45, 1e-6);
    face_at(&f, 0, 0, 160, 0.9f);
    CHECK_NEAR(ffu_track_face_quality(&f, 80), 0.9, 1e-6);
    ffu_tracker_destroy(t);
}

/* ---- identity voting ------------------------------------------------------------------ */

static ffu_tracker *confirmed_track(ffu_tracker_opts *o, int *id)
{
    ffu_tracker *t = make(o);
    if (!t) return NULL;
    ffu_face f;
    ffu_track_result r = {0};
    face_at(&f, 100, 100, 80, 0.9f);
    for (int k = 0; k < 2; k++)
        ffu_tracker_update(t, k * DT, &f, 1, &r);
    *id = r.track_id;
    return t;
}

static ffu_status vote(ffu_tracker *t, int id, int who, float sim, float second, float q)
{
    ffu_track_vote v = {who, sim, second, q, NAN};
    return ffu_tracker_vote(t, id, 1.0, &v);
}

static void test_k_of_n_and_hysteresis(void)
{
    int id;
    ffu_tracker *t = confirmed_track(NULL, &id);
    CHECK(t);
    ffu_track_info info;
    CHECK_EQ_INT(vote(t, id, 7, 0.8f, NAN, 1), FFU_OK);
    CHECK_EQ_INT(vote(t, id, 7, 0.7f, 0.3f, 1), FFU_OK);
    CHECK_EQ_INT(count_events(FFU_EVENT_IDENTITY_CONFIRMED), 0); /* 2 of 5: not yet */
    CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
    CHECK_EQ_INT(info.identity, -1);
    CHECK_EQ_INT(vote(t, id, 7, 0.9f, 0.2f, 1), FFU_OK);
    CHECK_EQ_INT(count_events(FFU_EVENT_IDENTITY_CONFIRMED), 1); /* 3 of 5 */
    const ffu_track_event *e = find_event(FFU_EVENT_IDENTITY_CONFIRMED, 0);
    CHECK_EQ_INT(e->identity, 7);
    CHECK_EQ_INT(e->previous_identity, -1);
    CHECK_EQ_INT(e->votes, 3);
    CHECK_NEAR(e->similarity, 0.8, 1e-6);
    CHECK_EQ_INT(e->track_id, id);
    /* votes 4..9: 9, 7, 7, 9, 9, 9. One flicker (vote 4) switches nothing; the window of
     * the last five first holds three 9s (and two 7s) at vote 8. */
    const int seq[] = {9, 7, 7, 9, 9};
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(vote(t, id, seq[i], 0.8f, 0.4f, 1), FFU_OK);
        CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
        CHECK_EQ_INT(info.identity, i < 4 ? 7 : 9);
        CHECK_EQ_INT(count_events(FFU_EVENT_IDENTITY_CONFIRMED), i < 4 ? 1 : 2);
    }
    e = find_event(FFU_EVENT_IDENTITY_CONFIRMED, 1);
    CHECK_EQ_INT(e->identity, 9);
    CHECK_EQ_INT(e->previous_identity, 7);
    /* unknown votes never revoke a confirmed identity */
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(vote(t, id, -1, 0.1f, NAN, 1), FFU_OK);
    CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
    CHECK_EQ_INT(info.identity, 9);
    CHECK_EQ_INT(count_events(FFU_EVENT_UNKNOWN_FACE), 0);
    ffu_tracker_destroy(t);

    /* ambiguous (margin 0.01 -> weight 0.1) and blurred (quality 0.1) votes abstain */
    t = confirmed_track(NULL, &id);
    CHECK(t);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(vote(t, id, 5, 0.8f, 0.79f, 1), FFU_OK);
    for (int i = 0; i < 2; i++)
        CHECK_EQ_INT(vote(t, id, 5, 0.8f, NAN, 0.1f), FFU_OK);
    CHECK_EQ_INT(count_events(FFU_EVENT_IDENTITY_CONFIRMED), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(vote(t, id, 5, 0.8f, 0.5f, 0.9f), FFU_OK);
    CHECK_EQ_INT(count_events(FFU_EVENT_IDENTITY_CONFIRMED), 1);
    ffu_tracker_destroy(t);
}

static void test_unknown_face(void)
{
    ffu_tracker_opts o;
    ffu_tracker_opts_default(&o);
    o.id_threshold = 0.4f;
    int id;
    ffu_tracker *t = confirmed_track(&o, &id);
    CHECK(t);
    CHECK_EQ_INT(vote(t, id, -1, 0, NAN, 1), FFU_OK);
    CHECK_EQ_INT(vote(t, id, 4, 0.25f, NAN, 1), FFU_OK); /* under id_threshold: unknown */
    CHECK_EQ_INT(count_events(FFU_EVENT_UNKNOWN_FACE), 0);
    CHECK_EQ_INT(vote(t, id, 4, 0.3f, 0.1f, 1), FFU_OK);
    CHECK_EQ_INT(count_events(FFU_EVENT_UNKNOWN_FACE), 1);
    const ffu_track_event *e = find_event(FFU_EVENT_UNKNOWN_FACE, 0);
    CHECK_EQ_INT(e->track_id, id);
    CHECK_EQ_INT(e->identity, -1);
    CHECK_EQ_INT(e->votes, 3);
    for (int i = 0; i < 5; i++)
        CHECK_EQ_INT(vote(t, id, -1, 0, NAN, 1), FFU_OK);
    CHECK_EQ_INT(count_events(FFU_EVENT_UNKNOWN_FACE), 1); /* once per track */
    ffu_track_info info;
    CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
    CHECK_EQ_INT(info.unknown, 1);
    CHECK_EQ_INT(count_events(FFU_EVENT_IDENTITY_CONFIRMED), 0);
    ffu_tracker_destroy(t);
}

static void test_liveness_gate(void)
{
    ffu_tracker_opts o;
    ffu_tracker_opts_default(&o);
    o.liveness_gate = 0.5f;
    int id;
    ffu_tracker *t = confirmed_track(&o, &id);
    CHECK(t);
    ffu_track_vote v = {3, 0.9f, NAN, 1, 0.2f};
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(ffu_tracker_vote(t, id, 1, &v), FFU_OK);
    v.liveness = NAN; /* not computed: the gate cannot pass it */
    CHECK_EQ_INT(ffu_tracker_vote(t, id, 1, &v), FFU_OK);
    CHECK_EQ_INT(count_events(FFU_EVENT_IDENTITY_CONFIRMED), 0);
    ffu_track_info info;
    CHECK_EQ_INT(ffu_tracker_track(t, id, &info), FFU_OK);
    CHECK_EQ_INT(info.rejected_votes, 4);
    v.liveness = 0.9f;
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(ffu_tracker_vote(t, id, 1, &v), FFU_OK);
    CHECK_EQ_INT(count_events(FFU_EVENT_IDENTITY_CONFIRMED), 1);
    ffu_tracker_destroy(t);
}

/* ---- zones and dwell ------------------------------------------------------------------- */

static void test_zone_dwell(void)
{
    ffu_tracker_opts o;
    ffu_tracker_opts_default(&o);
    o.dwell_s = 3.0;
    ffu_tracker *t = make(&o);
    CHECK(t);
    const float sq[] = {0, 0, 200, 0, 200, 200, 0, 200};
    const float far[] = {1000, 1000, 1100, 1000, 1100, 1100};
    ffu_track_zone z = {"desk", sq, 4, 2.0, 1.0};
    int zi = -1;
    CHECK_EQ_INT(ffu_tracker_add_zone(t, &z, &zi), FFU_OK);
    CHECK_EQ_INT(zi, 0);
    ffu_track_zone z2 = {"elsewhere", far, 3, 1.0, 1.0};
    CHECK_EQ_INT(ffu_tracker_add_zone(t, &z2, &zi), FFU_OK);
    CHECK_EQ_INT(zi, 1);
    CHECK_EQ_INT(ffu_tracker_zone_count(t), 2);
    CHECK_STR(ffu_tracker_zone_name(t, 0), "desk");
    ffu_face f;
    int k = 0;
    for (; k <= 25; k++) { /* 5 s inside */
        face_at(&f, 100 + (k % 2), 100, 50, 0.9f);
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, NULL), FFU_OK);
        int nzone = 0, ntrack = 0, nocc = 0;
        for (int i = 0; i < g_nev; i++) {
            if (g_ev[i].type != FFU_EVENT_DWELL_ALARM) continue;
            if (g_ev[i].zone == -1)
                ntrack++;
            else if (g_ev[i].occupancy)
                nocc++;
            else
                nzone++;
        }
        /* per-track zone time counts from the first observation (t = 0) */
        CHECK_EQ_INT(nzone, k * DT + 1e-9 >= 2.0 ? 1 : 0);
        /* the track is confirmed at 0.2; the zone counts as occupied from then */
        CHECK_EQ_INT(nocc, k * DT + 1e-9 >= 1.2 ? 1 : 0);
        CHECK_EQ_INT(ntrack, k * DT + 1e-9 >= 3.0 ? 1 : 0);
    }
    const ffu_track_event *e = find_event(FFU_EVENT_DWELL_ALARM, 0);
    CHECK(e->occupancy == 1);
    CHECK_NEAR(e->time, 1.2, 1e-9);
    CHECK_EQ_INT(e->occupants, 1);
    e = find_event(FFU_EVENT_DWELL_ALARM, 1);
    CHECK_EQ_INT(e->zone, 0);
    CHECK_STR(e->zone_name, "desk");
    CHECK_NEAR(e->time, 2.0, 1e-9);
    CHECK_NEAR(e->dwell, 2.0, 1e-6);
    /* walk out to the right, then end */
    for (int i = 1; i <= 10; i++, k++) {
        face_at(&f, 101 + 30 * i, 100, 50, 0.9f);
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, &f, 1, NULL), FFU_OK);
    }
    CHECK_EQ_INT(ffu_tracker_flush(t, k * DT), FFU_OK);
    CHECK_EQ_INT(count_events(FFU_EVENT_TRACK_ENDED), 1);
    e = find_event(FFU_EVENT_TRACK_ENDED, 0);
    CHECK_EQ_INT(e->zones_visited, 1);
    CHECK_EQ_INT(e->num_zones, 2);
    /* inside from t = 0 to the last observation with x < 200; the filter lags the
     * jump so allow one frame either way */
    CHECK(e->zone_time[0] >= 5.0 - 1e-6 && e->zone_time[0] <= 5.0 + 3 * DT + 1e-6);
    CHECK_NEAR(e->zone_time[1], 0, 0);
    CHECK_NEAR(e->first_xy[0], 100, 1.0);
    CHECK(e->last_xy[0] > 350);
    CHECK(e->path_length >= 290 && e->path_length < 400);
    CHECK_NEAR(e->last_seen - e->first_seen, (k - 1) * DT, 1e-9);
    CHECK_EQ_INT(ffu_tracker_tracks(t, NULL, 0), 0);
    ffu_tracker_destroy(t);
}

static void test_zones_json(void)
{
    ffu_tracker *t = make(NULL);
    CHECK(t);
    const char *good =
        "{\"zones\": [{\"name\": \"door\", \"polygon\": [[0,0],[10,0],[10,10]],"
        " \"dwell\": 5}, {\"polygon\": [[0,0],[1,0],[1,1],[0,1]], \"occupancy\": 2}]}";
    ffu_json *j = NULL;
    CHECK_EQ_INT(ffu_json_parse(good, strlen(good), &j), FFU_OK);
    CHECK_EQ_INT(ffu_tracker_add_zones_json(t, j), FFU_OK);
    ffu_json_free(j);
    CHECK_EQ_INT(ffu_tracker_zone_count(t), 2);
    CHECK_STR(ffu_tracker_zone_name(t, 0), "door");
    CHECK_STR(ffu_tracker_zone_name(t, 1), "zone1");
    CHECK_NEAR(t->zones[0].dwell_s, 5, 0);
    CHECK_NEAR(t->zones[1].occupancy_s, 2, 0);
    const char *bad[] = {
        "[{\"polygon\": [[0,0],[1,0]]}]",                           /* two points */
        "[{\"polygon\": [[0,0],[1,0],[1,\"x\"]]}]",                 /* not a number */
        "[{\"polygon\": [[0,0],[1,0],[1,1,1]]}]",                   /* three coordinates */
        "[{\"polygon\": [[0,0],[1,0],[1,1]], \"dwell\": -1}]",      /* negative time */
        "[{\"polygon\": [[0,0],[1,0],[1,1]], \"name\": 3}]",        /* name not a string */
        "[{\"name\": \"a\", \"polygon\": [[0,0],[1,0],[1,1]]}, 7]", /* second entry bad */
        "{\"zone\": []}",
        "42",
        "[[0,0]]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_EQ_INT(ffu_json_parse(bad[i], strlen(bad[i]), &j), FFU_OK);
        ffu_status st = ffu_tracker_add_zones_json(t, j);
        ffu_json_free(j);
        if (st != FFU_ERR_FORMAT) fprintf(stderr, "case %zu: %d\n", i, st);
        CHECK_EQ_INT(st, FFU_ERR_FORMAT);
        CHECK_EQ_INT(ffu_tracker_zone_count(t), 2); /* nothing added */
    }
    ffu_tracker_destroy(t);
}

static void test_point_in_polygon(void)
{
    const float sq[] = {0, 0, 10, 0, 10, 10, 0, 10};
    const float sq_cw[] = {0, 0, 0, 10, 10, 10, 10, 0};
    const float pts[][3] = {
        /* x, y, inside */
        {5, 5, 1},           {0, 5, 1},  {10, 5, 0},  {5, 0, 1},  {5, 10, 0},
        {0, 0, 1},           {10, 0, 0}, {10, 10, 0}, {0, 10, 0}, {-0.001f, 5, 0},
        {9.999f, 9.999f, 1}, {11, 5, 0}, {5, -1, 0},
    };
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        CHECK_EQ_INT(ffu_track_point_in_polygon(sq, 4, pts[i][0], pts[i][1]), (int)pts[i][2]);
        CHECK_EQ_INT(ffu_track_point_in_polygon(sq_cw, 4, pts[i][0], pts[i][1]), (int)pts[i][2]);
    }
    /* two squares sharing an edge (and a diagonal split of one): every point of the
     * union belongs to exactly one of them, edges and vertices included */
    const float left[] = {0, 0, 10, 0, 10, 10, 0, 10}, right[] = {10, 0, 20, 0, 20, 10, 10, 10};
    const float tri_a[] = {0, 0, 10, 0, 10, 10}, tri_b[] = {0, 0, 10, 10, 0, 10};
    for (int yi = 0; yi < 10 * 4; yi++) {
        for (int xi = 0; xi < 20 * 4; xi++) {
            float x = xi * 0.25f, y = yi * 0.25f;
            CHECK_EQ_INT(ffu_track_point_in_polygon(left, 4, x, y) +
                             ffu_track_point_in_polygon(right, 4, x, y),
                         1);
            if (x < 10)
                CHECK_EQ_INT(ffu_track_point_in_polygon(tri_a, 3, x, y) +
                                 ffu_track_point_in_polygon(tri_b, 3, x, y),
                             1);
        }
    }
    /* concave U: the notch is outside, the arms inside */
    const float u[] = {0, 0, 30, 0, 30, 30, 20, 30, 20, 10, 10, 10, 10, 30, 0, 30};
    CHECK_EQ_INT(ffu_track_point_in_polygon(u, 8, 15, 20), 0);
    CHECK_EQ_INT(ffu_track_point_in_polygon(u, 8, 5, 20), 1);
    CHECK_EQ_INT(ffu_track_point_in_polygon(u, 8, 25, 20), 1);
    CHECK_EQ_INT(ffu_track_point_in_polygon(u, 8, 15, 5), 1);
    CHECK_EQ_INT(ffu_track_point_in_polygon(u, 8, 15, 10),
                 0); /* the notch's floor edge is its bottom */
    /* bow tie (self-intersecting): even-odd gives both lobes, not the crossing's outside */
    const float bow[] = {0, 0, 10, 10, 10, 0, 0, 10};
    CHECK_EQ_INT(ffu_track_point_in_polygon(bow, 4, 2, 5), 1);
    CHECK_EQ_INT(ffu_track_point_in_polygon(bow, 4, 8, 5), 1);
    CHECK_EQ_INT(ffu_track_point_in_polygon(bow, 4, 5, 1), 0);
    /* degenerate input */
    CHECK_EQ_INT(ffu_track_point_in_polygon(sq, 2, 5, 5), 0);
    CHECK_EQ_INT(ffu_track_point_in_polygon(NULL, 4, 5, 5), 0);
    CHECK_EQ_INT(ffu_track_point_in_polygon(sq, 4, NAN, 5), 0);
    const float flat[] = {0, 0, 10, 0, 20, 0};
    CHECK_EQ_INT(ffu_track_point_in_polygon(flat, 3, 5, 0), 0);
}

/* ---- heatmap ------------------------------------------------------------------------ */

static void argmax(const float *a, int w, int h, int *bx, int *by)
{
    float best = -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (a[y * w + x] > best) best = a[y * w + x], *bx = x, *by = y;
}

static void test_heatmap(void)
{
    ffu_heatmap *hm = NULL;
    CHECK_EQ_INT(ffu_heatmap_create(640, 480, 0, 0, &hm), FFU_OK);
    int w, h;
    const float *a = ffu_heatmap_data(hm, &w, &h);
    CHECK(a && w == 80 && h == 60);
    for (int i = 0; i < 50; i++)
        CHECK_EQ_INT(ffu_heatmap_add(hm, 100, 204, 1), FFU_OK);
    for (int i = 0; i < 10; i++)
        CHECK_EQ_INT(ffu_heatmap_add(hm, 500, 50, 1), FFU_OK);
    CHECK_EQ_INT(ffu_heatmap_add(hm, -5000, 1e9f, 1), FFU_OK); /* far outside: ignored */
    CHECK_EQ_INT(ffu_heatmap_add(hm, 0, 0, NAN), FFU_ERR_INVALID);
    int px = -1, py = -1;
    argmax(a, w, h, &px, &py);
    CHECK_EQ_INT(px, 12); /* 100 / 8 = 12.5: the centre of cell 12 */
    CHECK_EQ_INT(py, 25);
    CHECK(a[6 * w + 62] > a[6 * w + 60] && a[6 * w + 62] > a[8 * w + 62]); /* second bump */
    CHECK(a[6 * w + 62] < a[25 * w + 12] / 3);
    CHECK_NEAR(a[40 * w + 40], 0, 0);
    ffu_image img = {0};
    CHECK_EQ_INT(ffu_heatmap_render(hm, &img), FFU_OK);
    CHECK(img.fmt == FFU_PIX_RGB24 && img.width == 80 && img.height == 60);
    const uint8_t *pk = img.data[0] + 25 * img.stride[0] + 3 * 12;
    CHECK(pk[0] == 255 && pk[1] == 255 && pk[2] == 255); /* the maximum is white */
    const uint8_t *cold = img.data[0] + 40 * img.stride[0] + 3 * 40;
    CHECK(cold[0] == 0 && cold[1] == 0 && cold[2] == 0);
    uint8_t *png = NULL;
    size_t size = 0;
    CHECK_EQ_INT(ffu_image_encode_png(&img, NULL, &png, &size), FFU_OK);
    int pw = 0, ph = 0;
    CHECK_EQ_INT(ffu_image_probe(png, size, NULL, &pw, &ph), FFU_OK);
    CHECK(pw == 80 && ph == 60);
    free(png);
    ffu_image_release(&img);

    /* from a tracker: one face stays at (324, 244) while another walks across */
    ffu_heatmap_reset(hm);
    CHECK_NEAR(a[25 * w + 12], 0, 0);
    ffu_tracker *t = make(NULL);
    CHECK(t);
    for (int k = 0; k < 30; k++) {
        ffu_face f[2];
        face_at(&f[0], 324, 244, 48, 0.9f); /* cell (40, 30) centre */
        face_at(&f[1], 20 + 20 * k, 400, 48, 0.9f);
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, f, 2, NULL), FFU_OK);
        CHECK_EQ_INT(ffu_heatmap_add_tracks(hm, t), FFU_OK);
    }
    argmax(a, w, h, &px, &py);
    CHECK_EQ_INT(px, 40);
    CHECK_EQ_INT(py, 30);
    CHECK(a[50 * w + 30] > 0); /* the walker left a trail */
    ffu_tracker_destroy(t);
    ffu_heatmap_destroy(hm);
    hm = NULL;
    CHECK_EQ_INT(ffu_heatmap_create(0, 480, 8, 1.5f, &hm), FFU_ERR_INVALID);
    CHECK(hm == NULL);
    CHECK_EQ_INT(ffu_heatmap_create(640, 480, -1, 1.5f, &hm), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_heatmap_create(640, 480, 8, NAN, &hm), FFU_ERR_INVALID);
    ffu_heatmap_destroy(NULL);
}

/* ---- JSON ------------------------------------------------------------------------------ */

static void test_event_json(void)
{
    ffu_tracker *t = make(NULL);
    CHECK(t);
    const float sq[] = {0, 0, 300, 0, 300, 300, 0, 300};
    ffu_track_zone z = {"hall \"A\"", sq, 4, 0, 0};
    CHECK_EQ_INT(ffu_tracker_add_zone(t, &z, NULL), FFU_OK);
    ffu_face f;
    ffu_track_result r;
    for (int k = 0; k < 3; k++) {
        face_at(&f, 100, 100, 80, 0.9f);
        CHECK_EQ_INT(ffu_tracker_update(t, 10 + k * DT, &f, 1, &r), FFU_OK);
    }
    for (int i = 0; i < 3; i++)
        CHECK_EQ_INT(vote(t, r.track_id, 2, 0.75f, NAN, 1), FFU_OK);
    CHECK_EQ_INT(ffu_tracker_flush(t, 11), FFU_OK);
    CHECK_EQ_INT(g_nev, 3);
    ffu_jw *w = NULL;
    CHECK_EQ_INT(ffu_jw_create(&w, 0), FFU_OK);

    /* face_appeared: the common fields */
    CHECK_EQ_INT(ffu_track_event_write_json(&g_ev[0], "cam1", w), FFU_OK);
    ffu_json *j = NULL;
    const char *txt = ffu_jw_text(w, NULL);
    CHECK(txt);
    CHECK_EQ_INT(ffu_json_parse(txt, strlen(txt), &j), FFU_OK);
    CHECK_STR(ffu_json_string(ffu_json_get(j, "type")), "face_appeared");
    CHECK_STR(ffu_json_string(ffu_json_get(j, "stream")), "cam1");
    CHECK_NEAR(ffu_json_number(ffu_json_get(j, "time"), 0), 10.2, 1e-9);
    CHECK_EQ_INT(ffu_json_int(ffu_json_get(j, "track_id"), -9), r.track_id);
    CHECK_EQ_INT(ffu_json_len(ffu_json_get(j, "box")), 4);
    CHECK_NEAR(ffu_json_number(ffu_json_at(ffu_json_get(j, "box"), 2), 0), 80, 0.5);
    ffu_json_free(j);

    /* identity_confirmed with a name and snapshot filled in by the pipeline */
    ffu_track_event e = g_ev[1];
    CHECK_EQ_INT(e.type, FFU_EVENT_IDENTITY_CONFIRMED);
    e.name = "Ada";
    e.snapshot = "snap/1.jpg";
    ffu_jw_reset(w);
    CHECK_EQ_INT(ffu_track_event_write_json(&e, NULL, w), FFU_OK);
    txt = ffu_jw_text(w, NULL);
    CHECK_EQ_INT(ffu_json_parse(txt, strlen(txt), &j), FFU_OK);
    CHECK_STR(ffu_json_string(ffu_json_get(j, "type")), "identity_confirmed");
    CHECK_EQ_INT(ffu_json_typeof(ffu_json_get(j, "stream")), FFU_JSON_NULL);
    CHECK(ffu_json_get(j, "stream") != NULL);
    CHECK_EQ_INT(ffu_json_int(ffu_json_get(j, "identity"), -9), 2);
    CHECK_STR(ffu_json_string(ffu_json_get(j, "name")), "Ada");
    CHECK_STR(ffu_json_string(ffu_json_get(j, "snapshot")), "snap/1.jpg");
    CHECK_NEAR(ffu_json_number(ffu_json_get(j, "similarity"), 0), 0.75, 1e-6);
    CHECK_EQ_INT(ffu_json_int(ffu_json_get(j, "votes"), 0), 3);
    CHECK_EQ_INT(ffu_json_typeof(ffu_json_get(j, "previous_identity")), FFU_JSON_NULL);
    ffu_json_free(j);

    /* track_ended: the trajectory summary with the zone (name escaped) */
    CHECK_EQ_INT(g_ev[2].type, FFU_EVENT_TRACK_ENDED);
    ffu_jw_reset(w);
    CHECK_EQ_INT(ffu_track_event_write_json(&g_ev[2], "cam1", w), FFU_OK);
    txt = ffu_jw_text(w, NULL);
    CHECK_EQ_INT(ffu_json_parse(txt, strlen(txt), &j), FFU_OK);
    CHECK_STR(ffu_json_string(ffu_json_get(j, "type")), "track_ended");
    CHECK_NEAR(ffu_json_number(ffu_json_get(j, "time"), 0), 11, 1e-9);
    CHECK_NEAR(ffu_json_number(ffu_json_get(j, "duration"), 0), 0.4, 1e-9);
    CHECK_EQ_INT(ffu_json_int(ffu_json_get(j, "identity"), -9), 2);
    CHECK_EQ_INT(ffu_json_int(ffu_json_get(j, "hits"), 0), 3);
    CHECK_EQ_INT(ffu_json_len(ffu_json_get(j, "first")), 2);
    const ffu_json *zs = ffu_json_get(j, "zones");
    CHECK_EQ_INT(ffu_json_len(zs), 1);
    CHECK_STR(ffu_json_string(ffu_json_get(ffu_json_at(zs, 0), "name")), "hall \"A\"");
    CHECK_NEAR(ffu_json_number(ffu_json_get(ffu_json_at(zs, 0), "seconds"), 0), 0.4, 1e-6);
    ffu_json_free(j);

    /* a dwell alarm from a hand-made event */
    ffu_track_event d;
    memset(&d, 0, sizeof d);
    d.type = FFU_EVENT_DWELL_ALARM;
    d.track_id = 4;
    d.time = 3;
    d.zone = 0;
    d.zone_name = "door";
    d.dwell = 5.5;
    ffu_jw_reset(w);
    CHECK_EQ_INT(ffu_track_event_write_json(&d, "c", w), FFU_OK);
    txt = ffu_jw_text(w, NULL);
    CHECK_EQ_INT(ffu_json_parse(txt, strlen(txt), &j), FFU_OK);
    CHECK_STR(ffu_json_string(ffu_json_get(j, "type")), "dwell_alarm");
    CHECK_STR(ffu_json_string(ffu_json_get(j, "zone")), "door");
    CHECK_NEAR(ffu_json_number(ffu_json_get(j, "dwell"), 0), 5.5, 0);
    CHECK_EQ_INT(ffu_json_bool(ffu_json_get(j, "occupancy"), -1), 0);
    ffu_json_free(j);
    d.type = (ffu_track_event_type)99;
    CHECK_EQ_INT(ffu_track_event_write_json(&d, "c", w), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_track_event_write_json(NULL, "c", w), FFU_ERR_INVALID);
    CHECK_STR(ffu_track_event_type_name(FFU_EVENT_UNKNOWN_FACE), "unknown_face");
    CHECK_STR(ffu_track_state_name(FFU_TRACK_LOST), "lost");
    ffu_jw_destroy(w);
    ffu_tracker_destroy(t);
}

/* ---- assignment ------------------------------------------------------------------------- */

static void brute(const double *c, int rows, int cols, double limit, int row, unsigned used,
                  int count, double cost, int *best_count, double *best_cost)
{
    if (row == rows) {
        if (count > *best_count || (count == *best_count && cost < *best_cost - 1e-12))
            *best_count = count, *best_cost = cost;
        return;
    }
    brute(c, rows, cols, limit, row + 1, used, count, cost, best_count, best_cost);
    for (int j = 0; j < cols; j++) {
        double v = c[row * cols + j];
        if ((used >> j) & 1 || !(v <= limit)) continue;
        brute(c, rows, cols, limit, row + 1, used | 1u << j, count + 1, cost + v, best_count,
              best_cost);
    }
}

static void test_assignment_vs_brute_force(void)
{
    ffu_tracker *t = make(NULL);
    CHECK(t);
    uint64_t rng = 1234;
    double c[36];
    int rm[6], cm[6];
    for (int iter = 0; iter < 400; iter++) {
        int rows = 1 + (int)(test_rand_u64(&rng) % 6), cols = 1 + (int)(test_rand_u64(&rng) % 6);
        for (int i = 0; i < rows * cols; i++)
            c[i] = test_rand_f(&rng);
        double limit = 0.3 + 0.7 * test_rand_f(&rng);
        CHECK_EQ_INT(track_assign(t, c, rows, cols, limit, rm, cm), FFU_OK);
        int count = 0;
        double cost = 0;
        for (int i = 0; i < rows; i++) {
            if (rm[i] < 0) continue;
            CHECK(rm[i] < cols && cm[rm[i]] == i);
            CHECK(c[i * cols + rm[i]] <= limit);
            count++;
            cost += c[i * cols + rm[i]];
        }
        int bc = 0;
        double bcost = 0;
        brute(c, rows, cols, limit, 0, 0, 0, 0, &bc, &bcost);
        CHECK_EQ_INT(count, bc);
        CHECK_NEAR(cost, bcost, 1e-9);
    }
    CHECK_EQ_INT(track_assign(t, c, 0, 3, 1, rm, cm), FFU_OK);
    CHECK(cm[0] == -1 && cm[2] == -1);
    ffu_tracker_destroy(t);
}

/* ---- bad arguments ---------------------------------------------------------------------- */

static void test_bad_arguments(void)
{
    ffu_tracker_opts o;
    ffu_tracker *t = (ffu_tracker *)&o;
    CHECK_EQ_INT(ffu_tracker_create(NULL, NULL), FFU_ERR_INVALID);
    ffu_tracker_opts_default(&o);
    o.vote_hits = 6;
    CHECK_EQ_INT(ffu_tracker_create(&o, &t), FFU_ERR_INVALID);
    CHECK(t == NULL);
    CHECK(strstr(ffu_error_message(), "vote_hits"));
    ffu_tracker_opts_default(&o);
    o.low_thresh = 0.7f;
    CHECK_EQ_INT(ffu_tracker_create(&o, &t), FFU_ERR_INVALID);
    ffu_tracker_opts_default(&o);
    o.min_hits = 0;
    CHECK_EQ_INT(ffu_tracker_create(&o, &t), FFU_ERR_INVALID);
    ffu_tracker_opts_default(&o);
    o.kf_ref_dt = NAN;
    CHECK_EQ_INT(ffu_tracker_create(&o, &t), FFU_ERR_INVALID);
    ffu_tracker_opts_default(&o);
    o.vote_window = FFU_TRACK_MAX_WINDOW + 1;
    CHECK_EQ_INT(ffu_tracker_create(&o, &t), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_tracker_create(NULL, &t), FFU_OK); /* defaults */
    ffu_tracker_destroy(t);
    ffu_tracker_destroy(NULL);

    t = make(NULL);
    CHECK(t);
    ffu_face f[3];
    ffu_track_result r[3];
    face_at(&f[0], 100, 100, 40, 0.9f);
    CHECK_EQ_INT(ffu_tracker_update(NULL, 0, f, 1, r), FFU_ERR_INVALID);
    CHECK_EQ_INT(r[0].track_id, -1);
    CHECK_EQ_INT(ffu_tracker_update(t, 0, f, -1, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_tracker_update(t, 0, NULL, 2, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_tracker_update(t, NAN, f, 1, NULL), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_tracker_update(t, 5, f, 1, r), FFU_OK);
    CHECK_EQ_INT(ffu_tracker_update(t, 4.9, f, 1, r), FFU_ERR_INVALID); /* backwards */
    CHECK(strstr(ffu_error_message(), "before"));
    CHECK_EQ_INT(ffu_tracker_update(t, 5, f, 1, r), FFU_OK); /* same time is fine */
    /* broken boxes and scores are skipped, the rest tracked */
    f[1] = f[0];
    f[1].box[2] = 0;
    f[2] = f[0];
    f[2].score = NAN;
    CHECK_EQ_INT(ffu_tracker_update(t, 5.2, f, 3, r), FFU_OK);
    CHECK(r[0].track_id > 0);
    CHECK_EQ_INT(r[1].track_id, -1);
    CHECK_EQ_INT(r[2].track_id, -1);
    f[1].box[0] = INFINITY;
    f[1].box[2] = 40;
    CHECK_EQ_INT(ffu_tracker_update(t, 5.4, f, 2, r), FFU_OK);
    CHECK_EQ_INT(r[1].track_id, -1);
    int id = r[0].track_id;

    ffu_track_vote v = {1, 0.9f, NAN, 1, NAN};
    CHECK_EQ_INT(ffu_tracker_vote(t, 999, 1, &v), FFU_ERR_NOT_FOUND);
    CHECK_EQ_INT(ffu_tracker_vote(t, id, 1, NULL), FFU_ERR_INVALID);
    v.identity = -2;
    CHECK_EQ_INT(ffu_tracker_vote(t, id, 1, &v), FFU_ERR_INVALID);
    v.identity = 1;
    v.similarity = NAN;
    CHECK_EQ_INT(ffu_tracker_vote(t, id, 1, &v), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_tracker_set_embedding(t, id, &f[0], NULL), FFU_ERR_INVALID); /* no embedding */
    uint64_t rng = 5;
    embed(&f[0], 1, 0.1f, &rng);
    CHECK_EQ_INT(ffu_tracker_set_embedding(t, 999, &f[0], NULL), FFU_ERR_NOT_FOUND);
    f[0].embedding[0] = NAN;
    CHECK_EQ_INT(ffu_tracker_set_embedding(t, id, &f[0], NULL), FFU_ERR_INVALID);
    f[0].embedding_dim = FFU_FACE_MAX_EMBED + 1;
    CHECK_EQ_INT(ffu_tracker_set_embedding(t, id, &f[0], NULL), FFU_ERR_INVALID);

    const float two[] = {0, 0, 1, 1};
    ffu_track_zone z = {"x", two, 2, 0, 0};
    int zi = 5;
    CHECK_EQ_INT(ffu_tracker_add_zone(t, &z, &zi), FFU_ERR_INVALID);
    CHECK_EQ_INT(zi, -1);
    const float tri[] = {0, 0, 1, 0, NAN, 1};
    z.points = tri;
    z.num_points = 3;
    CHECK_EQ_INT(ffu_tracker_add_zone(t, &z, NULL), FFU_ERR_INVALID);
    const float ok[] = {0, 0, 1, 0, 1, 1};
    z.points = ok;
    z.dwell_s = -1;
    CHECK_EQ_INT(ffu_tracker_add_zone(t, &z, NULL), FFU_ERR_INVALID);
    z.dwell_s = 0;
    for (int i = 0; i < FFU_TRACK_MAX_ZONES; i++)
        CHECK_EQ_INT(ffu_tracker_add_zone(t, &z, NULL), FFU_OK);
    CHECK_EQ_INT(ffu_tracker_add_zone(t, &z, NULL), FFU_ERR_TOO_LARGE);
    CHECK_EQ_INT(ffu_tracker_add_zones_json(t, NULL), FFU_ERR_INVALID);

    ffu_track_info info;
    CHECK_EQ_INT(ffu_tracker_track(t, 999, &info), FFU_ERR_NOT_FOUND);
    CHECK_EQ_INT(ffu_tracker_track(t, id, NULL), FFU_ERR_INVALID);
    CHECK(ffu_tracker_best_face(t, 999, NULL) == NULL);
    CHECK(ffu_tracker_best_face(NULL, id, NULL) == NULL);
    CHECK_EQ_INT(ffu_tracker_tracks(NULL, NULL, 0), 0);
    CHECK_EQ_INT(ffu_tracker_tracks(t, NULL, 0), 1);
    CHECK_EQ_INT(ffu_tracker_tracks(t, &info, 1), 1);
    CHECK_EQ_INT(info.id, id);
    CHECK_EQ_INT(ffu_tracker_flush(NULL, 0), FFU_ERR_INVALID);
    CHECK_EQ_INT(ffu_tracker_flush(t, NAN), FFU_ERR_INVALID);
    int n = -1;
    CHECK(ffu_tracker_events(NULL, &n) == NULL && n == 0);
    ffu_tracker_destroy(t);
}

/* Many updates with births and deaths: memory is recycled (ASan checks the rest). */
static void test_churn(void)
{
    ffu_tracker_opts o;
    ffu_tracker_opts_default(&o);
    o.max_age = 2;
    ffu_tracker *t = make(&o);
    CHECK(t);
    uint64_t rng = 99;
    ffu_face f[8];
    ffu_track_result r[8];
    for (int k = 0; k < 300; k++) {
        int n = (int)(test_rand_u64(&rng) % 9);
        for (int i = 0; i < n; i++) {
            face_at(&f[i], 50 + 600 * test_rand_f(&rng), 50 + 400 * test_rand_f(&rng),
                    20 + 60 * test_rand_f(&rng), test_rand_f(&rng));
            if (test_rand_f(&rng) < 0.3f) embed(&f[i], (int)(test_rand_u64(&rng) % 4), 0.2f, &rng);
        }
        CHECK_EQ_INT(ffu_tracker_update(t, k * DT, f, n, r), FFU_OK);
        for (int i = 0; i < n; i++) {
            if (r[i].track_id < 0 || !r[i].want_embed) continue;
            embed(&f[i], i % 4, 0.2f, &rng);
            int m = 0;
            CHECK_EQ_INT(ffu_tracker_set_embedding(t, r[i].track_id, &f[i], &m), FFU_OK);
            ffu_track_vote v = {i % 3, 0.6f, 0.3f, NAN, NAN};
            CHECK_EQ_INT(ffu_tracker_vote(t, m, k * DT, &v), FFU_OK);
        }
        CHECK(ffu_tracker_tracks(t, NULL, 0) <= 8 * 4);
    }
    CHECK_EQ_INT(ffu_tracker_flush(t, 1000), FFU_OK);
    CHECK_EQ_INT(ffu_tracker_tracks(t, NULL, 0), 0);
    CHECK(count_events(FFU_EVENT_TRACK_ENDED) == count_events(FFU_EVENT_FACE_APPEARED));
    ffu_tracker_destroy(t);
}

TEST_MAIN(test_crossing_keeps_ids, test_crossing_with_misses_keeps_ids, test_low_score_second_stage,
          test_death_after_max_age, test_birth_needs_min_hits, test_reid_after_gap,
          test_reid_by_set_embedding, test_best_face_and_schedule, test_k_of_n_and_hysteresis,
          test_unknown_face, test_liveness_gate, test_zone_dwell, test_zones_json,
          test_point_in_polygon, test_heatmap, test_event_json, test_assignment_vs_brute_force,
          test_bad_arguments, test_churn)
