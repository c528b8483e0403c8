/* The video reader: libavformat demuxes a file, URL, device or memory buffer,
 * libavcodec decodes the best video stream, libswscale converts each frame into the
 * caller's ffu_image. Blocking I/O is bounded by an AVIOInterruptCB deadline per call
 * (open, read, seek), which is how timeouts reach every protocol (file, RTSP, HTTP, UDP)
 * without protocol-specific options. Corrupt packets are skipped and counted; a stream
 * that keeps failing, or ends early, is reported as FFU_ERR_FORMAT. With hwaccel
 * (hwaccel.c) NVDEC decodes into device memory: read_gpu hands the surface out as it
 * is, read downloads only the frames it converts. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

#include "video/video_internal.h"

/* Consecutive packets the decoder may reject before the stream counts as broken: a
 * damaged GOP of a live camera recovers at the next keyframe, a random file never does. */
#define MAX_CONSECUTIVE_DECODE_ERRORS 64
/* Packets demuxed without any frame coming out before a file counts as undecodable
 * (bounds the work a hostile input can cause between two reads). */
#define MAX_PACKETS_WITHOUT_FRAME 4096
#define MEM_IO_BUFFER 32768

typedef struct mem_source {
    const uint8_t *data;
    size_t size, pos;
} mem_source;

/* A swscale context and the colour coding it was last set up for. */
typedef struct conv_state {
    struct SwsContext *sws;
    int colorspace, range; /* -1 = not yet */
    uint8_t *split;        /* NV12's chroma as two planes (split_nv12) */
    size_t split_cap;
} conv_state;

struct ffu_video_reader {
    const ffu_class *cls;
    char *name; /* url, or "memory" */
    AVFormatContext *fmt;
    AVIOContext *mem_io; /* custom I/O of open_memory; freed by us, not by avformat */
    mem_source mem;
    AVCodecContext *dec;
    AVStream *st;
    int vstream;
    AVPacket *pkt;
    AVFrame *frame;
    conv_state cv; /* decoded frame -> the caller's format */

    video_hw hw;          /* NVDEC state; zeroed (CPU) unless hwaccel chose CUDA */
    AVFrame *sw_frame;    /* host copy of a CUDA frame, reused */
    conv_state cv_up;     /* read_gpu's fallback: host frame -> NV12 */
    ffu_image up_host;    /* ... its NV12 on the host */
    ffu_gpu_image up_dev; /* ... and on the device (read_gpu's view of it) */
    int up_logged;
    /* colour coding of the last decoded frame, for ffu_video_reader_color */
    enum AVColorSpace last_cs;
    enum AVColorRange last_range;
    int last_w, last_h, last_yuvj;

    ffu_video_info info;
    ffu_pixfmt out_fmt;
    enum AVPixelFormat out_avfmt;
    int out_w, out_h;

    int timeout_ms;
    int64_t deadline_ns; /* 0 = none */
    int timed_out, interrupted;
    int (*user_interrupt)(void *);
    void *user;

    int64_t origin;   /* st->time_base units: pts that read() reports as 0 */
    double frame_dur; /* seconds, for pts-less frames and seek tolerance */
    double last_pts;
    int draining;          /* the demuxer ended; the decoder was sent the flush packet */
    ffu_status end_status; /* what to report once drained: FFU_EOF or a demux error */
    int seeking, seeked;
    double seek_to;
    int64_t video_packets; /* demuxed since open, to tell a truncated file from its end */
    int consecutive_errors;
    ffu_video_reader_stats stats;
};

static const char *reader_item_name(const void *obj)
{
    return ((const ffu_video_reader *)obj)->name;
}
static const ffu_class reader_class = {"video_reader", reader_item_name};

/* ---- interrupt / timeout ------------------------------------------------------------- */

static int interrupt_cb(void *opaque)
{
    ffu_video_reader *r = opaque;
    if (r->user_interrupt && r->user_interrupt(r->user)) {
        r->interrupted = 1;
        return 1;
    }
    if (r->deadline_ns && ffu_clock_ns() > r->deadline_ns) {
        r->timed_out = 1;
        return 1;
    }
    return 0;
}

static void arm_deadline(ffu_video_reader *r)
{
    r->timed_out = r->interrupted = 0;
    r->deadline_ns = r->timeout_ms > 0 ? ffu_clock_ns() + (int64_t)r->timeout_ms * 1000000 : 0;
}

/* The status of a failed FFmpeg call, telling a timeout or an interrupt (which FFmpeg
 * reports as AVERROR_EXIT or whatever the protocol made of it) from a real error. */
static ffu_status fail(ffu_video_reader *r, int averr, const char *what)
{
    if (r->interrupted) return ffu_error_set(FFU_ERR_CLOSED, "%s: %s: interrupted", r->name, what);
    if (r->timed_out)
        return ffu_error_set(FFU_ERR_TIMEOUT, "%s: %s: no answer within %d ms", r->name, what,
                             r->timeout_ms);
    return video_av_error(averr, r->name, what);
}

/* ---- memory I/O ------------------------------------------------------------------------ */

static int mem_read(void *opaque, uint8_t *buf, int n)
{
    mem_source *m = opaque;
    size_t avail = m->size - m->pos;
    if (avail == 0) return AVERROR_EOF;
    size_t k = (size_t)n < avail ? (size_t)n : avail;
    memcpy(buf, m->data + m->pos, k);
    m->pos += k;
    return (int)k;
}

static int64_t mem_seek(void *opaque, int64_t offset, int whence)
{
    mem_source *m = opaque;
    if (whence & AVSEEK_SIZE) return (int64_t)m->size;
    int64_t base;
    switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET:
        base = 0;
        break;
    case SEEK_CUR:
        base = (int64_t)m->pos;
        break;
    case SEEK_END:
        base = (int64_t)m->size;
        break;
    default:
        return AVERROR(EINVAL);
    }
    if (offset > INT64_MAX - base) return AVERROR(EINVAL);
    int64_t pos = base + offset;
    if (pos < 0 || (uint64_t)pos > m->size) return AVERROR(EINVAL);
    m->pos = (size_t)pos;
    return pos;
}

/* ---- open ---------------------------------------------------------------------------------- */

void ffu_video_reader_close(ffu_video_reader *r)
{
    if (!r) return;
    avcodec_free_context(&r->dec);
    av_packet_free(&r->pkt);
    av_frame_free(&r->frame);
    av_frame_free(&r->sw_frame);
    sws_freeContext(r->cv.sws);
    sws_freeContext(r->cv_up.sws);
    free(r->cv.split);
    free(r->cv_up.split);
    ffu_image_release(&r->up_host);
    ffu_gpu_image_release(&r->up_dev);
    video_hw_close(&r->hw); /* after everything that holds CUDA memory */
    avformat_close_input(&r->fmt); /* leaves a custom pb alone */
    if (r->mem_io) {
        av_freep(&r->mem_io->buffer);
        avio_context_free(&r->mem_io);
    }
    free(r->name);
    free(r);
}

static int is_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void copy_name(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

/* Names the decoder in the info: which implementation and where it runs. */
static void set_decoder_info(ffu_video_reader *r)
{
    r->info.hwaccel = r->hw.active;
    snprintf(r->info.decoder, sizeof r->info.decoder, "%s (%s)", r->dec->codec->name,
             r->hw.active == FFU_VIDEO_HWACCEL_CUDA ? "nvdec" : "cpu");
}

static void fill_info(ffu_video_reader *r)
{
    ffu_video_info *in = &r->info;
    AVStream *st = r->st;
    AVCodecParameters *par = st->codecpar;
    in->width = par->width;
    in->height = par->height;
    AVRational fr = st->avg_frame_rate;
    if (fr.num <= 0 || fr.den <= 0) fr = st->r_frame_rate;
    if (fr.num > 0 && fr.den > 0) {
        av_reduce(&in->fps_num, &in->fps_den, fr.num, fr.den, INT_MAX);
        in->fps = av_q2d(fr);
    } else {
        in->fps_num = 0, in->fps_den = 1, in->fps = 0;
    }
    in->duration = -1;
    if (r->fmt->duration != AV_NOPTS_VALUE && r->fmt->duration > 0)
        in->duration = (double)r->fmt->duration / AV_TIME_BASE;
    else if (st->duration != AV_NOPTS_VALUE && st->duration > 0)
        in->duration = (double)st->duration * av_q2d(st->time_base);
    if (st->nb_frames > 0) {
        in->frame_count = st->nb_frames;
        in->frame_count_exact = 1;
    } else if (in->duration > 0 && in->fps > 0) {
        in->frame_count = llround(in->duration * in->fps);
    }
    copy_name(in->codec, sizeof in->codec, avcodec_get_name(par->codec_id));
    copy_name(in->container, sizeof in->container, r->fmt->iformat->name);
    for (unsigned i = 0; i < r->fmt->nb_streams; i++) {
        AVCodecParameters *p = r->fmt->streams[i]->codecpar;
        if (p->codec_type != AVMEDIA_TYPE_AUDIO) continue;
        if (!in->audio_streams++)
            copy_name(in->audio_codec, sizeof in->audio_codec, avcodec_get_name(p->codec_id));
    }
    in->has_audio = in->audio_streams > 0;
    in->seekable = r->fmt->pb && (r->fmt->pb->seekable & AVIO_SEEKABLE_NORMAL);
    r->frame_dur = in->fps > 0 ? 1.0 / in->fps : 1.0 / 25;
    set_decoder_info(r);
    r->last_cs = par->color_space;
    r->last_range = par->color_range;
    r->last_w = par->width;
    r->last_h = par->height;
}

static ffu_status open_common(ffu_video_reader *r, const char *url, const ffu_video_reader_opts *o)
{
    static const ffu_video_reader_opts defaults;
    if (!o) o = &defaults;
    ffu_pixfmt pf = o->pixfmt == FFU_PIX_NONE ? FFU_PIX_RGB24 : o->pixfmt;
    r->out_avfmt = video_avfmt_of(pf);
    if (r->out_avfmt == AV_PIX_FMT_NONE)
        return ffu_error_set(FFU_ERR_INVALID, "%s: output pixel format %s is not supported",
                             r->name, ffu_pixfmt_name(pf));
    if (o->width < 0 || o->height < 0 || o->max_pixels < 0)
        return ffu_error_set(FFU_ERR_INVALID, "%s: negative size option", r->name);
    ffu_status hst = video_hw_check_opts(o, r->name);
    if (hst < 0) return hst;
    r->out_fmt = pf;
    r->timeout_ms = o->timeout_ms == 0 ? FFU_VIDEO_TIMEOUT_MS_DEFAULT : o->timeout_ms;
    r->user_interrupt = o->interrupt;
    r->user = o->interrupt_user;
    r->vstream = -1;
    int64_t max_pixels = o->max_pixels ? o->max_pixels : (int64_t)FFU_IMAGE_MAX_PIXELS;

    r->fmt = avformat_alloc_context();
    r->pkt = av_packet_alloc();
    r->frame = av_frame_alloc();
    if (!r->fmt || !r->pkt || !r->frame)
        return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", r->name);
    r->fmt->interrupt_callback.callback = interrupt_cb;
    r->fmt->interrupt_callback.opaque = r;
    if (r->mem_io) {
        r->fmt->pb = r->mem_io;
        r->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    }

    const AVInputFormat *ifmt = NULL;
    const char *fmt_name = o->format;
    if (!fmt_name && url && is_prefix(url, "/dev/video")) fmt_name = "v4l2";
    if (fmt_name) {
        ifmt = av_find_input_format(fmt_name);
        if (!ifmt && video_devices_load()) /* a device format (v4l2, ...) */
            ifmt = av_find_input_format(fmt_name);
        if (!ifmt) {
            avformat_free_context(r->fmt);
            r->fmt = NULL;
            const char *lib = video_devices_library();
            char hint[96] = "";
            if (strcmp(fmt_name, "v4l2") == 0)
                snprintf(hint, sizeof hint, " (needs %s)", lib ? lib : "a build with libavdevice");
            return ffu_error_set(FFU_ERR_UNSUPPORTED,
                                 "%s: input format '%s' is not available in this build%s", r->name,
                                 fmt_name, hint);
        }
    }

    AVDictionary *dict = NULL;
    if (url && (is_prefix(url, "rtsp://") || is_prefix(url, "rtsps://")))
        av_dict_set(&dict, "rtsp_transport", o->rtsp_transport == FFU_RTSP_UDP ? "udp" : "tcp", 0);
    /* A file in memory is untrusted data with no place in any file system: playlists
     * (HLS, concat, ...) inside it must not reach out to files or the network. */
    if (r->mem_io) av_dict_set(&dict, "protocol_whitelist", "none", 0);
    for (const char *const *kv = o->av_options; kv && kv[0]; kv += 2) {
        if (!kv[1]) {
            av_dict_free(&dict);
            avformat_free_context(r->fmt);
            r->fmt = NULL;
            return ffu_error_set(FFU_ERR_INVALID, "%s: av_options: '%s' has no value", r->name,
                                 kv[0]);
        }
        av_dict_set(&dict, kv[0], kv[1], 0);
    }

    arm_deadline(r);
    /* On failure avformat_open_input frees the context (but not a custom pb). */
    int ret = avformat_open_input(&r->fmt, url ? url : "", ifmt, &dict);
    AVDictionaryEntry *unused = av_dict_get(dict, "", NULL, AV_DICT_IGNORE_SUFFIX);
    if (ret >= 0 && unused)
        FFU_LOG(r, FFU_LOG_WARN, "option '%s' was not used by the demuxer", unused->key);
    av_dict_free(&dict);
    if (ret < 0) return fail(r, ret, "cannot open");

    arm_deadline(r);
    ret = avformat_find_stream_info(r->fmt, NULL);
    if (ret < 0) return fail(r, ret, "cannot read stream info");

    const AVCodec *codec = NULL;
    ret = av_find_best_stream(r->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0);
    if (ret == AVERROR_STREAM_NOT_FOUND)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: no video stream", r->name);
    if (ret < 0 || !codec) {
        int idx = ret >= 0 ? ret : av_find_best_stream(r->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
        const char *cname =
            idx >= 0 ? avcodec_get_name(r->fmt->streams[idx]->codecpar->codec_id) : "?";
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: no decoder for video codec %s", r->name,
                             cname);
    }
    r->vstream = ret;
    r->st = r->fmt->streams[ret];
    for (unsigned i = 0; i < r->fmt->nb_streams; i++)
        if ((int)i != r->vstream) r->fmt->streams[i]->discard = AVDISCARD_ALL;

    AVCodecParameters *par = r->st->codecpar;
    if (par->width <= 0 || par->height <= 0)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: video stream without a valid size (%dx%d)",
                             r->name, par->width, par->height);
    if (par->width > FFU_IMAGE_MAX_DIM || par->height > FFU_IMAGE_MAX_DIM ||
        (int64_t)par->width * par->height > max_pixels)
        return ffu_error_set(FFU_ERR_TOO_LARGE, "%s: video %dx%d exceeds the size cap", r->name,
                             par->width, par->height);

    /* NVDEC or the CPU; may pick another decoder of the codec (one with a CUDA hwaccel). */
    ffu_status st = video_hw_open(&r->hw, r, r->name, o, &codec);
    if (st < 0) return st;
    r->dec = avcodec_alloc_context3(codec);
    if (!r->dec) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", r->name);
    ret = avcodec_parameters_to_context(r->dec, par);
    if (ret < 0) return fail(r, ret, "bad codec parameters");
    r->dec->pkt_timebase = r->st->time_base;
    r->dec->thread_count = o->threads > 0 ? o->threads : 0;
    if (r->hw.active == FFU_VIDEO_HWACCEL_CUDA) {
        /* NVDEC decodes; CPU threads would only parse, and each frame thread takes one
         * more decode surface from NVDEC's limit of 32 (FFmpeg adds thread_count to the
         * pool): unless asked otherwise, one thread. */
        if (o->threads <= 0) r->dec->thread_count = 1;
        if ((st = video_hw_attach(&r->hw, r->dec, r->name)) < 0) return st;
    }
    /* The decoder refuses larger frames itself, so a stream that grows mid-way (or lies
     * in its headers) cannot make it allocate past the cap. */
    r->dec->max_pixels = max_pixels;
    ret = avcodec_open2(r->dec, codec, NULL);
    if (ret < 0) return fail(r, ret, "cannot open the decoder");

    fill_info(r);
    r->out_w = o->width ? o->width : r->info.width;
    r->out_h = o->height ? o->height : r->info.height;
    if (pf == FFU_PIX_NV12 || pf == FFU_PIX_YUV420P) {
        r->out_w &= ~1;
        r->out_h &= ~1;
    }
    if (r->out_w <= 0 || r->out_h <= 0 || r->out_w > FFU_IMAGE_MAX_DIM ||
        r->out_h > FFU_IMAGE_MAX_DIM ||
        (uint64_t)r->out_w * (uint64_t)r->out_h > FFU_IMAGE_MAX_PIXELS)
        return ffu_error_set(FFU_ERR_INVALID, "%s: output size %dx%d is not possible", r->name,
                             r->out_w, r->out_h);

    /* read() counts time from the video stream's first timestamp, the same origin the
     * writer uses when it copies audio from this file. */
    if (r->st->start_time != AV_NOPTS_VALUE)
        r->origin = r->st->start_time;
    else if (r->fmt->start_time != AV_NOPTS_VALUE)
        r->origin = av_rescale_q(r->fmt->start_time, AV_TIME_BASE_Q, r->st->time_base);
    r->last_pts = -r->frame_dur;
    r->cv.colorspace = r->cv.range = -1;
    r->cv_up.colorspace = r->cv_up.range = -1;
    r->end_status = FFU_EOF;
    return FFU_OK;
}

ffu_status ffu_video_reader_open(ffu_video_reader **out, const char *url,
                                 const ffu_video_reader_opts *opts)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_video_reader_open: out is NULL");
    *out = NULL;
    if (!url || !*url) return ffu_error_set(FFU_ERR_INVALID, "ffu_video_reader_open: no url");
    ffu_status st = video_global_init();
    if (st < 0) return st;
    ffu_video_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->name = strdup(url))) {
        free(r);
        return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", url);
    }
    r->cls = &reader_class;
    st = open_common(r, url, opts);
    if (st < 0) {
        ffu_video_reader_close(r);
        return st;
    }
    *out = r;
    return FFU_OK;
}

ffu_status ffu_video_reader_open_memory(ffu_video_reader **out, const void *data, size_t size,
                                        const ffu_video_reader_opts *opts)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_video_reader_open_memory: out is NULL");
    *out = NULL;
    if (!data && size)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_video_reader_open_memory: data is NULL");
    ffu_status gst = video_global_init();
    if (gst < 0) return gst;
    ffu_video_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->name = strdup("memory"))) {
        free(r);
        return ffu_error_set(FFU_ERR_NOMEM, "memory video: out of memory");
    }
    r->cls = &reader_class;
    r->mem.data = data;
    r->mem.size = size;
    uint8_t *buf = av_malloc(MEM_IO_BUFFER);
    if (buf)
        r->mem_io = avio_alloc_context(buf, MEM_IO_BUFFER, 0, &r->mem, mem_read, NULL, mem_seek);
    if (!r->mem_io) {
        av_free(buf);
        ffu_video_reader_close(r);
        return ffu_error_set(FFU_ERR_NOMEM, "memory video: out of memory");
    }
    ffu_status st = open_common(r, NULL, opts);
    if (st < 0) {
        ffu_video_reader_close(r);
        return st;
    }
    *out = r;
    return FFU_OK;
}

/* ---- accessors ------------------------------------------------------------------------ */

const ffu_video_info *ffu_video_reader_info(const ffu_video_reader *r)
{
    return r ? &r->info : NULL;
}

void ffu_video_reader_output(const ffu_video_reader *r, ffu_pixfmt *fmt, int *width, int *height)
{
    if (fmt) *fmt = r ? r->out_fmt : FFU_PIX_NONE;
    if (width) *width = r ? r->out_w : 0;
    if (height) *height = r ? r->out_h : 0;
}

const char *ffu_video_reader_metadata(const ffu_video_reader *r, const char *key)
{
    if (!r || !key || !*key) return NULL;
    AVDictionaryEntry *e = av_dict_get(r->fmt->metadata, key, NULL, 0);
    return e ? e->value : NULL;
}

const char *ffu_video_reader_metadata_at(const ffu_video_reader *r, int i, const char **value)
{
    if (value) *value = NULL;
    if (!r || i < 0) return NULL;
    AVDictionaryEntry *e = NULL;
    for (int k = 0; k <= i; k++)
        if (!(e = av_dict_get(r->fmt->metadata, "", e, AV_DICT_IGNORE_SUFFIX))) return NULL;
    if (value) *value = e->value;
    return e->key;
}

void ffu_video_reader_stats_get(const ffu_video_reader *r, ffu_video_reader_stats *s)
{
    if (!s) return;
    if (r)
        *s = r->stats;
    else
        memset(s, 0, sizeof *s);
}

/* ---- reading --------------------------------------------------------------------------- */

/* Decodes the next frame into r->frame. FFU_OK, FFU_EOF (or the pending demux error)
 * when everything is drained, or an error. */
static ffu_status decode_next(ffu_video_reader *r)
{
    int packets = 0;
    for (;;) {
        int ret = avcodec_receive_frame(r->dec, r->frame);
        if (ret >= 0) {
            r->consecutive_errors = 0;
            /* Did NVDEC decode it? It may refuse a stream once it sees its first SPS. */
            ffu_status hs = video_hw_frame_check(&r->hw, r, r->name, r->dec, r->frame);
            if (hs < 0) {
                av_frame_unref(r->frame);
                return hs;
            }
            if (hs > 0) set_decoder_info(r);
            return FFU_OK;
        }
        if (ret == AVERROR_EOF) {
            if (r->end_status == FFU_EOF && r->stats.frames == 0 && r->stats.decode_errors)
                return ffu_error_set(FFU_ERR_FORMAT, "%s: no frame could be decoded", r->name);
            if (r->end_status < 0)
                return ffu_error_set(r->end_status, "%s: the stream ends in damaged data", r->name);
            return FFU_EOF;
        }
        if (ret != AVERROR(EAGAIN)) {
            /* A frame-threaded decoder reports a bad packet here rather than on send. */
            r->stats.decode_errors++;
            if (++r->consecutive_errors > MAX_CONSECUTIVE_DECODE_ERRORS)
                return video_av_error(ret, r->name, "the decoder keeps failing");
            continue;
        }
        if (r->draining) return ffu_error_set(FFU_ERR_INTERNAL, "%s: decoder stalled", r->name);

        ret = av_read_frame(r->fmt, r->pkt);
        if (ret < 0) {
            if (r->interrupted || r->timed_out) return fail(r, ret, "read");
            if (ret != AVERROR_EOF) {
                /* A read error after the last good packet: return what the decoder still
                 * holds, then the error. Files end this way when truncated. */
                ffu_status st = video_status_of(ret);
                if (st != FFU_ERR_FORMAT && st != FFU_ERR_IO) return fail(r, ret, "read");
                r->end_status = FFU_ERR_FORMAT;
                FFU_LOG(r, FFU_LOG_DEBUG, "demuxer error, draining the decoder");
            } else if (r->fmt->pb && r->fmt->pb->error < 0) {
                r->end_status = FFU_ERR_FORMAT;
            } else if (r->fmt->pb && r->fmt->pb->eof_reached && !r->seeked &&
                       r->info.frame_count_exact && r->video_packets < r->info.frame_count) {
                /* The bytes ran out while the index still lists frames: a truncated MP4
                 * (whose demuxer reports that as a plain end). */
                r->end_status = FFU_ERR_FORMAT;
                FFU_LOG(r, FFU_LOG_DEBUG, "file ends after %lld of %lld frames",
                        (long long)r->video_packets, (long long)r->info.frame_count);
            }
            r->draining = 1;
            avcodec_send_packet(r->dec, NULL);
            continue;
        }
        if (r->pkt->stream_index != r->vstream) {
            av_packet_unref(r->pkt);
            continue;
        }
        r->video_packets++;
        if (++packets > MAX_PACKETS_WITHOUT_FRAME)
            return ffu_error_set(FFU_ERR_FORMAT, "%s: %d packets without a decodable frame",
                                 r->name, MAX_PACKETS_WITHOUT_FRAME);
        ret = avcodec_send_packet(r->dec, r->pkt);
        av_packet_unref(r->pkt);
        if (ret < 0 && ret != AVERROR(EAGAIN)) {
            if (ret == AVERROR(ENOMEM)) return video_av_error(ret, r->name, "decode");
            r->stats.decode_errors++;
            if (++r->consecutive_errors > MAX_CONSECUTIVE_DECODE_ERRORS)
                return video_av_error(ret, r->name, "the decoder keeps failing");
        }
    }
}

static int sws_cs_of(enum AVColorSpace cs, int w, int h)
{
    switch (cs) {
    case AVCOL_SPC_BT709:
        return SWS_CS_ITU709;
    case AVCOL_SPC_FCC:
        return SWS_CS_FCC;
    case AVCOL_SPC_SMPTE240M:
        return SWS_CS_SMPTE240M;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL:
        return SWS_CS_BT2020;
    case AVCOL_SPC_BT470BG:
    case AVCOL_SPC_SMPTE170M:
        return SWS_CS_ITU601;
    default:
        /* Untagged: what players assume, HD sizes are BT.709. */
        return (w >= 1280 || h > 576) ? SWS_CS_ITU709 : SWS_CS_ITU601;
    }
}

static int is_yuvj(enum AVPixelFormat f)
{
    return f == AV_PIX_FMT_YUVJ420P || f == AV_PIX_FMT_YUVJ422P || f == AV_PIX_FMT_YUVJ444P ||
           f == AV_PIX_FMT_YUVJ440P || f == AV_PIX_FMT_YUVJ411P;
}

/* NVDEC gives NV12 where the CPU decoder gives I420 of the same samples, and swscale
 * upsamples chroma differently from those two inputs (RGB 1.7 levels apart on average
 * on our clips): f's chroma split into two planes in cv->split, so that both decoders
 * go through the same conversion. planes/pitch: f's, with planes 1 and 2 replaced. */
static ffu_status split_nv12(ffu_video_reader *r, conv_state *cv, const AVFrame *f,
                             const uint8_t *planes[4], int pitch[4])
{
    size_t cw = (size_t)(f->width + 1) / 2, ch = (size_t)(f->height + 1) / 2;
    if (cv->split_cap < cw * ch * 2) {
        uint8_t *p = realloc(cv->split, cw * ch * 2);
        if (!p) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", r->name);
        cv->split = p, cv->split_cap = cw * ch * 2;
    }
    uint8_t *u = cv->split, *v = cv->split + cw * ch;
    for (size_t y = 0; y < ch; y++) {
        const uint8_t *uv = f->data[1] + y * (size_t)f->linesize[1];
        for (size_t x = 0; x < cw; x++)
            u[y * cw + x] = uv[2 * x], v[y * cw + x] = uv[2 * x + 1];
    }
    planes[1] = u, planes[2] = v;
    pitch[1] = pitch[2] = (int)cw;
    return FFU_OK;
}

/* Converts f (host memory) into img as fmt/avfmt w x h: allocates img when it is empty,
 * else img must be exactly that. cv keeps the swscale context between frames. */
static ffu_status convert_into(ffu_video_reader *r, conv_state *cv, const AVFrame *f,
                               ffu_image *img, ffu_pixfmt fmt, enum AVPixelFormat avfmt, int w,
                               int h)
{
    enum AVPixelFormat src = (enum AVPixelFormat)f->format;
    if (f->width <= 0 || f->height <= 0 || src == AV_PIX_FMT_NONE)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: decoder gave an empty frame", r->name);
    ffu_status st;
    if (!img->data[0]) {
        if ((st = ffu_image_create(img, fmt, w, h)) < 0) return st;
    } else if (img->fmt != fmt || img->width != w || img->height != h) {
        return ffu_error_set(
            FFU_ERR_INVALID, "%s: frame image is %s %dx%d, the reader gives %s %dx%d", r->name,
            ffu_pixfmt_name(img->fmt), img->width, img->height, ffu_pixfmt_name(fmt), w, h);
    }
    if (src == AV_PIX_FMT_NV12 && avfmt == AV_PIX_FMT_NV12 && f->width == w && f->height == h) {
        /* a plain copy: swscale 5.1's NV12 -> NV12 path leaves the chroma plane unwritten
         * (seen with NVDEC's frames on an H200, 2026-12-04) */
        ffu_image frame = {.fmt = FFU_PIX_NV12,
                           .width = w,
                           .height = h,
                           .data = {f->data[0], f->data[1]},
                           .stride = {f->linesize[0], f->linesize[1]}};
        return ffu_image_copy(&frame, img);
    }
    const uint8_t *planes[4] = {f->data[0], f->data[1], f->data[2], f->data[3]};
    int pitch[4] = {f->linesize[0], f->linesize[1], f->linesize[2], f->linesize[3]};
    if (src == AV_PIX_FMT_NV12) {
        if ((st = split_nv12(r, cv, f, planes, pitch)) < 0) return st;
        src = AV_PIX_FMT_YUV420P;
    }
    struct SwsContext *prev = cv->sws;
    cv->sws = sws_getCachedContext(cv->sws, f->width, f->height, src, w, h, avfmt, SWS_BILINEAR,
                                   NULL, NULL, NULL);
    if (!cv->sws)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: cannot convert %s %dx%d to %s", r->name,
                             av_get_pix_fmt_name(src), f->width, f->height, ffu_pixfmt_name(fmt));
    /* YUV -> RGB needs the stream's matrix and range; swscale assumes BT.601 limited. */
    const AVPixFmtDescriptor *sd = av_pix_fmt_desc_get(src);
    int src_yuv = sd && !(sd->flags & AV_PIX_FMT_FLAG_RGB) && sd->nb_components >= 3;
    int cs = sws_cs_of(f->colorspace, f->width, f->height);
    int full = f->color_range == AVCOL_RANGE_JPEG || is_yuvj(src);
    if (src_yuv && (cv->sws != prev || cs != cv->colorspace || full != cv->range)) {
        int out_yuv = fmt == FFU_PIX_NV12 || fmt == FFU_PIX_YUV420P;
        /* YUV outputs keep the source's coding (no matrix change); RGB/gray are full range. */
        sws_setColorspaceDetails(cv->sws, sws_getCoefficients(cs), full, sws_getCoefficients(cs),
                                 out_yuv ? full : 1, 0, 1 << 16, 1 << 16);
        cv->colorspace = cs;
        cv->range = full;
    }
    uint8_t *dst[4] = {img->data[0], img->data[1], img->data[2], NULL};
    int dst_stride[4] = {img->stride[0], img->stride[1], img->stride[2], 0};
    int hh = sws_scale(cv->sws, planes, pitch, 0, f->height, dst, dst_stride);
    if (hh <= 0) return ffu_error_set(FFU_ERR_INTERNAL, "%s: sws_scale failed", r->name);
    return FFU_OK;
}

/* The decoded frame in host memory: itself, or its download from the device. */
static ffu_status host_frame(ffu_video_reader *r, const AVFrame **out)
{
    *out = r->frame;
    if (r->frame->format != AV_PIX_FMT_CUDA) return FFU_OK;
    if (!r->sw_frame && !(r->sw_frame = av_frame_alloc()))
        return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", r->name);
    ffu_status st = video_hw_download(r->sw_frame, r->frame, r->name);
    if (st < 0) return st;
    *out = r->sw_frame;
    return FFU_OK;
}

static ffu_status convert_frame(ffu_video_reader *r, ffu_image *img)
{
    const AVFrame *f;
    ffu_status st = host_frame(r, &f);
    if (st < 0) return st;
    return convert_into(r, &r->cv, f, img, r->out_fmt, r->out_avfmt, r->out_w, r->out_h);
}

static double frame_time(ffu_video_reader *r)
{
    int64_t ts = r->frame->best_effort_timestamp;
    if (ts == AV_NOPTS_VALUE) ts = r->frame->pts;
    if (ts == AV_NOPTS_VALUE) return r->last_pts + r->frame_dur;
    return (double)(ts - r->origin) * av_q2d(r->st->time_base);
}

ffu_status video_reader_decode(ffu_video_reader *r, double *pts)
{
    if (pts) *pts = 0;
    if (!r) return ffu_error_set(FFU_ERR_INVALID, "ffu_video_reader_read: NULL reader");
    av_frame_unref(r->frame); /* a frame decoded but never converted */
    arm_deadline(r);
    for (;;) {
        ffu_status st = decode_next(r);
        if (st != FFU_OK) return st;
        double t = frame_time(r);
        if (r->seeking && t < r->seek_to - 0.5 * r->frame_dur) {
            av_frame_unref(r->frame);
            continue;
        }
        r->seeking = 0;
        r->last_pts = t;
        r->stats.frames++;
        r->last_cs = r->frame->colorspace;
        r->last_range = r->frame->color_range;
        r->last_w = r->frame->width;
        r->last_h = r->frame->height;
        enum AVPixelFormat sw = video_hw_sw_format(r->frame);
        r->last_yuvj = is_yuvj(sw != AV_PIX_FMT_NONE ? sw : (enum AVPixelFormat)r->frame->format);
        if (pts) *pts = t;
        return FFU_OK;
    }
}

void video_reader_skip_nonref(ffu_video_reader *r, int skip)
{
    if (r) r->dec->skip_frame = skip ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
}

ffu_status video_reader_convert(ffu_video_reader *r, ffu_image *img)
{
    if (!r || !img || !r->frame->buf[0])
        return ffu_error_set(FFU_ERR_INVALID, "video_reader_convert: no decoded frame");
    return convert_frame(r, img);
}

ffu_status ffu_video_reader_read(ffu_video_reader *r, ffu_image *frame, double *pts)
{
    ffu_status st = video_reader_decode(r, pts);
    /* frame NULL: decoded but not converted (a sampler skipping frames saves the
     * colour conversion, the dearest step after decoding at 1080p). */
    if (st == FFU_OK && frame) st = convert_frame(r, frame);
    if (r) av_frame_unref(r->frame);
    if (st < 0 && pts) *pts = 0;
    return st;
}

ffu_status ffu_video_reader_seek(ffu_video_reader *r, double seconds)
{
    if (!r || !isfinite(seconds))
        return ffu_error_set(FFU_ERR_INVALID, "ffu_video_reader_seek: bad argument");
    if (!r->info.seekable)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: the source cannot seek", r->name);
    if (seconds < 0) seconds = 0;
    double tb = av_q2d(r->st->time_base);
    double ticks = seconds / tb;
    if (ticks > (double)(INT64_MAX / 2)) ticks = (double)(INT64_MAX / 2);
    int64_t ts = (int64_t)ticks + r->origin;
    arm_deadline(r);
    av_frame_unref(r->frame);
    int ret = av_seek_frame(r->fmt, r->vstream, ts, AVSEEK_FLAG_BACKWARD);
    if (ret < 0) /* some demuxers only seek by bytes or to any frame */
        ret = avformat_seek_file(r->fmt, r->vstream, INT64_MIN, ts, ts, 0);
    if (ret < 0) return fail(r, ret, "seek");
    avcodec_flush_buffers(r->dec);
    r->draining = 0;
    r->end_status = FFU_EOF;
    r->consecutive_errors = 0;
    r->seeking = r->seeked = 1;
    r->seek_to = seconds;
    r->last_pts = seconds - r->frame_dur;
    return FFU_OK;
}

/* ---- frames on the device ------------------------------------------------------------ */

/* read_gpu when the frame is not an NV12 surface (NVDEC refused the stream, or a 10-bit
 * surface): NV12 on the host, uploaded into the reader's own device buffer. */
static ffu_status upload_nv12(ffu_video_reader *r, ffu_gpu_image *view)
{
    const AVFrame *f;
    ffu_status st = host_frame(r, &f);
    if (st < 0) return st;
    int w = f->width & ~1, h = f->height & ~1;
    if (w <= 0 || h <= 0)
        return ffu_error_set(FFU_ERR_FORMAT, "%s: frame %dx%d is too small for NV12", r->name,
                             f->width, f->height);
    if (r->up_host.data[0] && (r->up_host.width != w || r->up_host.height != h)) {
        ffu_image_release(&r->up_host);
        ffu_gpu_image_release(&r->up_dev);
    }
    if (!r->up_logged) {
        r->up_logged = 1;
        FFU_LOG(r, FFU_LOG_INFO, "read_gpu: %s frames go through the host (convert + upload)",
                av_get_pix_fmt_name(f->format));
    }
    st = convert_into(r, &r->cv_up, f, &r->up_host, FFU_PIX_NV12, AV_PIX_FMT_NV12, w, h);
    if (st < 0) return st;
    if (!r->up_dev.data[0] &&
        (st = ffu_gpu_image_create(r->hw.gpu, &r->up_dev, FFU_PIX_NV12, w, h)) < 0)
        return st;
    if ((st = ffu_gpu_image_upload(NULL, &r->up_host, &r->up_dev)) < 0) return st;
    *view = r->up_dev;
    view->owned = 0;
    return FFU_OK;
}

ffu_status ffu_video_reader_read_gpu(ffu_video_reader *r, ffu_gpu_image *frame, double *pts)
{
    if (frame) memset(frame, 0, sizeof *frame);
    if (pts) *pts = 0;
    if (!r || !frame)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_video_reader_read_gpu: NULL argument");
    if (!r->hw.gpu)
        return ffu_error_set(FFU_ERR_UNSUPPORTED,
                             "%s: read_gpu needs a reader that decodes with NVDEC (hwaccel %s, "
                             "decoder %s)",
                             r->name, ffu_video_hwaccel_name(r->hw.want), r->info.decoder);
    /* The previous view's surface is dropped here: its validity ends with this call. */
    ffu_status st = video_reader_decode(r, pts);
    if (st == FFU_OK) {
        const AVFrame *f = r->frame;
        if (video_hw_sw_format(f) == AV_PIX_FMT_NV12) {
            st = video_hw_sync(&r->hw, r->name);
            if (st == FFU_OK) {
                /* NV12 images have even sizes (image_plane_layout); an odd last
                 * row or column of the surface is left out of the view. */
                frame->fmt = FFU_PIX_NV12;
                frame->width = f->width & ~1;
                frame->height = f->height & ~1;
                frame->data[0] = f->data[0];
                frame->data[1] = f->data[1];
                frame->stride[0] = f->linesize[0];
                frame->stride[1] = f->linesize[1];
                frame->gpu = r->hw.gpu;
                frame->owned = 0;
            }
        } else {
            st = upload_nv12(r, frame);
        }
    }
    if (st != FFU_OK) {
        memset(frame, 0, sizeof *frame);
        if (pts) *pts = 0;
    } else {
        int matrix = 601, full = 0;
        ffu_video_reader_color(r, &matrix, &full);
        frame->yuv = ffu_image_yuv_coding(matrix, full);
    }
    return st;
}

void ffu_video_reader_color(const ffu_video_reader *r, int *matrix, int *full_range)
{
    int m = 601, full = 0;
    if (r) {
        switch (r->last_cs) {
        case AVCOL_SPC_BT709:
        case AVCOL_SPC_SMPTE240M: /* 240M's matrix is within a rounding of 709's */
            m = 709;
            break;
        case AVCOL_SPC_BT2020_NCL:
        case AVCOL_SPC_BT2020_CL:
            m = 2020;
            break;
        case AVCOL_SPC_BT470BG:
        case AVCOL_SPC_SMPTE170M:
        case AVCOL_SPC_FCC:
            m = 601;
            break;
        default: /* untagged: the same rule as sws_cs_of */
            m = (r->last_w >= 1280 || r->last_h > 576) ? 709 : 601;
        }
        full = r->last_range == AVCOL_RANGE_JPEG || r->last_yuvj;
    }
    if (matrix) *matrix = m;
    if (full_range) *full_range = full;
}
