/* facefuse track: per-stream face tracking and everything that is decided over time
 * rather than per frame. A constant-velocity Kalman filter with ByteTrack-style
 * two-stage IoU association gives stable track ids; short gaps are bridged by
 * embedding re-identification; each track keeps its best face and says when a new
 * embedding is worth computing; identity votes are fused over a K-of-N window with
 * hysteresis; zones (polygons) give dwell alarms; a heatmap accumulates where tracks
 * spent their time. Events (face_appeared, identity_confirmed, unknown_face,
 * dwell_alarm, track_ended) come out through a callback and a per-update array.
 *
 * No video and no models here: the caller runs detection and embedding and feeds the
 * results in. Per frame:
 *
 *   ffu_tracker_update(t, time, faces, n, results);      // ids per detection
 *   for each i with results[i].want_embed: embed faces[i], then
 *       ffu_tracker_set_embedding(t, results[i].track_id, &faces[i], &id);
 *       match against the gallery, then ffu_tracker_vote(t, id, time, &vote);
 *   ffu_tracker_events(t, &n_events) / the on_event callback
 *   ffu_heatmap_add_tracks(hm, t);
 *
 * Coordinates are image pixels as in face.h; times are seconds on the stream's clock
 * (must not decrease). Design, parameters and where the defaults come from: see
 * docs/TRACK.md. A tracker is used by one thread at a time (one tracker per stream). */
#ifndef FACEFUSE_TRACK_H
#define FACEFUSE_TRACK_H

#include "core.h"
#include "face.h"
#include "image.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FFU_TRACK_MAX_ZONES 32  /* zones per tracker (bitmasks in events) */
#define FFU_TRACK_MAX_WINDOW 32 /* largest identity-vote window */
#define FFU_TRACK_IDENTITY_NONE (-1)

typedef enum ffu_track_state {
    FFU_TRACK_TENTATIVE = 0, /* born, fewer than min_hits consecutive hits: no events yet */
    FFU_TRACK_CONFIRMED,     /* matched in the last update */
    FFU_TRACK_LOST,          /* missed; kept max_age updates for re-association */
    FFU_TRACK_ENDED,         /* only in track_ended events */
    FFU_TRACK_STATE_COUNT,
} ffu_track_state;

typedef enum ffu_track_point {
    FFU_TRACK_POINT_CENTER = 0, /* box centre (faces) */
    FFU_TRACK_POINT_FOOT,       /* bottom centre (people standing on a floor) */
} ffu_track_point;

/* ---- events ------------------------------------------------------------------------ */

typedef enum ffu_track_event_type {
    FFU_EVENT_FACE_APPEARED = 0,  /* a track was confirmed (born) */
    FFU_EVENT_IDENTITY_CONFIRMED, /* a track's identity won K of N votes (or switched) */
    FFU_EVENT_UNKNOWN_FACE,       /* K of N votes found no gallery match (once per track) */
    FFU_EVENT_DWELL_ALARM,        /* a track stayed, or a zone was occupied, longer than T */
    FFU_EVENT_TRACK_ENDED,        /* a track died (max_age) or the tracker was flushed */
    FFU_EVENT_TYPE_COUNT,
} ffu_track_event_type;

typedef struct ffu_track_event {
    ffu_track_event_type type;
    int track_id; /* zone occupancy alarms: the occupant there longest */
    double time;  /* stream seconds of the update that raised it */
    float box[4]; /* the track's box at the event */
    float score;  /* last detection score */
    /* identity_confirmed / unknown_face */
    int identity;          /* gallery index; -1 for unknown_face */
    int previous_identity; /* identity_confirmed: the one replaced, -1 when none */
    float similarity;      /* mean similarity of the winning votes */
    int votes;             /* winning votes in the window */
    float quality;         /* best face quality of the track so far */
    /* The tracker leaves these NULL; a pipeline may point them at the identity's name
     * and a snapshot file before writing the event (borrowed). */
    const char *name;
    const char *snapshot;
    /* dwell_alarm */
    int zone;              /* zone index; -1: the track's own duration (opts.dwell_s) */
    const char *zone_name; /* borrowed from the tracker; NULL for zone -1 */
    int occupancy;         /* 1: the zone was occupied (by anyone) longer than T */
    int occupants;         /* occupancy: tracks in the zone now */
    double dwell;          /* seconds in the zone (or tracked, for zone -1) */
    /* track_ended */
    double first_seen, last_seen;  /* duration = last_seen - first_seen */
    float first_xy[2], last_xy[2]; /* reference point (opts.zone_point) */
    float path_length;             /* pixels travelled by the reference point */
    int hits;
    uint32_t zones_visited; /* bit z: the track was inside zone z at least once */
    int num_zones;
    float zone_time[FFU_TRACK_MAX_ZONES]; /* seconds inside each zone */
    const char *const *zone_names;        /* num_zones names, borrowed from the tracker */
} ffu_track_event;

FFU_API const char *ffu_track_event_type_name(ffu_track_event_type t); /* "face_appeared", ... */
FFU_API const char *ffu_track_state_name(ffu_track_state s);           /* "tentative", ... */

/* Writes one event as a JSON object: type, stream, time, track_id, box, and the fields
 * of its type (identity/name/similarity/snapshot, zone/dwell, trajectory summary).
 * stream may be NULL (written as null). */
FFU_API ffu_status ffu_track_event_write_json(const ffu_track_event *e, const char *stream,
                                              ffu_jw *w);

typedef void (*ffu_track_event_fn)(void *user, const ffu_track_event *e);

/* ---- tracker ----------------------------------------------------------------------- */

typedef struct ffu_tracker_opts {
    const char *name; /* stream name for log lines (copied); NULL = "stream" */
    /* Association (ByteTrack). A detection with score >= high_thresh is "high", one in
     * [low_thresh, high_thresh) "low", lower ones are ignored. */
    float high_thresh;         /* 0.5 */
    float low_thresh;          /* 0.1 */
    float new_track_thresh;    /* 0.6: unmatched high detections at least this start tracks */
    float match_iou;           /* 0.2: stage 1 (high dets vs confirmed+lost tracks) */
    float low_match_iou;       /* 0.5: stage 2 (low dets vs confirmed tracks) */
    float tentative_match_iou; /* 0.3: high dets vs tentative tracks */
    int fuse_score;            /* 1: stage-1 and tentative costs use IoU * score */
    int min_hits;              /* 2: consecutive hits before a track is confirmed */
    int max_age;               /* 30: missed updates before a lost track ends */
    double max_lost_s;         /* 0 = off; else a lost track also ends after this long */
    /* Kalman filter (state and noise: docs/TRACK.md) */
    float kf_std_pos; /* 1/20 of the box height per reference step */
    float kf_std_vel; /* 1/160 of the box height per reference step */
    double kf_ref_dt; /* 1/30 s: the frame interval the weights are for */
    /* Re-identification of lost tracks by embedding */
    float reid_threshold;   /* 0.5: cosine similarity to revive a lost track */
    double reid_max_gap_s;  /* 3.0: only tracks lost at most this long */
    float reid_gate;        /* 2.0: centre distance allowed, in box heights ... */
    float reid_gate_per_s;  /* 1.0: ... plus this many box heights per second lost */
    float feature_momentum; /* 0.9: track feature = m * old + (1 - m) * new */
    /* Best face and embedding schedule */
    float quality_ref_px;    /* 80: box side at which the size term of the fallback
                              * quality (score * size) saturates */
    float embed_margin;      /* 0.1: re-embed when quality beats the best embedded by this */
    double embed_interval_s; /* 2.0: re-embed at least this often */
    /* Identity voting */
    int vote_window;       /* N = 5 votes */
    int vote_hits;         /* K = 3 */
    float id_threshold;    /* 0: a vote for identity >= 0 needs similarity >= this
                            * (set to ffu_embedder_threshold) else it votes unknown */
    float margin_full;     /* 0.1: similarity margin (best - second) of full weight */
    float min_vote_weight; /* 0.2: lighter votes (blurred, ambiguous) abstain */
    float liveness_gate;   /* 0 = off; else votes need liveness >= gate */
    /* Dwell and zones */
    double dwell_s;             /* 0 = off; alarm when a track has been seen this long */
    double zone_gap_s;          /* 1.0: longest gap between two observations still
                                 * counted as time spent in a zone */
    ffu_track_point zone_point; /* point tested against zones and drawn in heatmaps */
    /* Events also go here (called inside update / vote / flush); may be NULL. */
    ffu_track_event_fn on_event;
    void *user;
} ffu_tracker_opts;

typedef struct ffu_tracker ffu_tracker;

/* What update decided for one detection. */
typedef struct ffu_track_result {
    int track_id; /* -1: not tracked (too low a score, or invalid box); state ENDED */
    ffu_track_state state;
    int want_embed; /* 1: embedding this face now is worth it (see TRACK.md) */
    float quality;  /* quality used for best-face choice */
} ffu_track_result;

typedef struct ffu_track_info {
    int id;
    ffu_track_state state;
    float box[4];      /* Kalman estimate after the last update (x, y, w, h) */
    float velocity[2]; /* box-centre velocity, pixels per second */
    int age;           /* updates since birth */
    int hits;          /* matched detections */
    int misses;        /* consecutive updates without a match */
    double first_seen, last_seen;
    float score; /* last matched detection score */
    float best_quality;
    int identity; /* confirmed identity, -1 none */
    float identity_similarity;
    int unknown;        /* 1 once unknown_face was reported */
    int embeddings;     /* embeddings received */
    int rejected_votes; /* votes dropped by the liveness gate */
    float path_length;
    double dwell; /* last_seen - first_seen */
} ffu_track_info;

/* A zone: a simple or self-intersecting polygon (even-odd rule), image pixels. */
typedef struct ffu_track_zone {
    const char *name;    /* copied */
    const float *points; /* x0, y0, x1, y1, ... (copied) */
    int num_points;      /* >= 3 */
    double dwell_s;      /* 0 = off: alarm when one track spends this long inside */
    double occupancy_s;  /* 0 = off: alarm when the zone stays occupied this long */
} ffu_track_zone;

FFU_API void ffu_tracker_opts_default(ffu_tracker_opts *o);
/* o NULL = defaults. FFU_ERR_INVALID names the first bad option. */
FFU_API ffu_status ffu_tracker_create(const ffu_tracker_opts *o, ffu_tracker **out);
FFU_API void ffu_tracker_destroy(ffu_tracker *t);

/* Adds a zone (before or between updates); *index (may be NULL) gets its index. */
FFU_API ffu_status ffu_tracker_add_zone(ffu_tracker *t, const ffu_track_zone *z, int *index);
/* Adds zones from JSON: {"zones": [{"name": "door", "polygon": [[x, y], ...],
 * "dwell": 5, "occupancy": 30}, ...]} or the bare array. FFU_ERR_FORMAT names the
 * bad entry; no zone is added then. */
FFU_API ffu_status ffu_tracker_add_zones_json(ffu_tracker *t, const ffu_json *j);
FFU_API int ffu_tracker_zone_count(const ffu_tracker *t);
FFU_API const char *ffu_tracker_zone_name(const ffu_tracker *t, int index);

/* One frame: `time` in seconds (>= the previous update's), n detections (borrowed;
 * embedding used when embedding_dim > 0; quality.score when finite; liveness ignored
 * here). results (may be NULL) gets n entries. Detections with a non-finite or
 * non-positive box or a non-finite score are skipped (track_id -1). Clears the event
 * array, then appends this update's events. */
FFU_API ffu_status ffu_tracker_update(ffu_tracker *t, double time, const ffu_face *dets, int n,
                                      ffu_track_result *results);

/* Gives a track the embedding of one of its faces (face->embedding_dim > 0), usually
 * the face update asked for. It updates the track's feature and best face, and may
 * re-identify the track: a tentative or just-born track whose embedding matches a
 * recently lost track (reid_threshold, position gate) takes over the lost track's id
 * and history. *merged_id (may be NULL) gets the id the track has afterwards.
 * FFU_ERR_NOT_FOUND for an unknown or ended track. */
FFU_API ffu_status ffu_tracker_set_embedding(ffu_tracker *t, int track_id, const ffu_face *face,
                                             int *merged_id);

/* One gallery match for one of a track's faces. */
typedef struct ffu_track_vote {
    int identity;     /* best gallery identity (>= 0), or -1 when the gallery had none */
    float similarity; /* its cosine similarity */
    float second;     /* best similarity among other identities; NAN when none */
    float quality;    /* face quality 0..1; NAN = the track's latest quality */
    float liveness;   /* 0..1; NAN = not computed (rejected when a gate is set) */
} ffu_track_vote;

/* Adds a vote to the track's window (K of N with hysteresis: docs/TRACK.md); may raise
 * identity_confirmed or unknown_face (appended to the current event array). */
FFU_API ffu_status ffu_tracker_vote(ffu_tracker *t, int track_id, double time,
                                    const ffu_track_vote *v);

/* Ends every track (track_ended events for confirmed ones), e.g. at end of stream.
 * Clears the event array first, like update. */
FFU_API ffu_status ffu_tracker_flush(ffu_tracker *t, double time);

/* Events raised since the last update/flush began; valid until the next update/flush. */
FFU_API const ffu_track_event *ffu_tracker_events(const ffu_tracker *t, int *count);

/* Copies up to cap tracks (tentative, confirmed and lost) into out (may be NULL when
 * cap is 0) and returns how many there are. */
FFU_API int ffu_tracker_tracks(const ffu_tracker *t, ffu_track_info *out, int cap);
/* One track's info; FFU_ERR_NOT_FOUND when absent. */
FFU_API ffu_status ffu_tracker_track(const ffu_tracker *t, int track_id, ffu_track_info *out);
/* The best face the track has had (landmarks not kept), with its embedding when one
 * was set for it; NULL when absent. Valid until the next call on t. */
FFU_API const ffu_face *ffu_tracker_best_face(const ffu_tracker *t, int track_id,
                                              double *time_seen);

/* Quality the tracker gives a face: face->quality.score when finite, else
 * score * min(1, min(w, h) / ref_px). */
FFU_API float ffu_track_face_quality(const ffu_face *f, float ref_px);

/* Even-odd point-in-polygon with half-open edges (like pixels: a square [0,10)x[0,10)
 * holds its left and top edges, not its right and bottom ones), so polygons that
 * share an edge never both hold a point. n < 3 -> 0. */
FFU_API int ffu_track_point_in_polygon(const float *xy, int n, float x, float y);

/* ---- heatmap ----------------------------------------------------------------------- */

typedef struct ffu_heatmap ffu_heatmap;

/* A float accumulator over a width x height frame at 1/scale resolution (scale 0 =
 * 8); every add splats a Gaussian of sigma cells (0 = 1.5). */
FFU_API ffu_status ffu_heatmap_create(int width, int height, int scale, float sigma,
                                      ffu_heatmap **out);
FFU_API void ffu_heatmap_destroy(ffu_heatmap *h);
FFU_API void ffu_heatmap_reset(ffu_heatmap *h);
/* Adds weight at frame point (x, y); points outside the frame still warm the border
 * cells their Gaussian reaches. */
FFU_API ffu_status ffu_heatmap_add(ffu_heatmap *h, float x, float y, float weight);
/* Adds each track matched in the tracker's last update at its reference point. */
FFU_API ffu_status ffu_heatmap_add_tracks(ffu_heatmap *h, const ffu_tracker *t);
/* The accumulator (row-major, *w x *h cells, borrowed). */
FFU_API const float *ffu_heatmap_data(const ffu_heatmap *h, int *w, int *hgt);
/* Renders into a new RGB24 image of the accumulator's size (ffu_image_release it):
 * value / max through a black-blue-red-yellow-white ramp; all black when empty.
 * Scale it up with the image module to overlay it on a frame. */
FFU_API ffu_status ffu_heatmap_render(const ffu_heatmap *h, ffu_image *out);

#ifdef __cplusplus
}
#endif
#endif
