/* json.c: see json.h. */
#include "json.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p, *end;
    char *err;
    size_t errsize;
    int depth;
} parser_t;

static int fail(parser_t *ps, const char *msg) {
    if (ps->errsize > 0 && ps->err[0] == '\0') {
        snprintf(ps->err, ps->errsize, "%s at byte %ld", msg, (long)(ps->end - ps->p));
    }
    return -1;
}

static void skip_ws(parser_t *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r')) {
        ps->p++;
    }
}

static int parse_value(parser_t *ps, jval_t *v);

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_hex4(parser_t *ps, unsigned *out) {
    if (ps->end - ps->p < 4) return fail(ps, "short \\u escape");
    unsigned u = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(ps->p[k]);
        if (h < 0) return fail(ps, "bad \\u escape");
        u = u << 4 | (unsigned)h;
    }
    ps->p += 4;
    *out = u;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | cp >> 6); o[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12); o[1] = (char)(0x80 | (cp >> 6 & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18); o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Parses a string after its opening quote into a new NUL-terminated buffer. */
static int parse_string(parser_t *ps, char **out, size_t *outlen) {
    /* The unescaped string is never longer than its escaped form. */
    const char *q = ps->p;
    while (q < ps->end && *q != '"') q += (*q == '\\' && q + 1 < ps->end) ? 2 : 1;
    char *buf = malloc((size_t)(q - ps->p) + 1);
    if (buf == NULL) return fail(ps, "out of memory");
    size_t n = 0;
    for (;;) {
        if (ps->p >= ps->end) { free(buf); return fail(ps, "unterminated string"); }
        char c = *ps->p++;
        if (c == '"') break;
        if (c != '\\') { buf[n++] = c; continue; }
        if (ps->p >= ps->end) { free(buf); return fail(ps, "unterminated escape"); }
        c = *ps->p++;
        switch (c) {
        case '"': case '\\': case '/': buf[n++] = c; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'n': buf[n++] = '\n'; break;
        case 'r': buf[n++] = '\r'; break;
        case 't': buf[n++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (read_hex4(ps, &cp) < 0) { free(buf); return -1; }
            if (cp >= 0xD800 && cp < 0xDC00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') {
                unsigned lo;
                ps->p += 2;
                if (read_hex4(ps, &lo) < 0) { free(buf); return -1; }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += put_utf8(buf + n, cp);
            break;
        }
        default: free(buf); return fail(ps, "bad escape");
        }
    }
    buf[n] = '\0';
    *out = buf;
    *outlen = n;
    return 0;
}

static int push(parser_t *ps, jval_t *v, size_t *cap) {
    if (v->len == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        jval_t *k = realloc(v->kids, *cap * sizeof *k);
        if (k == NULL) return fail(ps, "out of memory");
        v->kids = k;
    }
    memset(&v->kids[v->len], 0, sizeof v->kids[0]);
    v->len++;
    return 0;
}

static int parse_container(parser_t *ps, jval_t *v, char close) {
    size_t cap = 0;
    if (++ps->depth > 64) return fail(ps, "nested too deep");
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) { ps->p++; ps->depth--; return 0; }
    for (;;) {
        if (push(ps, v, &cap) < 0) return -1;
        jval_t *kid = &v->kids[v->len - 1];
        kid->type = J_NULL;
        skip_ws(ps);
        if (close == '}') {
            size_t klen;
            if (ps->p >= ps->end || *ps->p != '"') return fail(ps, "expected a member name");
            ps->p++;
            if (parse_string(ps, &kid->key, &klen) < 0) return -1;
            skip_ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') return fail(ps, "expected ':'");
            ps->p++;
        }
        if (parse_value(ps, kid) < 0) return -1;
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
        if (ps->p < ps->end && *ps->p == close) { ps->p++; ps->depth--; return 0; }
        return fail(ps, "expected ',' or the end of a container");
    }
}

static int parse_value(parser_t *ps, jval_t *v) {
    skip_ws(ps);
    if (ps->p >= ps->end) return fail(ps, "unexpected end");
    char c = *ps->p;
    if (c == '{') { ps->p++; v->type = J_OBJ; return parse_container(ps, v, '}'); }
    if (c == '[') { ps->p++; v->type = J_ARR; return parse_container(ps, v, ']'); }
    if (c == '"') { ps->p++; v->type = J_STR; return parse_string(ps, &v->s, &v->len); }
    struct { const char *word; jtype_t t; int b; } lits[] = {{"null", J_NULL, 0}, {"true", J_BOOL, 1}, {"false", J_BOOL, 0}};
    for (size_t k = 0; k < 3; k++) {
        size_t wl = strlen(lits[k].word);
        if ((size_t)(ps->end - ps->p) >= wl && memcmp(ps->p, lits[k].word, wl) == 0) {
            ps->p += wl;
            v->type = lits[k].t;
            v->b = lits[k].b;
            return 0;
        }
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        char tmp[64];
        size_t n = 0;
        while (ps->p < ps->end && n + 1 < sizeof tmp && strchr("+-0123456789.eE", *ps->p) != NULL) tmp[n++] = *ps->p++;
        tmp[n] = '\0';
        char *endp;
        v->type = J_NUM;
        v->i = strtoll(tmp, &endp, 10);
        if (*endp != '\0') v->i = (int64_t)strtod(tmp, NULL);
        return 0;
    }
    return fail(ps, "unexpected character");
}

jval_t *json_parse(const char *text, size_t n, char *err, size_t errsize) {
    parser_t ps = {text, text + n, err, errsize, 0};
    if (errsize > 0) err[0] = '\0';
    jval_t *v = calloc(1, sizeof *v);
    if (v == NULL) return NULL;
    if (parse_value(&ps, v) < 0) { json_free(v); return NULL; }
    skip_ws(&ps);
    if (ps.p != ps.end) { fail(&ps, "trailing data"); json_free(v); return NULL; }
    return v;
}

static void free_kids(jval_t *v) {
    for (size_t k = 0; (v->type == J_ARR || v->type == J_OBJ) && k < v->len; k++) free_kids(&v->kids[k]);
    free(v->kids);
    free(v->s);
    free(v->key);
}

void json_free(jval_t *v) {
    if (v == NULL) return;
    free_kids(v);
    free(v);
}

const jval_t *json_get(const jval_t *v, const char *key) {
    if (v == NULL || v->type != J_OBJ) return NULL;
    for (size_t k = 0; k < v->len; k++) {
        if (strcmp(v->kids[k].key, key) == 0) return &v->kids[k];
    }
    return NULL;
}

const char *json_str(const jval_t *v, const char *key, const char *def) {
    const jval_t *m = json_get(v, key);
    return m != NULL && m->type == J_STR ? m->s : def;
}

int64_t json_int(const jval_t *v, const char *key, int64_t def) {
    const jval_t *m = json_get(v, key);
    return m != NULL && m->type == J_NUM ? m->i : def;
}

void json_write_str(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void json_write_b64(FILE *f, const void *data, size_t n) {
    if (data == NULL) { fputs("null", f); return; }
    const unsigned char *d = data;
    fputc('"', f);
    for (size_t k = 0; k < n; k += 3) {
        unsigned v = (unsigned)d[k] << 16;
        if (k + 1 < n) v |= (unsigned)d[k + 1] << 8;
        if (k + 2 < n) v |= d[k + 2];
        char q[4] = {b64[v >> 18 & 63], b64[v >> 12 & 63], k + 1 < n ? b64[v >> 6 & 63] : '=', k + 2 < n ? b64[v & 63] : '='};
        fwrite(q, 1, 4, f);
    }
    fputc('"', f);
}

int b64_decode(const char *text, size_t n, unsigned char **out, size_t *outlen) {
    unsigned char *buf = malloc(n / 4 * 3 + 3);
    if (buf == NULL || n % 4 != 0) { free(buf); return -1; }
    size_t o = 0;
    for (size_t k = 0; k < n; k += 4) {
        unsigned v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            char c = text[k + j];
            const char *pos = c == '=' ? NULL : strchr(b64, c);
            if (c == '=' && k + 4 == n && j >= 2) { pad++; v <<= 6; continue; }
            if (pos == NULL || c == '\0' || pad) { free(buf); return -1; }
            v = v << 6 | (unsigned)(pos - b64);
        }
        buf[o++] = (unsigned char)(v >> 16);
        if (pad < 2) buf[o++] = (unsigned char)(v >> 8);
        if (pad < 1) buf[o++] = (unsigned char)v;
    }
    *out = buf;
    *outlen = o;
    return 0;
}
