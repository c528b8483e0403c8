/* Zones and dwell: polygons in image pixels, point-in-polygon, time each track spends
 * inside each zone, and the dwell alarms (a track in a zone, a zone occupied, a track
 * seen) raised once each when their time passes T. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "track_internal.h"

/* Time comparisons tolerate the rounding of sums of frame intervals (0.2 * 10). */
#define TIME_EPS 1e-6

int ffu_track_point_in_polygon(const float *xy, int n, float x, float y)
{
    if (!xy || n < 3 || !isfinite(x) || !isfinite(y)) return 0;
    /* Crossing number with the ray to +x. An edge counts when it straddles y with one
     * end strictly above (yi > y) and the other not, and the crossing lies strictly
     * right of x: points on left/top edges are in, right/bottom edges out. */
    int in = 0;
    for (int i = 0, j = n - 1; i < n; j = i++) {
        double xi = xy[2 * i], yi = xy[2 * i + 1], xj = xy[2 * j], yj = xy[2 * j + 1];
        if ((yi > y) == (yj > y)) continue;
        double xc = xi + (xj - xi) * ((double)y - yi) / (yj - yi);
        if ((double)x < xc) in = !in;
    }
    return in;
}

void track_zones_free(ffu_tracker *t)
{
    for (int z = 0; z < t->nzones; z++) {
        free(t->zones[z].name);
        free(t->zones[z].xy);
    }
    t->nzones = 0;
}

ffu_status ffu_tracker_add_zone(ffu_tracker *t, const ffu_track_zone *z, int *index)
{
    if (index) *index = -1;
    if (!t || !z) return ffu_error_set(FFU_ERR_INVALID, "tracker: NULL zone argument");
    if (!z->points || z->num_points < 3 || z->num_points > 100000)
        return ffu_error_set(FFU_ERR_INVALID, "zone %s: %d points (need 3 or more)",
                             z->name ? z->name : "?", z->num_points);
    for (int i = 0; i < 2 * z->num_points; i++)
        if (!isfinite(z->points[i]))
            return ffu_error_set(FFU_ERR_INVALID, "zone %s: point %d is not finite",
                                 z->name ? z->name : "?", i / 2);
    if (!(z->dwell_s >= 0) || !(z->occupancy_s >= 0) || !isfinite(z->dwell_s) ||
        !isfinite(z->occupancy_s))
        return ffu_error_set(FFU_ERR_INVALID, "zone %s: dwell and occupancy must be >= 0",
                             z->name ? z->name : "?");
    if (t->nzones >= FFU_TRACK_MAX_ZONES)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "tracker %s: more than %d zones", t->name,
                             FFU_TRACK_MAX_ZONES);
    zone *d = &t->zones[t->nzones];
    char def[32];
    snprintf(def, sizeof def, "zone%d", t->nzones);
    d->name = strdup(z->name ? z->name : def);
    d->xy = malloc((size_t)z->num_points * 2 * sizeof *d->xy);
    if (!d->name || !d->xy) {
        free(d->name);
        free(d->xy);
        d->name = NULL;
        d->xy = NULL;
        return ffu_error_set(FFU_ERR_NOMEM, "zone: out of memory");
    }
    memcpy(d->xy, z->points, (size_t)z->num_points * 2 * sizeof *d->xy);
    d->n = z->num_points;
    d->dwell_s = z->dwell_s;
    d->occupancy_s = z->occupancy_s;
    d->occ_start = -1;
    d->occ_alarmed = 0;
    t->zone_names[t->nzones] = d->name;
    if (index) *index = t->nzones;
    t->nzones++;
    return FFU_OK;
}

/* Checks one JSON zone and, when pts is not NULL, fills it (2 * npoints floats). */
static ffu_status parse_zone(const ffu_json *z, size_t k, float *pts, int *npoints, double *dwell,
                             double *occ)
{
    if (ffu_json_typeof(z) != FFU_JSON_OBJECT)
        return ffu_error_set(FFU_ERR_FORMAT, "zones[%zu]: not an object", k);
    const ffu_json *name = ffu_json_get(z, "name");
    if (name && ffu_json_typeof(name) != FFU_JSON_STRING)
        return ffu_error_set(FFU_ERR_FORMAT, "zones[%zu]: name is not a string", k);
    const ffu_json *poly = ffu_json_get(z, "polygon");
    size_t n = ffu_json_len(poly);
    if (ffu_json_typeof(poly) != FFU_JSON_ARRAY || n < 3 || n > 100000)
        return ffu_error_set(FFU_ERR_FORMAT, "zones[%zu]: polygon needs 3 or more [x, y] points",
                             k);
    for (size_t i = 0; i < n; i++) {
        const ffu_json *p = ffu_json_at(poly, i);
        const ffu_json *x = ffu_json_at(p, 0), *y = ffu_json_at(p, 1);
        if (ffu_json_typeof(p) != FFU_JSON_ARRAY || ffu_json_len(p) != 2 ||
            ffu_json_typeof(x) != FFU_JSON_NUMBER || ffu_json_typeof(y) != FFU_JSON_NUMBER ||
            !isfinite(ffu_json_number(x, NAN)) || !isfinite(ffu_json_number(y, NAN)) ||
            fabs(ffu_json_number(x, 0)) > 1e7 || fabs(ffu_json_number(y, 0)) > 1e7)
            return ffu_error_set(FFU_ERR_FORMAT, "zones[%zu]: point %zu is not [x, y]", k, i);
        if (pts) {
            pts[2 * i] = (float)ffu_json_number(x, 0);
            pts[2 * i + 1] = (float)ffu_json_number(y, 0);
        }
    }
    static const char *const keys[] = {"dwell", "occupancy"};
    double v[2] = {0, 0};
    for (int i = 0; i < 2; i++) {
        const ffu_json *j = ffu_json_get(z, keys[i]);
        if (!j || ffu_json_typeof(j) == FFU_JSON_NULL) continue;
        v[i] = ffu_json_number(j, -1);
        if (ffu_json_typeof(j) != FFU_JSON_NUMBER || !(v[i] >= 0) || !isfinite(v[i]))
            return ffu_error_set(FFU_ERR_FORMAT, "zones[%zu]: %s must be seconds >= 0", k, keys[i]);
    }
    *npoints = (int)n;
    *dwell = v[0];
    *occ = v[1];
    return FFU_OK;
}

ffu_status ffu_tracker_add_zones_json(ffu_tracker *t, const ffu_json *j)
{
    if (!t || !j) return ffu_error_set(FFU_ERR_INVALID, "tracker: NULL zones argument");
    const ffu_json *arr = ffu_json_typeof(j) == FFU_JSON_OBJECT ? ffu_json_get(j, "zones") : j;
    if (ffu_json_typeof(arr) != FFU_JSON_ARRAY)
        return ffu_error_set(FFU_ERR_FORMAT, "zones: expected an array or {\"zones\": [...]}");
    size_t n = ffu_json_len(arr);
    if (n > (size_t)(FFU_TRACK_MAX_ZONES - t->nzones))
        return ffu_error_set(FFU_ERR_TOO_LARGE, "zones: %zu zones, room for %d", n,
                             FFU_TRACK_MAX_ZONES - t->nzones);
    /* Validate everything before adding anything. */
    for (size_t k = 0; k < n; k++) {
        int np;
        double dw, oc;
        ffu_status st = parse_zone(ffu_json_at(arr, k), k, NULL, &np, &dw, &oc);
        if (st < 0) return st;
    }
    int first = t->nzones;
    for (size_t k = 0; k < n; k++) {
        const ffu_json *z = ffu_json_at(arr, k);
        size_t npts = ffu_json_len(ffu_json_get(z, "polygon"));
        float *pts = malloc(npts * 2 * sizeof *pts);
        if (!pts) goto nomem;
        ffu_track_zone zz = {ffu_json_string(ffu_json_get(z, "name")), pts, 0, 0, 0};
        ffu_status st = parse_zone(z, k, pts, &zz.num_points, &zz.dwell_s, &zz.occupancy_s);
        if (st >= 0) st = ffu_tracker_add_zone(t, &zz, NULL);
        free(pts);
        if (st < 0) {
            while (t->nzones > first) {
                t->nzones--;
                free(t->zones[t->nzones].name);
                free(t->zones[t->nzones].xy);
                t->zones[t->nzones].name = NULL;
                t->zones[t->nzones].xy = NULL;
            }
            return st;
        }
    }
    return FFU_OK;
nomem:
    while (t->nzones > first) {
        t->nzones--;
        free(t->zones[t->nzones].name);
        free(t->zones[t->nzones].xy);
    }
    return ffu_error_set(FFU_ERR_NOMEM, "zones: out of memory");
}

int ffu_tracker_zone_count(const ffu_tracker *t) { return t ? t->nzones : 0; }

const char *ffu_tracker_zone_name(const ffu_tracker *t, int index)
{
    return t && index >= 0 && index < t->nzones ? t->zones[index].name : NULL;
}

/* Called for every observation of a track (after its box was updated): time between
 * two observations inside the same zone counts, unless the gap is longer than
 * zone_gap_s (the track was lost meanwhile and we do not know where it was). */
void track_zone_observe(ffu_tracker *t, track *tr, double prev_seen, double time)
{
    double gap = time - prev_seen;
    for (int z = 0; z < t->nzones; z++) {
        uint32_t bit = 1u << z;
        int in = ffu_track_point_in_polygon(t->zones[z].xy, t->zones[z].n, tr->last_xy[0],
                                            tr->last_xy[1]);
        if (in && (tr->zone_in & bit) && gap > 0 && gap <= t->o.zone_gap_s + TIME_EPS)
            tr->zone_time[z] += gap;
        if (in) {
            tr->zone_in |= bit;
            tr->zones_visited |= bit;
        } else {
            tr->zone_in &= ~bit;
        }
    }
}

ffu_status track_zones_update(ffu_tracker *t, double time)
{
    ffu_status st;
    for (int i = 0; i < t->ntracks; i++) {
        track *tr = t->tracks[i];
        if (tr->state != FFU_TRACK_CONFIRMED || !tr->matched) continue;
        double seen = tr->last_seen - tr->first_seen;
        if (t->o.dwell_s > 0 && !tr->dwell_alarmed && seen + TIME_EPS >= t->o.dwell_s) {
            tr->dwell_alarmed = 1;
            ffu_track_event e;
            track_event_init(t, tr, FFU_EVENT_DWELL_ALARM, time, &e);
            e.zone = -1;
            e.dwell = seen;
            if ((st = track_emit(t, &e)) < 0) return st;
        }
        for (int z = 0; z < t->nzones; z++) {
            uint32_t bit = 1u << z;
            if (t->zones[z].dwell_s <= 0 || (tr->zone_alarmed & bit) ||
                tr->zone_time[z] + TIME_EPS < t->zones[z].dwell_s)
                continue;
            tr->zone_alarmed |= bit;
            ffu_track_event e;
            track_event_init(t, tr, FFU_EVENT_DWELL_ALARM, time, &e);
            e.zone = z;
            e.zone_name = t->zones[z].name;
            e.dwell = tr->zone_time[z];
            FFU_LOG(t, FFU_LOG_DEBUG, "track %d dwelt %.1f s in %s", tr->id, e.dwell, e.zone_name);
            if ((st = track_emit(t, &e)) < 0) return st;
        }
    }
    /* Occupancy: some confirmed track was inside at an observation recent enough. */
    for (int z = 0; z < t->nzones; z++) {
        zone *zn = &t->zones[z];
        if (zn->occupancy_s <= 0) continue;
        uint32_t bit = 1u << z;
        int occupants = 0;
        track *longest = NULL;
        for (int i = 0; i < t->ntracks; i++) {
            track *tr = t->tracks[i];
            if (tr->state != FFU_TRACK_CONFIRMED && tr->state != FFU_TRACK_LOST) continue;
            if (!(tr->zone_in & bit) || time - tr->last_seen > t->o.zone_gap_s + TIME_EPS) continue;
            occupants++;
            if (!longest || tr->zone_time[z] > longest->zone_time[z]) longest = tr;
        }
        if (!occupants) {
            zn->occ_start = -1;
            zn->occ_alarmed = 0;
            continue;
        }
        if (zn->occ_start < 0) zn->occ_start = time;
        if (zn->occ_alarmed || time - zn->occ_start + TIME_EPS < zn->occupancy_s) continue;
        zn->occ_alarmed = 1;
        ffu_track_event e;
        track_event_init(t, longest, FFU_EVENT_DWELL_ALARM, time, &e);
        e.zone = z;
        e.zone_name = zn->name;
        e.occupancy = 1;
        e.occupants = occupants;
        e.dwell = time - zn->occ_start;
        if ((st = track_emit(t, &e)) < 0) return st;
    }
    return FFU_OK;
}
