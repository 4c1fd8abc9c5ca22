/* json.h: the little JSON the C conformance driver needs: a parser into a tree (one request
 * line at a time) and a writer of escaped strings and base64. Not a general library: numbers
 * are kept as doubles and as int64, strings as bytes with their length. */
#ifndef SPOOL_CONFORMANCE_JSON_H
#define SPOOL_CONFORMANCE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype_t;

typedef struct jval {
    jtype_t type;
    int b;           /* J_BOOL */
    int64_t i;       /* J_NUM, truncated */
    char *s;         /* J_STR (NUL-terminated too), or the key of an object member */
    size_t len;      /* J_STR: bytes; J_ARR/J_OBJ: children */
    struct jval *kids; /* J_ARR, J_OBJ: len children; an object child's key is in .key */
    char *key;
} jval_t;

/* Parses one JSON document from text; NULL with a message in err (size errsize) on bad input. */
jval_t *json_parse(const char *text, size_t n, char *err, size_t errsize);
void json_free(jval_t *v);

/* Member key of object v, or NULL (also when v is not an object). */
const jval_t *json_get(const jval_t *v, const char *key);
/* The string of member key, or def when absent or not a string. */
const char *json_str(const jval_t *v, const char *key, const char *def);
int64_t json_int(const jval_t *v, const char *key, int64_t def);

/* Writes s (n bytes) as a JSON string, quoted and escaped. */
void json_write_str(FILE *f, const char *s, size_t n);
/* Writes data as a quoted base64 string, or null when data is NULL. */
void json_write_b64(FILE *f, const void *data, size_t n);
/* Decodes base64 text into a new buffer (*out, *outlen); -1 on bad input. */
int b64_decode(const char *text, size_t n, unsigned char **out, size_t *outlen);

#endif
