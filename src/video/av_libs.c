/* The loader of av_libs.h: dlopen of libavutil, libswscale, libavcodec and libavformat
 * by the sonames of the headers the build saw, then one dlsym per function of the
 * table. Kept apart from the files that call FFmpeg, as the table's members here must
 * not be the call macros. */
#define VIDEO_AV_LOADER
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "video/av_libs.h"

video_av video_av_fns;

#define SONAME_(lib, major) "lib" lib ".so." #major
#define SONAME(lib, major) SONAME_(lib, major)

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_why[320]; /* empty once everything is loaded */

static void load(void)
{
    /* dependencies first, so that each dlopen finds what the next one needs loaded */
    static const char *const names[] = {
        SONAME("avutil", LIBAVUTIL_VERSION_MAJOR),
        SONAME("swscale", LIBSWSCALE_VERSION_MAJOR),
        SONAME("avcodec", LIBAVCODEC_VERSION_MAJOR),
        SONAME("avformat", LIBAVFORMAT_VERSION_MAJOR),
    };
    enum { NLIBS = sizeof names / sizeof names[0] };
    void *libs[NLIBS];
    for (int i = 0; i < NLIBS; i++)
        if (!(libs[i] = dlopen(names[i], RTLD_NOW | RTLD_LOCAL))) {
            const char *e = dlerror();
            snprintf(load_why, sizeof load_why,
                     "video needs FFmpeg's libraries (Debian: apt-get install libavformat%d "
                     "libswscale%d): %s",
                     LIBAVFORMAT_VERSION_MAJOR, LIBSWSCALE_VERSION_MAJOR, e ? e : names[i]);
            return; /* never unloaded: what loaded stays, as it would have if linked */
        }
#define VIDEO_AV_FIND(fn)                                                                          \
    for (int i = 0; i < NLIBS && !video_av_fns.fn; i++)                                            \
        *(void **)&video_av_fns.fn = dlsym(libs[i], #fn);                                          \
    if (!video_av_fns.fn) {                                                                        \
        snprintf(load_why, sizeof load_why, "video: FFmpeg's libraries have no %s", #fn);          \
        return;                                                                                    \
    }
    VIDEO_AV_FUNCS(VIDEO_AV_FIND)
#undef VIDEO_AV_FIND
}

ffu_status video_av_load(void)
{
    pthread_once(&load_once, load);
    return load_why[0] ? ffu_error_set(FFU_ERR_UNSUPPORTED, "%s", load_why) : FFU_OK;
}
