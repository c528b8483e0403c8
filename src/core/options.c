/* Option tables: one declaration per setting gives the CLI flag, the JSON config key,
 * the range check and the help line, so the three can never disagree. Values always
 * go through one text parser (set_value); JSON values are checked for type and then
 * take the same path. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core_internal.h"
#include "facefuse/core.h"

static void *field(const ffu_option *o, void *obj) { return (char *)obj + o->offset; }

/* a (NUL-terminated) equals b[0..blen), with '-' and '_' equal. */
static int name_eq(const char *a, const char *b, size_t blen)
{
    for (size_t i = 0; i < blen; i++, a++) {
        char x = *a == '_' ? '-' : *a, y = b[i] == '_' ? '-' : b[i];
        if (!*a || x != y) return 0;
    }
    return *a == 0;
}

static const ffu_option *find_long(const ffu_option *opts, const char *name, size_t len)
{
    for (const ffu_option *o = opts; o->name; o++)
        if (name_eq(o->name, name, len)) return o;
    return NULL;
}

static const ffu_option *find_short(const ffu_option *opts, char c)
{
    for (const ffu_option *o = opts; o->name; o++)
        if (o->short_name && o->short_name == c) return o;
    return NULL;
}

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"true", "yes", "on", "1"}, *const no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) return *out = 1, 1;
        if (strcasecmp(v, no[i]) == 0) return *out = 0, 1;
    }
    return 0;
}

static void choice_list(const ffu_option *o, char *buf, size_t len)
{
    size_t pos = 0;
    buf[0] = 0;
    for (const char *const *c = o->choices; c && *c && pos < len; c++) {
        int n = snprintf(buf + pos, len - pos, "%s%s", pos ? ", " : "", *c);
        if (n < 0) break;
        pos += (size_t)n;
    }
}

static ffu_status check_range(const ffu_option *o, double v, const char *who, const char *text)
{
    if (o->min < o->max && !(v >= o->min && v <= o->max))
        return ffu_error_set(FFU_ERR_INVALID, "%s: %s is out of range [%g, %g]", who, text,
                             o->min, o->max);
    return FFU_OK;
}

static ffu_status list_append(ffu_strlist *l, const char *s, size_t n, const char *who)
{
    char **items = realloc(l->items, ((size_t)l->count + 1) * sizeof *items);
    if (!items) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", who);
    l->items = items;
    if (!(items[l->count] = strndup(s, n))) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", who);
    l->count++;
    return FFU_OK;
}

void ffu_strlist_free(ffu_strlist *l)
{
    if (!l) return;
    for (int i = 0; i < l->count; i++) free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

/* Parses text into o's field. who names the option in messages ("--threads"). A list
 * is emptied first when replace_list. */
static ffu_status set_value(const ffu_option *o, void *obj, const char *value, const char *who,
                            int replace_list)
{
    void *f = field(o, obj);
    if (!value && o->type != FFU_OPT_BOOL)
        return ffu_error_set(FFU_ERR_INVALID, "%s needs a value", who);
    switch (o->type) {
    case FFU_OPT_BOOL: {
        int b = 1;
        if (value && !parse_bool(value, &b))
            return ffu_error_set(FFU_ERR_INVALID, "%s: '%s' is not a boolean (true/false)", who, value);
        *(int *)f = b;
        return FFU_OK;
    }
    case FFU_OPT_INT: {
        char *end;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (end == value || *end || isspace((unsigned char)*value))
            return ffu_error_set(FFU_ERR_INVALID, "%s: '%s' is not an integer", who, value);
        if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
            return ffu_error_set(FFU_ERR_INVALID, "%s: %s is out of range", who, value);
        ffu_status s = check_range(o, (double)v, who, value);
        if (s == FFU_OK) *(int *)f = (int)v;
        return s;
    }
    case FFU_OPT_FLOAT: {
        char *end;
        double v = core_strtod(value, &end);
        if (end == value || *end || isspace((unsigned char)*value) || isnan(v))
            return ffu_error_set(FFU_ERR_INVALID, "%s: '%s' is not a number", who, value);
        ffu_status s = check_range(o, v, who, value);
        if (s == FFU_OK) *(double *)f = v;
        return s;
    }
    case FFU_OPT_STRING: {
        char *d = strdup(value);
        if (!d) return ffu_error_set(FFU_ERR_NOMEM, "%s: out of memory", who);
        free(*(char **)f);
        *(char **)f = d;
        return FFU_OK;
    }
    case FFU_OPT_ENUM: {
        for (int i = 0; o->choices && o->choices[i]; i++)
            if (strcmp(o->choices[i], value) == 0) {
                *(int *)f = i;
                return FFU_OK;
            }
        char list[256];
        choice_list(o, list, sizeof list);
        return ffu_error_set(FFU_ERR_INVALID, "%s: '%s' is not one of %s", who, value, list);
    }
    case FFU_OPT_STRING_LIST:
        if (replace_list) ffu_strlist_free(f);
        return list_append(f, value, strlen(value), who);
    }
    return ffu_error_set(FFU_ERR_INVALID, "%s: bad option type %d", who, (int)o->type);
}

static void cli_name(const ffu_option *o, char *buf, size_t len) { snprintf(buf, len, "--%s", o->name); }

ffu_status ffu_options_init(const ffu_option *opts, void *obj)
{
    if (!opts || !obj) return ffu_error_set(FFU_ERR_INVALID, "ffu_options_init: NULL argument");
    for (const ffu_option *o = opts; o->name; o++) {
        void *f = field(o, obj);
        switch (o->type) {
        case FFU_OPT_BOOL: case FFU_OPT_INT: case FFU_OPT_ENUM: *(int *)f = 0; break;
        case FFU_OPT_FLOAT: *(double *)f = 0; break;
        case FFU_OPT_STRING: *(char **)f = NULL; break;
        case FFU_OPT_STRING_LIST: *(ffu_strlist *)f = (ffu_strlist){NULL, 0}; break;
        default: return ffu_error_set(FFU_ERR_INVALID, "option --%s: bad type %d", o->name, (int)o->type);
        }
        if (o->type == FFU_OPT_ENUM && (!o->choices || !o->choices[0]))
            return ffu_error_set(FFU_ERR_INVALID, "option --%s: enum without choices", o->name);
    }
    for (const ffu_option *o = opts; o->name; o++) {
        if (!o->def) continue;
        char who[128];
        snprintf(who, sizeof who, "default of --%s", o->name);
        ffu_status s = FFU_OK;
        if (o->type == FFU_OPT_STRING_LIST) { /* comma-separated */
            for (const char *p = o->def; *p && s == FFU_OK;) {
                size_t n = strcspn(p, ",");
                s = list_append(field(o, obj), p, n, who);
                p += n + (p[n] == ',');
            }
        } else {
            s = set_value(o, obj, o->def, who, 0);
        }
        if (s != FFU_OK) return s;
    }
    return FFU_OK;
}

ffu_status ffu_options_set(const ffu_option *opts, void *obj, const char *name, const char *value)
{
    if (!opts || !obj || !name) return ffu_error_set(FFU_ERR_INVALID, "ffu_options_set: NULL argument");
    const ffu_option *o = find_long(opts, name, strlen(name));
    if (!o) return ffu_error_set(FFU_ERR_INVALID, "unknown option %s", name);
    char who[128];
    cli_name(o, who, sizeof who);
    return set_value(o, obj, value, who, 0);
}

ffu_status ffu_options_parse_args(const ffu_option *opts, void *obj, int argc, char **argv,
                                  int *npositional)
{
    if (npositional) *npositional = 0;
    if (!opts || !obj || argc < 0 || (argc && !argv))
        return ffu_error_set(FFU_ERR_INVALID, "ffu_options_parse_args: bad arguments");
    size_t nopts = 0;
    while (opts[nopts].name) nopts++;
    /* option tokens wait here, then follow the positionals in argv */
    char **rest = malloc((size_t)argc * sizeof *rest + nopts + 1);
    if (!rest) return ffu_error_set(FFU_ERR_NOMEM, "cannot parse arguments: out of memory");
    unsigned char *seen = (unsigned char *)(rest + argc); /* lists given in this call */
    memset(seen, 0, nopts + 1);

    int npos = 0, nrest = 0, only_pos = 0, i = 0;
    ffu_status s = FFU_OK;
    char who[160];
    for (; i < argc && s == FFU_OK; i++) {
        char *a = argv[i];
        if (!a) {
            s = ffu_error_set(FFU_ERR_INVALID, "argv[%d] is NULL", i);
            break;
        }
        int looks_negative = a[0] == '-' && (isdigit((unsigned char)a[1]) || a[1] == '.') &&
                             !find_short(opts, a[1]);
        if (only_pos || a[0] != '-' || a[1] == 0 || looks_negative) {
            argv[npos++] = a;
            continue;
        }
        rest[nrest++] = a;
        if (strcmp(a, "--") == 0) {
            only_pos = 1;
            continue;
        }
        if (a[1] == '-') { /* --name, --name=value, --no-name */
            const char *name = a + 2, *eq = strchr(name, '=');
            size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
            const ffu_option *o = find_long(opts, name, nlen);
            int negate = 0;
            if (!o && nlen > 3 && strncmp(name, "no-", 3) == 0) {
                o = find_long(opts, name + 3, nlen - 3);
                if (o && o->type == FFU_OPT_BOOL) negate = 1;
                else o = NULL;
            }
            if (!o) {
                s = ffu_error_set(FFU_ERR_INVALID, "unknown option --%.*s (see --help)", (int)nlen, name);
                break;
            }
            cli_name(o, who, sizeof who);
            const char *value = eq ? eq + 1 : NULL;
            if (negate) {
                if (eq) s = ffu_error_set(FFU_ERR_INVALID, "--no-%s takes no value", o->name);
                else value = "false";
            } else if (!eq && o->type != FFU_OPT_BOOL && i + 1 < argc) {
                value = argv[++i];
                rest[nrest++] = argv[i];
            }
            if (s == FFU_OK) {
                size_t idx = (size_t)(o - opts);
                s = set_value(o, obj, value, who, !seen[idx]);
                seen[idx] = 1;
            }
            continue;
        }
        for (const char *p = a + 1; *p && s == FFU_OK; p++) { /* -x, -xVALUE, -abc */
            const ffu_option *o = find_short(opts, *p);
            if (!o) {
                s = ffu_error_set(FFU_ERR_INVALID, "unknown option -%c (see --help)", *p);
                break;
            }
            snprintf(who, sizeof who, "-%c/--%s", *p, o->name);
            size_t idx = (size_t)(o - opts);
            if (o->type == FFU_OPT_BOOL) {
                s = set_value(o, obj, NULL, who, 0);
                continue;
            }
            const char *value = p[1] ? p + 1 : NULL;
            if (!value && i + 1 < argc) {
                value = argv[++i];
                rest[nrest++] = argv[i];
            }
            s = set_value(o, obj, value, who, !seen[idx]);
            seen[idx] = 1;
            break;
        }
    }
    /* every token before i is now a positional (front) or in rest: put rest back */
    if (nrest) memcpy(argv + npos, rest, (size_t)nrest * sizeof *rest);
    free(rest);
    if (s == FFU_OK && npositional) *npositional = npos;
    return s;
}

ffu_status ffu_options_apply_json(const ffu_option *opts, void *obj, const ffu_json *object)
{
    if (!opts || !obj) return ffu_error_set(FFU_ERR_INVALID, "ffu_options_apply_json: NULL argument");
    if (ffu_json_typeof(object) != FFU_JSON_OBJECT)
        return ffu_error_set(FFU_ERR_INVALID, "config: expected a JSON object");
    static const char *const type_names[] = {"null", "boolean", "number", "string", "array", "object"};
    for (size_t i = 0; i < ffu_json_len(object); i++) {
        const ffu_json *v;
        const char *key = ffu_json_key_at(object, i, &v);
        const ffu_option *o = find_long(opts, key, strlen(key));
        if (!o) return ffu_error_set(FFU_ERR_INVALID, "config: unknown key '%s'", key);
        ffu_json_type t = ffu_json_typeof(v);
        if (t == FFU_JSON_NULL) continue;
        char who[160], text[40];
        snprintf(who, sizeof who, "config key '%s'", key);
        const char *value = NULL, *want = NULL;
        switch (o->type) {
        case FFU_OPT_BOOL:
            if (t == FFU_JSON_BOOL) value = ffu_json_bool(v, 0) ? "true" : "false";
            else want = "a boolean";
            break;
        case FFU_OPT_INT:
            /* the two fallbacks agree only when the number is integral */
            if (t == FFU_JSON_NUMBER && ffu_json_int(v, 1) == ffu_json_int(v, 0)) {
                snprintf(text, sizeof text, "%" PRId64, ffu_json_int(v, 0));
                value = text;
            } else {
                want = "an integer";
            }
            break;
        case FFU_OPT_FLOAT:
            if (t == FFU_JSON_NUMBER) {
                core_format_double(text, sizeof text, ffu_json_number(v, 0));
                value = text;
            } else {
                want = "a number";
            }
            break;
        case FFU_OPT_STRING:
        case FFU_OPT_ENUM:
            if (!(value = ffu_json_string(v))) want = "a string";
            break;
        case FFU_OPT_STRING_LIST:
            if (t == FFU_JSON_STRING) { /* one item */
                ffu_status s = set_value(o, obj, ffu_json_string(v), who, 1);
                if (s != FFU_OK) return s;
                continue;
            }
            if (t != FFU_JSON_ARRAY) {
                want = "an array of strings";
                break;
            }
            for (size_t k = 0; k < ffu_json_len(v); k++)
                if (!ffu_json_string(ffu_json_at(v, k)))
                    return ffu_error_set(FFU_ERR_INVALID, "%s: item %zu is not a string", who, k);
            ffu_strlist_free(field(o, obj));
            for (size_t k = 0; k < ffu_json_len(v); k++) {
                ffu_status s = set_value(o, obj, ffu_json_string(ffu_json_at(v, k)), who, 0);
                if (s != FFU_OK) return s;
            }
            continue;
        }
        if (want)
            return ffu_error_set(FFU_ERR_INVALID, "%s: expected %s, got %s", who, want, type_names[t]);
        ffu_status s = set_value(o, obj, value, who, 0);
        if (s != FFU_OK) return s;
    }
    return FFU_OK;
}

static const char *metavar(const ffu_option *o)
{
    if (o->metavar) return o->metavar;
    switch (o->type) {
    case FFU_OPT_INT: return "N";
    case FFU_OPT_FLOAT: return "X";
    case FFU_OPT_ENUM: return "NAME";
    case FFU_OPT_STRING: case FFU_OPT_STRING_LIST: return "TEXT";
    default: return NULL;
    }
}

/* "  -o, --output PATH" */
static int left_column(const ffu_option *o, char *buf, size_t len)
{
    const char *mv = metavar(o);
    int on = 0; /* a flag that defaults to on is only useful as --no-flag */
    int bool_on = o->type == FFU_OPT_BOOL && o->def && parse_bool(o->def, &on) && on;
    char sh[8] = "    ";
    if (o->short_name) snprintf(sh, sizeof sh, "-%c, ", o->short_name);
    int n = snprintf(buf, len, "  %s--%s%s%s%s", sh, bool_on ? "[no-]" : "", o->name,
                     mv ? " " : "", mv ? mv : "");
    return n < 0 ? 0 : n >= (int)len ? (int)len - 1 : n;
}

void ffu_options_print_help(const ffu_option *opts, FILE *out)
{
    if (!opts || !out) return;
    enum { MAX_LEFT = 34 };
    int width = 0;
    char left[256];
    for (const ffu_option *o = opts; o->name; o++) {
        int n = left_column(o, left, sizeof left);
        if (n > width && n <= MAX_LEFT) width = n;
    }
    for (const ffu_option *o = opts; o->name; o++) {
        int n = left_column(o, left, sizeof left);
        if (n > width)
            fprintf(out, "%s\n%*s", left, width + 2, "");
        else
            fprintf(out, "%-*s", width + 2, left);
        fputs(o->help ? o->help : "", out);
        if (o->type == FFU_OPT_ENUM) {
            char list[256];
            choice_list(o, list, sizeof list);
            fprintf(out, " (one of: %s)", list);
        }
        if ((o->type == FFU_OPT_INT || o->type == FFU_OPT_FLOAT) && o->min < o->max)
            fprintf(out, " [%g..%g]", o->min, o->max);
        if (o->type == FFU_OPT_STRING_LIST) fputs(" (repeatable)", out);
        if (o->def) fprintf(out, " (default: %s)", o->def);
        fputc('\n', out);
    }
}

void ffu_options_free(const ffu_option *opts, void *obj)
{
    if (!opts || !obj) return;
    for (const ffu_option *o = opts; o->name; o++) {
        void *f = field(o, obj);
        if (o->type == FFU_OPT_STRING) {
            free(*(char **)f);
            *(char **)f = NULL;
        } else if (o->type == FFU_OPT_STRING_LIST) {
            ffu_strlist_free(f);
        }
    }
}
