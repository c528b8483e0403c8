/* Fuzz target for zone files (`facefuse analyze --zones`): any bytes are parsed as JSON
 * and handed to ffu_tracker_add_zones_json. A bad file must be refused as a whole (the
 * zone count unchanged); a good one must give zones whose names are strings and that
 * survive a few tracker updates with faces placed on and around their polygons. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facefuse/core.h"
#include "facefuse/face.h"
#include "facefuse/track.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ffu_json *j = NULL;
    if (ffu_json_parse((const char *)data, size, &j) != FFU_OK) return 0;
    ffu_tracker_opts o;
    ffu_tracker_opts_default(&o);
    o.min_hits = 1;
    o.dwell_s = 0.1;
    ffu_tracker *t = NULL;
    if (ffu_tracker_create(&o, &t) != FFU_OK) abort();
    ffu_status st = ffu_tracker_add_zones_json(t, j);
    int n = ffu_tracker_zone_count(t);
    if (st != FFU_OK && n != 0) abort(); /* all or nothing */
    for (int z = 0; z < n; z++)
        if (!ffu_tracker_zone_name(t, z)) abort();
    /* A face walking across the frame: every zone test and dwell path runs. */
    for (int k = 0; k < 8 && n > 0; k++) {
        ffu_face f;
        memset(&f, 0, sizeof f);
        ffu_face_init(&f);
        f.box[0] = (float)(k * 40), f.box[1] = (float)(k * 25), f.box[2] = 60, f.box[3] = 60;
        f.score = 0.9f;
        if (ffu_tracker_update(t, 0.1 * k, &f, 1, NULL) != FFU_OK) abort();
        int ne = 0;
        const ffu_track_event *ev = ffu_tracker_events(t, &ne);
        for (int i = 0; i < ne; i++) {
            ffu_jw *w = NULL;
            if (ffu_jw_create(&w, 0) != FFU_OK) abort();
            if (ffu_track_event_write_json(&ev[i], "fuzz", w) != FFU_OK) abort();
            ffu_jw_destroy(w);
        }
    }
    ffu_tracker_flush(t, 1.0);
    ffu_tracker_destroy(t);
    ffu_json_free(j);
    return 0;
}
