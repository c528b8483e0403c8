/* NVDEC decoding for the video reader (issue #7, item 3) through FFmpeg's CUDA hwaccel:
 * libavcodec parses the bitstream and NVDEC decodes into device memory, so frames stay
 * on the GPU until something asks for them on the host. FFmpeg loads libcuda and
 * libnvcuvid itself at run time (nothing here links them), and its CUDA device is made
 * on the CUDA runtime's primary context (AV_CUDA_USE_PRIMARY_CONTEXT), the context
 * ffu_gpu_open and the engine use: a decoded surface is an ordinary device pointer for
 * our kernels. Deciding between NVDEC and the CPU, and falling back when NVDEC refuses a
 * stream, lives here; reader.c asks and follows. */
#include <stdio.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>

#include "ffu_config.h"
#if FFU_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <libavutil/hwcontext_cuda.h> /* needs cuda.h, which only CUDA builds have */
#endif
#ifndef AV_CUDA_USE_PRIMARY_CONTEXT
#define AV_CUDA_USE_PRIMARY_CONTEXT (1 << 0) /* libavutil/hwcontext_cuda.h, FFmpeg >= 4.3 */
#endif

#include "video/video_internal.h"

const char *ffu_video_hwaccel_name(ffu_video_hwaccel h)
{
    static const char *const names[] = {"none", "auto", "cuda"};
    _Static_assert(sizeof names / sizeof names[0] == FFU_VIDEO_HWACCEL_COUNT, "names");
    return (unsigned)h < FFU_VIDEO_HWACCEL_COUNT ? names[h] : "unknown";
}

ffu_status ffu_video_hwaccel_parse(const char *s, ffu_video_hwaccel *out)
{
    if (out) *out = FFU_VIDEO_HWACCEL_NONE;
    if (!out) return ffu_error_set(FFU_ERR_INVALID, "ffu_video_hwaccel_parse: out is NULL");
    for (int i = 0; s && i < FFU_VIDEO_HWACCEL_COUNT; i++)
        if (strcmp(s, ffu_video_hwaccel_name((ffu_video_hwaccel)i)) == 0) {
            *out = (ffu_video_hwaccel)i;
            return FFU_OK;
        }
    return ffu_error_set(FFU_ERR_INVALID, "hwaccel '%s' is not one of none, auto, cuda",
                         s ? s : "(null)");
}

ffu_status video_hw_check_opts(const ffu_video_reader_opts *o, const char *name)
{
    if (!o) return FFU_OK;
    if ((unsigned)o->hwaccel >= FFU_VIDEO_HWACCEL_COUNT)
        return ffu_error_set(FFU_ERR_INVALID, "%s: hwaccel %d is not one of none, auto, cuda", name,
                             (int)o->hwaccel);
    if (o->hw_device < 0)
        return ffu_error_set(FFU_ERR_INVALID, "%s: hw_device %d is negative", name, o->hw_device);
    return FFU_OK;
}

static int has_cuda_config(const AVCodec *c)
{
    for (int i = 0;; i++) {
        const AVCodecHWConfig *cfg = avcodec_get_hw_config(c, i);
        if (!cfg) return 0;
        if (cfg->device_type == AV_HWDEVICE_TYPE_CUDA &&
            (cfg->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX))
            return 1;
    }
}

/* A decoder of codec c's format with a CUDA hwaccel: c itself, or (when the preferred
 * decoder has none, e.g. libdav1d for AV1) another one of the same codec id. */
static const AVCodec *cuda_decoder_for(const AVCodec *c)
{
    if (has_cuda_config(c)) return c;
    void *it = NULL;
    const AVCodec *k;
    while ((k = av_codec_iterate(&it)))
        if (av_codec_is_decoder(k) && k->id == c->id && has_cuda_config(k)) return k;
    return NULL;
}

static int ffmpeg_has_cuda(void)
{
    enum AVHWDeviceType t = AV_HWDEVICE_TYPE_NONE;
    while ((t = av_hwdevice_iterate_types(t)) != AV_HWDEVICE_TYPE_NONE)
        if (t == AV_HWDEVICE_TYPE_CUDA) return 1;
    return 0;
}

#if FFU_HAVE_CUDA && CUDART_VERSION >= 12050
/* FFmpeg's device on the primary context of g's device, which ffu_gpu_open has made
 * active: 0 or an AVERROR. Not av_hwdevice_ctx_create(AV_CUDA_USE_PRIMARY_CONTEXT):
 * FFmpeg (5.1 to at least 7) refuses, with ENOTSUP, a primary context that is already
 * active with flags other than CU_CTX_SCHED_BLOCKING_SYNC, and the runtime activates it
 * with its default flags. A device context whose cuda_ctx is filled in before
 * av_hwdevice_ctx_init is FFmpeg's way to use an existing context; FFmpeg then neither
 * retains nor releases it (the runtime keeps the primary context alive until exit).
 * The driver's cuCtxGetCurrent comes through the runtime, so nothing links libcuda. */
static int wrap_primary_context(ffu_gpu *g, ffu_gpu_stream *stream, AVBufferRef **out)
{
    typedef CUresult (*ctx_get_current_fn)(CUcontext *);
    *out = NULL;
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (ffu_gpu_make_current(g) < 0 || cudaFree(NULL) != cudaSuccess ||
        cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn) {
        (void)cudaGetLastError();
        return AVERROR(ENOSYS);
    }
    CUcontext ctx = NULL;
    if (((ctx_get_current_fn)fn)(&ctx) != CUDA_SUCCESS || !ctx) return AVERROR(ENOSYS);
    AVBufferRef *ref = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA);
    if (!ref) return AVERROR(ENOMEM);
    AVHWDeviceContext *dc = (AVHWDeviceContext *)ref->data;
    AVCUDADeviceContext *cu = dc->hwctx;
    cu->cuda_ctx = ctx;
    /* NVDEC's surface copies go on this reader's own stream, so video_hw_sync waits for
     * this reader's copy only, not for every reader's work on the legacy default stream
     * (with many streams that would serialise them). NULL: the legacy stream. */
    cu->stream = stream ? (CUstream)ffu_gpu_stream_handle(stream) : NULL;
    int ret = av_hwdevice_ctx_init(ref);
    if (ret < 0) {
        av_buffer_unref(&ref);
        return ret;
    }
    *out = ref;
    return 0;
}
#endif

/* Why NVDEC cannot be used, "" when it can: fills hw (gpu, device_ref, codec) on success.
 * The checks run cheapest first and touch the device last. */
static void try_cuda(video_hw *hw, const AVCodec **codec, char *why, size_t cap)
{
    why[0] = 0;
    if (!ffmpeg_has_cuda()) {
        snprintf(why, cap, "this FFmpeg (libavutil %s) was built without CUDA", av_version_info());
        return;
    }
    const AVCodec *c = cuda_decoder_for(*codec);
    if (!c) {
        snprintf(why, cap, "FFmpeg has no CUDA hwaccel for %s", avcodec_get_name((*codec)->id));
        return;
    }
    /* Our side first: the shared handle makes the runtime's primary context exist, and
     * its message says what is missing (no CUDA in this build, no driver, no device). */
    ffu_gpu *g = NULL;
    ffu_status st = ffu_gpu_open(hw->device, &g);
    if (st < 0) {
        const char *m = ffu_error_message();
        snprintf(why, cap, "CUDA device %d: %s", hw->device, m && *m ? m : ffu_status_str(st));
        return;
    }
    char dev[16];
    snprintf(dev, sizeof dev, "%d", ffu_gpu_index(g));
    AVBufferRef *ref = NULL;
    int ret = AVERROR(ENOSYS);
#if FFU_HAVE_CUDA && CUDART_VERSION >= 12050
    ffu_gpu_stream *stream = NULL;
    if (ffu_gpu_stream_create(g, &stream) < 0) stream = NULL; /* the legacy stream, then */
    ret = wrap_primary_context(g, stream, &ref);
    if (ret < 0) ffu_gpu_stream_destroy(stream);
    else hw->stream = stream;
#endif
    /* Fallback (no driver entry points): works while the primary context is inactive or
     * already has FFmpeg's flags. */
    if (ret < 0)
        ret = av_hwdevice_ctx_create(&ref, AV_HWDEVICE_TYPE_CUDA, dev, NULL,
                                     AV_CUDA_USE_PRIMARY_CONTEXT);
    if (ret < 0) {
        char text[AV_ERROR_MAX_STRING_SIZE];
        av_strerror(ret, text, sizeof text);
        snprintf(why, cap, "FFmpeg cannot open CUDA device %s (%s; needs libcuda.so.1)", dev, text);
        ffu_gpu_close(g);
        return;
    }
    hw->gpu = g;
    hw->device_ref = ref;
    *codec = c;
}

ffu_status video_hw_open(video_hw *hw, const void *log_obj, const char *name,
                         const ffu_video_reader_opts *o, const AVCodec **codec)
{
    memset(hw, 0, sizeof *hw);
    hw->want = o ? o->hwaccel : FFU_VIDEO_HWACCEL_NONE;
    hw->device = o ? o->hw_device : 0;
    if (hw->want == FFU_VIDEO_HWACCEL_NONE) return FFU_OK;
    char why[256];
    try_cuda(hw, codec, why, sizeof why);
    if (!why[0]) {
        hw->active = FFU_VIDEO_HWACCEL_CUDA;
        FFU_LOG(log_obj, FFU_LOG_DEBUG, "decoding %s with NVDEC on CUDA device %d", (*codec)->name,
                hw->device);
        return FFU_OK;
    }
    if (hw->want == FFU_VIDEO_HWACCEL_CUDA)
        return ffu_error_set(FFU_ERR_DEVICE, "%s: hwaccel cuda: NVDEC is not available: %s", name,
                             why);
    FFU_LOG(log_obj, FFU_LOG_INFO, "hwaccel auto: decoding on the CPU: %s", why);
    return FFU_OK;
}

/* Offered the formats a stream can be decoded to: CUDA when FFmpeg could set NVDEC up
 * for it; when NVDEC refused (FFmpeg calls again without CUDA after a failed hwaccel
 * init: unsupported profile, size or chroma format) the first software format, and the
 * refusal is noted for video_hw_frame_check. */
static enum AVPixelFormat get_format(AVCodecContext *ctx, const enum AVPixelFormat *fmts)
{
    video_hw *hw = ctx->opaque;
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++)
        if (*p == AV_PIX_FMT_CUDA) {
            hw->refused = 0;
            return AV_PIX_FMT_CUDA;
        }
    hw->refused = 1;
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++) {
        const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(*p);
        if (d && !(d->flags & AV_PIX_FMT_FLAG_HWACCEL)) return *p;
    }
    return AV_PIX_FMT_NONE;
}

ffu_status video_hw_attach(video_hw *hw, AVCodecContext *dec, const char *name)
{
    if (hw->active != FFU_VIDEO_HWACCEL_CUDA) return FFU_OK;
    if (!(dec->hw_device_ctx = av_buffer_ref(hw->device_ref)))
        return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", name);
    dec->opaque = hw;
    dec->get_format = get_format;
    return FFU_OK;
}

ffu_status video_hw_frame_check(video_hw *hw, const void *log_obj, const char *name,
                                const AVCodecContext *dec, const AVFrame *f)
{
    if (hw->active != FFU_VIDEO_HWACCEL_CUDA || f->format == AV_PIX_FMT_CUDA) return FFU_OK;
    const char *profile = avcodec_profile_name(dec->codec_id, dec->profile);
    const char *sw = av_get_pix_fmt_name((enum AVPixelFormat)f->format);
    if (hw->want == FFU_VIDEO_HWACCEL_CUDA)
        return ffu_error_set(FFU_ERR_DEVICE,
                             "%s: hwaccel cuda: NVDEC cannot decode this stream (%s%s%s, %s, "
                             "%dx%d); hwaccel auto would decode it on the CPU",
                             name, avcodec_get_name(dec->codec_id), profile ? " " : "",
                             profile ? profile : "", sw ? sw : "?", f->width, f->height);
    hw->active = FFU_VIDEO_HWACCEL_NONE;
    FFU_LOG(log_obj, FFU_LOG_INFO,
            "hwaccel auto: NVDEC refused the stream (%s%s%s, %s, %dx%d); decoding on the CPU",
            avcodec_get_name(dec->codec_id), profile ? " " : "", profile ? profile : "",
            sw ? sw : "?", f->width, f->height);
    return 1;
}

enum AVPixelFormat video_hw_sw_format(const AVFrame *f)
{
    if (!f || f->format != AV_PIX_FMT_CUDA || !f->hw_frames_ctx) return AV_PIX_FMT_NONE;
    return ((const AVHWFramesContext *)f->hw_frames_ctx->data)->sw_format;
}

ffu_status video_hw_download(AVFrame *dst, const AVFrame *src, const char *name)
{
    enum AVPixelFormat sw = video_hw_sw_format(src);
    if (sw == AV_PIX_FMT_NONE)
        return ffu_error_set(FFU_ERR_INTERNAL, "%s: download of a frame not on the device", name);
    /* Reuse the host frame while it fits: steady state allocates nothing. */
    if (dst->buf[0] && (dst->format != sw || dst->width != src->width ||
                        dst->height != src->height || !av_frame_is_writable(dst)))
        av_frame_unref(dst);
    if (!dst->buf[0]) {
        dst->format = sw;
        dst->width = src->width;
        dst->height = src->height;
        int ret = av_frame_get_buffer(dst, 0);
        if (ret < 0) return video_av_error(ret, name, "cannot allocate the host frame");
    }
    int ret = av_hwframe_transfer_data(dst, src, 0);
    if (ret < 0) return video_av_error(ret, name, "cannot copy the frame from the GPU");
    dst->colorspace = src->colorspace;
    dst->color_range = src->color_range;
    dst->color_primaries = src->color_primaries;
    dst->color_trc = src->color_trc;
    dst->chroma_location = src->chroma_location;
    return FFU_OK;
}

ffu_status video_hw_sync(video_hw *hw, const char *name)
{
#if FFU_HAVE_CUDA
    if (!hw->gpu) return ffu_error_set(FFU_ERR_INTERNAL, "%s: no CUDA device to sync", name);
    ffu_status st = ffu_gpu_make_current(hw->gpu);
    if (st < 0) return st;
    /* FFmpeg queues the surface copy on its device's stream: this reader's own (see
     * wrap_primary_context), or, when FFmpeg made the device (the fallback), none, which
     * means the context's legacy default stream -- ours too, the context being shared. */
    cudaError_t e = cudaStreamSynchronize(
        hw->stream ? (cudaStream_t)ffu_gpu_stream_handle(hw->stream) : cudaStreamLegacy);
    if (e != cudaSuccess)
        return ffu_error_set(FFU_ERR_DEVICE, "%s: waiting for NVDEC's copy: %s", name,
                             cudaGetErrorString(e));
    return FFU_OK;
#else
    (void)hw;
    return ffu_error_set(FFU_ERR_UNSUPPORTED, "%s: this build has no CUDA", name);
#endif
}

void video_hw_close(video_hw *hw)
{
    if (!hw) return;
    av_buffer_unref(&hw->device_ref);
    ffu_gpu_stream_destroy(hw->stream); /* FFmpeg's last use of it ended with the decoder */
    hw->stream = NULL;
    ffu_gpu_close(hw->gpu);
    hw->gpu = NULL;
    hw->active = FFU_VIDEO_HWACCEL_NONE;
}
