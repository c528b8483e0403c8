/* `facefuse version`: the version and the build it came from, one line or JSON. */
#include <stdio.h>

#include "cli.h"
#include "ffu_config.h"

typedef struct {
    cli_common common;
} version_opts;

static const ffu_option version_options[] = {CLI_COMMON_OPTIONS, {0}};

static int run(const cli_command *cmd, int argc, char **argv)
{
    version_opts o;
    int npos, done;
    int rc = cli_parse(cmd, version_options, &o, argc, argv, &npos, &done);
    if (rc || done) goto out;
    if (npos > 0) {
        rc = cli_fail_msg(cmd, &o.common, CLI_EXIT_USAGE, "unexpected argument '%s'", argv[0]);
        goto out;
    }
    if (o.common.json) {
        ffu_jw *w;
        if (ffu_jw_create(&w, 0) < 0) {
            rc = cli_fail(cmd, &o.common, FFU_ERR_NOMEM);
            goto out;
        }
        ffu_jw_begin_object(w);
        ffu_jw_key(w, "version"), ffu_jw_string(w, FFU_VERSION_STRING);
        ffu_jw_key(w, "build_type"), ffu_jw_string(w, FFU_BUILD_TYPE);
        ffu_jw_key(w, "cuda"), ffu_jw_bool(w, FFU_HAVE_CUDA);
        ffu_jw_end_object(w);
        rc = cli_print_json(w);
        ffu_jw_destroy(w);
    } else {
        printf("facefuse %s (%s%s)\n", FFU_VERSION_STRING, FFU_BUILD_TYPE,
               FFU_HAVE_CUDA ? ", CUDA" : "");
    }
out:
    ffu_options_free(version_options, &o);
    return rc;
}

const cli_command cli_cmd_version = {
    "version", "print the version", "facefuse version [--json]", NULL, run,
};
