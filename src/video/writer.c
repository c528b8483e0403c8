/* The video writer: libswscale converts each ffu_image to the encoder's YUV format,
 * libavcodec encodes it (libx264 by default), libavformat muxes it with the audio
 * packets of a source file copied as they are (timestamps moved onto the output's
 * clock). Output goes to a temporary file renamed into place by a successful close, so
 * an interrupted or failed job never leaves a half-written file under the real name. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "video/video_internal.h"

struct ffu_video_writer {
    const ffu_class *cls;
    char *path;
    char *tmp; /* the file being written; NULL once renamed or removed */
    AVFormatContext *oc;
    AVCodecContext *enc;
    AVStream *vst;
    AVFrame *frame;
    AVPacket *pkt;
    struct SwsContext *sws;
    int width, height;
    int fps_num, fps_den;
    int header_written;
    ffu_status failed;  /* first sticky error, FFU_OK while healthy */
    int64_t last_ticks; /* encoder time base (1/fps) */
    AVDictionary *mux_opts;

    /* audio copied from a source file */
    AVFormatContext *ain;
    int *amap;          /* per source stream: output stream index, or -1 */
    int64_t aorigin_us; /* the source time that maps to output time 0 (AV_TIME_BASE) */
    AVPacket *apkt;
    int apending; /* apkt holds a packet not yet due */
    int audio_done;

    ffu_video_writer_stats stats;
};

static const char *writer_item_name(const void *obj)
{
    return ((const ffu_video_writer *)obj)->path;
}
static const ffu_class writer_class = {"video_writer", writer_item_name};

static ffu_status sticky(ffu_video_writer *w, ffu_status st)
{
    if (w->failed == FFU_OK && st < 0) w->failed = st;
    return st;
}

static void writer_free(ffu_video_writer *w)
{
    if (w->oc && w->oc->pb) avio_closep(&w->oc->pb);
    if (w->tmp) unlink(w->tmp);
    avformat_free_context(w->oc); /* also runs the muxer's deinit */
    avcodec_free_context(&w->enc);
    av_frame_free(&w->frame);
    av_packet_free(&w->pkt);
    av_packet_free(&w->apkt);
    sws_freeContext(w->sws);
    av_dict_free(&w->mux_opts);
    avformat_close_input(&w->ain);
    free(w->amap);
    free(w->tmp);
    free(w->path);
    free(w);
}

void ffu_video_writer_abort(ffu_video_writer *w)
{
    if (w) writer_free(w);
}

static int has_option(void *obj, const char *name)
{
    return obj && av_opt_find(obj, name, NULL, 0, 0) != NULL;
}

/* Checked here because x264 prints its own complaint to stderr before failing. */
static int is_x264_preset(const char *p)
{
    static const char *const names[] = {"ultrafast", "superfast", "veryfast", "faster",
                                        "fast",      "medium",    "slow",     "slower",
                                        "veryslow",  "placebo"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(p, names[i]) == 0) return 1;
    return 0;
}

static ffu_status open_encoder(ffu_video_writer *w, const ffu_video_writer_opts *o)
{
    const char *cname = o->codec ? o->codec : "libx264";
    const AVCodec *codec = avcodec_find_encoder_by_name(cname);
    if (!codec || codec->type != AVMEDIA_TYPE_VIDEO)
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: no video encoder '%s' in this FFmpeg",
                             w->path, cname);
    const char *pfname = o->pix_fmt ? o->pix_fmt : "yuv420p";
    enum AVPixelFormat pf = av_get_pix_fmt(pfname);
    if (pf != AV_PIX_FMT_YUV420P && pf != AV_PIX_FMT_YUV444P)
        return ffu_error_set(FFU_ERR_INVALID, "%s: pixel format '%s' (use yuv420p or yuv444p)",
                             w->path, pfname);
    if (codec->pix_fmts) {
        const enum AVPixelFormat *p = codec->pix_fmts;
        while (*p != AV_PIX_FMT_NONE && *p != pf)
            p++;
        if (*p == AV_PIX_FMT_NONE)
            return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: encoder %s cannot take %s", w->path,
                                 cname, pfname);
    }
    if (pf == AV_PIX_FMT_YUV420P && ((w->width | w->height) & 1))
        return ffu_error_set(FFU_ERR_INVALID, "%s: yuv420p needs an even size, got %dx%d", w->path,
                             w->width, w->height);

    AVCodecContext *enc = w->enc = avcodec_alloc_context3(codec);
    if (!enc) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", w->path);
    enc->width = w->width;
    enc->height = w->height;
    enc->pix_fmt = pf;
    enc->time_base = (AVRational){w->fps_den, w->fps_num};
    enc->framerate = (AVRational){w->fps_num, w->fps_den};
    enc->sample_aspect_ratio = (AVRational){1, 1};
    /* The RGB -> YUV conversion below is BT.601 limited range; say so in the stream so
     * players do not guess BT.709 for HD sizes. */
    enc->colorspace = AVCOL_SPC_SMPTE170M;
    enc->color_primaries = AVCOL_PRI_SMPTE170M;
    enc->color_trc = AVCOL_TRC_SMPTE170M;
    enc->color_range = AVCOL_RANGE_MPEG;
    enc->thread_count = o->threads > 0 ? o->threads : 0;
    if (o->gop > 0) enc->gop_size = o->gop;
    if (w->oc->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;

    int crf = o->crf ? o->crf : 23;
    if (o->bitrate > 0) {
        enc->bit_rate = o->bitrate;
    } else if (has_option(enc->priv_data, "crf")) {
        av_opt_set_int(enc->priv_data, "crf", crf, 0);
    } else {
        /* Encoders without crf (mpeg4, ...): constant quantiser, 1..51 mapped onto 2..31. */
        enc->flags |= AV_CODEC_FLAG_QSCALE;
        enc->global_quality = FF_QP2LAMBDA * (2 + (crf - 1) * 29 / 50);
    }
    if (o->preset && strcmp(cname, "libx264") == 0 && !is_x264_preset(o->preset))
        return ffu_error_set(FFU_ERR_INVALID,
                             "%s: unknown x264 preset '%s' (ultrafast, "
                             "superfast, veryfast, faster, fast, medium, slow, slower, "
                             "veryslow, placebo)",
                             w->path, o->preset);
    if (o->preset) {
        if (!has_option(enc->priv_data, "preset"))
            FFU_LOG(w, FFU_LOG_WARN, "encoder %s has no presets; '%s' ignored", cname, o->preset);
        else if (av_opt_set(enc->priv_data, "preset", o->preset, 0) < 0)
            return ffu_error_set(FFU_ERR_INVALID, "%s: unknown preset '%s' for %s", w->path,
                                 o->preset, cname);
    }
    int ret = avcodec_open2(enc, codec, NULL);
    if (ret < 0) return video_av_error(ret, w->path, "cannot open the encoder");

    w->vst = avformat_new_stream(w->oc, NULL);
    if (!w->vst) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", w->path);
    ret = avcodec_parameters_from_context(w->vst->codecpar, enc);
    if (ret < 0) return video_av_error(ret, w->path, "stream parameters");
    w->vst->time_base = enc->time_base;
    w->vst->avg_frame_rate = enc->framerate;
    w->vst->sample_aspect_ratio = enc->sample_aspect_ratio;

    w->frame = av_frame_alloc();
    w->pkt = av_packet_alloc();
    if (!w->frame || !w->pkt) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", w->path);
    w->frame->format = pf;
    w->frame->width = w->width;
    w->frame->height = w->height;
    ret = av_frame_get_buffer(w->frame, 0);
    if (ret < 0) return video_av_error(ret, w->path, "frame buffer");
    return FFU_OK;
}

/* Opens the audio source and adds one output stream per audio stream it has. */
static ffu_status open_audio(ffu_video_writer *w, const char *src)
{
    int ret = avformat_open_input(&w->ain, src, NULL, NULL);
    if (ret < 0) return video_av_error(ret, src, "cannot open the audio source");
    ret = avformat_find_stream_info(w->ain, NULL);
    if (ret < 0) return video_av_error(ret, src, "cannot read the audio source");
    w->amap = malloc(sizeof *w->amap * (w->ain->nb_streams ? w->ain->nb_streams : 1));
    w->apkt = av_packet_alloc();
    if (!w->amap || !w->apkt) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", src);

    /* Output time 0 is the source's first video frame, the frame a reader of the same
     * file returns with pts 0; without video, the container's start. */
    w->aorigin_us = w->ain->start_time != AV_NOPTS_VALUE ? w->ain->start_time : 0;
    int v = av_find_best_stream(w->ain, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (v >= 0 && w->ain->streams[v]->start_time != AV_NOPTS_VALUE)
        w->aorigin_us = av_rescale_q(w->ain->streams[v]->start_time, w->ain->streams[v]->time_base,
                                     AV_TIME_BASE_Q);

    int copied = 0;
    for (unsigned i = 0; i < w->ain->nb_streams; i++) {
        AVStream *in = w->ain->streams[i];
        w->amap[i] = -1;
        in->discard = AVDISCARD_ALL;
        if (in->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) continue;
        if (avformat_query_codec(w->oc->oformat, in->codecpar->codec_id, FF_COMPLIANCE_NORMAL) !=
            1) {
            FFU_LOG(w, FFU_LOG_WARN, "audio stream %u (%s) cannot go into %s; skipped", i,
                    avcodec_get_name(in->codecpar->codec_id), w->oc->oformat->name);
            continue;
        }
        AVStream *out = avformat_new_stream(w->oc, NULL);
        if (!out) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", w->path);
        ret = avcodec_parameters_copy(out->codecpar, in->codecpar);
        if (ret < 0) return video_av_error(ret, w->path, "audio parameters");
        out->codecpar->codec_tag = 0; /* the source container's tag may mean nothing here */
        out->time_base = in->time_base;
        out->disposition = in->disposition;
        av_dict_copy(&out->metadata, in->metadata, 0);
        w->amap[i] = out->index;
        in->discard = AVDISCARD_DEFAULT;
        copied++;
    }
    if (!copied) {
        FFU_LOG(w, FFU_LOG_INFO, "%s has no audio that can be copied", src);
        w->audio_done = 1;
    }
    return FFU_OK;
}

ffu_status ffu_video_writer_open(ffu_video_writer **out, const char *path,
                                 const ffu_video_writer_opts *o)
{
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_video_writer_open: out is NULL");
    *out = NULL;
    if (!path || !*path || !o)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_video_writer_open: no path or options");
    int den = o->fps_den ? o->fps_den : 1;
    if (o->width <= 0 || o->height <= 0 || o->width > FFU_IMAGE_MAX_DIM ||
        o->height > FFU_IMAGE_MAX_DIM ||
        (uint64_t)o->width * (uint64_t)o->height > FFU_IMAGE_MAX_PIXELS)
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad frame size %dx%d", path, o->width,
                             o->height);
    if (o->fps_num <= 0 || den <= 0 || (double)o->fps_num / den > 1000)
        return ffu_error_set(FFU_ERR_INVALID, "%s: bad frame rate %d/%d", path, o->fps_num,
                             o->fps_den);
    if (o->crf < 0 || o->crf > 51 || o->bitrate < 0 || o->gop < 0)
        return ffu_error_set(FFU_ERR_INVALID,
                             "%s: crf must be 1..51 (0 = default), bitrate "
                             "and gop not negative",
                             path);
    ffu_status gst = video_global_init();
    if (gst < 0) return gst;
    const AVOutputFormat *ofmt = av_guess_format(o->format, o->format ? NULL : path, NULL);
    if (!ofmt || ofmt->video_codec == AV_CODEC_ID_NONE || (ofmt->flags & AVFMT_NOFILE))
        return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: no video container for %s%s", path,
                             o->format ? "format " : "this file name", o->format ? o->format : "");

    ffu_video_writer *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", path);
    }
    w->cls = &writer_class;
    w->width = o->width;
    w->height = o->height;
    av_reduce(&w->fps_num, &w->fps_den, o->fps_num, den, INT_MAX);

    ffu_status st = ffu_file_create_temp(path, &w->tmp, NULL);
    if (st < 0) goto fail;
    int ret = avformat_alloc_output_context2(&w->oc, ofmt, NULL, w->tmp);
    if (ret < 0) {
        st = video_av_error(ret, path, "cannot create the muxer");
        goto fail;
    }
    if ((st = open_encoder(w, o)) < 0) goto fail;
    if (o->audio_from && (st = open_audio(w, o->audio_from)) < 0) goto fail;
    if (o->faststart && has_option(w->oc->priv_data, "movflags"))
        av_dict_set(&w->mux_opts, "movflags", "+faststart", 0);

    /* "file:" keeps a path with a colon from being read as a protocol name. */
    size_t n = strlen(w->tmp) + 6;
    char *url = malloc(n);
    if (!url) {
        st = ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    snprintf(url, n, "file:%s", w->tmp);
    ret = avio_open(&w->oc->pb, url, AVIO_FLAG_WRITE);
    free(url);
    if (ret < 0) {
        st = video_av_error(ret, path, "cannot open for writing");
        goto fail;
    }
    *out = w;
    return FFU_OK;
fail:
    writer_free(w);
    return st;
}

ffu_status ffu_video_writer_set_metadata(ffu_video_writer *w, const char *key, const char *value)
{
    if (!w || !key || !*key)
        return ffu_error_set(FFU_ERR_INVALID, "ffu_video_writer_set_metadata: no key");
    if (w->header_written)
        return ffu_error_set(FFU_ERR_INVALID, "%s: metadata must be set before the first frame",
                             w->path);
    int ret = av_dict_set(&w->oc->metadata, key, value, 0);
    return ret < 0 ? video_av_error(ret, w->path, "metadata") : FFU_OK;
}

static ffu_status write_header(ffu_video_writer *w)
{
    AVDictionary *opts = NULL;
    av_dict_copy(&opts, w->mux_opts, 0);
    int ret = avformat_write_header(w->oc, &opts);
    av_dict_free(&opts);
    if (ret < 0) return sticky(w, video_av_error(ret, w->path, "cannot write the header"));
    w->header_written = 1;
    return FFU_OK;
}

/* Sends frame (NULL = flush) and muxes every packet the encoder gives back. */
static ffu_status encode(ffu_video_writer *w, AVFrame *frame)
{
    int ret = avcodec_send_frame(w->enc, frame);
    if (ret < 0) return sticky(w, video_av_error(ret, w->path, "encode"));
    for (;;) {
        ret = avcodec_receive_packet(w->enc, w->pkt);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return FFU_OK;
        if (ret < 0) return sticky(w, video_av_error(ret, w->path, "encode"));
        av_packet_rescale_ts(w->pkt, w->enc->time_base, w->vst->time_base);
        w->pkt->stream_index = w->vst->index;
        ret = av_interleaved_write_frame(w->oc, w->pkt); /* takes the packet's data */
        if (ret < 0) return sticky(w, video_av_error(ret, w->path, "write"));
    }
}

/* Copies source audio packets that start before `until` (seconds, output clock). Those
 * that end before output time 0 (audio before the first video frame) are dropped. */
static ffu_status copy_audio(ffu_video_writer *w, double until)
{
    while (w->ain && !w->audio_done) {
        AVPacket *p = w->apkt;
        if (!w->apending) {
            int ret = av_read_frame(w->ain, p);
            if (ret < 0) {
                if (ret != AVERROR_EOF) {
                    char text[AV_ERROR_MAX_STRING_SIZE];
                    av_strerror(ret, text, sizeof text);
                    FFU_LOG(w, FFU_LOG_WARN,
                            "audio source read failed (%s); the rest of the "
                            "audio is left out",
                            text);
                }
                w->audio_done = 1;
                break;
            }
            if (p->stream_index < 0 || (unsigned)p->stream_index >= w->ain->nb_streams ||
                w->amap[p->stream_index] < 0 ||
                (p->pts == AV_NOPTS_VALUE && p->dts == AV_NOPTS_VALUE)) {
                av_packet_unref(p);
                continue;
            }
            w->apending = 1;
        }
        AVStream *in = w->ain->streams[p->stream_index];
        AVStream *os = w->oc->streams[w->amap[p->stream_index]];
        int64_t shift = av_rescale_q(w->aorigin_us, AV_TIME_BASE_Q, in->time_base);
        int64_t ts = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
        double tb = av_q2d(in->time_base);
        double t = (double)(ts - shift) * tb;
        if (t >= until) break;
        w->apending = 0;
        if (t + (double)p->duration * tb < 0) {
            av_packet_unref(p);
            continue;
        }
        if (p->pts != AV_NOPTS_VALUE) p->pts -= shift;
        if (p->dts != AV_NOPTS_VALUE) p->dts -= shift;
        av_packet_rescale_ts(p, in->time_base, os->time_base);
        p->stream_index = os->index;
        p->pos = -1;
        int ret = av_interleaved_write_frame(w->oc, p);
        if (ret < 0) return sticky(w, video_av_error(ret, w->path, "write audio"));
        w->stats.audio_packets++;
    }
    return FFU_OK;
}

ffu_status ffu_video_writer_write(ffu_video_writer *w, const ffu_image *img, double pts)
{
    if (!w || !img || !img->data[0] || !isfinite(pts))
        return ffu_error_set(FFU_ERR_INVALID, "ffu_video_writer_write: bad argument");
    if (w->failed < 0) return ffu_error_set(w->failed, "%s: the writer failed earlier", w->path);
    enum AVPixelFormat src = video_avfmt_of(img->fmt);
    if (src == AV_PIX_FMT_NONE || img->width != w->width || img->height != w->height)
        return ffu_error_set(FFU_ERR_INVALID, "%s: frame is %s %dx%d, the writer takes %dx%d",
                             w->path, ffu_pixfmt_name(img->fmt), img->width, img->height, w->width,
                             w->height);
    int64_t ticks;
    if (pts < 0) {
        ticks = w->stats.frames ? w->last_ticks + 1 : 0;
    } else {
        double t = pts * w->fps_num / w->fps_den;
        if (t > (double)(INT64_MAX / 4))
            return ffu_error_set(FFU_ERR_INVALID, "%s: pts %g too large", w->path, pts);
        ticks = llround(t);
        if (w->stats.frames && ticks <= w->last_ticks)
            return ffu_error_set(FFU_ERR_INVALID,
                                 "%s: pts %.6f s is not after the previous frame's (frame "
                                 "grid %d/%d s)",
                                 w->path, pts, w->fps_den, w->fps_num);
    }
    if (!w->header_written && write_header(w) < 0) return w->failed;

    int ret = av_frame_make_writable(w->frame);
    if (ret < 0) return sticky(w, video_av_error(ret, w->path, "frame buffer"));
    struct SwsContext *prev = w->sws;
    w->sws = sws_getCachedContext(w->sws, w->width, w->height, src, w->width, w->height,
                                  w->enc->pix_fmt, SWS_BICUBIC, NULL, NULL, NULL);
    if (!w->sws)
        return sticky(w, ffu_error_set(FFU_ERR_INTERNAL, "%s: no conversion from %s", w->path,
                                       ffu_pixfmt_name(img->fmt)));
    if (w->sws != prev) {
        const int *bt601 = sws_getCoefficients(SWS_CS_ITU601);
        int src_full = !(img->fmt == FFU_PIX_NV12 || img->fmt == FFU_PIX_YUV420P);
        sws_setColorspaceDetails(w->sws, bt601, src_full, bt601, 0, 0, 1 << 16, 1 << 16);
    }
    const uint8_t *sp[4] = {img->data[0], img->data[1], img->data[2], NULL};
    int ss[4] = {img->stride[0], img->stride[1], img->stride[2], 0};
    sws_scale(w->sws, sp, ss, 0, w->height, w->frame->data, w->frame->linesize);
    w->frame->pts = ticks;
    w->last_ticks = ticks;
    w->stats.frames++;

    ffu_status st = copy_audio(w, (double)ticks * w->fps_den / w->fps_num);
    if (st < 0) return st;
    return encode(w, w->frame);
}

ffu_status ffu_video_writer_close(ffu_video_writer *w)
{
    if (!w) return FFU_OK;
    ffu_status st = w->failed;
    if (st == FFU_OK && !w->header_written)
        st = ffu_error_set(FFU_ERR_INVALID, "%s: no frame was written; nothing saved", w->path);
    if (st == FFU_OK) st = encode(w, NULL);
    if (st == FFU_OK) st = copy_audio(w, (double)(w->last_ticks + 1) * w->fps_den / w->fps_num);
    if (st == FFU_OK) {
        int ret = av_write_trailer(w->oc);
        if (ret < 0) st = video_av_error(ret, w->path, "cannot finish the file");
    }
    if (st == FFU_OK) {
        int ret = avio_closep(&w->oc->pb);
        if (ret < 0) st = video_av_error(ret, w->path, "cannot close the file");
    }
    if (st == FFU_OK) {
        /* fsync before rename: after a crash path holds the old file or the whole new one. */
        int fd = open(w->tmp, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS)
                st = ffu_error_set(FFU_ERR_IO, "%s: fsync failed", w->path);
            close(fd);
        }
    }
    if (st == FFU_OK) {
        if (rename(w->tmp, w->path) != 0) {
            char buf[128];
            st = ffu_error_set(FFU_ERR_IO, "%s: cannot rename into place: %s", w->path,
                               strerror_r(errno, buf, sizeof buf));
        } else {
            free(w->tmp);
            w->tmp = NULL;
        }
    }
    writer_free(w); /* removes the temporary file when anything failed */
    return st;
}

void ffu_video_writer_stats_get(const ffu_video_writer *w, ffu_video_writer_stats *s)
{
    if (!s) return;
    if (w)
        *s = w->stats;
    else
        memset(s, 0, sizeof *s);
}
