/* Private structures of the track module, shared by tracker.c (association and
 * lifecycle), identity.c (embeddings, re-id, votes), zone.c (zones and dwell),
 * assign.c (Hungarian), event.c (events and JSON) and heatmap.c. */
#ifndef FFU_TRACK_INTERNAL_H
#define FFU_TRACK_INTERNAL_H

#include "facefuse/track.h"

/* One Kalman dimension: mean (position, velocity) and its 2x2 covariance. The xyah
 * filter of SORT/ByteTrack has F, H, Q and R acting on each of cx, cy, a, h with its
 * own velocity only, so starting from a diagonal covariance the 8x8 covariance stays
 * block-diagonal: four independent 2-state filters are the same filter, exactly. */
typedef struct kf_dim {
    double x, v;
    double p00, p01, p11;
} kf_dim;

typedef struct kf_state {
    kf_dim d[4]; /* cx, cy, a = w/h, h; velocities per second */
} kf_state;

typedef struct vote_slot {
    int identity; /* >= 0 identity, -1 unknown, -2 abstained */
    float similarity;
    float weight;
} vote_slot;

typedef struct track {
    int id;
    ffu_track_state state;
    kf_state kf;
    int age, hits, misses, consecutive;
    double first_seen, last_seen;
    float score;
    int matched;  /* matched in the current update */
    int born_now; /* created in the current update (re-id by set_embedding allowed) */
    float last_quality;
    /* reference point trajectory */
    float first_xy[2], last_xy[2];
    float path_length;
    /* best face */
    ffu_face best;
    float best_quality;
    double best_time;
    /* embeddings */
    int feat_dim;
    float *feat; /* FFU_FACE_MAX_EMBED floats, smoothed and L2-normalised */
    int embeddings;
    double last_embed_time;
    float best_embed_quality;
    /* identity */
    vote_slot votes[FFU_TRACK_MAX_WINDOW];
    int nvotes, vote_pos;
    int identity;
    float identity_similarity;
    int unknown;
    int rejected_votes;
    /* dwell */
    double zone_time[FFU_TRACK_MAX_ZONES];
    uint32_t zone_in, zones_visited, zone_alarmed;
    int dwell_alarmed;
} track;

typedef struct zone {
    char *name;
    float *xy;
    int n;
    double dwell_s, occupancy_s;
    double occ_start; /* < 0 when not occupied */
    int occ_alarmed;
} zone;

struct ffu_tracker {
    const ffu_class *cls; /* first: log lines name the stream */
    char *name;
    ffu_tracker_opts o;
    double time; /* last update time */
    int updates;
    int next_id;
    track **tracks; /* live tracks (tentative, confirmed, lost) */
    int ntracks, cap_tracks;
    track **spare; /* ended tracks kept for reuse */
    int nspare, cap_spare;
    zone zones[FFU_TRACK_MAX_ZONES];
    int nzones;
    const char *zone_names[FFU_TRACK_MAX_ZONES];
    ffu_track_event *events;
    int nevents, cap_events;
    /* per-update scratch, grown only when a frame has more tracks/detections */
    double *cost;
    size_t cap_cost;
    int *row_match, *col_match, *det_class, *hi, *lo;
    track **det_tr, **pool;
    int cap_dets, cap_pool;
    double *hu_u, *hu_v, *hu_minv;
    int *hu_p, *hu_way;
    unsigned char *hu_used;
    int cap_hu;
};

/* assign.c: minimum-cost assignment of rows to columns (Hungarian, O(n^2 m)); pairs
 * with cost > limit are never matched. row_match[i] / col_match[j] get the partner or
 * -1. Scratch comes from t (grown on demand). */
ffu_status track_assign(ffu_tracker *t, const double *cost, int rows, int cols, double limit,
                        int *row_match, int *col_match);

/* identity.c */
void track_feature_add(ffu_tracker *t, track *tr, const ffu_face *f);
ffu_status track_reid_candidates(ffu_tracker *t, double time, const ffu_face *f, int exclude_id,
                                 track **found, float *sim);

/* tracker.c helpers used by the other files */
track *track_find(const ffu_tracker *t, int id);
void track_box(const track *tr, float box[4]);
void track_ref_point(const ffu_tracker *t, const float box[4], float xy[2]);
ffu_status track_emit(ffu_tracker *t, const ffu_track_event *e);
void track_event_init(const ffu_tracker *t, const track *tr, ffu_track_event_type type, double time,
                      ffu_track_event *e);

/* zone.c: per-update zone accounting after association */
ffu_status track_zones_update(ffu_tracker *t, double time);
void track_zone_observe(ffu_tracker *t, track *tr, double prev_seen, double time);
void track_zones_free(ffu_tracker *t);

#endif
