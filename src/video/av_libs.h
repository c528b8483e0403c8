/* FFmpeg, loaded at run time (dlopen) rather than linked: its four libraries bring some
 * 125 more shared objects (codecs, TLS, XML, fonts) into a process, and mapping and
 * relocating them cost every facefuse process 60-100 ms before main, image commands
 * included (docs/VIDEO.md "Loading FFmpeg"). The video module includes FFmpeg's headers
 * through this one; after them each function we call is a macro naming its pointer in
 * a table typed from those headers (__typeof__), so call sites read as plain FFmpeg
 * calls and a signature cannot drift from the headers the build saw. A function used
 * without an entry here is an undefined symbol at link time (the library links with
 * -z defs). video_global_init (video_internal.h) fills the table once; every public
 * entry that reaches FFmpeg before a reader, writer or stream exists calls it first.
 * Private to src/video. */
#ifndef FFU_VIDEO_AV_LIBS_H
#define FFU_VIDEO_AV_LIBS_H

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/hwcontext.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "facefuse/core.h"

#define VIDEO_AV_FUNCS(F)                                                                          \
    F(av_buffer_ref)                                                                               \
    F(av_buffer_unref)                                                                             \
    F(av_codec_is_decoder)                                                                         \
    F(av_codec_iterate)                                                                            \
    F(av_dict_copy)                                                                                \
    F(av_dict_free)                                                                                \
    F(av_dict_get)                                                                                 \
    F(av_dict_set)                                                                                 \
    F(av_find_best_stream)                                                                         \
    F(av_find_input_format)                                                                        \
    F(av_frame_alloc)                                                                              \
    F(av_frame_free)                                                                               \
    F(av_frame_get_buffer)                                                                         \
    F(av_frame_is_writable)                                                                        \
    F(av_frame_make_writable)                                                                      \
    F(av_frame_unref)                                                                              \
    F(av_free)                                                                                     \
    F(av_freep)                                                                                    \
    F(av_get_pix_fmt)                                                                              \
    F(av_get_pix_fmt_name)                                                                         \
    F(av_guess_format)                                                                             \
    F(av_hwdevice_ctx_alloc)                                                                       \
    F(av_hwdevice_ctx_create)                                                                      \
    F(av_hwdevice_ctx_init)                                                                        \
    F(av_hwdevice_iterate_types)                                                                   \
    F(av_hwframe_transfer_data)                                                                    \
    F(av_interleaved_write_frame)                                                                  \
    F(av_log_default_callback)                                                                     \
    F(av_log_format_line2)                                                                         \
    F(av_log_get_level)                                                                            \
    F(av_log_set_callback)                                                                         \
    F(av_malloc)                                                                                   \
    F(av_opt_find)                                                                                 \
    F(av_opt_set)                                                                                  \
    F(av_opt_set_int)                                                                              \
    F(av_packet_alloc)                                                                             \
    F(av_packet_free)                                                                              \
    F(av_packet_rescale_ts)                                                                        \
    F(av_packet_unref)                                                                             \
    F(av_pix_fmt_desc_get)                                                                         \
    F(av_read_frame)                                                                               \
    F(av_reduce)                                                                                   \
    F(av_rescale_q)                                                                                \
    F(av_seek_frame)                                                                               \
    F(av_strerror)                                                                                 \
    F(av_version_info)                                                                             \
    F(av_write_trailer)                                                                            \
    F(avcodec_alloc_context3)                                                                      \
    F(avcodec_find_encoder_by_name)                                                                \
    F(avcodec_flush_buffers)                                                                       \
    F(avcodec_free_context)                                                                        \
    F(avcodec_get_hw_config)                                                                       \
    F(avcodec_get_name)                                                                            \
    F(avcodec_open2)                                                                               \
    F(avcodec_parameters_copy)                                                                     \
    F(avcodec_parameters_from_context)                                                             \
    F(avcodec_parameters_to_context)                                                               \
    F(avcodec_profile_name)                                                                        \
    F(avcodec_receive_frame)                                                                       \
    F(avcodec_receive_packet)                                                                      \
    F(avcodec_send_frame)                                                                          \
    F(avcodec_send_packet)                                                                         \
    F(avformat_alloc_context)                                                                      \
    F(avformat_alloc_output_context2)                                                              \
    F(avformat_close_input)                                                                        \
    F(avformat_find_stream_info)                                                                   \
    F(avformat_free_context)                                                                       \
    F(avformat_network_init)                                                                       \
    F(avformat_new_stream)                                                                         \
    F(avformat_open_input)                                                                         \
    F(avformat_query_codec)                                                                        \
    F(avformat_seek_file)                                                                          \
    F(avformat_write_header)                                                                       \
    F(avio_alloc_context)                                                                          \
    F(avio_closep)                                                                                 \
    F(avio_context_free)                                                                           \
    F(avio_open)                                                                                   \
    F(sws_freeContext)                                                                             \
    F(sws_getCachedContext)                                                                        \
    F(sws_getCoefficients)                                                                         \
    F(sws_scale)                                                                                   \
    F(sws_setColorspaceDetails)

typedef struct video_av {
#define VIDEO_AV_MEMBER(fn) __typeof__(fn) *fn;
    VIDEO_AV_FUNCS(VIDEO_AV_MEMBER)
#undef VIDEO_AV_MEMBER
} video_av;

/* Filled by video_av_load; read-only afterwards. */
extern video_av video_av_fns;

/* Loads FFmpeg's libraries of the sonames the build's headers name and fills
 * video_av_fns, once per process (thread-safe). FFU_OK, or FFU_ERR_UNSUPPORTED saying
 * which library or function is missing (and then every later call says the same). */
ffu_status video_av_load(void);

#ifndef VIDEO_AV_LOADER
#define av_buffer_ref (video_av_fns.av_buffer_ref)
#define av_buffer_unref (video_av_fns.av_buffer_unref)
#define av_codec_is_decoder (video_av_fns.av_codec_is_decoder)
#define av_codec_iterate (video_av_fns.av_codec_iterate)
#define av_dict_copy (video_av_fns.av_dict_copy)
#define av_dict_free (video_av_fns.av_dict_free)
#define av_dict_get (video_av_fns.av_dict_get)
#define av_dict_set (video_av_fns.av_dict_set)
#define av_find_best_stream (video_av_fns.av_find_best_stream)
#define av_find_input_format (video_av_fns.av_find_input_format)
#define av_frame_alloc (video_av_fns.av_frame_alloc)
#define av_frame_free (video_av_fns.av_frame_free)
#define av_frame_get_buffer (video_av_fns.av_frame_get_buffer)
#define av_frame_is_writable (video_av_fns.av_frame_is_writable)
#define av_frame_make_writable (video_av_fns.av_frame_make_writable)
#define av_frame_unref (video_av_fns.av_frame_unref)
#define av_free (video_av_fns.av_free)
#define av_freep (video_av_fns.av_freep)
#define av_get_pix_fmt (video_av_fns.av_get_pix_fmt)
#define av_get_pix_fmt_name (video_av_fns.av_get_pix_fmt_name)
#define av_guess_format (video_av_fns.av_guess_format)
#define av_hwdevice_ctx_alloc (video_av_fns.av_hwdevice_ctx_alloc)
#define av_hwdevice_ctx_create (video_av_fns.av_hwdevice_ctx_create)
#define av_hwdevice_ctx_init (video_av_fns.av_hwdevice_ctx_init)
#define av_hwdevice_iterate_types (video_av_fns.av_hwdevice_iterate_types)
#define av_hwframe_transfer_data (video_av_fns.av_hwframe_transfer_data)
#define av_interleaved_write_frame (video_av_fns.av_interleaved_write_frame)
#define av_log_default_callback (video_av_fns.av_log_default_callback)
#define av_log_format_line2 (video_av_fns.av_log_format_line2)
#define av_log_get_level (video_av_fns.av_log_get_level)
#define av_log_set_callback (video_av_fns.av_log_set_callback)
#define av_malloc (video_av_fns.av_malloc)
#define av_opt_find (video_av_fns.av_opt_find)
#define av_opt_set (video_av_fns.av_opt_set)
#define av_opt_set_int (video_av_fns.av_opt_set_int)
#define av_packet_alloc (video_av_fns.av_packet_alloc)
#define av_packet_free (video_av_fns.av_packet_free)
#define av_packet_rescale_ts (video_av_fns.av_packet_rescale_ts)
#define av_packet_unref (video_av_fns.av_packet_unref)
#define av_pix_fmt_desc_get (video_av_fns.av_pix_fmt_desc_get)
#define av_read_frame (video_av_fns.av_read_frame)
#define av_reduce (video_av_fns.av_reduce)
#define av_rescale_q (video_av_fns.av_rescale_q)
#define av_seek_frame (video_av_fns.av_seek_frame)
#define av_strerror (video_av_fns.av_strerror)
#define av_version_info (video_av_fns.av_version_info)
#define av_write_trailer (video_av_fns.av_write_trailer)
#define avcodec_alloc_context3 (video_av_fns.avcodec_alloc_context3)
#define avcodec_find_encoder_by_name (video_av_fns.avcodec_find_encoder_by_name)
#define avcodec_flush_buffers (video_av_fns.avcodec_flush_buffers)
#define avcodec_free_context (video_av_fns.avcodec_free_context)
#define avcodec_get_hw_config (video_av_fns.avcodec_get_hw_config)
#define avcodec_get_name (video_av_fns.avcodec_get_name)
#define avcodec_open2 (video_av_fns.avcodec_open2)
#define avcodec_parameters_copy (video_av_fns.avcodec_parameters_copy)
#define avcodec_parameters_from_context (video_av_fns.avcodec_parameters_from_context)
#define avcodec_parameters_to_context (video_av_fns.avcodec_parameters_to_context)
#define avcodec_profile_name (video_av_fns.avcodec_profile_name)
#define avcodec_receive_frame (video_av_fns.avcodec_receive_frame)
#define avcodec_receive_packet (video_av_fns.avcodec_receive_packet)
#define avcodec_send_frame (video_av_fns.avcodec_send_frame)
#define avcodec_send_packet (video_av_fns.avcodec_send_packet)
#define avformat_alloc_context (video_av_fns.avformat_alloc_context)
#define avformat_alloc_output_context2 (video_av_fns.avformat_alloc_output_context2)
#define avformat_close_input (video_av_fns.avformat_close_input)
#define avformat_find_stream_info (video_av_fns.avformat_find_stream_info)
#define avformat_free_context (video_av_fns.avformat_free_context)
#define avformat_network_init (video_av_fns.avformat_network_init)
#define avformat_new_stream (video_av_fns.avformat_new_stream)
#define avformat_open_input (video_av_fns.avformat_open_input)
#define avformat_query_codec (video_av_fns.avformat_query_codec)
#define avformat_seek_file (video_av_fns.avformat_seek_file)
#define avformat_write_header (video_av_fns.avformat_write_header)
#define avio_alloc_context (video_av_fns.avio_alloc_context)
#define avio_closep (video_av_fns.avio_closep)
#define avio_context_free (video_av_fns.avio_context_free)
#define avio_open (video_av_fns.avio_open)
#define sws_freeContext (video_av_fns.sws_freeContext)
#define sws_getCachedContext (video_av_fns.sws_getCachedContext)
#define sws_getCoefficients (video_av_fns.sws_getCoefficients)
#define sws_scale (video_av_fns.sws_scale)
#define sws_setColorspaceDetails (video_av_fns.sws_setColorspaceDetails)
#endif

#endif
