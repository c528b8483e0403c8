/* Track events: filling them from a track, delivering them (callback and the
 * per-update array) and writing each as one JSON object for the JSONL sink. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "track_internal.h"

static const char *const event_names[FFU_EVENT_TYPE_COUNT] = {
    "face_appeared", "identity_confirmed", "unknown_face", "dwell_alarm", "track_ended",
};
static const char *const state_names[FFU_TRACK_STATE_COUNT] = {
    "tentative",
    "confirmed",
    "lost",
    "ended",
};

const char *ffu_track_event_type_name(ffu_track_event_type t)
{
    return (unsigned)t < FFU_EVENT_TYPE_COUNT ? event_names[t] : "unknown";
}

const char *ffu_track_state_name(ffu_track_state s)
{
    return (unsigned)s < FFU_TRACK_STATE_COUNT ? state_names[s] : "unknown";
}

void track_event_init(const ffu_tracker *t, const track *tr, ffu_track_event_type type, double time,
                      ffu_track_event *e)
{
    memset(e, 0, sizeof *e);
    e->type = type;
    e->track_id = tr->id;
    e->time = time;
    track_box(tr, e->box);
    e->score = tr->score;
    e->identity = tr->identity;
    e->previous_identity = FFU_TRACK_IDENTITY_NONE;
    e->similarity = tr->identity_similarity;
    e->quality = tr->best_quality;
    e->zone = -1;
    e->first_seen = tr->first_seen;
    e->last_seen = tr->last_seen;
    memcpy(e->first_xy, tr->first_xy, sizeof e->first_xy);
    memcpy(e->last_xy, tr->last_xy, sizeof e->last_xy);
    e->path_length = tr->path_length;
    e->hits = tr->hits;
    e->zones_visited = tr->zones_visited;
    e->num_zones = t->nzones;
    for (int z = 0; z < t->nzones; z++)
        e->zone_time[z] = (float)tr->zone_time[z];
    e->zone_names = t->zone_names;
}

ffu_status track_emit(ffu_tracker *t, const ffu_track_event *e)
{
    if (t->o.on_event) t->o.on_event(t->o.user, e);
    if (t->nevents == t->cap_events) {
        int cap = t->cap_events ? t->cap_events * 2 : 16;
        ffu_track_event *a = realloc(t->events, (size_t)cap * sizeof *a);
        if (!a) return ffu_error_set(FFU_ERR_NOMEM, "tracker %s: event array", t->name);
        t->events = a;
        t->cap_events = cap;
    }
    t->events[t->nevents++] = *e;
    return FFU_OK;
}

/* Events are read by people and stored by the line: numbers carry the digits that mean
 * something (times to 1 ms, pixels to 0.01, scores to 1e-4), not float noise. */
#define DIGITS_TIME 1e3
#define DIGITS_PX 1e2
#define DIGITS_SCORE 1e4

static void number(ffu_jw *w, double v, double scale)
{
    ffu_jw_number(w, isfinite(v) ? round(v * scale) / scale : v);
}

static void num(ffu_jw *w, const char *key, double v, double scale)
{
    ffu_jw_key(w, key);
    number(w, v, scale);
}

static void pair(ffu_jw *w, const char *key, const float xy[2])
{
    ffu_jw_key(w, key);
    ffu_jw_begin_array(w);
    number(w, xy[0], DIGITS_PX);
    number(w, xy[1], DIGITS_PX);
    ffu_jw_end_array(w);
}

static void identity(ffu_jw *w, const ffu_track_event *e)
{
    ffu_jw_key(w, "identity");
    if (e->identity >= 0)
        ffu_jw_int(w, e->identity);
    else
        ffu_jw_null(w);
    if (e->name) {
        ffu_jw_key(w, "name");
        ffu_jw_string(w, e->name);
    }
}

ffu_status ffu_track_event_write_json(const ffu_track_event *e, const char *stream, ffu_jw *w)
{
    if (!e || !w) return ffu_error_set(FFU_ERR_INVALID, "track event JSON: NULL argument");
    if ((unsigned)e->type >= FFU_EVENT_TYPE_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "track event JSON: type %d unknown", (int)e->type);
    ffu_jw_begin_object(w);
    ffu_jw_key(w, "type");
    ffu_jw_string(w, event_names[e->type]);
    ffu_jw_key(w, "stream");
    ffu_jw_string(w, stream); /* NULL -> null */
    num(w, "time", e->time, DIGITS_TIME);
    ffu_jw_key(w, "track_id");
    ffu_jw_int(w, e->track_id);
    ffu_jw_key(w, "box");
    ffu_jw_begin_array(w);
    for (int i = 0; i < 4; i++)
        number(w, e->box[i], DIGITS_PX);
    ffu_jw_end_array(w);
    num(w, "score", e->score, DIGITS_SCORE);
    switch (e->type) {
    case FFU_EVENT_FACE_APPEARED:
        num(w, "quality", e->quality, DIGITS_SCORE);
        break;
    case FFU_EVENT_IDENTITY_CONFIRMED:
    case FFU_EVENT_UNKNOWN_FACE:
        if (e->type == FFU_EVENT_IDENTITY_CONFIRMED) {
            identity(w, e);
            ffu_jw_key(w, "previous_identity");
            if (e->previous_identity >= 0)
                ffu_jw_int(w, e->previous_identity);
            else
                ffu_jw_null(w);
        }
        num(w, "similarity", e->similarity, DIGITS_SCORE);
        ffu_jw_key(w, "votes");
        ffu_jw_int(w, e->votes);
        num(w, "quality", e->quality, DIGITS_SCORE);
        if (e->snapshot) {
            ffu_jw_key(w, "snapshot");
            ffu_jw_string(w, e->snapshot);
        }
        break;
    case FFU_EVENT_DWELL_ALARM:
        ffu_jw_key(w, "zone");
        ffu_jw_string(w, e->zone >= 0 ? e->zone_name : NULL);
        ffu_jw_key(w, "zone_index");
        ffu_jw_int(w, e->zone);
        num(w, "dwell", e->dwell, DIGITS_TIME);
        ffu_jw_key(w, "occupancy");
        ffu_jw_bool(w, e->occupancy);
        if (e->occupancy) {
            ffu_jw_key(w, "occupants");
            ffu_jw_int(w, e->occupants);
        }
        break;
    case FFU_EVENT_TRACK_ENDED:
        identity(w, e);
        num(w, "first_seen", e->first_seen, DIGITS_TIME);
        num(w, "last_seen", e->last_seen, DIGITS_TIME);
        num(w, "duration", e->last_seen - e->first_seen, DIGITS_TIME);
        pair(w, "first", e->first_xy);
        pair(w, "last", e->last_xy);
        num(w, "path_length", e->path_length, DIGITS_PX);
        ffu_jw_key(w, "hits");
        ffu_jw_int(w, e->hits);
        num(w, "quality", e->quality, DIGITS_SCORE);
        ffu_jw_key(w, "zones");
        ffu_jw_begin_array(w);
        for (int z = 0; z < e->num_zones && z < FFU_TRACK_MAX_ZONES; z++) {
            if (!(e->zones_visited & (1u << z))) continue;
            ffu_jw_begin_object(w);
            ffu_jw_key(w, "name");
            ffu_jw_string(w, e->zone_names ? e->zone_names[z] : NULL);
            num(w, "seconds", e->zone_time[z], DIGITS_TIME);
            ffu_jw_end_object(w);
        }
        ffu_jw_end_array(w);
        break;
    default:
        break;
    }
    ffu_jw_end_object(w);
    return ffu_jw_status(w);
}
